"""Peak memory of vectorized Jacobians (measured with tracemalloc, which sees NumPy buffers).

A vectorized Jacobian must not hold much more than the Jacobian itself, and
`chunk_size` must bound the peak of a reverse-mode Jacobian with many outputs.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

import tapeflow as tf

N_IN, N_OUT, HIDDEN = 8, 2048, 64


def _model():
    rng = np.random.default_rng(0)
    w1 = tf.constant(rng.standard_normal((HIDDEN, N_IN)) / 3)
    w2 = tf.constant(rng.standard_normal((N_OUT, HIDDEN)) / 8)

    def f(x):
        h = tf.tanh(tf.matmul(w1, tf.reshape(x, [-1, 1])))
        return tf.reshape(tf.tanh(tf.matmul(w2, h)), [-1])

    return f, np.random.default_rng(1).standard_normal(N_IN)


def _peak(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak


def test_auto_mode_jacobian_stays_near_the_jacobian_size():
    f, x = _model()
    jac, peak = _peak(lambda: tf.jacobian(f)(x))
    jac_bytes = N_OUT * N_IN * 8
    assert np.asarray(jac).shape == (N_OUT, N_IN)
    assert peak < 12 * jac_bytes, f"peak {peak} bytes for a {jac_bytes}-byte Jacobian"


def test_chunk_size_bounds_reverse_mode_peak():
    f, x = _model()
    full, peak_full = _peak(lambda: tf.jacrev(f)(x))
    chunked, peak_chunked = _peak(lambda: tf.jacrev(f, chunk_size=128)(x))
    np.testing.assert_allclose(np.asarray(chunked), np.asarray(full), rtol=1e-12, atol=1e-14)
    # The unchunked pass holds the N_OUT x N_OUT basis and N_OUT-row cotangents.
    assert peak_chunked < peak_full / 4, (peak_chunked, peak_full)
