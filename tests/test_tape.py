"""GradientTape, TensorFlow's reverse-mode API (tapeflow/tape.py).

Watching tensors and variables (trainable variables read inside the tape are watched
automatically); gradients of nested target and source structures, weighted by
output_gradients; unconnected gradients as None or zeros; persistent and re-entered
tapes; stop_recording and reset; higher-order derivatives with nested tapes;
stop_gradient; integer and non-tensor sources; gradients around variable writes; and
tapes in several threads. Jacobians are tested in test_tape_jacobian.py, custom
gradients in test_custom.py. Where tapeflow's documentation says nothing, the
reference is TensorFlow 2's documented behaviour.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tapeflow as tf


def _np(x):
    return np.asarray(x)


# ---------------------------------------------------------------- watch

def test_constant_not_watched_has_no_gradient():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_watch_tensor():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    assert g.dtype == tf.float32
    np.testing.assert_allclose(g, 6.0)


def test_watch_nested_structure():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch({"a": a, "rest": [b, (c,)]})
        y = a * b * c
    ga, gb, gc = tape.gradient(y, [a, b, c])
    np.testing.assert_allclose([_np(ga), _np(gb), _np(gc)], [6.0, 3.0, 2.0])


def test_watch_variable_explicitly():
    v = tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v * v
    np.testing.assert_allclose(tape.gradient(y, v), 12.0)


def test_watch_non_tensor_raises():
    with tf.GradientTape() as tape:
        with pytest.raises((TypeError, ValueError)):
            tape.watch([tf.constant(1.0), 3.0])


def test_trainable_variables_watched_automatically():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * v)
    np.testing.assert_allclose(tape.gradient(y, v), [2.0, 4.0])


def test_watch_accessed_variables_false_does_not_watch():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = tf.reduce_sum(v * v)
    assert tape.gradient(y, v) is None


def test_non_trainable_variable_not_watched():
    v = tf.Variable([1.0, 2.0], trainable=False)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * v)
    assert tape.gradient(y, v) is None
    assert tape.watched_variables() == ()


def test_non_trainable_variable_watched_explicitly():
    v = tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = v * v
    np.testing.assert_allclose(tape.gradient(y, v), 6.0)


def test_watched_variables_in_access_order():
    a, b, c = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b"), tf.Variable(3.0, name="c")
    frozen = tf.Variable(4.0, trainable=False)
    with tf.GradientTape() as tape:
        y = b * a + frozen
    watched = tape.watched_variables()
    assert len(watched) == 2
    assert watched[0] is b and watched[1] is a
    assert all(w is not c for w in watched)


def test_watched_variables_includes_explicitly_watched():
    v = tf.Variable(1.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
    assert len(tape.watched_variables()) == 1 and tape.watched_variables()[0] is v


def test_watched_variables_survive_a_non_persistent_gradient_call():
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = v * 2.0
    tape.gradient(y, v)
    assert len(tape.watched_variables()) == 1 and tape.watched_variables()[0] is v


# ---------------------------------------------------------------- gradient structures

def test_gradient_sources_structure_dict():
    x, y = tf.constant(2.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = x * y
    g = tape.gradient(z, {"x": x, "y": y})
    assert isinstance(g, dict) and set(g) == {"x", "y"}
    np.testing.assert_allclose(g["x"], 5.0)
    np.testing.assert_allclose(g["y"], 2.0)


def test_gradient_sources_structure_nested_list_tuple():
    x, y = tf.constant(2.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = x * x * y
    g = tape.gradient(z, [x, (y,)])
    assert isinstance(g, list) and isinstance(g[1], tuple) and len(g[1]) == 1
    np.testing.assert_allclose(g[0], 20.0)
    np.testing.assert_allclose(g[1][0], 4.0)


def test_gradient_of_list_target_sums():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y1 = x * x
        y2 = x * 5.0
    np.testing.assert_allclose(tape.gradient([y1, y2], x), 6.0 + 5.0)


def test_gradient_of_dict_target_sums():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        ys = {"sq": x * x, "cube": x * x * x}
    np.testing.assert_allclose(tape.gradient(ys, x), 6.0 + 27.0)


def test_gradient_of_non_scalar_target_sums_elements():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_allclose(tape.gradient(y, x), [2.0, 4.0, 6.0])


def test_gradient_with_respect_to_intermediate():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * 3.0 + x
    np.testing.assert_allclose(tape.gradient(z, y), 3.0)


def test_gradient_of_target_with_respect_to_itself_is_ones():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(x, x), [1.0, 1.0])


def test_output_gradients_weight_the_target():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=tf.constant([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(g, [2.0, 40.0, 600.0])


def test_output_gradients_for_list_target():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * x, x * 3.0
    g = tape.gradient([y1, y2], x, output_gradients=[tf.constant(10.0), tf.constant(100.0)])
    np.testing.assert_allclose(g, 10.0 * 4.0 + 100.0 * 3.0)


def test_output_gradients_wrong_shape_raises():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tape.gradient(y, x, output_gradients=tf.constant([1.0, 2.0, 3.0]))


def test_gather_gradient_is_dense_sum():
    p = tf.constant([1.0, 2.0, 3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(p)
        y = tf.gather(p, [0, 2, 0]) * tf.constant([1.0, 10.0, 100.0])
    g = tape.gradient(y, p)
    assert isinstance(g, tf.Tensor)
    assert g.shape == (4,)
    np.testing.assert_array_equal(g, [101.0, 0.0, 10.0, 0.0])


# ---------------------------------------------------------------- unconnected gradients

def _unconnected_setup():
    x, z = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0, 5.0])
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch([x, z])
        y = tf.reduce_sum(x * x)
    return tape, y, x, z


def test_unconnected_gradients_none_by_default():
    tape, y, x, z = _unconnected_setup()
    gx, gz = tape.gradient(y, [x, z])
    assert gz is None
    np.testing.assert_allclose(gx, [2.0, 4.0])


@pytest.mark.parametrize("mode", [tf.UnconnectedGradients.NONE, "none"])
def test_unconnected_gradients_none_explicit(mode):
    tape, y, x, z = _unconnected_setup()
    assert tape.gradient(y, z, unconnected_gradients=mode) is None


@pytest.mark.parametrize("mode", [tf.UnconnectedGradients.ZERO, "zero"])
def test_unconnected_gradients_zero(mode):
    tape, y, x, z = _unconnected_setup()
    gx, gz = tape.gradient(y, [x, z], unconnected_gradients=mode)
    assert gz.shape == (3,) and gz.dtype == tf.float32
    np.testing.assert_array_equal(gz, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(gx, [2.0, 4.0])


def test_unconnected_gradients_invalid_value_raises():
    tape, y, x, z = _unconnected_setup()
    with pytest.raises(ValueError):
        tape.gradient(y, z, unconnected_gradients="sometimes")


def test_unconnected_variable_zero():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = w * 2.0
    g = tape.gradient(y, [v, w], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(g[0], [0.0, 0.0])
    np.testing.assert_allclose(g[1], 2.0)


# ---------------------------------------------------------------- persistence

def test_non_persistent_tape_second_gradient_raises_runtime_error():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)


def test_non_persistent_tape_jacobian_after_gradient_raises():
    x = tf.constant([2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        tape.jacobian(y, x)


def test_persistent_tape_allows_several_calls():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    np.testing.assert_allclose(tape.gradient(y, x), 6.0)
    np.testing.assert_allclose(tape.gradient(z, x), 4 * 27.0)
    np.testing.assert_allclose(tape.gradient(z, y), 18.0)
    np.testing.assert_allclose(tape.gradient(y, x), 6.0)
    np.testing.assert_allclose(tape.jacobian(y, x), 6.0)


def test_reentering_a_tape_continues_recording():
    x = tf.constant(2.0)
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        y = x * x
    with tape:
        z = y * x
    np.testing.assert_allclose(tape.gradient(z, x), 12.0)
    np.testing.assert_allclose(tape.gradient(y, x), 4.0)


def test_tape_cannot_be_entered_twice_at_once():
    tape = tf.GradientTape()
    with tape:
        with pytest.raises((RuntimeError, ValueError)):
            tape.__enter__()


# ---------------------------------------------------------------- stop_recording, reset

def test_stop_recording():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
        z = x * x * x
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(tape.gradient(z, x), 12.0)


def test_stop_recording_resumes_on_exit():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            a = x * 10.0
        y = a + x * x
    # a was computed unrecorded: only x * x contributes
    np.testing.assert_allclose(tape.gradient(y, x), 4.0)


def test_stop_recording_outside_context_raises():
    tape = tf.GradientTape()
    with pytest.raises(RuntimeError):
        with tape.stop_recording():
            pass


def test_gradient_inside_stop_recording_is_not_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        with tape.stop_recording():
            g = tape.gradient(y, x)
    np.testing.assert_allclose(g, 12.0)
    assert tape.gradient(g, x) is None


def test_stop_recording_pauses_only_its_own_tape():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                y = x * x
    assert inner.gradient(y, x) is None
    np.testing.assert_allclose(outer.gradient(y, x), 4.0)


def test_reset_forgets_recorded_ops():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * x * x
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(tape.gradient(z, x), 12.0)


def test_reset_forgets_watches():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.reset()
        z = x * x
    assert tape.gradient(z, x) is None


def test_reset_forgets_watched_variables():
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        _ = v * 2.0
        assert len(tape.watched_variables()) == 1
        tape.reset()
        assert tape.watched_variables() == ()


# ---------------------------------------------------------------- higher order

def test_nested_tapes_second_and_third_derivatives():
    x = tf.constant(2.0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = x ** 3
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    np.testing.assert_allclose(d1, 12.0)   # 3 x^2
    np.testing.assert_allclose(d2, 12.0)   # 6 x
    np.testing.assert_allclose(d3, 6.0)    # 6


def test_nested_tapes_second_derivative_of_variable():
    v = tf.Variable(0.5)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.sin(v)
        dy = inner.gradient(y, v)
    d2y = outer.gradient(dy, v)
    np.testing.assert_allclose(dy, np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(d2y, -np.sin(0.5), rtol=1e-6)


def test_gradient_inside_own_persistent_context_is_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 3
        dy = tape.gradient(y, x)
    d2y = tape.gradient(dy, x)
    np.testing.assert_allclose(dy, 12.0)
    np.testing.assert_allclose(d2y, 12.0)


def test_inner_gradient_outside_outer_tape_is_not_differentiable_further():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3
    dy = inner.gradient(y, x)  # computed after the outer tape exited: not recorded
    assert outer.gradient(dy, x) is None


# ---------------------------------------------------------------- stop_gradient

def test_stop_gradient_blocks_gradient():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.stop_gradient(x)
    np.testing.assert_allclose(tape.gradient(y, x), 3.0)


def test_stop_gradient_alone_is_unconnected():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stop_gradient(x * x)
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(y, 9.0)


# ---------------------------------------------------------------- dtypes and errors

def test_integer_source_gives_none_with_warning():
    x = tf.constant(3)
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="int32"):
            tape.watch(x)
        y = x * x
    with pytest.warns(UserWarning, match="int32"):
        g = tape.gradient(y, x)
    assert g is None


def test_integer_source_among_float_sources():
    x, n = tf.constant(2.0), tf.constant(3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.cast(n, tf.float32)
    with pytest.warns(UserWarning):
        gx, gn = tape.gradient(y, [x, n], unconnected_gradients="zero")
    assert gn is None
    np.testing.assert_allclose(gx, 3.0)


def test_non_tensor_source_raises_type_error_naming_element():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="element 1") as info:
        tape.gradient(y, [x, 2.0])
    assert "float" in str(info.value)


def test_gradient_through_broadcasting_sums_back():
    a = tf.constant([[1.0], [2.0], [3.0]])        # [3, 1]
    b = tf.constant([10.0, 20.0, 30.0, 40.0])    # [4]
    s = tf.constant(2.0)                           # []
    with tf.GradientTape() as tape:
        tape.watch([a, b, s])
        y = (a * b) * s
    ga, gb, gs = tape.gradient(y, [a, b, s])
    assert ga.shape == (3, 1) and gb.shape == (4,) and gs.shape == ()
    np.testing.assert_allclose(ga, np.full((3, 1), 100.0 * 2.0))
    np.testing.assert_allclose(gb, np.full(4, 6.0 * 2.0))
    np.testing.assert_allclose(gs, 6.0 * 100.0)


def test_gradient_after_assign_uses_value_read_at_op_time():
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = v * v          # read when v == 3
        v.assign(10.0)
        z = y + v          # read when v == 10
    # dy/dv = 2 * 3 (the value read by the op), dz/dv = 6 + 1
    np.testing.assert_allclose(tape.gradient(z, v), 7.0)
    np.testing.assert_allclose(v.numpy(), 10.0)


def test_gradient_after_assign_add_inside_tape():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        a = tf.reduce_sum(v * v)
        v.assign_add([1.0, 1.0])
    np.testing.assert_allclose(tape.gradient(a, v), [2.0, 4.0])


# ---------------------------------------------------------------- threads

def test_tape_does_not_record_ops_from_another_thread():
    x = tf.constant(2.0)
    out = {}

    def work():
        out["y"] = x * x

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        th = threading.Thread(target=work)
        th.start()
        th.join()
        z = x * 3.0
    assert tape.gradient(out["y"], x) is None
    np.testing.assert_allclose(tape.gradient(z, x), 3.0)


def test_tape_in_another_thread_works_independently():
    x = tf.constant(2.0)
    out = {}

    def work():
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x * x
        out["g"] = t.gradient(y, x)

    with tf.GradientTape() as tape:
        tape.watch(x)
        th = threading.Thread(target=work)
        th.start()
        th.join()
        z = x * x
    np.testing.assert_allclose(out["g"], 12.0)
    np.testing.assert_allclose(tape.gradient(z, x), 4.0)


def test_tapes_in_concurrent_threads():
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def work(k):
        try:
            x = tf.constant(float(k))
            with tf.GradientTape() as t:
                t.watch(x)
                barrier.wait(timeout=5)
                y = x ** 2
                for _ in range(50):
                    y = y * 1.0
                barrier.wait(timeout=5)
            results[k] = float(t.gradient(y, x))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (2, 5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert results == {2: 4.0, 5: 10.0}


# ---------------------------------------------------------------- integer and bool outputs
def _through_int(x):
    """x -> an int32 result (3 x truncated) -> back to float: no derivative on the way."""
    return tf.cast(tf.cast(x * 3.0, tf.int32), x.dtype)


def test_no_gradient_flows_through_an_integer_output():
    x = tf.constant([1.5, 2.0], tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        as_int = tf.cast(x * 3.0, tf.int32)
        as_bool = x > 1.7
        back = _through_int(x) + x
    assert tape.gradient(as_int, x) is None
    assert tape.gradient(as_bool, x) is None
    assert tape.jacobian(as_int, x) is None
    np.testing.assert_array_equal(tape.gradient(back, x).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(tape.jacobian(back, x).numpy(), np.eye(2))


def _int_gradient(x):
    """tape.gradient of an int32 result: None (TensorFlow's answer)."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cast(x * 3.0, tf.int32)
    return tape.gradient(y, x)


def test_no_gradient_of_an_integer_output_traced_or_batched():
    x = tf.constant([1.5, 2.0], tf.float64)
    assert tf.function(_int_gradient)(x) is None
    assert tf.vmap(_int_gradient)(tf.reshape(x, [2, 1])) is None


@pytest.mark.parametrize("transform", [tf.jacrev, tf.jacfwd, tf.jacobian])
def test_transforms_refuse_an_integer_output(transform):
    # An integer output's Jacobian would be zeros by construction: refused, as JAX does
    # (tests/test_transforms.py has every transform).
    with pytest.raises(TypeError, match="has dtype int32"):
        transform(lambda v: tf.cast(v * 3.0, tf.int32))(tf.constant([1.5, 2.0], tf.float64))


# ---------------------------------------------------------------- a target that is its source
def test_gradient_of_a_source_with_respect_to_itself_is_ones():
    v = tf.Variable([1.0, 2.0])
    x = tf.constant([3.0, 4.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(v, v).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(tape.gradient(x, x).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(tape.jacobian(v, v).numpy(), np.eye(2))
    grads = tape.gradient([v, x], [v, x])
    np.testing.assert_array_equal(grads[0].numpy(), [1.0, 1.0])


def test_gradient_of_an_unwatched_source_with_respect_to_itself_is_none():
    x = tf.constant([3.0, 4.0])
    frozen = tf.Variable([1.0, 2.0], trainable=False)
    with tf.GradientTape(persistent=True) as tape:
        pass
    assert tape.gradient(x, x) is None
    assert tape.gradient(frozen, frozen) is None
    with tf.GradientTape(watch_accessed_variables=False) as quiet:
        v = tf.Variable([1.0])
    assert quiet.gradient(v, v) is None
