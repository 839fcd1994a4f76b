"""Tracing cost grows linearly with the graph: the Python and C calls made to trace, pass
and prepare a graph are counted (deterministic, unlike time on a shared machine) for two
sizes, per node. benchmarks/tracing.py times the same at 10k-100k nodes."""

import sys

import numpy as np

import tapeflow as tf

from chain_helpers import chain


def _calls_to_trace(n_blocks):
    f = tf.function(lambda a: chain(a, n_blocks))
    x = tf.constant(np.linspace(0., 1., 8))
    count = [0]

    def profile(frame, event, arg):
        if event in ("call", "c_call"):
            count[0] += 1

    sys.setprofile(profile)
    try:
        f(x)  # the first call traces
    finally:
        sys.setprofile(None)
    return count[0]


def test_tracing_makes_a_constant_number_of_calls_per_node():
    small, large = _calls_to_trace(400), _calls_to_trace(2000)  # 2,000 and 10,000 nodes
    per_node_small, per_node_large = small / 2000, large / 10000
    assert per_node_large <= per_node_small * 1.05, (per_node_small, per_node_large)
    assert per_node_large < 65, per_node_large  # a budget: today about 54 per node
