"""Python control flow on tensor values in traced functions: guards and retracing.

A value read while tracing (`if` on a tensor, float(), int(), bool(), .numpy()) becomes
a guard: a replay whose value differs is abandoned and the function retraced for the
other branch, without committing its variable writes twice. With guards="error" such
a read raises, naming the line. Frequent retracing warns, naming the line too.
"""

from __future__ import annotations

import copy
import os
import pickle
import warnings

import numpy as np
import pytest
from graph_helpers import X0, X1, _c, _close

import tapeflow as tf
from tapeflow.graph import TracingError


def _line_of(marker: str) -> int:
    """The 1-based line of this file that contains `marker` (in a trailing comment)."""
    with open(__file__) as fh:
        hits = [i for i, line in enumerate(fh, 1) if line.rstrip().endswith("# " + marker)]
    assert len(hits) == 1, marker
    return hits[0]


def test_if_on_tensor_value_retraces_for_the_other_branch():
    runs = []

    def f(x):
        runs.append(1)
        if tf.reduce_sum(x) > 0:
            return x * 2.0
        return -x

    traced = tf.function(f)
    _close(traced(_c(1.0, 2.0)), [2.0, 4.0])
    _close(traced(_c(-3.0, 1.0)), [3.0, -1.0])      # other branch: eager result
    assert traced.experimental_get_tracing_count() == 2
    _close(traced(_c(3.0, 4.0)), [6.0, 8.0])        # first branch again: cached
    _close(traced(_c(-5.0, -1.0)), [5.0, 1.0])      # second branch again: cached
    assert traced.experimental_get_tracing_count() == 2
    assert len(runs) == 2


def test_float_read_guards():
    def f(x):
        return x * float(x[0])

    traced = tf.function(f)
    _close(traced(_c(2.0, 3.0)), [4.0, 6.0])
    _close(traced(_c(2.0, 5.0)), [4.0, 10.0])      # same x[0]: replay is valid
    assert traced.experimental_get_tracing_count() == 1
    _close(traced(_c(3.0, 5.0)), [9.0, 15.0])
    assert traced.experimental_get_tracing_count() == 2


def test_a_read_zeros_sign_is_part_of_its_value():
    # Python tells -0.0 from 0.0: atan2(0, -0.0) is pi, atan2(0, 0.0) is 0.
    import math

    f = tf.function(lambda x: tf.constant(math.atan2(0.0, float(x))))
    g = tf.function(lambda x: tf.constant(np.signbit(x.numpy()).astype(np.float32)))
    h = tf.function(lambda z: tf.constant(math.copysign(1.0, complex(z).imag)))
    for v in (0.0, -0.0, -0.0, 0.0):
        assert float(f(tf.constant(v))) == np.float32(math.atan2(0.0, v))
        assert g(tf.constant([v, 1.0])).numpy().tolist() == [float(math.copysign(1, v) < 0), 0.0]
        assert float(h(tf.constant(complex(1.0, v)))) == math.copysign(1.0, v)
    assert f.experimental_get_tracing_count() == g.experimental_get_tracing_count() == 2
    k = tf.function(lambda x: tf.constant(int(x)))  # int() cannot see the sign: one trace
    assert int(k(tf.constant(0.0))) == int(k(tf.constant(-0.0))) == 0
    assert k.experimental_get_tracing_count() == 1


def test_int_read_guards():
    def f(x, n):
        total = x
        for _ in range(int(n)):
            total = total * 2.0
        return total

    traced = tf.function(f)
    n = lambda k: tf.constant(k, dtype=tf.int32)  # noqa: E731
    _close(traced(_c(1.0), n(2)), [4.0])
    _close(traced(_c(3.0), n(3)), [24.0])
    _close(traced(_c(1.0), n(0)), [1.0])
    _close(traced(_c(5.0), n(2)), [20.0])
    assert traced.experimental_get_tracing_count() == 3


def test_bool_read_guards():
    def f(x, flag):
        return x + 1.0 if bool(flag) else x - 1.0

    traced = tf.function(f)
    t, fl = tf.constant(True), tf.constant(False)
    _close(traced(_c(1.0), t), [2.0])
    _close(traced(_c(1.0), fl), [0.0])
    _close(traced(_c(5.0), t), [6.0])
    _close(traced(_c(5.0), fl), [4.0])
    assert traced.experimental_get_tracing_count() == 2


def test_numpy_read_guards():
    def f(x):
        arr = x.numpy()
        return x * 2.0 if arr[0] > arr[1] else x * 3.0

    traced = tf.function(f)
    for v in ([2.0, 1.0], [1.0, 2.0], [5.0, -1.0], [-5.0, 1.0]):
        _close(traced(_c(*v)), np.array(v) * (2.0 if v[0] > v[1] else 3.0))


def test_numpy_read_value_used_in_arithmetic_is_not_frozen():
    def f(x):
        return x + np.sum(x.numpy())

    traced = tf.function(f)
    for v in ([1.0, 2.0], [3.0, 4.0], [3.0, 4.0]):
        _close(traced(_c(*v)), np.array(v) + sum(v))
    assert traced.experimental_get_tracing_count() == 2


def test_read_of_a_value_computed_inside_guards():
    def f(x):
        y = tf.reduce_max(x * x)
        if y > 4.0:
            return x / y
        return x

    traced = tf.function(f)
    for v in ([1.0, 3.0], [1.0, 1.0], [0.5, -4.0], [0.5, 0.5]):
        _close(traced(_c(*v)), f(_c(*v)))
    assert traced.experimental_get_tracing_count() == 2


def test_float_of_a_value_computed_inside_guards_its_value():
    def f(x):
        m = float(tf.reduce_max(x))
        return x * m if m > 1.0 else x - m

    traced = tf.function(f)
    for v in ([1.0, 3.0], [1.0, 2.0], [0.5, -4.0], [0.5, 1.0], [0.5, 2.0], [5.0, 2.0]):
        _close(traced(_c(*v)), f(_c(*v)))
    # the same value read again replays
    count = traced.experimental_get_tracing_count()
    _close(traced(_c(-7.0, 3.0)), f(_c(-7.0, 3.0)))
    assert traced.experimental_get_tracing_count() == count


def test_read_of_a_captured_variable_guards():
    v = tf.Variable(np.array(2.0))

    @tf.function
    def f(x):
        if v > 0:
            return x * v
        return x - v

    _close(f(_c(1.0)), [2.0])
    v.assign(np.array(-3.0))
    _close(f(_c(1.0)), [4.0])


def test_float_of_a_captured_variable_guards():
    v = tf.Variable(np.array(2.0))

    @tf.function
    def f(x):
        return x * float(v)

    _close(f(_c(1.0)), [2.0])
    v.assign(np.array(5.0))
    _close(f(_c(1.0)), [5.0])


def test_guard_inside_a_derivative_computation():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x ** 3.0) if tf.reduce_sum(x) > 0 else tf.reduce_sum(tf.sin(x))
        return tape.gradient(y, x)

    traced = tf.function(f)
    for v in (X0, -X0, X1, -X1):
        _close(traced(tf.constant(v)), f(tf.constant(v)))
    assert traced.experimental_get_tracing_count() == 2


def test_guard_failure_does_not_commit_variable_writes_twice():
    v = tf.Variable(np.array(0.0))

    @tf.function
    def f(x):
        v.assign_add(1.0)
        if tf.reduce_sum(x) > 0:
            return x
        return -x

    f(_c(1.0))
    f(_c(-1.0))      # replay of branch 1 abandoned at the guard, then traced for branch 2
    f(_c(1.0))
    f(_c(-1.0))
    _close(v, 4.0)


def test_guard_on_a_nan_value_replays_for_the_same_input():
    traced = tf.function(lambda x: x * 2.0 if float(tf.reduce_max(x)) > 0 else x)
    x = tf.constant([np.nan, 1.0])
    for _ in range(3):
        _close(traced(x), [np.nan, 1.0])
    assert traced.experimental_get_tracing_count() == 1


def test_guards_error_raises_at_the_read_naming_the_line():
    @tf.function(guards="error")
    def f(x):
        if tf.reduce_sum(x) > 0:  # GUARD-ERROR-LINE
            return x
        return -x

    with pytest.raises(TracingError) as info:
        f(_c(1.0, 2.0))
    message = str(info.value)
    assert f"{os.path.basename(__file__)}:{_line_of('GUARD-ERROR-LINE')}" in message
    assert "tf.where" in message


def test_guards_error_allows_value_free_code():
    @tf.function(guards="error")
    def f(x):
        return tf.where(x > 0, x, -x)

    _close(f(_c(1.0, -2.0)), [1.0, 2.0])
    _close(f(_c(-3.0, 4.0)), [3.0, 4.0])


def test_guards_argument_is_validated():
    with pytest.raises(ValueError):
        tf.function(lambda x: x, guards="ignore")


def test_frequent_retracing_warns_naming_the_line():
    def f(x):
        return x * float(x)  # RETRACE-LINE

    traced = tf.function(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(7):
            _close(traced(_c(float(k) + 0.5)[0]), (k + 0.5) ** 2)
    assert traced.experimental_get_tracing_count() == 7
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert messages, "no retracing warning"
    where = f"{os.path.basename(__file__)}:{_line_of('RETRACE-LINE')}"
    assert any(where in m for m in messages), messages


def test_no_retracing_warning_for_few_traces():
    traced = tf.function(lambda x: x * float(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in range(3):
            traced(tf.constant(float(k)))
            traced(tf.constant(float(k)))


# ---------------------------------------------------------------- every Python read guards
def _pickled(x):
    return pickle.loads(pickle.dumps(x))


_READS = {
    "format": lambda x: float(format(x, ".3f")),
    "f-string": lambda x: float(f"{x:.3f}"),
    "copy": lambda x: copy.copy(x),
    "deepcopy": lambda x: copy.deepcopy(x),
    "pickle": _pickled,
}


@pytest.mark.parametrize("how", sorted(_READS))
def test_every_python_read_of_a_traced_value_is_guarded(how):
    read = _READS[how]
    traced = tf.function(lambda x: tf.constant(read(x)) * 2.0)
    for value in (1.5, 4.25, 1.5):
        np.testing.assert_allclose(float(traced(tf.constant(value, tf.float64))), 2 * value)
    assert traced.experimental_get_tracing_count() == 2   # one branch per value read


@pytest.mark.parametrize("how", sorted(_READS))
def test_every_python_read_raises_with_guards_error(how):
    traced = tf.function(lambda x: tf.constant(_READS[how](x)) * 2.0, guards="error")
    with pytest.raises(TracingError):
        traced(tf.constant(1.5, tf.float64))


def test_str_and_repr_of_a_traced_tensor_print_it_as_a_graph_tensor():
    # As TensorFlow inside tf.function: a name, the shape (None where the signature leaves
    # a size open) and the dtype; no value, so no guard and no retrace.
    printed = []

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    def f(x):
        y = tf.sin(x)
        printed.extend([str(x), repr(y), f"{y}"])
        return y * 2.0

    for value in (np.ones((3, 2)), np.zeros((3, 2)), np.ones((5, 2))):
        np.testing.assert_allclose(f(tf.constant(value)).numpy(), 2 * np.sin(value))
    assert f.experimental_get_tracing_count() == 2  # at 3, and at 5 (NOTE(two-sizes))
    assert printed[:3] == ['Tensor("x:0", shape=(None, 2), dtype=float64)',
                           "<tapeflow.Tensor 'sin:0' shape=(3, 2) dtype=float64>",
                           'Tensor("sin:0", shape=(3, 2), dtype=float64)']
    with pytest.raises(ValueError):  # the value does not leave the trace through a string
        tf.function(lambda x: tf.constant(float(str(x).split("(")[1].split(",")[0])))(
            tf.constant(1.5))


def test_a_loop_over_a_range_of_a_tensor_retraces_for_another_length():
    # TensorFlow's guide's fizzbuzz loop: `for i in tf.range(1, n + 1)` unrolls n steps;
    # at another n the graph must not replay (it returned the first n's results). The
    # range's shape, which its bounds' values decide, is guarded.
    @tf.function
    def doubled(n):
        return tf.stack([i * 2 for i in tf.range(1, n + 1)])

    assert doubled(tf.constant(3)).numpy().tolist() == [2, 4, 6]
    assert doubled(tf.constant(5)).numpy().tolist() == [2, 4, 6, 8, 10]
    assert doubled(tf.constant(3)).numpy().tolist() == [2, 4, 6]
    assert doubled.experimental_get_tracing_count() == 2


def test_fizzbuzz_takes_the_branches_of_tensorflows_guide(capsys):
    @tf.function
    def fizzbuzz(n):
        for i in tf.range(1, n + 1):
            if i % 15 == 0:
                tf.print("fizzbuzz", output_stream="stdout")
            elif i % 3 == 0:
                tf.print("fizz", output_stream="stdout")
            elif i % 5 == 0:
                tf.print("buzz", output_stream="stdout")
            else:
                tf.print(i, output_stream="stdout")

    fizzbuzz(tf.constant(5))
    assert capsys.readouterr().out == "1\n2\nfizz\n4\nbuzz\n"
    fizzbuzz(tf.constant(15))
    assert capsys.readouterr().out.split()[-1] == "fizzbuzz"


def test_a_shape_made_from_a_tensor_value_is_guarded_like_a_range():
    @tf.function
    def ones_plus(n):
        z = tf.zeros(tf.reshape(n, [1]))  # its length is n's value
        return tf.stack([v + 1.0 for v in z])

    assert ones_plus(tf.constant(2)).numpy().tolist() == [1.0, 1.0]
    assert ones_plus(tf.constant(4)).numpy().tolist() == [1.0] * 4
    assert ones_plus.experimental_get_tracing_count() == 2
