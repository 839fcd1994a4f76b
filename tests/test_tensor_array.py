"""tf.TensorArray (src/tapeflow/tensor_array.py): TensorFlow's API and values, its
graph-mode errors, gradients through reads and stack, and Python loops in tf.function.

Values marked TF were printed by TensorFlow 2.21 for the same calls."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError


def test_write_read_stack_size_as_tensorflow():
    ta = tf.TensorArray(tf.float32, size=3)
    for i in range(3):
        ta = ta.write(i, float(i + 1))
    assert ta.size().dtype == tf.int32 and int(ta.size()) == 3
    assert ta.dtype == tf.float32 and ta.element_shape.as_list() == []
    np.testing.assert_array_equal(ta.stack(), [1., 2., 3.])
    np.testing.assert_array_equal(ta.gather([2, 0]), [3., 1.])  # TF: [3, 1]
    assert float(ta.read(1)) == 2.
    assert ta.identity() is ta and ta.close() is None


def test_dynamic_unstack_scatter_gather_concat_as_tensorflow():
    d = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    d = d.write(0, [1., 2.]).write(2, [3., 4.])
    assert int(d.size()) == 3
    np.testing.assert_array_equal(d.stack(), [[1, 2], [0, 0], [3, 4]])  # TF: a zero row
    u = tf.TensorArray(tf.float32, size=0, dynamic_size=True).unstack([[1., 2.], [3., 4.]])
    assert int(u.size()) == 2
    np.testing.assert_array_equal(u.concat(), [1, 2, 3, 4])
    np.testing.assert_array_equal(u.gather([1]), [[3, 4]])
    s = tf.TensorArray(tf.float32, size=4).scatter([3, 1], [[1.], [2.]])
    np.testing.assert_array_equal(s.read(3), [1.])
    assert int(s.size()) == 4
    assert tf.TensorArray(tf.float32, size=0).stack().shape.as_list() == [0]
    assert tf.TensorArray(tf.float32, size=0, element_shape=[2]).stack().shape.as_list() == [0, 2]
    v = tf.TensorArray(tf.float32, size=1, clear_after_read=False).write(0, 1.)
    assert float(v.read(0)) == float(v.read(0)) == 1.
    assert tf.TensorArray(tf.float32, size=1).write(0, 1).read(0).dtype == tf.float32


@pytest.mark.parametrize("call, error, match", [
    (lambda ta: ta.read(1), InvalidArgumentError, "index 1 because it has not yet been written"),
    (lambda ta: ta.write(3, 1.), InvalidArgumentError, "index 3 .*not resizeable.*size is 3"),
    (lambda ta: ta.write(0, 2.), InvalidArgumentError, "index 0 because it has already been"),
    (lambda ta: ta.write(-1, 2.), InvalidArgumentError, "negative indices"),
    (lambda ta: ta.write(1, tf.constant(1)), InvalidArgumentError, "float32.*int32"),
    (lambda ta: ta.write(1, [1., 2.]), ValueError, r"incompatible shape.*\(2,\).*\(\)"),
    (lambda ta: ta.read(5), InvalidArgumentError, "index 5 but the array size is 3"),
    (lambda ta: (ta.read(0), ta.read(0)), InvalidArgumentError, "twice.*clear_after_read"),
    (lambda ta: ta.concat(), InvalidArgumentError, "scalar"),
    (lambda ta: tf.TensorArray(tf.float32, size=1).unstack([1., 2.]), ValueError,
     "cannot unstack 2 tensors into a TensorArray of static size 1"),
])
def test_tensorflow_errors(call, error, match):
    ta = tf.TensorArray(tf.float32, size=3).write(0, 1.)
    with pytest.raises(error, match=match):
        call(ta)


def test_gradients_through_write_read_and_stack():
    # TF 2.21: [4, 8, 18]
    x = tf.Variable([1., 2., 3.])
    with tf.GradientTape() as tape:
        ta = tf.TensorArray(tf.float32, size=3)
        for i in range(3):
            ta = ta.write(i, x[i] ** 2)
        y = tf.reduce_sum(ta.stack() * tf.constant([1., 2., 3.])) + ta.read(0)
    np.testing.assert_array_equal(tape.gradient(y, x), [4., 8., 18.])
    tf.testing.check_grads(
        lambda v: tf.TensorArray(tf.float64, size=0, dynamic_size=True).unstack(v * v)
        .gather([1, 0]), [np.array([[1., 2.], [3., 4.]])], order=2)


def test_python_loops_unroll_in_tf_function():
    @tf.function
    def f(x):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in range(3):
            ta = ta.write(i, x * i)
        return ta.stack()

    np.testing.assert_array_equal(f(tf.constant(2.)), [0., 2., 4.])  # TF: [0, 2, 4]
    np.testing.assert_array_equal(f(tf.constant(3.)), [0., 3., 6.])
    assert f.experimental_get_tracing_count() == 1
    x = tf.constant(2.)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    assert float(tape.gradient(y, x)) == 3.
