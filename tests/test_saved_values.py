"""What a GradientTape keeps (NOTE(saved-values) in tapeflow/tape.py): only the values
each recorded op's VJP rule reads, so eager reverse mode holds what its backward pass
needs rather than every intermediate; tensors are named by keys, so a freed tensor's
id reused by a new one is never mistaken for it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import Husk, registry
from tapeflow.ops.structural import shape_of

from chain_helpers import N, N_BLOCKS, grad_of_chain, peak_arrays


def test_eager_reverse_mode_keeps_only_what_the_backward_pass_reads():
    x = tf.constant(np.random.default_rng(0).random(N, dtype=np.float32))
    _, peak = peak_arrays(grad_of_chain, x)
    # The backward pass reads three values per block (sin's input, tanh's output, the
    # square's input): 120 arrays, plus a few in flight. Keeping every op's inputs and
    # outputs held all 200; PyTorch's eager autograd holds 134 on this chain.
    assert peak <= 3 * N_BLOCKS + 6, peak
    small = tf.constant(np.random.default_rng(1).random(10))  # float64: no underflow
    g = grad_of_chain(small)
    np.testing.assert_allclose(g.numpy(), numpy_chain_gradient(small.numpy()), rtol=1e-10)


def numpy_chain_gradient(x):
    x = x.astype(np.float64)
    grad = np.ones_like(x)
    for _ in range(N_BLOCKS):
        s = np.sin(x)
        t = np.tanh(s * 1.0001)
        grad = grad * np.cos(x) * 1.0001 * (1 - t * t) * 2 * (t + 0.5)
        x = (t + 0.5) ** 2
    return grad


def test_a_freed_tensors_id_reused_by_a_new_tensor_is_not_confused_with_it():
    x = tf.constant([2.0, 3.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 3.0
        z = y * y          # keeps y (the square reads it) ...
        w = z + 1.0        # ... while this add keeps nothing of z
        old = id(z)
        del z
        gc.collect()
        # New tensors until one takes z's id (CPython reuses the freed object's memory).
        fresh = [tf.constant([5.0, 7.0]) for _ in range(2000)]
        same = [t for t in fresh if id(t) == old]
        u = (same[0] if same else fresh[0]) * 2.0
    # z's key lives on in the record; the new tensor is not watched, has no key, and
    # neither receives z's cotangent nor sends one.
    np.testing.assert_allclose(tape.gradient(w, x).numpy(), 18 * x.numpy())
    if same:
        assert tape.gradient(w, same[0]) is None
        assert tape.gradient(u, x) is None


def test_watching_after_an_id_is_reused_starts_a_new_key():
    with tf.GradientTape(persistent=True) as tape:
        a = tf.constant(1.0)
        tape.watch(a)
        b = a * 2.0
        old = id(a)
        del a
        gc.collect()
        fresh = [tf.constant(4.0) for _ in range(2000)]
        c = next((t for t in fresh if id(t) == old), fresh[0])
        tape.watch(c)
        d = c * c
    assert tape.gradient(d, c).numpy() == 8.0
    assert tape.gradient(b, c) is None


def test_a_husk_is_loud_when_a_rule_reads_it(monkeypatch):
    """A rule that reads a value its declaration says it does not read raises at once,
    never computes with a stand-in."""
    from tapeflow import tape as tape_module

    mul = registry()["multiply"]
    monkeypatch.setitem(mul.rules, "reads", (((), ()), ((), ())))
    monkeypatch.setattr(tape_module, "_KEPT", {})  # what the tape made of the real reads
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.constant([3.0, 4.0])
    with pytest.raises(RuntimeError, match="internal error.*multiply"):
        tape.gradient(y, x)


def test_a_husk_answers_shape_and_dtype_only():
    h = Husk(tf.constant(np.zeros((2, 3), np.float32)), "sin")
    assert shape_of(h) == (2, 3) and h.dtype == np.float32
    with pytest.raises(RuntimeError, match="internal error"):
        h._value


def test_reads_are_declared_by_name_and_checked_against_the_rule():
    from tapeflow.ops.structural import per_input

    family = per_input(vjp=(lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * ans * x),
                       reads=("y", "ans x"))
    assert family(registry()["multiply"])["reads"] == (((1,), ()), ((0,), (0,)))
    with pytest.raises(TypeError, match="`reads` names 'z'"):
        per_input(vjp=(lambda g, ans, x: g,), reads=("z",))(registry()["sin"])
    with pytest.raises(TypeError, match="declares 1 rules' reads for 2"):
        per_input(vjp=(lambda g, ans, x, y: g, None), reads=("",))(registry()["multiply"])


def test_nested_tapes_keep_what_the_outer_tape_needs():
    """The inner backward pass reads saved values through ops the outer tape records."""
    x = tf.constant([0.3, -1.2])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(tf.sin(x) * tf.exp(x))
        g = inner.gradient(y, x)
    h = outer.gradient(g, x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(h, 2 * np.cos(xv) * np.exp(xv), rtol=1e-6)


def test_small_ops_keep_their_values_and_large_ones_drop_them(monkeypatch):
    from tapeflow import tape as tape_module

    monkeypatch.setattr(tape_module, "HUSK_AT_BYTES", 64 * 1024)
    for n, husked in ((16, False), (1 << 15, True)):  # 128 bytes; 256 KiB
        x = tf.constant(np.ones(n))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sin(x) + 1.0
        kinds = [type(v) is Husk for entry in tape._entries for v in entry[3] + entry[4]]
        assert any(kinds) == husked
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), np.cos(1.0))


def test_an_integer_output_does_not_make_unwatched_inputs_reached():
    """Tapes name integer outputs by no key; the plan must never treat "no key" as a
    reached tensor, or ops on unwatched inputs would run their rules."""
    calls = []

    @tf.custom_gradient
    def f(c):
        def grad_fn(g):
            calls.append(1)
            return g * 2.0
        return c * 2.0, grad_fn

    x = tf.constant([1.0, 2.0])
    c = tf.constant([3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        tf.cast(x, tf.int32)  # an output with no key
        y = f(c)              # c is not watched
        z = x * y
    np.testing.assert_allclose(tape.gradient(z, x).numpy(), [6.0, 8.0])
    assert calls == []


def test_threads_naming_one_shared_tensor_agree_on_its_key():
    """Many threads watch one shared tensor at once; each tape must find it watched."""
    import threading

    for _ in range(20):
        x = tf.constant([1.0, 2.0])  # fresh: no key yet
        results, barrier = [], threading.Barrier(8)

        def work():
            with tf.GradientTape() as tape:
                barrier.wait()
                tape.watch(x)
                y = x * 3.0
            results.append(tape.gradient(y, x))

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(r is not None and np.array_equal(r.numpy(), [3.0, 3.0]) for r in results)
