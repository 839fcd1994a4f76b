"""The generated fast replay of a traced graph against the graph interpreter.

On random chains of ops the fast replay equals `tapeflow.graph.replay.interpret` bit
for bit; buffer reuse never overwrites an intermediate that is still needed or an
output; a replay leaves its inputs and earlier outputs untouched; the interpreter
applies variable writes as the fast replay does.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import X0, X1, X2, _c, _close, _replays_like_eager, _xs

import tapeflow as tf
from tapeflow.graph.replay import interpret

_UNARY = [tf.sin, tf.cos, tf.tanh, tf.sigmoid, lambda a: a * a, lambda a: -a, tf.abs]
_BINARY = [tf.add, tf.subtract, tf.multiply, lambda a, b: a * 0.5 + b, tf.maximum, tf.minimum]


def _random_chain(seed, n_ops=30):
    rng = np.random.default_rng(seed)
    plan = []
    for k in range(n_ops):
        # each op reads the previous value (so the chain stays live), a binary op also
        # reads a random earlier one (values used twice, intermediates reused late)
        if rng.random() < 0.5:
            plan.append(("u", int(rng.integers(len(_UNARY))), k + 1))
        else:
            plan.append(("b", int(rng.integers(len(_BINARY))), k + 1, int(rng.integers(k + 1))))
    outs = sorted({int(i) for i in rng.integers(2, n_ops + 2, size=4)} | {n_ops + 1})

    def f(x, y):
        vals = [x, y]
        for step in plan:
            if step[0] == "u":
                vals.append(_UNARY[step[1]](vals[step[2]]))
            else:
                vals.append(_BINARY[step[1]](vals[step[2]], vals[step[3]]))
        return [vals[i] for i in outs]

    return f


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fast_replay_equals_interpreter_on_random_chain(seed):
    f = _random_chain(seed)
    rng = np.random.default_rng(100 + seed)
    traced = tf.function(f)
    args0 = [tf.constant(rng.normal(size=(4, 3))) for _ in range(2)]
    cf = traced.get_concrete_function(*args0)
    assert cf.graph.count() >= 30
    for _ in range(3):
        args = [tf.constant(rng.normal(size=(4, 3))) for _ in range(2)]
        fast = cf(*args)
        slow = interpret(cf.graph, list(args))
        _close(fast, slow, rtol=0, atol=0)
        _close(fast, f(*args))


def test_buffer_reuse_intermediate_that_is_also_an_output():
    def f(x):
        a = tf.sin(x)
        b = a * 2.0
        c = tf.exp(b)
        d = c + b
        e = tf.tanh(d) - a
        return a, e, d

    _replays_like_eager(f, (tf.constant(X0),), _xs(X1, X2))


def test_buffer_reuse_intermediate_used_twice():
    def f(x):
        a = x * x
        b = tf.sin(a)
        c = tf.cos(a)
        d = b * c
        return d + a, tf.tanh(d)

    _replays_like_eager(f, (tf.constant(X0),), _xs(X1, X2))


def test_replay_outputs_are_not_overwritten_by_later_calls():
    @tf.function
    def f(x):
        a = tf.sin(x) + x
        b = tf.exp(a) * a
        return a, tf.tanh(b) - a

    f(tf.constant(X0))
    first = f(tf.constant(X1))
    saved = [np.array(t) for t in first]
    f(tf.constant(X2))
    f(tf.constant(X0))
    for t, s in zip(first, saved):
        np.testing.assert_array_equal(np.asarray(t), s)


def test_replay_does_not_modify_inputs():
    @tf.function
    def f(x):
        return tf.tanh(tf.sin(x) * x + 1.0)

    f(tf.constant(X0))
    arr = X1.copy()
    x = tf.constant(arr)
    f(x)
    f(arr)
    np.testing.assert_array_equal(np.asarray(x), X1)
    np.testing.assert_array_equal(arr, X1)


def test_interpreter_replay_applies_variable_writes():
    v = tf.Variable(np.array([1.0, 2.0]))

    @tf.function
    def f(x):
        v.assign_add(x)
        return x * 2.0

    cf = f.get_concrete_function(_c(0.0, 0.0))   # traced: v += 0
    out = interpret(cf.graph, [_c(1.0, 1.0)])
    _close(out, [[2.0, 2.0]])
    _close(v, [2.0, 3.0])
    cf(_c(1.0, -1.0))                            # fast replay: the same write
    _close(v, [3.0, 2.0])
