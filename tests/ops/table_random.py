"""Op-table entries of the random draws (src/tapeflow/ops/random.py).

A draw is a stateful primitive without derivative whose numbers change from call to
call, so no row fits the table's checks; tests/ops/test_random.py covers them (shuffle's
gradient, through its gather, too).
The pure primitives draws are built on have rows: the class of each uniform number
under its row's distribution (categorical), and the stateless draws, functions of
their seed (the rows' float inputs truncated to integer seeds).
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.random import categorical_p, stateless_p

from op_table import NondiffRow, args, normal, uniform

ROWS: list = []


def _np_categorical(logits, u):
    p = np.exp(logits - logits.max(-1, keepdims=True))
    cdf = np.cumsum(p / p.sum(-1, keepdims=True), -1)
    return np.array([[int((row < v).sum()) for v in us] for row, us in zip(cdf, u)])


def _np_stateless(seed, draw):
    a, b = (int(v) % 2 ** 64 for v in seed)
    return draw(np.random.default_rng([a, b]))


NONDIFF_ROWS: list = [
    NondiffRow("categorical", lambda z, u: bind(categorical_p, z, u, dtype=np.dtype(np.int64)),
               args(normal(3, 5), uniform(0.0, 1.0, 3, 6)), _np_categorical,
               prims=("random_categorical",)),
    NondiffRow("stateless_normal",
               lambda s: bind(stateless_p, tf.cast(s, tf.int64), kind="normal", shape=(2, 3),
                              dtype=np.dtype(np.float64), bounds=()),
               args(uniform(-900.0, 900.0, 2)),
               lambda s: _np_stateless(s, lambda g: g.standard_normal((2, 3))),
               prims=("stateless_random",)),
    NondiffRow("stateless_uniform_int",
               lambda s: bind(stateless_p, tf.cast(s, tf.int32), kind="integers", shape=(4,),
                              dtype=np.dtype(np.int32), bounds=(-3, 9)),
               args(uniform(0.0, 900.0, 2)),
               lambda s: _np_stateless(s, lambda g: g.integers(-3, 9, 4, dtype=np.int32)),
               prims=("stateless_random",)),
]

EXEMPT: dict = {
    name: "a draw's numbers differ from call to call, so the table's batching-vs-loop checks "
          "do not apply: tests/ops/test_random.py checks values, seeds, replay and vmap"
    for name in ("random_standard_normal", "random_uniform", "random_uniform_int",
                 "random_permutation", "random_truncated_normal")
}
