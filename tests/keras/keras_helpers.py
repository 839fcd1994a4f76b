"""Helpers the keras tests in this directory share: one seeded NumPy generator and
`_rand`, standard-normal arrays of a given shape drawn from it (float32 unless asked);
`tf_keras()`, TensorFlow and tf_keras or a skip; and tape gradients checked against
central differences."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(0)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def tf_keras():
    """(tensorflow, tf_keras), or skip the test where they are not installed."""
    import pytest

    tensorflow = pytest.importorskip("tensorflow")
    return tensorflow, pytest.importorskip("tf_keras")


def central_differences(f, xs, eps=1e-6):
    """The gradient of scalar f(*xs) with respect to each float64 array in xs, by central
    differences."""
    grads = []
    for i, x in enumerate(xs):
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            for sign in (1, -1):
                moved = [v.copy() for v in xs]
                moved[i][idx] += sign * eps
                g[idx] += sign * float(f(*moved)) / (2 * eps)
        grads.append(g)
    return grads


def assert_tape_gradients_match(f, xs, rtol=1e-6, atol=1e-8):
    """Check tape.gradient of scalar f(*tensors) against central differences (float64)."""
    import tapeflow as tf

    tensors = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        for t in tensors:
            tape.watch(t)
        value = f(*tensors)
    got = tape.gradient(value, tensors)
    want = central_differences(lambda *v: f(*[tf.constant(a) for a in v]), xs)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=atol, err_msg=f"input {i}")


# ---------------------------------------------------------------- NumPy RNN references
def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_simple_rnn_step(x, states, kernel, recurrent_kernel, bias):
    h = np.tanh(x @ kernel + bias + states[0] @ recurrent_kernel)
    return h, [h]


def np_lstm_step(x, states, kernel, recurrent_kernel, bias):
    """Keras' LSTM step: gates i, f, c, o along the last axis."""
    h, c = states
    i, f, g, o = np.split(x @ kernel + h @ recurrent_kernel + bias, 4, axis=-1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    return h, [h, c]


def np_gru_step(x, states, kernel, recurrent_kernel, bias, reset_after=True):
    """Keras' GRU step: gates z, r, h; bias [2, 3u] with reset_after, else [3u]."""
    (h,) = states
    u = h.shape[-1]
    if reset_after:
        xz, xr, xh = np.split(x @ kernel + bias[0], 3, axis=-1)
        rz, rr, rh = np.split(h @ recurrent_kernel + bias[1], 3, axis=-1)
        z, r = _sigmoid(xz + rz), _sigmoid(xr + rr)
        hh = np.tanh(xh + r * rh)
    else:
        xz, xr, xh = np.split(x @ kernel + bias, 3, axis=-1)
        z = _sigmoid(xz + h @ recurrent_kernel[:, :u])
        r = _sigmoid(xr + h @ recurrent_kernel[:, u:2 * u])
        hh = np.tanh(xh + (r * h) @ recurrent_kernel[:, 2 * u:])
    h = z * h + (1 - z) * hh
    return h, [h]


def np_rnn(step, weights, x, states, mask=None, go_backwards=False, zero_output_for_mask=False):
    """Run a NumPy step over time as tf_keras' backend.rnn: a masked step keeps the
    states and repeats the previous output (zeros before the first kept step). Returns
    (outputs (batch, time, units) in processing order, final states)."""
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outputs, previous = [], None
    for t in steps:
        out, new = step(x[:, t], states, *weights)
        if mask is not None:
            keep = mask[:, t][:, None]
            previous = np.zeros_like(out) if previous is None or zero_output_for_mask \
                else previous
            out = np.where(keep, out, previous)
            new = [np.where(keep, n, s) for n, s in zip(new, states)]
            previous = out
        states = new
        outputs.append(out)
    return np.stack(outputs, axis=1), states
