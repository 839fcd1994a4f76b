"""Random programs built from the op table, for the randomized differential tests.

A program is a DAG of steps. Each step runs one op-table row (any primitive, any
family) on that row's own inputs, which lie on the op's valid domain, with its first
input shifted by a small amount computed from an earlier value of the program (one
of its inputs or an earlier step's output): elementwise when the shapes agree,
through the mean otherwise. The shift is at most `MAX_SHIFT`, well inside the margins
the rows keep from domain edges and kinks, so every value stays where the row's
derivatives are checked. The program's output is the sine of every step's output,
flattened and joined: a vector that depends on the inputs through every step.

Every derivative therefore flows through random chains of primitives, with
broadcasting, reductions, shape changes and linear algebra mixed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import tapeflow as tf

from op_table import ROWS

MAX_SHIFT = 0.05
# Rows whose values or derivatives are too large in float32 for a relative comparison of
# programs built on them (they carry their own float32 tolerances in the op table).
ROWS_F32 = [r for r in ROWS if r.f32_tol <= 2e-2]


@dataclass
class Step:
    row: Any                 # an op_table.Row
    base: list               # the row's inputs, float64 arrays on its domain
    source: int              # the value its first input is linked to (inputs, then steps)
    scale: float             # the link's size: |shift| <= |scale| <= MAX_SHIFT


@dataclass
class Program:
    inputs: list             # float64 input arrays
    steps: list

    @property
    def smooth(self) -> bool:
        return all(s.row.smooth for s in self.steps)

    def __call__(self, *xs: Any, raw: bool = False) -> Any:
        """The sine of each step's output, flattened and joined (`raw`: the outputs)."""
        dtype = tf.convert_to_tensor(xs[0]).dtype
        values = [tf.convert_to_tensor(x) for x in xs]
        outs = []
        for step in self.steps:
            args = [tf.constant(b, dtype=dtype) for b in step.base]
            src = values[step.source]
            if tuple(src.shape) == tuple(args[0].shape):
                link = tf.tanh(src)
            else:
                link = tf.tanh(tf.reduce_mean(src))
            args[0] = args[0] + step.scale * link
            out = step.row.fn(*args)
            values.append(out)
            outs.append(tf.reshape(out if raw else tf.sin(out), [-1]))
        return tf.concat(outs, axis=0)

    def __repr__(self) -> str:
        steps = ", ".join(f"{s.row.name}<-v{s.source}" for s in self.steps)
        return f"Program(inputs={[a.shape for a in self.inputs]}, steps=[{steps}])"


def build(seed: int, n_steps: int, n_inputs: int, rows: list = ROWS) -> Program:
    """A program of `n_steps` random rows on `n_inputs` inputs, all drawn from `seed`."""
    rng = np.random.default_rng(seed)
    picked = [rows[i] for i in rng.integers(0, len(rows), n_steps)]
    bases = [[np.asarray(a, np.float64) for a in r.make(rng)] for r in picked]
    # Inputs shaped like the first input of some step, so elementwise links occur.
    inputs = [rng.standard_normal(bases[int(rng.integers(0, n_steps))][0].shape)
              for _ in range(n_inputs)]
    steps = []
    for k, (row, base) in enumerate(zip(picked, bases, strict=True)):
        source = int(rng.integers(0, n_inputs + k))
        scale = float(rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 1.0) * MAX_SHIFT)
        steps.append(Step(row, base, source, scale))
    return Program(inputs, steps)


def other_inputs(program: Program, seed: int) -> list:
    """A second point for the same program (for replays)."""
    rng = np.random.default_rng(seed + 1)
    return [rng.standard_normal(x.shape) for x in program.inputs]
