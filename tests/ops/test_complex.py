"""The complex-number ops beyond the op table: complex() and its parts, the magnitude, and
TensorFlow's gradient convention for a real loss of a complex tensor (dL/dx + i dL/dy,
NOTE(complex-gradients) in ops/complex.py), in reverse and in forward mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

from ops_helpers import value_and_grads


# ------------------------------------------------------------------ bad input
def test_complex_needs_matching_float32_or_float64_parts():
    with pytest.raises(TypeError, match="float32.*float64"):
        tf.complex(tf.constant([1.]), tf.constant([1.], tf.float64))
    with pytest.raises(TypeError, match="int32"):
        tf.complex(tf.constant([1]), tf.constant([1]))


# ------------------------------------------------------------------ values and gradients
def test_complex_construction_and_parts():
    z = tf.complex(tf.constant([1., 2.]), 3.)
    assert z.dtype == tf.complex64
    assert tf.math.real(z).dtype == tf.float32
    np.testing.assert_array_equal(tf.math.imag(z), [3., 3.])
    inf = tf.complex(tf.constant([np.inf], tf.float64), tf.constant([0.], tf.float64))
    assert np.asarray(inf)[0] == complex(np.inf, 0.)
    x = tf.constant([1., 2.])
    assert tf.math.real(x) is x
    np.testing.assert_array_equal(tf.math.imag(x), [0., 0.])
    d = tf.math.squared_difference(tf.constant([1 + 2j]), tf.constant([0j]))
    assert np.asarray(d)[0] == 5 + 0j


def test_complex_abs_is_the_real_magnitude():
    assert tf.abs(tf.constant([3 + 4j], tf.complex64)).dtype == tf.float32
    np.testing.assert_array_equal(tf.math.abs(tf.constant([3 + 4j, 0j])), [5., 0.])
    np.testing.assert_array_equal(tf.abs(tf.constant([-2., 3.])), [2., 3.])


def test_gradient_of_a_real_loss_is_dl_dx_plus_i_dl_dy():
    """TensorFlow's convention, checked against the values TensorFlow 2 returns."""
    z = np.array([3 + 4j, 0j, -1 + 0.5j])
    _, (g,) = value_and_grads(lambda v: tf.abs(v) ** 2, z)
    np.testing.assert_allclose(g, 2 * z)                     # d|z|^2 -> 2 z
    _, (g,) = value_and_grads(tf.abs, z)
    np.testing.assert_allclose(g, [0.6 + 0.8j, 0., z[2] / np.abs(z[2])])  # z/|z|, 0 at 0
    _, (g,) = value_and_grads(tf.math.real, z)
    np.testing.assert_array_equal(g, [1, 1, 1])
    _, (g,) = value_and_grads(tf.math.imag, z)
    np.testing.assert_array_equal(g, [1j, 1j, 1j])
    _, (g,) = value_and_grads(lambda v: tf.math.real(tf.exp(v)), z)
    np.testing.assert_allclose(g, np.conj(np.exp(z)))        # holomorphic f: conj(f'(z))
    _, (ga, gb) = value_and_grads(lambda a, b: tf.abs(tf.complex(a, b)), np.array([3.]),
                                  np.array([4.]))
    np.testing.assert_allclose([ga[0], gb[0]], [0.6, 0.8])


def test_complex_abs_forward_mode():
    z = tf.constant([3 + 4j, 0j])
    with tf.autodiff.ForwardAccumulator(z, tf.constant([1 + 1j, 1 + 0j])) as acc:
        y = tf.abs(z)
    np.testing.assert_allclose(acc.jvp(y), [(3 + 4) / 5, 0.])
