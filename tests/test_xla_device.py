"""function(jit_compile=True, keep_on_device=True) (graph/device.py, graph/xla.py): compiled
calls return DeviceTensors holding JAX arrays, copied to the host only when the NumPy value
is read; a DeviceTensor passed to a compiled function goes in as its device array (checked
by its host copy staying unmade, never by timing); values and gradients equal the NumPy
replay's and keep_on_device=False's; eager ops, tapes, accumulators, vmap, printing,
np.asarray and pickling treat it as any tensor; 64-bit dtypes survive the chain. Skipped
without JAX (the `xla` extra); the argument check needs no JAX and lives in
test_jit_compile.py."""

from __future__ import annotations

import copy
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import tapeflow as tf  # noqa: E402
from tapeflow.graph import xla  # noqa: E402
from tapeflow.graph.device import DeviceTensor, array_of, placed  # noqa: E402


def _stage1(x):
    return tf.sin(x) * 2.0 + x


def _stage2(x):
    return tf.tanh(x) * x - 0.5


def _stage3(x):
    return tf.reduce_sum(x * x, axis=-1)


STAGES = (_stage1, _stage2, _stage3)


def _chain(keep_on_device, jit_compile=True):
    return [tf.function(f, jit_compile=jit_compile, keep_on_device=keep_on_device)
            for f in STAGES]


def _run(fns, x):
    for f in fns:
        x = f(x)
    return x


def _warm(fns, x):
    """Trace (the first call runs on NumPy) and compile every stage for x's signature."""
    for _ in range(2):
        _run(fns, x)


def _x(dtype=np.float32, shape=(4, 5), seed=0):
    return tf.constant(np.random.default_rng(seed).normal(size=shape).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_chained_values_equal_the_numpy_replay_and_the_host_results(dtype):
    device, host, numpy = _chain(True), _chain(False), _chain(False, jit_compile=None)
    x = _x(dtype)
    _warm(device, x)
    _warm(host, x)
    mid = device[1](device[0](x))
    assert type(mid) is DeviceTensor and mid.dtype == tf.as_dtype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(mid.numpy(), host[1](host[0](x)).numpy(), rtol=rtol)
    np.testing.assert_allclose(mid.numpy(), numpy[1](numpy[0](x)).numpy(), rtol=rtol, atol=rtol)
    out = _run(device, x)
    assert out.shape == (4,) and out.dtype == tf.as_dtype(dtype)
    np.testing.assert_allclose(out.numpy(), _run(host, x).numpy(), rtol=rtol)
    np.testing.assert_allclose(out.numpy(), _run(numpy, x).numpy(), rtol=rtol)


def test_chaining_never_copies_to_the_host():
    f, g, h = _chain(True)
    x = _x()
    _warm((f, g, h), x)
    y = f(x)
    z = g(y)
    out = h(z)
    assert type(y) is DeviceTensor and type(z) is DeviceTensor and type(out) is DeviceTensor
    assert not y.materialized and not z.materialized and not out.materialized
    assert isinstance(y.device_array, jax.Array)
    # a function that returns host results takes a DeviceTensor without copying it either
    host = tf.function(_stage3, jit_compile=True)
    host(g(f(x)))
    z = g(f(x))
    assert type(host(z)) is tf.Tensor and not z.materialized
    # the signature checks read shape and dtype only
    cf = g.get_concrete_function(y)
    assert not cf(y).materialized and not y.materialized
    specified = tf.function(_stage2, jit_compile=True, keep_on_device=True,
                            input_signature=[tf.TensorSpec([None, 5], tf.float32)])
    specified(x)
    specified(x)
    assert not specified(y).materialized and not y.materialized
    assert y.shape == (4, 5) and y.dtype == tf.float32 and y.ndim == 2 and len(y) == 4
    assert not y.materialized
    np.testing.assert_array_equal(y.numpy(), np.asarray(y.device_array))
    assert y.materialized


def test_a_guard_reads_its_value_and_still_retraces():
    @tf.function(jit_compile=True, keep_on_device=True)
    def branch(x):
        if bool(tf.reduce_sum(x) > 0):
            return x * 2.0
        return x - 1.0

    make = tf.function(lambda x: x + 0.0, jit_compile=True, keep_on_device=True)
    up, down = tf.constant([1.0, 2.0]), tf.constant([-1.0, -2.0])
    for _ in range(2):
        branch(make(up))
        branch(make(down))
    assert branch.experimental_get_tracing_count() == 2
    a, b = make(up), make(down)
    assert branch(a).numpy().tolist() == [2.0, 4.0]
    assert branch(b).numpy().tolist() == [-2.0, -3.0]
    # The guard's value is computed inside the compiled call: the input is not copied.
    assert not a.materialized and not b.materialized


def test_gradients_through_a_chained_call_equal_the_host_path():
    def grads(fns, x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(_run(fns, x))
        return y, tape.gradient(y, x)

    device, host = _chain(True), _chain(False)
    x = _x()
    _warm(device, x)
    _warm(host, x)
    (yd, gd), (yh, gh) = grads(device, x), grads(host, x)
    np.testing.assert_allclose(yd.numpy(), yh.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gd.numpy(), gh.numpy(), rtol=1e-6)
    # a DeviceTensor watched as the input of the rest of the chain
    mid = device[0](x)
    with tf.GradientTape() as tape:
        tape.watch(mid)
        y = tf.reduce_sum(device[2](device[1](mid)))
    with tf.GradientTape() as tape2:
        mid2 = host[0](x)
        tape2.watch(mid2)
        y2 = tf.reduce_sum(host[2](host[1](mid2)))
    np.testing.assert_allclose(tape.gradient(y, mid).numpy(), tape2.gradient(y2, mid2).numpy(),
                               rtol=1e-6)


def _device_tensor(values=((1.0, -2.0), (3.0, 0.5))):
    f = tf.function(lambda x: x * 1.0, jit_compile=True, keep_on_device=True)
    x = tf.constant(values)
    f(x)
    t = f(x)
    assert type(t) is DeviceTensor and not t.materialized
    return t


def test_eager_ops_tapes_accumulators_and_vmap_treat_it_as_a_tensor():
    t = _device_tensor()
    want = np.array([[1.0, -2.0], [3.0, 0.5]], np.float32)
    np.testing.assert_array_equal((t * 2.0 + t).numpy(), want * 3.0)
    np.testing.assert_array_equal((2.0 - t).numpy(), 2.0 - want)
    np.testing.assert_array_equal(tf.matmul(t, t).numpy(), want @ want)
    np.testing.assert_array_equal(tf.exp(t).numpy(), np.exp(want))
    np.testing.assert_array_equal(t[1].numpy(), want[1])
    assert tf.convert_to_tensor(t) is t and tf.is_tensor(t)
    assert float(tf.reduce_sum(t)) == float(want.sum())
    assert [row.numpy().tolist() for row in t] == want.tolist()

    t = _device_tensor()
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = tf.reduce_sum(t ** 2.0)
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), 2.0 * want)

    t = _device_tensor()
    with tf.autodiff.ForwardAccumulator(t, tf.ones_like(t)) as acc:
        y = t * t
    np.testing.assert_array_equal(acc.jvp(y).numpy(), 2.0 * want)

    t = _device_tensor()
    np.testing.assert_array_equal(tf.vmap(lambda r: r * r)(t).numpy(), want * want)
    np.testing.assert_array_equal(tf.function(lambda v: v + 1.0)(t).numpy(), want + 1.0)


def test_printing_numpy_and_pickling():
    t = _device_tensor()
    host = tf.constant([[1.0, -2.0], [3.0, 0.5]])
    assert repr(t) == repr(host) and str(t) == str(host) and f"{t}" == f"{host}"
    t = _device_tensor()
    a = np.asarray(t)
    np.testing.assert_array_equal(a, host.numpy())
    assert not a.flags.writeable  # a view of an immutable tensor, as any tensor's
    n = t.numpy()
    n[0, 0] = 99.0  # a copy: the tensor is unchanged
    assert t.numpy()[0, 0] == 1.0
    for t in (_device_tensor(), _device_tensor()):
        for back in (pickle.loads(pickle.dumps(t)), copy.copy(t), copy.deepcopy(t)):
            assert type(back) is tf.Tensor
            np.testing.assert_array_equal(back.numpy(), host.numpy())
    scalar = tf.function(tf.reduce_sum, jit_compile=True, keep_on_device=True)
    scalar(host)
    s = scalar(host)
    assert type(s) is DeviceTensor and s.shape == () and f"{s:.2f}" == "2.50"
    assert str(s) == str(tf.function(tf.reduce_sum, jit_compile=True)(host))


def test_64_bit_device_arrays_keep_their_dtype_when_passed_on():
    f = tf.function(lambda x: x * 2.0, jit_compile=True, keep_on_device=True)
    g = tf.function(lambda x: x + tf.ones_like(x), jit_compile=True, keep_on_device=True)
    counts = tf.function(lambda i: i * 3, jit_compile=True, keep_on_device=True)
    before = jax.config.jax_enable_x64
    x = tf.constant([1.0 + 1e-12, 2.0], tf.float64)
    i = tf.constant([2 ** 40, 1], tf.int64)
    for _ in range(2):
        y = g(f(x))
        j = counts(counts(i))
    assert y.device_array.dtype == np.float64 and y.dtype == tf.float64 and not y.materialized
    assert y.numpy().tolist() == [3.0 + 2e-12, 5.0]
    assert j.device_array.dtype == np.int64 and j.numpy().tolist() == [9 * 2 ** 40, 9]
    assert jax.config.jax_enable_x64 == before
    low = tf.function(lambda x: x * 2.0, jit_compile=True, keep_on_device=True)
    assert low(low(tf.constant([1.0]))).dtype == tf.float32


def test_calls_that_run_on_numpy_return_host_tensors(capsys, monkeypatch):
    """A graph with a host callback replays with NumPy: ordinary tensors come back (a
    DeviceTensor input copied to the host for it). An input the impl refuses reruns on
    NumPy, which raises its error."""
    @tf.function(jit_compile=True, keep_on_device=True)
    def printed(x):
        tf.print("sum", tf.reduce_sum(x), output_stream=sys.stdout)
        return x + 1.0

    t = _device_tensor(values=(1.0, 2.0))
    # "no XLA lowering" is warned once per process: this test leaves that once to others
    monkeypatch.setattr(xla, "_WARNED", set())
    with pytest.warns(UserWarning, match="'print' has no XLA lowering"):
        printed(t)
    out = printed(t)
    assert type(out) is tf.Tensor and out.numpy().tolist() == [2.0, 3.0]
    fresh = _device_tensor(values=(1.0, 2.0))
    printed(fresh)
    assert fresh.materialized  # the NumPy replay read its host value, now kept
    assert capsys.readouterr().out == "sum 3\n" * 3

    gather = tf.function(lambda p, i: tf.gather(p, i), jit_compile=True, keep_on_device=True)
    p = _device_tensor(values=(1.0, 2.0, 3.0))
    gather(p, tf.constant([2, 0]))
    got = gather(p, tf.constant([2, 0]))
    assert type(got) is DeviceTensor and got.numpy().tolist() == [3.0, 1.0]
    with pytest.raises(tf.errors.InvalidArgumentError):
        gather(p, tf.constant([3, 0]))


def test_variables_written_by_a_compiled_call_stay_host_arrays():
    v = tf.Variable([1.0, 2.0])

    @tf.function(jit_compile=True, keep_on_device=True)
    def step(x):
        v.assign_add(x)
        return v.read_value() * 1.0

    x = _device_tensor(values=(1.0, 1.0))
    step(x)
    out = step(x)
    assert type(v._value) is np.ndarray and v.numpy().tolist() == [3.0, 4.0]
    assert type(out) is DeviceTensor and out.numpy().tolist() == [3.0, 4.0]


def test_the_flag_survives_pickling_and_copying():
    f = tf.function(_stage1, jit_compile=True, keep_on_device=True)
    x = _x()
    for clone in (pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f)):
        clone(x)
        assert type(clone(x)) is DeviceTensor
    plain = pickle.loads(pickle.dumps(tf.function(_stage1, jit_compile=True)))
    plain(x)
    assert type(plain(x)) is tf.Tensor


def test_array_of_gives_the_device_array_unchanged():
    t = _device_tensor()
    assert array_of(t) is t.device_array and not t.materialized
    host = tf.constant([1.0])
    assert array_of(host) is host._value


def test_a_host_tensor_is_copied_to_the_device_once():
    """NOTE(placed): a tensor's first compiled call takes its NumPy value; a call that
    passes it again places it, and later ones take the kept copy; on the CPU the
    tensor's value is then a view of it (one buffer, not two), with the same values,
    still read-only."""
    f = tf.function(lambda x: x * 2.0, jit_compile=True)
    t = tf.constant(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    before = t._value.copy()
    f(t)  # the trace runs eagerly
    f(t)  # the first compiled call: the NumPy value as it is
    assert t._placed == (t._value, None)
    f(t)
    kept = t._placed[1]
    assert kept is not None and placed(t, jax) is kept
    assert f(t).numpy().tolist() == (before * 2).tolist()
    assert t._placed[1] is kept and t.numpy().tolist() == before.tolist()
    assert t._value.ctypes.data == kept.unsafe_buffer_pointer()
    assert not t._value.flags.writeable and t.numpy().flags.writeable
    assert (np.asarray(t) == before).all() and float(tf.reduce_sum(t)) == 15.0


def test_inputs_made_for_one_call_are_never_placed(monkeypatch):
    """A tensor passed to one compiled call only goes in as its NumPy value (no
    jax.device_put); one passed again is placed once."""
    f = tf.function(lambda x: tf.reduce_sum(x * 2.0), jit_compile=True)
    batches = [np.full((3, 4), float(k), np.float32) for k in range(6)]
    f(tf.constant(batches[0]))
    f(tf.constant(batches[0]))
    puts = []
    real = jax.device_put
    monkeypatch.setattr(jax, "device_put", lambda *a, **k: puts.append(1) or real(*a, **k))
    for k, b in enumerate(batches):
        assert float(f(tf.constant(b))) == 24.0 * k
    assert puts == []
    again = tf.constant(batches[2])
    assert [float(f(again)) for _ in range(3)] == [48.0] * 3
    assert len(puts) == 1 and again._placed[1] is not None


def test_a_variable_assigned_since_is_copied_again():
    v = tf.Variable([1.0, 2.0])
    f = tf.function(lambda: v * 10.0, jit_compile=True)
    assert f().numpy().tolist() == [10.0, 20.0]
    v.assign([3.0, 4.0])  # eager: a new host value, the kept copy is stale
    assert f().numpy().tolist() == [30.0, 40.0]
    v.assign_add([1.0, 1.0])
    assert f().numpy().tolist() == [40.0, 50.0]


def test_a_variable_written_by_a_compiled_call_keeps_its_result_as_device_copy():
    v = tf.Variable([1.0, 2.0])

    @tf.function(jit_compile=True)
    def step():
        v.assign(v * 2.0)
        return v.read_value() + 0.0

    step()
    step()
    assert v._placed[0] is v._value and placed(v, jax) is v._placed[1]
    assert v.numpy().tolist() == [4.0, 8.0]
    assert (v + 1.0).numpy().tolist() == [5.0, 9.0]  # eager reads of the view
    v.assign_sub([1.0, 1.0])
    assert step().numpy().tolist() == [6.0, 14.0]


def test_an_assignment_while_placing_is_not_undone(monkeypatch):
    """A variable assigned by another thread while its copy is made keeps the new value:
    the old copy serves this call (a read before the assignment), and is not kept."""
    v = tf.Variable([1.0, 2.0])
    real_put = jax.device_put

    def put_and_assign(value, *args, **kwargs):
        out = real_put(value, *args, **kwargs)
        v.assign([7.0, 8.0])  # what another thread could do meanwhile
        return out

    monkeypatch.setattr(jax, "device_put", put_and_assign)
    device = placed(v, jax)
    monkeypatch.setattr(jax, "device_put", real_put)
    assert np.asarray(device).tolist() == [1.0, 2.0]
    assert v.numpy().tolist() == [7.0, 8.0] and getattr(v, "_placed", None) is None
    assert np.asarray(placed(v, jax)).tolist() == [7.0, 8.0]


def test_placing_a_variable_another_thread_holds_does_not_wait():
    """Two compiled calls, each writing a variable the other reads, hold their own
    variables' locks: placing the other's must not wait for its lock (a deadlock)."""
    import threading

    v = tf.Variable([1.0, 2.0])
    held, release = threading.Event(), threading.Event()

    def hold():
        with v._lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        device = placed(v, jax)  # returns at once, keeping nothing
        assert np.asarray(device).tolist() == [1.0, 2.0]
        assert getattr(v, "_placed", None) is None
    finally:
        release.set()
        holder.join()
    assert placed(v, jax) is v._placed[1]  # kept once the lock is free


def test_64_bit_host_tensors_keep_their_dtype_when_placed():
    assert not jax.config.jax_enable_x64
    t = tf.constant([1.0, 2.0], dtype=tf.float64)
    f = tf.function(lambda x: x * 3.0, jit_compile=True)
    f(t)
    first = f(t)  # its NumPy value, in the graph's 64-bit mode
    out = f(t)  # placed
    assert first.dtype == out.dtype == tf.float64 and t._placed[1].dtype == np.float64
    assert first.numpy().tolist() == out.numpy().tolist() == [3.0, 6.0]
    assert not jax.config.jax_enable_x64


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("page", ["README.md", "docs/migrating.md"])
def test_the_documented_example_runs(page, capsys):
    """The pages' keep_on_device examples start "# not run:" (test_docs_pages.py runs
    the docs without JAX): they run here."""
    blocks = [b for b in re.findall(r"^```python\n(.*?)^```", (ROOT / page).read_text(),
                                    re.S | re.M) if "keep_on_device=True" in b]
    assert blocks, f"{page} has no keep_on_device example"
    for code in blocks:
        exec(compile(code, page, "exec"), {"__name__": "docs_example"})
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "DeviceTensor (256,) float32 False"


def test_a_device_jax_has_runs_the_compiled_functions_of_a_device_block(tmp_path):
    # Two host devices stand in for a GPU (none here): the same route, by JAX's platform
    # name; eager ops of the block run on the CPU, as soft placement runs them.
    import subprocess
    script = tmp_path / "two_devices.py"
    script.write_text(
        "import jax, numpy as np, tapeflow as tf\n"
        "f = tf.function(lambda x: tf.sin(x) * 2.0 + 1.0, jit_compile=True,\n"
        "                keep_on_device=True)\n"
        "x = tf.constant(np.arange(4.0, dtype=np.float32))\n"
        "want = np.sin(np.arange(4.0, dtype=np.float32)) * 2 + 1\n"
        "for name, k in (('/CPU:1', 1), ('/device:CPU:0', 0), ('/CPU:1', 1)):\n"
        "    with tf.device(name):\n"
        "        y = f(f(x) * 0.0 + x)  # the second call's input: a device array\n"
        "        eager = float(tf.reduce_sum(x))\n"
        "    assert y.device_array.devices() == {jax.devices('cpu')[k]}, (name, y)\n"
        "    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)\n"
        "    assert eager == 6.0\n"
        "try:\n"
        "    with tf.device('/CPU:2'):\n"
        "        pass\n"
        "except tf.errors.InvalidArgumentError as e:\n"
        "    assert 'JAX has no CPU:2' in str(e), e\n"
        "else:\n"
        "    raise AssertionError('no error for a device JAX lacks')\n"
        "print('ok')\n")
    env = dict(__import__("os").environ,
               XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_a_gpu_name_without_a_gpu_says_so():
    with pytest.raises(tf.errors.InvalidArgumentError, match="JAX has no GPU:0 here"):
        with tf.device("/GPU:0"):
            pass
