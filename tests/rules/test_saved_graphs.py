"""Every row's traced graph written as a SavedModel writes it, read back, and replayed.

Each row's function, its gradient and its JVP (tests/rules/test_replay.py) are traced,
written to JSON text and arrays (saving/graph_codec.py, each primitive's `save` rule),
read back, and replayed at another input through the re-binding interpreter, the plan
interpreter and the generated code: every one equals eager, to the last bit. The read
graph also prints as the traced one does (same nodes, params, constants).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.replay import compile_graph, interpret, plan_runner
from tapeflow.saving.graph_codec import Reader, Writer, decode_graph, encode_graph

from op_table import NONDIFF_ROWS, ROWS
from test_replay import _grad_fn, _inputs, _jvp_fn


def round_trip(graph):
    writer = Writer(lambda v: pytest.fail(f"a row's graph captures the variable {v.name}"))
    text = json.dumps(encode_graph(graph, writer, "graph"))
    return decode_graph(json.loads(text), Reader("test", dict(writer.arrays), {}), "graph")


def _printed(graph):
    # a custom gradient's grad_fn is saved as its traced graph, not as the Python function
    return re.sub(r", grad_fn(=\w+)?", "", str(graph))


def _check(fn, row):
    traced = tf.function(fn)
    first, second = _inputs(row, 1), _inputs(row, 2)
    cf = traced.get_concrete_function(*first)
    if row.name in ("py_function", "numpy_function", "custom_root", "custom_linear_solve",
                    "solve_ivp", "solve_ivp_adjoint"):
        with pytest.raises(ValueError, match=f"\\({row.covers()[0]}\\) cannot be saved: it "
                                             "calls a Python function"):
            round_trip(cf.graph)
        return
    loaded = round_trip(cf.graph)
    assert _printed(loaded) == _printed(cf.graph)
    want = fn(*second)
    arrays = [x._value for x in second]
    for name, outs in (("interpret", interpret(loaded, second)),
                       ("plan", plan_runner(loaded)(*arrays)),
                       ("compiled", compile_graph(loaded)(*arrays))):
        for w, g in zip(tf.nest.flatten(want), outs, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w), err_msg=name)


@pytest.mark.parametrize("row", ROWS + NONDIFF_ROWS, ids=lambda r: r.name)
def test_saved_graph_replays_as_eager(row):
    _check(row.fn, row)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_saved_gradient_graph_replays_as_eager(row):
    _check(_grad_fn(row), row)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_saved_jvp_graph_replays_as_eager(row):
    _check(_jvp_fn(row), row)
