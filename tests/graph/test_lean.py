"""NOTE(lean-call) in tapeflow/graph/xla.py: a compiled signature's lean call is straight-line
code generated for its skeleton (graph/lean.py). Each case checks that the lean call
serves the calls it was made for (the full path not entered) with the values the NumPy
replay gives, and hands every other call to the full path, which gives them too."""

from __future__ import annotations

import importlib.util
import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import lean as lean_module
from tapeflow.graph.function import Function

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                reason="needs JAX (pip install -e '.[xla]')")


@pytest.fixture(autouse=True, params=["written out", "looped"])
def unroll(request, monkeypatch):
    """Every case runs with straight-line lean calls and with the loops that large
    signatures and results take (lean.UNROLL)."""
    monkeypatch.setattr(lean_module, "UNROLL", 64 if request.param == "written out" else 0)
    return request.param


def _leaves(results):
    return [None if t is None else np.asarray(t).tolist() for t in tf.nest.flatten(results)]


def _full_path_calls(monkeypatch) -> list:
    """A list that grows by one at each call the full path serves."""
    calls: list = []
    full = Function._call

    def counted(self, *a, **k):
        calls.append(1)
        return full(self, *a, **k)

    monkeypatch.setattr(Function, "_call", counted)
    return calls


def _compiled_and_replayed(fn, *args):
    """fn compiled, called until it has its lean call, and the NumPy replay's results."""
    f = tf.function(fn, jit_compile=True)
    for _ in range(3):
        f(*args)
    assert f._lean is not None, "no lean call for this signature"
    return f, tf.function(fn)(*args)


def _sum_all(*args):
    leaves = tf.nest.flatten(args)
    total = tf.convert_to_tensor(leaves[0]) * 1.0
    for t in leaves[1:]:
        total = total + tf.cast(tf.reduce_sum(t), total.dtype)
    return total


X = tf.constant([1.0, 2.0])
Y = tf.constant([[3.0], [4.0]])
Z = tf.constant(5.0)
ARGUMENTS = {
    "one": (X,),
    "two": (X, Y),
    "list": ([X, Y],),
    "nested": ((X,), [Y, [Z, X]]),
    "empty list": ([], X),
    "tuple of one": ((Z,), X),
}


@pytest.mark.parametrize("name", ARGUMENTS)
def test_lean_calls_serve_their_signature_with_the_replays_values(name, monkeypatch):
    args = ARGUMENTS[name]
    f, want = _compiled_and_replayed(_sum_all, *args)
    calls = _full_path_calls(monkeypatch)
    for _ in range(2):
        got = f(*args)
        assert type(got) is tf.Tensor
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert calls == []


def _other_calls(args):
    """Calls of another signature than `args`, each by one change."""
    x = args[0]
    yield "another shape", (tf.constant([1.0, 2.0, 3.0]),) + args[1:]
    yield "another dtype", (tf.cast(x, tf.float64),) + args[1:]
    yield "a NumPy array", (np.asarray(x),) + args[1:]
    yield "a variable", (tf.Variable(x),) + args[1:]
    yield "a Python list of numbers", (np.asarray(x).tolist(),) + args[1:]
    yield "one argument more", args + (x,)


@pytest.mark.parametrize("case", [name for name, _ in _other_calls(ARGUMENTS["two"])])
def test_other_signatures_take_the_full_path(case, monkeypatch):
    args = ARGUMENTS["two"]
    f, _ = _compiled_and_replayed(_sum_all, *args)
    other = dict(_other_calls(args))[case]
    assert f._lean(other) is lean_module.MISS
    calls = _full_path_calls(monkeypatch)
    got = f(*other)
    assert calls == [1]
    want = tf.function(_sum_all)(*other)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("other", [
    ((X, Y),),          # a tuple where the signature has a list
    ([X],),             # a shorter list
    ([X, Y, Z],),       # a longer one
    ([X, tf.constant([[3.0, 1.0]])],),  # an item of another shape
])
def test_containers_of_another_structure_take_the_full_path(other):
    f, _ = _compiled_and_replayed(_sum_all, *ARGUMENTS["list"])
    assert f._lean(other) is lean_module.MISS
    np.testing.assert_allclose(np.asarray(f(*other)), np.asarray(tf.function(_sum_all)(*other)),
                               rtol=1e-6)


def test_a_list_changed_in_place_is_read_again():
    f, _ = _compiled_and_replayed(_sum_all, *ARGUMENTS["list"])
    items = [X, Y]
    before = f(items).numpy().tolist()
    items[1] = Y * 10.0
    assert f(items).numpy().tolist() == [v + 63.0 for v in before]


def test_captured_variables_are_read_at_each_call():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(3.0)
    f, _ = _compiled_and_replayed(lambda x: x * v + w, X)
    assert f(X).numpy().tolist() == [4.0, 7.0]
    v.assign([10.0, 20.0])
    assert f(X).numpy().tolist() == [13.0, 43.0]
    w.assign_add(1.0)
    assert f(X).numpy().tolist() == [14.0, 44.0]


def test_a_new_tensor_at_each_call():
    f, _ = _compiled_and_replayed(lambda x: x * 2.0, X)
    for k in range(4):
        x = tf.constant([float(k), 1.0])
        assert f(x).numpy().tolist() == [2.0 * k, 2.0]


@pytest.mark.parametrize("user", [True, False], ids=["x64 on", "x64 off"])
@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_lean_calls_under_either_64_bit_setting(user, dtype, monkeypatch):
    import jax

    x = tf.constant([1e-30, 2.0], dtype)
    f, want = _compiled_and_replayed(lambda t: [t * 3.0, tf.reduce_sum(t)], x)
    calls = _full_path_calls(monkeypatch)
    with jax.enable_x64(user):
        got = f(x)
        assert jax.config.jax_enable_x64 == user
    assert calls == []
    assert [t.dtype for t in got] == [dtype, dtype]
    assert _leaves(got) == _leaves(want)


def test_recorders_and_eager_runs_take_the_full_path():
    f, _ = _compiled_and_replayed(lambda t: tf.reduce_sum(t * t), X)
    with tf.GradientTape() as tape:
        tape.watch(X)
        assert f._lean((X,)) is lean_module.MISS
        y = f(X)
    assert tape.gradient(y, X).numpy().tolist() == [2.0, 4.0]
    with tf.autodiff.ForwardAccumulator(X, tf.constant([1.0, 0.0])) as acc:
        y = f(X)
    assert acc.jvp(y).numpy() == 2.0
    tf.config.run_functions_eagerly(True)
    try:
        assert f._lean((X,)) is lean_module.MISS
    finally:
        tf.config.run_functions_eagerly(False)


def test_a_recorder_in_another_thread_leaves_this_ones_lean_call():
    f, _ = _compiled_and_replayed(lambda t: t + 1.0, X)
    entered, done = threading.Event(), threading.Event()

    def record():
        with tf.GradientTape():
            entered.set()
            done.wait(10)

    thread = threading.Thread(target=record)
    thread.start()
    try:
        entered.wait(10)
        result = f._lean((X,))
        assert result is not lean_module.MISS and result.numpy().tolist() == [2.0, 3.0]
    finally:
        done.set()
        thread.join()


@pytest.mark.parametrize("build", [
    lambda a, b: a, lambda a, b: [a, b], lambda a, b: (a, None, b), lambda a, b: {"a": a},
    lambda a, b: [a, [b]], lambda a, b: None, lambda a, b: (a,)])
def test_lean_results_have_the_traced_structure(build):
    f, want = _compiled_and_replayed(lambda x: build(x * 2.0, x - 1.0), X)
    got = f(X)
    assert tf.nest.map_structure(lambda t: None, got) == tf.nest.map_structure(lambda t: None, want)
    assert _leaves(got) == _leaves(want)
    for t in tf.nest.flatten(got):
        assert t is None or type(t) is tf.Tensor


def test_generated_code_is_shared_by_signatures_of_one_skeleton():
    lean_module._compiled.cache_clear()
    f = tf.function(lambda x, y: x * y, jit_compile=True)
    for shape in ((2,), (3,), (2, 2)):
        x = tf.constant(np.ones(shape))
        for _ in range(3):
            f(x, x)
        assert f._lean is not None
    info = lean_module._compiled.cache_info()
    assert info.misses == 1 and info.hits == 2


def test_a_signature_of_many_tensors_and_variables_and_results():
    """Over lean.UNROLL tensors (a list of 100, and 70 captured variables) and results (100):
    the lean call loops, and serves the calls as the written-out one does."""
    xs = [tf.constant([float(i), 1.0]) for i in range(100)]
    vs = [tf.Variable(float(i)) for i in range(70)]
    f, want = _compiled_and_replayed(lambda xs: [x * vs[i % 70] for i, x in enumerate(xs)], xs)
    assert _leaves(f(xs)) == _leaves(want)
    vs[3].assign(-1.0)
    assert f(xs)[3].numpy().tolist() == [-3.0, -1.0]
    assert f._lean((xs[:99],)) is lean_module.MISS
    assert f._lean((xs[:99] + [tf.constant([1.0, 2.0, 3.0])],)) is lean_module.MISS
    assert f._lean((tuple(xs),)) is lean_module.MISS


def test_alternating_signatures_keep_their_lean_calls(monkeypatch):
    made: list = []
    make = Function._lean_of
    monkeypatch.setattr(Function, "_lean_of", lambda self, key: made.append(1) or make(self, key))
    f = tf.function(lambda x: x * 2.0, jit_compile=True)
    a, b = tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0])
    for _ in range(5):
        assert f(a).numpy().tolist() == [2.0, 4.0]
        assert f(b).numpy().tolist() == [2.0, 4.0, 6.0]
    assert len(made) == 2 and len(f._leans) == 2
    f(tf.constant([[1.0]]))  # a trace: every signature's lean call is made again
    assert f._leans == {}
    f(a)
    assert f(a).numpy().tolist() == [2.0, 4.0] and len(made) == 3
