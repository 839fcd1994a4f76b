"""`vmap`, and the vectorized `GradientTape.jacobian`/`batch_jacobian` built on it.

Every batched result is checked against a Python loop over the examples.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import tapeflow as tf
import tapeflow.core
from tapeflow.batching import BatchingError

RNG_SEED = 1234


def _rng():
    return np.random.default_rng(RNG_SEED)


def _np(x):
    return np.asarray(x)


def _loop(f, *xs, in_axes=0):
    """np.stack of f on each example (batch on axis 0, or None for shared)."""
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(xs)
    n = next(np.shape(x)[0] for x, a in zip(xs, axes) if a is not None)
    outs = []
    for i in range(n):
        args = [tf.constant(_np(x)) if a is None else tf.constant(_np(x)[i])
                for x, a in zip(xs, axes)]
        outs.append(_np(f(*args)))
    return np.stack(outs)


def _mlp_params(dtype=np.float64, n_in=4, n_hidden=6, n_out=3):
    rng = _rng()
    return {
        "W1": tf.constant(rng.normal(size=(n_in, n_hidden)).astype(dtype)),
        "b1": tf.constant(rng.normal(size=(n_hidden,)).astype(dtype)),
        "W2": tf.constant(rng.normal(size=(n_hidden, n_out)).astype(dtype)),
        "b2": tf.constant(rng.normal(size=(n_out,)).astype(dtype)),
    }


def _mlp(x, p):
    """matmul, broadcasting add, tanh, sigmoid: [b, n_in] -> [b, n_out]."""
    h = tf.tanh(tf.matmul(x, p["W1"]) + p["b1"])
    return tf.sigmoid(tf.matmul(h, p["W2"]) + p["b2"])


# ============================================================================ in_axes
def test_in_axes_int_zero_maps_over_rows():
    x = _rng().normal(size=(4, 3))
    f = lambda a: tf.reduce_sum(tf.sin(a) * a)
    np.testing.assert_allclose(tf.vmap(f)(x), _loop(f, x), rtol=1e-14)


def test_in_axes_int_one_maps_over_columns():
    x = _rng().normal(size=(3, 5))
    f = lambda a: tf.reduce_sum(a * a) + a[0]
    got = tf.vmap(f, in_axes=1)(x)
    assert got.shape == (5,)
    np.testing.assert_allclose(got, _loop(f, x.T), rtol=1e-14)


def test_in_axes_negative_is_counted_from_the_end():
    x = _rng().normal(size=(3, 5))
    f = lambda a: a * a[1]
    np.testing.assert_allclose(tf.vmap(f, in_axes=-1)(x), _loop(f, x.T), rtol=1e-14)


def test_in_axes_none_shares_an_argument_between_examples():
    rng = _rng()
    xs, w = rng.normal(size=(4, 3)), rng.normal(size=(3,))
    f = lambda a, b: tf.reduce_sum(a * b)
    got = tf.vmap(f, in_axes=(0, None))(xs, w)
    np.testing.assert_allclose(got, xs @ w, rtol=1e-14)


def test_in_axes_list_is_accepted_like_a_tuple():
    rng = _rng()
    xs, w = rng.normal(size=(4, 3)), rng.normal(size=(3,))
    got = tf.vmap(lambda a, b: a * b, in_axes=[0, None])(xs, w)
    np.testing.assert_allclose(got, xs * w, rtol=1e-14)


def test_in_axes_different_axis_per_argument():
    rng = _rng()
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(3, 4))  # batch of 4 on axis 0 / axis 1
    f = lambda u, v: u * v
    got = tf.vmap(f, in_axes=(0, 1))(a, b)
    np.testing.assert_allclose(got, a * b.T, rtol=1e-14)


def test_in_axes_dict_structure_matches_a_dict_argument():
    rng = _rng()
    p = {"a": rng.normal(size=(4, 3)), "b": rng.normal(size=(3,))}
    got = tf.vmap(lambda d: d["a"] * d["b"], in_axes=({"a": 0, "b": None},))(p)
    np.testing.assert_allclose(got, p["a"] * p["b"], rtol=1e-14)


def test_in_axes_int_applies_to_every_leaf_of_a_nested_argument():
    rng = _rng()
    p = {"a": rng.normal(size=(4, 3)), "b": [rng.normal(size=(4,))]}
    got = tf.vmap(lambda d: d["a"] * d["b"][0])(p)  # in_axes=0 for every leaf
    np.testing.assert_allclose(got, p["a"] * p["b"][0][:, None], rtol=1e-14)


def test_in_axes_prefix_structure_broadcasts_to_subtrees():
    rng = _rng()
    pair = [rng.normal(size=(4, 3)), rng.normal(size=(3,))]
    q = rng.normal(size=(4, 3))
    # [0, None] is a prefix for the list argument, 0 for the whole second argument.
    got = tf.vmap(lambda p, r: p[0] * p[1] + r, in_axes=([0, None], 0))(pair, q)
    np.testing.assert_allclose(got, pair[0] * pair[1] + q, rtol=1e-14)


def test_unbatched_argument_may_be_a_python_scalar():
    xs = _rng().normal(size=(4,))
    got = tf.vmap(lambda a, k: a * k, in_axes=(0, None))(xs, 3)
    np.testing.assert_allclose(got, xs * 3, rtol=1e-14)


# ============================================================================ out_axes
def test_out_axes_one_puts_batch_on_second_axis():
    x = _rng().normal(size=(4, 3))
    got = tf.vmap(lambda a: a * 2.0, out_axes=1)(x)
    assert got.shape == (3, 4)
    np.testing.assert_allclose(got, (2.0 * x).T, rtol=1e-14)


def test_out_axes_negative_puts_batch_last():
    x = _rng().normal(size=(4, 3, 2))
    got = tf.vmap(lambda a: a + 1.0, out_axes=-1)(x)
    assert got.shape == (3, 2, 4)
    np.testing.assert_allclose(got, np.moveaxis(x + 1.0, 0, -1), rtol=1e-14)


def test_out_axes_none_for_an_output_independent_of_the_batch():
    xs = _rng().normal(size=(4, 3))
    w = np.array([1.0, 2.0, 3.0])
    y, c = tf.vmap(lambda a, b: (a * b, tf.reduce_sum(b)), in_axes=(0, None),
                   out_axes=(0, None))(xs, w)
    assert c.shape == ()
    np.testing.assert_allclose(c, 6.0)
    np.testing.assert_allclose(y, xs * w, rtol=1e-14)


def test_out_axes_nested_structure_matches_outputs():
    x = _rng().normal(size=(4, 3))
    w = tf.constant(np.array([5.0, 6.0]))
    out = tf.vmap(lambda a: {"s": tf.reduce_sum(a), "v": [a * 2.0, w]},
                  out_axes={"s": 0, "v": [1, None]})(x)
    np.testing.assert_allclose(out["s"], x.sum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(out["v"][0], (2.0 * x).T, rtol=1e-14)
    np.testing.assert_array_equal(out["v"][1], [5.0, 6.0])


def test_out_axes_none_on_a_batched_output_raises():
    x = _rng().normal(size=(4, 3))
    with pytest.raises(ValueError, match="out_axes"):
        tf.vmap(lambda a: a * 2.0, out_axes=None)(x)


def test_out_axes_out_of_range_raises():
    x = _rng().normal(size=(4, 3))
    with pytest.raises(ValueError):
        tf.vmap(lambda a: a * 2.0, out_axes=2)(x)  # outputs are rank 2: valid -2..1


def test_output_not_depending_on_batch_is_broadcast():
    x = _rng().normal(size=(4, 3))
    w = tf.constant(np.array([1.0, 2.0], dtype=np.float64))
    got = tf.vmap(lambda a: w * 3.0)(x)
    assert got.shape == (4, 2)
    np.testing.assert_array_equal(got, np.tile([3.0, 6.0], (4, 1)))


def test_broadcast_output_respects_out_axes():
    x = _rng().normal(size=(4, 3))
    w = tf.constant(np.array([1.0, 2.0], dtype=np.float64))
    got = tf.vmap(lambda a: (a, w), out_axes=(0, 1))(x)[1]
    assert got.shape == (2, 4)
    np.testing.assert_array_equal(got, np.tile([[1.0], [2.0]], (1, 4)))


def test_returning_an_argument_unchanged_moves_its_batch_axis():
    x = _rng().normal(size=(3, 4))
    got = tf.vmap(lambda a: a, in_axes=1)(x)
    np.testing.assert_array_equal(got, x.T)


# ============================================================================ nesting
def test_nested_vmap_maps_over_two_axes():
    x = _rng().normal(size=(2, 3, 4))
    f = lambda a: tf.reduce_sum(tf.tanh(a) * a)  # per row of length 4
    got = tf.vmap(tf.vmap(f))(x)
    want = np.array([[_np(f(tf.constant(x[i, j]))) for j in range(3)] for i in range(2)])
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-14)


def test_nested_vmap_with_different_in_axes_per_level_is_an_outer_product():
    rng = _rng()
    a, b = rng.normal(size=(3,)), rng.normal(size=(5,))
    inner = tf.vmap(lambda u, v: u * v, in_axes=(None, 0))   # over b
    outer = tf.vmap(inner, in_axes=(0, None))                # over a
    np.testing.assert_allclose(outer(a, b), np.outer(a, b), rtol=1e-14)


def test_nested_vmap_inner_axis_refers_to_per_example_shape():
    x = _rng().normal(size=(2, 3, 4))
    # outer over axis 0 (2), inner over axis 1 of the [3, 4] example (4): result [2, 4].
    got = tf.vmap(tf.vmap(lambda c: tf.reduce_sum(c * c), in_axes=1))(x)
    np.testing.assert_allclose(got, (x * x).sum(axis=1), rtol=1e-14)


# ============================================================================ derivatives
def _per_example_loss(w, x):
    return tf.reduce_sum(tf.tanh(w * x) ** 2) + tf.reduce_sum(tf.sigmoid(x) * w)


def _grad_w(w, x):
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = _per_example_loss(w, x)
    return tape.gradient(loss, w)


def test_gradient_tape_inside_vmap_gives_per_example_gradients():
    rng = _rng()
    w, xs = tf.constant(rng.normal(size=(3,))), rng.normal(size=(5, 3))
    got = tf.vmap(_grad_w, in_axes=(None, 0))(w, xs)
    assert got.shape == (5, 3)
    np.testing.assert_allclose(got, _loop(_grad_w, w, xs, in_axes=(None, 0)), rtol=1e-13)


def test_gradient_tape_inside_vmap_per_example_gradient_of_variable():
    rng = _rng()
    v = tf.Variable(rng.normal(size=(3,)))
    xs = rng.normal(size=(4, 3))

    def gv(x):
        with tf.GradientTape() as tape:  # the variable is watched on access
            loss = tf.reduce_sum(tf.tanh(v * x) ** 2)
        return tape.gradient(loss, v)

    got = tf.vmap(gv)(xs)
    vv = _np(v.numpy())
    want = 2 * np.tanh(vv * xs) * (1 - np.tanh(vv * xs) ** 2) * xs
    assert got.shape == (4, 3)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_gradient_tape_inside_vmap_gradient_of_batched_input():
    xs = _rng().normal(size=(5, 3))

    def gx(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x)
        return tape.gradient(y, x)

    np.testing.assert_allclose(tf.vmap(gx)(xs), np.sin(xs) + xs * np.cos(xs), rtol=1e-13)


def test_forward_accumulator_inside_vmap_gives_per_example_jvps():
    rng = _rng()
    xs, ts = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))

    def jvp1(x, t):
        with tf.autodiff.ForwardAccumulator(x, t) as acc:
            y = tf.reduce_sum(tf.exp(x) * x)
        return acc.jvp(y)

    got = tf.vmap(jvp1)(xs, ts)
    np.testing.assert_allclose(got, ((np.exp(xs) * (1 + xs)) * ts).sum(axis=1), rtol=1e-13)


def test_gradient_tape_around_vmap_equals_loop_of_gradients():
    rng = _rng()
    xs = tf.constant(rng.normal(size=(5, 3)))
    w = tf.constant(rng.normal(size=(3,)))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        total = tf.reduce_sum(tf.vmap(_per_example_loss, in_axes=(None, 0))(w, xs))
    got = tape.gradient(total, xs)

    def gx(x):
        with tf.GradientTape() as t:
            t.watch(x)
            loss = _per_example_loss(w, x)
        return t.gradient(loss, x)

    np.testing.assert_allclose(got, _loop(gx, xs), rtol=1e-13)


def test_gradient_tape_around_vmap_gradient_of_shared_argument_sums_examples():
    rng = _rng()
    xs = tf.constant(rng.normal(size=(5, 3)))
    w = tf.constant(rng.normal(size=(3,)))
    with tf.GradientTape() as tape:
        tape.watch(w)
        total = tf.reduce_sum(tf.vmap(_per_example_loss, in_axes=(None, 0))(w, xs))
    got = tape.gradient(total, w)
    np.testing.assert_allclose(got, _loop(_grad_w, w, xs, in_axes=(None, 0)).sum(axis=0),
                               rtol=1e-13)


def test_gradient_tape_around_vmap_with_in_axes_one():
    xs = tf.constant(_rng().normal(size=(3, 5)))  # batch on axis 1
    with tf.GradientTape() as tape:
        tape.watch(xs)
        total = tf.reduce_sum(tf.vmap(lambda a: tf.reduce_sum(a ** 3.0) * a[0], in_axes=1)(xs))
    x = _np(xs)
    want = 3 * x ** 2 * x[0]
    want[0] += (x ** 3).sum(axis=0)
    np.testing.assert_allclose(tape.gradient(total, xs), want, rtol=1e-13)


def test_forward_accumulator_around_vmap_equals_loop_of_jvps():
    rng = _rng()
    xs = tf.constant(rng.normal(size=(5, 3)))
    ts = tf.constant(rng.normal(size=(5, 3)))
    f = lambda a: tf.reduce_sum(tf.tanh(a) * tf.sin(a))
    with tf.autodiff.ForwardAccumulator(xs, ts) as acc:
        out = tf.vmap(f)(xs)
    want = np.stack([_np(tf.jvp(f, (xs[i],), (ts[i],))[1]) for i in range(5)])
    np.testing.assert_allclose(acc.jvp(out), want, rtol=1e-13)


# ============================================================================ chunk_size
def test_chunk_size_gives_the_same_result_as_one_pass():
    rng = _rng()
    w, xs = tf.constant(rng.normal(size=(3,))), rng.normal(size=(7, 3))
    whole = tf.vmap(_grad_w, in_axes=(None, 0))(w, xs)
    chunked = tf.vmap(_grad_w, in_axes=(None, 0), chunk_size=3)(w, xs)  # 3 + 3 + 1
    np.testing.assert_array_equal(chunked, whole)
    np.testing.assert_allclose(chunked, _loop(_grad_w, w, xs, in_axes=(None, 0)), rtol=1e-13)


def test_chunk_size_with_out_axes_and_unbatched_output():
    xs = _rng().normal(size=(5, 3))
    w = tf.constant(np.array([1.0, 2.0, 3.0]))
    f = lambda a: (a * w, tf.reduce_sum(w))
    y, c = tf.vmap(f, out_axes=(1, None), chunk_size=2)(xs)
    np.testing.assert_allclose(y, (xs * _np(w)).T, rtol=1e-14)
    np.testing.assert_allclose(c, 6.0)


def test_chunk_size_must_be_positive():
    with pytest.raises(ValueError, match="chunk_size"):
        tf.vmap(lambda a: a, chunk_size=0)


# ============================================================================ custom_gradient
@tf.custom_gradient
def _sin_with_fake_grad(x):
    """Forward sin(x); the 'gradient' is 10 * x * dy (deliberately not cos)."""
    def grad(dy):
        return dy * 10.0 * x
    return tf.sin(x), grad


@tf.custom_gradient
def _sin_with_constant_grad(x):
    """Forward sin(x); the 'gradient' is 10 * dy (grad_fn closes over nothing)."""
    def grad(dy):
        return dy * 10.0
    return tf.sin(x), grad


def test_vmap_of_custom_gradient_forward_values_equal_loop():
    xs = _rng().normal(size=(4, 3))
    f = lambda a: _sin_with_fake_grad(a) * a
    np.testing.assert_allclose(tf.vmap(f)(xs), _loop(f, xs), rtol=1e-14)


def test_vmap_of_custom_gradient_per_example_gradient_uses_custom_rule():
    xs = _rng().normal(size=(4, 3))

    def gx(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(_sin_with_fake_grad(x))
        return tape.gradient(y, x)

    np.testing.assert_allclose(tf.vmap(gx)(xs), 10.0 * xs, rtol=1e-14)


def test_gradient_around_vmap_of_custom_gradient_without_closure():
    xs = tf.constant(_rng().normal(size=(4, 3)))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        total = tf.reduce_sum(tf.vmap(lambda a: _sin_with_constant_grad(a) * a)(xs))
    x = _np(xs)
    np.testing.assert_allclose(tape.gradient(total, xs), 10.0 * x + np.sin(x), rtol=1e-14)


def test_gradient_around_vmap_of_custom_gradient_equals_loop():
    xs = tf.constant(_rng().normal(size=(4, 3)))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        total = tf.reduce_sum(tf.vmap(_sin_with_fake_grad)(xs))
    np.testing.assert_allclose(tape.gradient(total, xs), 10.0 * _np(xs), rtol=1e-14)


def test_forward_accumulator_around_vmap_of_custom_gradient_equals_loop():
    rng = _rng()
    xs, ts = tf.constant(rng.normal(size=(4, 3))), tf.constant(rng.normal(size=(4, 3)))
    with tf.autodiff.ForwardAccumulator(xs, ts) as acc:
        out = tf.vmap(_sin_with_fake_grad)(xs)
    np.testing.assert_allclose(acc.jvp(out), 10.0 * _np(xs) * _np(ts), rtol=1e-14)


def test_gradient_around_vmap_of_recompute_grad_equals_loop():
    g = tf.recompute_grad(lambda a: a * a)
    xs = tf.constant(np.array([1.0, 2.0, 3.0]))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        total = tf.reduce_sum(tf.vmap(g)(xs))
    np.testing.assert_allclose(tape.gradient(total, xs), [2.0, 4.0, 6.0])


def _scale_by_variable(v, grad_uses_x):
    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            dv = tf.reduce_sum(dy * x) if grad_uses_x else tf.reduce_sum(dy)
            return dy * 3.0, [dv * 7.0]  # deliberately not the true gradient
        return x * v, grad
    return f


def test_custom_gradient_reading_variable_inside_vmap_sums_variable_gradient():
    v = tf.Variable(np.float64(1.5))
    f = _scale_by_variable(v, grad_uses_x=False)
    xs = tf.constant(_rng().normal(size=(4, 3)))
    with tf.GradientTape() as tape:
        tape.watch(xs)
        total = tf.reduce_sum(tf.vmap(f)(xs))
    gx, gv = tape.gradient(total, [xs, v])
    np.testing.assert_allclose(gx, np.full((4, 3), 3.0))
    np.testing.assert_allclose(gv, 7.0 * 12)  # 7 * sum(dy) over 4 examples of 3


def test_custom_gradient_variable_gradient_from_inputs_summed_over_batch():
    v = tf.Variable(np.float64(1.5))
    f = _scale_by_variable(v, grad_uses_x=True)
    xs = tf.constant(_rng().normal(size=(4, 3)))
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(tf.vmap(f)(xs))
    np.testing.assert_allclose(tape.gradient(total, v), 7.0 * _np(xs).sum(), rtol=1e-13)


# ============================================================================ errors
def test_mismatched_batch_sizes_raise_invalid_argument_naming_sizes():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.vmap(lambda a, b: a * b[0])(np.ones((2, 3)), np.ones((5, 3)))
    assert "2" in str(info.value) and "5" in str(info.value)


def test_in_axes_tuple_longer_than_arguments_raises_value_error():
    with pytest.raises(ValueError, match="in_axes"):
        tf.vmap(lambda a, b: a * b, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))


def test_in_axes_dict_keys_not_matching_argument_raise_value_error():
    with pytest.raises(ValueError, match="in_axes"):
        tf.vmap(lambda d: d["a"], in_axes=({"a": 0, "z": None},))({"a": np.ones(3), "b": np.ones(3)})


def test_in_axes_structure_where_argument_is_a_tensor_raises_value_error():
    with pytest.raises(ValueError, match="in_axes"):
        tf.vmap(lambda a: a, in_axes=([0, 0],))(np.ones((2, 3)))


def test_in_axes_out_of_range_raises():
    with pytest.raises(ValueError, match="out of range"):
        tf.vmap(lambda a: a, in_axes=2)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="out of range"):
        tf.vmap(lambda a: a, in_axes=-3)(np.ones((2, 3)))


def test_batching_a_scalar_argument_is_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        tf.vmap(lambda a: a)(np.float64(1.0))


def test_all_in_axes_none_raises():
    with pytest.raises(ValueError, match="None"):
        tf.vmap(lambda a, b: a * b, in_axes=None)(np.ones(3), np.ones(3))


def test_float_of_batched_value_raises_batching_error_pointing_to_where():
    with pytest.raises(BatchingError, match="tf.where"):
        tf.vmap(lambda a: a * float(a[0]))(np.ones((2, 3)))


def test_python_if_on_batched_value_raises_batching_error():
    def f(a):
        if a > 0:
            return a
        return -a

    with pytest.raises(BatchingError, match="tf.where"):
        tf.vmap(f)(np.array([1.0, -2.0]))


def test_numpy_of_batched_value_raises_batching_error():
    with pytest.raises(BatchingError, match="tf.where"):
        tf.vmap(lambda a: tf.constant(a.numpy() * 2))(np.ones((2, 3)))


def test_np_asarray_of_batched_value_raises_batching_error():
    with pytest.raises(BatchingError):
        tf.vmap(lambda a: tf.constant(np.asarray(a)))(np.ones((2, 3)))


def test_python_read_of_derived_batched_value_raises():
    with pytest.raises(BatchingError):
        tf.vmap(lambda a: a * float(tf.reduce_max(tf.tanh(a))))(np.ones((2, 3)))


def test_python_read_of_unbatched_argument_is_allowed():
    xs = np.array([1.0, 2.0, 3.0])
    got = tf.vmap(lambda a, c: a * float(c), in_axes=(0, None))(xs, tf.constant(np.float64(2.5)))
    np.testing.assert_allclose(got, 2.5 * xs)


def test_batching_error_is_a_not_implemented_error():
    assert issubclass(BatchingError, NotImplementedError)


def test_function_returning_numbers_or_arrays_gives_them_per_example():
    # As JAX: a Python number or NumPy array output is the same for every example.
    np.testing.assert_array_equal(tf.vmap(lambda a: 3.0)(np.ones((2, 3))).numpy(), [3.0, 3.0])
    out = tf.vmap(lambda a: (a, np.array([1.0, 2.0])))(np.ones((2, 3)))
    np.testing.assert_array_equal(out[1].numpy(), [[1.0, 2.0], [1.0, 2.0]])


def test_function_returning_a_non_numeric_output_raises_type_error():
    with pytest.raises(TypeError, match="vmap: argument `output 0 of the function`"):
        tf.vmap(lambda a: "three")(np.ones((2, 3)))


@pytest.fixture
def nobatch_primitive():
    name = f"test_nobatch_{uuid.uuid4().hex[:12]}"
    prim = tapeflow.core.Primitive(name, lambda x: x * 2.0)  # no rules at all
    try:
        yield prim
    finally:
        tapeflow.core._REGISTRY.pop(name, None)


def test_primitive_without_batching_rule_runs_per_example_with_a_warning_naming_it(
        nobatch_primitive):
    prim = nobatch_primitive
    # Outside vmap the primitive works ...
    np.testing.assert_array_equal(tapeflow.core.bind(prim, tf.constant([1.0, 2.0])), [2.0, 4.0])
    # ... inside vmap on a batched value it runs once per example (the catalog's default
    # batching rule), never silently: a warning names it.
    xs = np.arange(6.0).reshape(3, 2)
    with pytest.warns(UserWarning, match=f"{prim.name}.*no batching rule"):
        got = tf.vmap(lambda a: tapeflow.core.bind(prim, a))(xs)
    np.testing.assert_array_equal(got, 2 * xs)
    with pytest.raises(BatchingError, match=prim.name):  # nothing to loop over
        tf.vmap(lambda a: tapeflow.core.bind(prim, a))(np.ones((0, 2)))


def test_primitive_without_batching_rule_on_unbatched_input_runs(nobatch_primitive):
    prim = nobatch_primitive
    c = tf.constant(np.array([1.0, 2.0]))
    got = tf.vmap(lambda a, b: a + tapeflow.core.bind(prim, b), in_axes=(0, None))(
        np.zeros((3, 2)), c)
    np.testing.assert_array_equal(got, np.tile([2.0, 4.0], (3, 1)))


def test_fixture_removed_throwaway_primitives_from_registry():
    assert not [n for n in tapeflow.core.registry() if n.startswith("test_nobatch_")]


# ============================================================================ tape jacobians
def _mlp_tape(dtype=np.float64, batch=3):
    p = _mlp_params(dtype)
    x = tf.constant(_rng().normal(size=(batch, 4)).astype(dtype))
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch([x, p])
        y = _mlp(x, p)                         # matrix target [b, 3]
        s = tf.reduce_sum(y * y, axis=1)       # vector target [b]
    return tape, x, p, y, s


def _assert_structures_equal_bitwise(a, b):
    fa, fb = tf.nest.flatten(a), tf.nest.flatten(b)
    assert len(fa) == len(fb)
    for u, v in zip(fa, fb):
        assert (u is None) == (v is None)
        if u is not None:
            assert u.dtype == v.dtype
            np.testing.assert_array_equal(_np(u), _np(v))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("which", ["vector", "matrix"])
def test_jacobian_vectorized_equals_loop_bitwise(dtype, which):
    tape, x, p, y, s = _mlp_tape(dtype)
    target = s if which == "vector" else y
    sources = {"x": x, "layers": [p["W1"], (p["b1"], p["W2"])], "b2": p["b2"]}
    fast = tape.jacobian(target, sources)
    slow = tape.jacobian(target, sources, experimental_use_pfor=False)
    assert fast["layers"][1][1].shape == tuple(target.shape) + (6, 3)
    _assert_structures_equal_bitwise(fast, slow)


def test_jacobian_matches_finite_differences():
    tape, x, p, y, s = _mlp_tape(np.float64)
    jac = _np(tape.jacobian(s, x))
    x0, eps = _np(x), 1e-6
    fd = np.zeros(s.shape + x.shape)
    for idx in np.ndindex(*x0.shape):
        d = np.zeros_like(x0)
        d[idx] = eps
        f = lambda z: _np(tf.reduce_sum(_mlp(tf.constant(z), p) ** 2, axis=1))
        fd[(slice(None),) + idx] = (f(x0 + d) - f(x0 - d)) / (2 * eps)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)


def test_jacobian_parallel_iterations_chunks_give_same_result():
    tape, x, p, y, s = _mlp_tape(np.float64, batch=4)
    whole = tape.jacobian(y, [x, p["W1"]])
    chunked = tape.jacobian(y, [x, p["W1"]], parallel_iterations=5)  # 12 rows: 5 + 5 + 2
    _assert_structures_equal_bitwise(chunked, whole)


def test_jacobian_unconnected_source_none_by_default():
    tape, x, p, y, s = _mlp_tape()
    other = tf.constant(np.ones((2, 2)))
    tape.watch(other)  # watched but not used
    fast = tape.jacobian(s, [x, other])
    slow = tape.jacobian(s, [x, other], experimental_use_pfor=False)
    assert fast[1] is None and slow[1] is None
    assert fast[0] is not None


@pytest.mark.parametrize("pfor", [True, False])
def test_jacobian_unconnected_source_zero_has_jacobian_shape(pfor):
    tape, x, p, y, s = _mlp_tape()
    other = tf.constant(np.ones((2, 2)))
    jac = tape.jacobian(y, [x, other], unconnected_gradients=tf.UnconnectedGradients.ZERO,
                        experimental_use_pfor=pfor)[1]
    assert jac.shape == (3, 3, 2, 2)
    assert jac.dtype == tf.float64
    np.testing.assert_array_equal(jac, np.zeros((3, 3, 2, 2)))


def test_jacobian_of_scalar_target_is_gradient():
    tape, x, p, y, s = _mlp_tape()
    with tf.GradientTape(persistent=True) as t2:
        t2.watch(x)
        total = tf.reduce_sum(_mlp(x, p))
    jac = t2.jacobian(total, x)
    assert jac.shape == x.shape
    np.testing.assert_array_equal(jac, t2.gradient(total, x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_batch_jacobian_vectorized_equals_loop_bitwise(dtype):
    tape, x, p, y, s = _mlp_tape(dtype, batch=4)
    fast = tape.batch_jacobian(y, x)
    slow = tape.batch_jacobian(y, x, experimental_use_pfor=False)
    assert fast.shape == (4, 3, 4)
    _assert_structures_equal_bitwise(fast, slow)


def test_batch_jacobian_parallel_iterations_gives_same_result():
    tape, x, p, y, s = _mlp_tape(np.float64, batch=4)
    _assert_structures_equal_bitwise(tape.batch_jacobian(y, x, parallel_iterations=2),
                                     tape.batch_jacobian(y, x))


def test_batch_jacobian_equals_loop_of_per_example_jacobians():
    tape, x, p, y, s = _mlp_tape(np.float64, batch=4)
    got = tape.batch_jacobian(y, x)
    want = []
    for i in range(4):
        xi = tf.constant(_np(x)[i])
        with tf.GradientTape() as t:
            t.watch(xi)
            yi = _mlp(tf.reshape(xi, (1, 4)), p)[0]
        want.append(_np(t.jacobian(yi, xi)))
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("pfor", [True, False])
def test_batch_jacobian_unconnected_source(pfor):
    x = tf.constant(np.ones((2, 3)))
    other = tf.constant(np.ones((2, 5)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = x * 2.0
    assert tape.batch_jacobian(y, other, experimental_use_pfor=pfor) is None
    zero = tape.batch_jacobian(y, other, unconnected_gradients="zero", experimental_use_pfor=pfor)
    assert zero.shape == (2, 3, 5)
    np.testing.assert_array_equal(zero, np.zeros((2, 3, 5)))


def test_jacobian_target_is_source_gives_identity():
    x = tf.constant(np.array([1.0, 2.0, 3.0]))
    with tf.GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.jacobian(x, x), np.eye(3))


def _nested_fn(a):
    return tf.stack([a[0] * a[1], tf.sin(a[2]) * a[0], tf.reduce_sum(a ** 3.0)])


@pytest.mark.parametrize("pfor", [True, False])
def test_outer_tape_differentiates_vectorized_inner_jacobian(pfor):
    x = tf.constant(np.array([0.3, -0.7, 1.1]))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape(persistent=True) as inner:
            inner.watch(x)
            y = _nested_fn(x)
        jac = inner.jacobian(y, x, experimental_use_pfor=pfor)
    got = _np(outer.gradient(jac, x))
    a0, _, a2 = _np(x)
    # d/da of sum_ij dy_i/da_j = a1 + a0 + sin a2 + a0 cos a2 + 3 (a0^2 + a1^2 + a2^2)
    want = np.array([1 + np.cos(a2), 1.0, np.cos(a2) - a0 * np.sin(a2)]) + 6 * _np(x)
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_outer_vectorized_jacobian_of_inner_gradient_is_hessian():
    x = tf.constant(np.array([0.3, -0.7, 1.1]))
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(_nested_fn(x) ** 2.0)
        g = inner.gradient(y, x)
    fast = outer.jacobian(g, x)
    slow = outer.jacobian(g, x, experimental_use_pfor=False)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_allclose(fast, tf.hessian(lambda a: tf.reduce_sum(_nested_fn(a) ** 2.0))(
        _np(x)), rtol=1e-13)
