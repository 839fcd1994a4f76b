"""Helpers shared by the tests of `tapeflow.function` in this directory.

`_close` compares nested outputs with expected values; `_replays_like_eager` traces
a function at one input and checks that the replay at OTHER inputs equals the eager
result of the same Python code (a value frozen into the graph at trace time fails);
X0, X1, X2 are three float64 inputs of shape [3] for such checks.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf

RTOL = 1e-10
ATOL = 1e-12


def _c(*values):
    return tf.constant(np.array(values, dtype=np.float64))


def _close(actual, expected, rtol=RTOL, atol=ATOL):
    """Compare structures: lists/tuples/dicts of `actual` recurse; a tensor, array or number
    in `actual` is compared with `expected` as an array (which may be a nested list)."""
    if actual is None or expected is None:
        assert actual is None and expected is None, (actual, expected)
    elif isinstance(actual, dict):
        assert isinstance(expected, dict) and set(actual) == set(expected)
        for k in actual:
            _close(actual[k], expected[k], rtol, atol)
    elif isinstance(actual, (list, tuple)):
        assert isinstance(expected, (list, tuple)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            _close(a, e, rtol, atol)
    else:
        a, e = np.asarray(actual), np.asarray(expected)
        assert a.shape == e.shape, (a.shape, e.shape)
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


def _replays_like_eager(fn, trace_args, new_args_list, rtol=RTOL, atol=ATOL):
    """Trace `fn` at `trace_args`, then check every replay at new args against eager `fn`."""
    traced = tf.function(fn)
    _close(traced(*trace_args), fn(*trace_args), rtol, atol)
    assert traced.experimental_get_tracing_count() == 1
    for args in new_args_list:
        _close(traced(*args), fn(*args), rtol, atol)
    assert traced.experimental_get_tracing_count() == 1, "a replay retraced"
    return traced


X0 = np.array([0.3, -0.7, 1.1])
X1 = np.array([1.4, 0.2, -0.9])
X2 = np.array([-2.0, 0.5, 0.25])


def _xs(*arrays):
    return [(tf.constant(a),) for a in arrays]
