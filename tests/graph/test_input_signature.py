"""`tapeflow.function(input_signature=...)` and TensorSpec.

None dimensions accept any size (one trace serves them all where it can:
tests/graph/test_polymorphic.py); Python values are
converted to the spec's dtype; a shape, dtype or argument-count mismatch raises a
clear TypeError; TensorSpec.is_compatible_with checks shape and dtype.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import _c, _close

import tapeflow as tf


def test_input_signature_none_dims_accept_every_size_from_two_traces():
    runs = []

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    def f(x):
        runs.append(x.dtype)
        return tf.reduce_sum(x * x, axis=1)

    _close(f(tf.constant(np.ones((3, 2)))), [2.0, 2.0, 2.0])
    _close(f(tf.constant(np.full((3, 2), 2.0))), [8.0, 8.0, 8.0])
    _close(f(tf.constant(np.ones((5, 2)))), [2.0] * 5)
    _close(f(tf.constant(np.ones((7, 2)))), [2.0] * 7)
    _close(f(tf.constant(np.ones((4, 2)))), [2.0] * 4)
    # the traces at 3 and at 5, compared (graph/polymorphic.py, NOTE(two-sizes)); no more
    assert len(runs) == 2 == f.experimental_get_tracing_count()


def test_python_reading_a_none_size_traces_per_size_even_where_the_graphs_agree():
    # x * float(n % 2) is x * 0.0 at n = 2 and at n = 4: the graphs agree, and the
    # first was replayed at n = 3 (zeros; eager gives x). What Python computes from
    # a size the graphs need not show, so reading one keeps a trace per size.
    f = tf.function(lambda x: x * float(x.shape[0] % 2),
                    input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    for n in (2, 3, 4, 5):
        x = tf.ones([n, 3])
        _close(f(x), np.full((n, 3), n % 2))
    assert f.experimental_get_tracing_count() == 4
    with pytest.warns(UserWarning, match=r"Python reads a size of a None dimension at .*x\.shape"):
        for n in (6, 7, 8):
            f(tf.ones([n, 3]))


def test_input_signature_converts_python_values():
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def f(x):
        return x * 2.0

    out = f([1.0, 2.0])
    assert out.dtype == tf.float32
    _close(out, [2.0, 4.0])
    _close(f(np.array([3.0, 4.0], dtype=np.float32)), [6.0, 8.0])
    assert f.experimental_get_tracing_count() == 1


def test_input_signature_shape_mismatch_raises_clear_type_error():
    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    def f(x):
        return x

    with pytest.raises(TypeError, match=r"input_signature") as info:
        f(tf.constant(np.ones((2, 3))))
    assert "(2, 3)" in str(info.value)


def test_input_signature_dtype_mismatch_raises_type_error():
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float64)])
    def f(x):
        return x

    with pytest.raises(TypeError, match=r"float32"):
        f(tf.constant([1.0, 2.0], dtype=tf.float32))


def test_input_signature_wrong_argument_count_raises_type_error():
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float64)])
    def f(x, y=None):
        return x

    with pytest.raises(TypeError, match=r"input_signature"):
        f(_c(1.0, 2.0), _c(1.0, 2.0))


def test_tensor_spec_is_compatible_with():
    spec = tf.TensorSpec([None, 3], tf.float32)
    assert spec.is_compatible_with(tf.zeros([2, 3]))
    assert not spec.is_compatible_with(tf.zeros([2, 4]))
    assert not spec.is_compatible_with(tf.constant(np.zeros((2, 3))))


def test_a_concrete_function_takes_only_its_tensor_arguments():
    """As TensorFlow's: the Python values it was traced with are baked in; other
    non-tensor values are still refused."""
    f = tf.function(lambda x, n: x * n)
    x = tf.constant([1.0, 2.5])
    cf = f.get_concrete_function(x, 3.0)
    np.testing.assert_array_equal(cf(x).numpy(), [3.0, 7.5])
    np.testing.assert_array_equal(cf(tf.constant([2.0, 2.0])).numpy(), [6.0, 6.0])
    with pytest.raises(TypeError, match="pass only the tensor arguments"):
        cf(x, 4.0)
