"""The 200-op elementwise chain the memory and tracing tests share, and a peak-memory
probe (tracemalloc sees NumPy's buffers)."""

from __future__ import annotations

import tracemalloc
from typing import Any, Callable

import tapeflow as tf

N = 1 << 17            # float32 elements per array: 512 KiB, above the 64 KiB thresholds
N_BLOCKS = 40          # five ops each: a 200-op chain
ARRAY = N * 4


def chain(x: Any, n_blocks: int = N_BLOCKS) -> Any:
    """n_blocks of (sin, * 1.0001, tanh, + 0.5, square-by-multiply), unreduced."""
    for _ in range(n_blocks):
        x = tf.sin(x)
        x = x * 1.0001
        x = tf.tanh(x)
        x = x + 0.5
        x = x * x
    return x


def jvp_of_chain(x: Any, v: Any) -> Any:
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        y = tf.reduce_sum(chain(x))
    return acc.jvp(y)


def grad_of_chain(x: Any) -> Any:
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(chain(x))
    return tape.gradient(y, x)


def peak_arrays(f: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """f(*args) and the peak memory it allocated on top of what was live, in arrays of
    the chain's size."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = f(*args)
        return out, (tracemalloc.get_traced_memory()[1] - base) / ARRAY
    finally:
        tracemalloc.stop()
