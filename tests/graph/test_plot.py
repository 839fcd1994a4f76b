"""tapeflow.plot_graph: the dot source with forward and backward nodes and guards told
apart, rendering through graphviz when it is installed, a clear error when not."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

import tapeflow as tf


def _grad_of_square(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.sin(x) * x)
    return tape.gradient(y, x)


def test_dot_source_tells_forward_backward_and_guards_apart(tmp_path):
    path = tf.plot_graph(_grad_of_square, tf.constant([1.0, 2.0]), path=str(tmp_path / "g.dot"))
    dot = open(path).read()
    assert dot.startswith('digraph "') and dot.rstrip().endswith("}")
    assert 'fillcolor="#cfe2f3", label="sin"' in dot        # forward
    assert 'fillcolor="#f9cb9c", label="cos"' in dot        # the tape's backward pass
    assert "cluster_legend" in dot

    def branchy(x):
        return x * 2.0 if float(tf.reduce_sum(x)) > 0 else x

    dot = open(tf.plot_graph(tf.function(branchy), tf.constant(1.0),
                             path=str(tmp_path / "b.gv"))).read()
    assert "shape=diamond" in dot and "guard float" in dot
    cf = tf.function(_grad_of_square).get_concrete_function(tf.constant([1.0]))
    assert open(tf.plot_graph(cf, path=str(tmp_path / "c.dot"))).read().count("->") > 3
    with pytest.raises(TypeError, match="expected a function"):
        tf.plot_graph(42, path=str(tmp_path / "x.dot"))


@pytest.mark.skipif(importlib.util.find_spec("graphviz") is None or shutil.which("dot") is None,
                    reason="graphviz (the Python package and the dot program) not installed")
def test_renders_svg(tmp_path):
    path = tf.plot_graph(_grad_of_square, tf.constant([1.0, 2.0]), path=str(tmp_path / "g.svg"))
    assert open(path).read().lstrip().startswith(("<?xml", "<svg"))


def test_without_graphviz_the_error_names_what_to_install(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(ImportError, match=r"tapeflow\[plot\].*graph\.dot"):
        tf.plot_graph(_grad_of_square, tf.constant([1.0]), path=str(tmp_path / "g.png"))
