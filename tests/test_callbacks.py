"""tf.print (at every replay of a traced function, TensorFlow's formatting),
tf.config.run_functions_eagerly, tf.init_scope, tf.grad_pass_through, and
TensorSpec(shape=None)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tapeflow as tf


def test_print_formats_as_tensorflow(capsys):
    # The lines TensorFlow 2.21 prints for the same calls.
    tf.print(tf.constant([1.0, 2.5]), "hi", {"a": tf.constant(3)}, [tf.constant(True)])
    tf.print(tf.range(10))
    tf.print(tf.constant(0.1), tf.constant(1e-7), tf.constant(123456789.0))
    tf.print(tf.constant([[1.5, 2.0], [3.0, 4.0]]))
    tf.print(tf.range(10), summarize=-1)
    tf.print(tf.reshape(tf.range(100), [10, 10]))
    err = capsys.readouterr().err
    assert err == ("[1 2.5] hi {'a': 3} [1]\n"
                   "[0 1 2 ... 7 8 9]\n"
                   "0.1 1e-07 123456792\n"
                   "[[1.5 2]\n [3 4]]\n"
                   "[0 1 2 3 4 5 6 7 8 9]\n"
                   "[[0 1 2 ... 7 8 9]\n [10 11 12 ... 17 18 19]\n [20 21 22 ... 27 28 29]\n"
                   " ...\n [70 71 72 ... 77 78 79]\n [80 81 82 ... 87 88 89]\n"
                   " [90 91 92 ... 97 98 99]]\n")


def test_print_runs_at_every_replay_and_to_the_chosen_stream(capsys, tmp_path):
    @tf.function
    def f(x):
        tf.print("x =", x, output_stream=sys.stdout, sep=" ", end=";\n")
        return x * 2.0

    for v in (1.0, 2.0, 3.0):
        f(tf.constant(v))
    assert f.experimental_get_tracing_count() == 1
    assert capsys.readouterr().out == "x = 1;\nx = 2;\nx = 3;\n"
    path = tmp_path / "log.txt"
    tf.print(tf.Variable([1, 2]), output_stream=f"file://{path}")
    assert path.read_text() == "[1 2]\n"
    with pytest.raises(TypeError, match="summarize"):
        tf.print(tf.constant(1.0), summarize=2.5)


def test_print_has_no_gradient_and_does_not_disturb_one():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        tf.print(x, output_stream=sys.stdout)
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0


def test_run_functions_eagerly_calls_the_python_function_each_time():
    calls = []

    @tf.function
    def f(v):
        calls.append(1)
        return v * 2

    try:
        tf.config.run_functions_eagerly(True)
        assert tf.config.functions_run_eagerly()
        for _ in range(3):
            assert float(f(tf.constant(1.0))) == 2.0
        assert len(calls) == 3 and f.experimental_get_tracing_count() == 0
    finally:
        tf.config.run_functions_eagerly(False)
    f(tf.constant(1.0))
    f(tf.constant(1.0))
    assert len(calls) == 4 and f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="bool"):
        tf.config.run_functions_eagerly(1)


def test_init_scope_lifts_state_creation_out_of_a_trace():
    class Counter(tf.Module):
        @tf.function
        def __call__(self, x):
            if not hasattr(self, "total"):
                with tf.init_scope():
                    self.total = tf.Variable(tf.zeros_like(x))
            self.total.assign_add(x)
            return self.total.read_value()

    c = Counter()
    c(tf.constant([1.0, 2.0]))
    out = c(tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])


def test_grad_pass_through_is_identity_backward():
    x, z = tf.Variable(1.0), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = tf.grad_pass_through(x.assign)(z ** 2)
        loss = y * 2.0
    assert float(x) == 9.0
    assert float(tape.gradient(loss, z)) == 12.0  # d(2 z^2)/dz through the identity
    w = tf.constant([1.0, -2.0])
    with tf.GradientTape() as tape:
        tape.watch(w)
        q = tf.grad_pass_through(tf.round)(w * 1.3)  # round has no derivative
    np.testing.assert_allclose(tape.gradient(q, w).numpy(), [1.3, 1.3])


def test_an_unknown_rank_spec_accepts_every_shape():
    spec = tf.TensorSpec(shape=None, dtype=tf.float32)
    assert repr(spec) == "TensorSpec(shape=<unknown>, dtype=tf.float32, name=None)"
    assert spec.shape.rank is None and spec.is_compatible_with(tf.ones([2, 3]))
    g = tf.function(tf.reduce_sum, input_signature=[spec])
    assert float(g(tf.ones([2]))) == 2.0 and float(g(tf.ones([2, 2]))) == 4.0
    with pytest.raises(TypeError, match="does not match"):
        g(tf.ones([2], tf.float64))
    with pytest.raises(ValueError, match="unknown TensorShape"):
        spec.shape.as_list()


def test_print_once_per_call_never_when_tracing_alone_nor_from_an_abandoned_replay(capsys):
    # TensorFlow prints when a call runs: get_concrete_function prints nothing, and a call
    # whose input takes another branch (a replay abandoned at its guard, then a trace)
    # prints once, where the abandoned replay printed too.
    @tf.function
    def f(x):
        tf.print("f", x, output_stream="stdout")
        return x * 2.0

    f.get_concrete_function(tf.constant(1.0))
    assert capsys.readouterr().out == ""
    f(tf.constant(1.0))
    f(tf.constant(2.0))
    assert capsys.readouterr().out == "f 1\nf 2\n"

    @tf.function
    def g(x):
        tf.print("g", x, output_stream="stdout")
        if x > 0:
            return x
        return -x

    for v in (1.0, -1.0, -2.0, 3.0):
        g(tf.constant(v))
    assert capsys.readouterr().out == "g 1\ng -1\ng -2\ng 3\n"
