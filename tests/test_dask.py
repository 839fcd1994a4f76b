"""tapeflow.dask: Jacobians at many inputs as a Dask array (`map_jacobian`).

In this process (Dask's local schedulers): the values equal the in-process vectorized
Jacobian (uneven chunks, matrix-shaped examples, scalar outputs, forward mode, NumPy
input, a tf.function as f), one trace serves every chunk, and each bad input (X chunked
along an example axis, unknown chunk sizes, integer inputs, a closure that does not
pickle) is a clear error raised before anything is computed. On a real
`distributed.LocalCluster` of two worker processes: the seed problem's network, the same
values as in-process, each worker tracing once for more chunks than workers; traced
functions and their derivatives run on the workers; a function that cannot be loaded on
the workers is an error saying so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import tapeflow as tf

da = pytest.importorskip("dask.array")
pytest.importorskip("cloudpickle")
tfd = pytest.importorskip("tapeflow.dask")

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import cnn  # noqa: E402  (the seed problem's network)


def in_process(f, xs, mode="auto"):
    return tf.vmap(tf.jacobian(f, mode=mode))(np.asarray(xs)).numpy()


def nonlinear(x):  # [2, 3] -> [2]
    return tf.stack([tf.reduce_sum(tf.sin(x) * x), tf.reduce_prod(tf.tanh(x[0]) + 2.)])


def function_token(J) -> str:
    """The hash trace_stats names J's function by (the key of its pickled f)."""
    keys = [str(k) for k in dict(J.__dask_graph__()) if str(k).startswith("tapeflow-function-")]
    assert len(keys) == 1, keys
    return keys[0].removeprefix("tapeflow-function-")


# ---------------------------------------------------------------- in this process
def test_jacobians_equal_the_in_process_vectorized_jacobian():
    xs = np.random.default_rng(0).standard_normal((13, 2, 3))
    X = da.from_array(xs, chunks=(5, 2, 3))  # 5, 5, 3: the last chunk is padded
    J = tfd.map_jacobian(nonlinear, X)
    assert J.shape == (13, 2, 2, 3) and J.chunks == ((5, 5, 3), (2,), (2,), (3,))
    assert J.dtype == np.float64
    np.testing.assert_allclose(J.compute(), in_process(nonlinear, xs), rtol=1e-12, atol=0)
    J32 = tfd.map_jacobian(nonlinear, X.astype(np.float32)).compute(scheduler="sync")
    assert J32.dtype == np.float32
    np.testing.assert_allclose(J32, in_process(nonlinear, xs.astype(np.float32)), rtol=1e-6)


def test_gradients_forward_mode_and_a_traced_f():
    xs = np.random.default_rng(1).uniform(0.5, 2., (7, 4))
    X = da.from_array(xs, chunks=(3, 4))

    def energy(x):
        return tf.reduce_sum(tf.math.log(x) * x)

    grads = tfd.map_jacobian(energy, X).compute()
    np.testing.assert_allclose(grads, np.log(xs) + 1., rtol=1e-12)
    forward = tfd.map_jacobian(tf.function(energy), X, mode="forward").compute()
    np.testing.assert_allclose(forward, grads, rtol=1e-12)


def test_numpy_inputs_are_chunked_by_chunk_size():
    xs = np.random.default_rng(2).standard_normal((10, 2, 3))
    J = tfd.map_jacobian(nonlinear, xs, chunk_size=4)
    assert J.chunks[0] == (4, 4, 2)
    np.testing.assert_allclose(J.compute(), in_process(nonlinear, xs), rtol=1e-12, atol=0)


def test_one_trace_serves_every_chunk():
    xs = np.random.default_rng(3).standard_normal((11, 3))

    def f(x):
        return tf.tanh(x) * 3.

    J = tfd.map_jacobian(f, da.from_array(xs, chunks=(2, 3)))
    J.compute(scheduler="threads")
    J.compute(scheduler="sync")
    assert tfd.trace_stats()[function_token(J)] == {"traces": 1, "chunks": 12}


def test_f_undefined_at_zero_learns_the_shape_from_the_first_example():
    xs = np.stack([np.eye(2) * (i + 1) + 0.5 for i in range(4)])
    J = tfd.map_jacobian(tf.linalg.inv, da.from_array(xs, chunks=(3, 2, 2)))  # inv(0) fails
    np.testing.assert_allclose(J.compute(), in_process(tf.linalg.inv, xs), rtol=1e-12)
    with pytest.raises(ValueError, match="fails at the first example of X"):
        tfd.map_jacobian(tf.linalg.inv, da.zeros((4, 2, 2), chunks=(2, 2, 2)))


# ---------------------------------------------------------------- bad input
def test_chunks_along_an_example_axis_say_how_to_rechunk():
    X = da.zeros((8, 4, 6), chunks=(4, 2, 6))
    with pytest.raises(ValueError, match=r"chunked along axis 1 .*\(\(4, 4\), \(2, 2\), \(6,\)\)"
                       r".*X\.rechunk\(\{0: 'auto', 1: -1, 2: -1\}\)"):
        tfd.map_jacobian(nonlinear, X)


def test_other_bad_inputs():
    X = da.zeros((8, 2, 3), chunks=(4, 2, 3))
    unknown = X[X[:, 0, 0] > -1.]
    with pytest.raises(ValueError, match=r"unknown chunk sizes.*X\.compute_chunk_sizes\(\)"):
        tfd.map_jacobian(nonlinear, unknown)
    with pytest.raises(TypeError, match=r"dtype int64.*X\.astype\('float64'\)"):
        tfd.map_jacobian(nonlinear, da.zeros((4, 2, 3), dtype=np.int64, chunks=(2, 2, 3)))
    with pytest.raises(ValueError, match="needs a batch axis"):
        tfd.map_jacobian(nonlinear, np.float64(1.))
    with pytest.raises(TypeError, match="f must be a function"):
        tfd.map_jacobian(X, X)
    with pytest.raises(ValueError, match="mode must be"):
        tfd.map_jacobian(nonlinear, X, mode="backward")


class Logger:
    def __init__(self, path):
        self.fh = open(path, "w")
        self.scale = tf.constant(2.)


def test_a_closure_that_does_not_pickle_names_the_object_and_what_to_do(tmp_path):
    X = da.zeros((4, 3), chunks=(2, 3))
    lock = threading.Lock()

    def locked(x):
        with lock:
            return x * x

    with pytest.raises(TypeError, match=r"f \(.*locked\) refers to an object that cannot be "
                       r"pickled: closure variable 'lock', a _thread\.lock .*create that object "
                       r"inside f instead of closing over it"):
        tfd.map_jacobian(locked, X)
    logger = Logger(tmp_path / "log.txt")
    try:
        with pytest.raises(TypeError, match=r"its Python function -> closure variable 'logger' "
                           r"-> attribute 'fh', a _io\.TextIOWrapper"):
            tfd.map_jacobian(tf.function(lambda x: x * logger.scale), X)
    finally:
        logger.fh.close()


def test_tapeflow_does_not_load_dask_and_without_dask_says_what_to_install():
    code = ("import sys, tapeflow\n"
            "assert not {'dask', 'tapeflow.dask'} & set(sys.modules), 'tapeflow loaded Dask'\n"
            "sys.modules['dask'] = None  # as if Dask were not installed\n"
            "try:\n"
            "    import tapeflow.dask\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "pip install 'tapeflow[dask]'" in done.stdout


# ---------------------------------------------------------------- on a cluster
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    environ = dict(os.environ)
    try:
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=":0") as cluster, \
                distributed.Client(cluster) as client:
            yield client
    finally:
        # The nanny writes the workers' variables (MALLOC_TRIM_THRESHOLD_, OMP_NUM_THREADS)
        # into this process's environment: later tests' subprocesses must not inherit them.
        os.environ.clear()
        os.environ.update(environ)


def seed_network():
    """The seed problem's CNN (benchmarks/cnn.py) in float64, as a function of one input."""
    model = cnn.tapeflow_model({k: v.astype(np.float64) for k, v in cnn.weights().items()})
    return lambda x: model(x[None])[0]


def test_on_a_cluster_the_jacobians_equal_in_process_and_each_worker_traces_once(client):
    f = seed_network()
    xs = cnn.inputs(60).astype(np.float64)
    J = tfd.map_jacobian(f, da.from_array(xs, chunks=(8, 784)))  # 8 chunks, the last short
    np.testing.assert_allclose(J.compute(), in_process(f, xs), rtol=1e-12, atol=0)
    J.compute()
    token = function_token(J)
    stats = [s[token] for s in client.run(tfd.trace_stats).values() if token in s]
    assert sum(s["chunks"] for s in stats) == 16  # twice 8 chunks on two workers:
    assert [s["traces"] for s in stats] == [1] * len(stats)  # one trace on each


def test_traced_functions_and_their_derivatives_run_on_workers(client):
    f = seed_network()

    @tf.function
    def jac(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x[0])
        return tape.jacobian(y, x)

    x = cnn.inputs(1).astype(np.float64)
    want = jac(x).numpy()

    def on_worker(fn, x):
        out = fn(x).numpy()
        return out, fn.experimental_get_tracing_count(), os.getpid()

    got, traces, pid = client.submit(on_worker, jac, x).result()
    assert pid != os.getpid() and traces == 1
    np.testing.assert_array_equal(got, want)


class SavedSeed(tf.Module):
    """The seed network as a saved module: `per_example` takes one input, `batch` many."""

    def __init__(self):
        super().__init__()
        weights = {k: v.astype(np.float64) for k, v in cnn.weights().items()}
        self.model = cnn.tapeflow_model(weights)

    @tf.function(input_signature=[tf.TensorSpec([784], tf.float64)])
    def per_example(self, x):
        return self.model(x[None])[0]

    @tf.function(input_signature=[tf.TensorSpec([None, 784], tf.float64)])
    def batch(self, x):
        return self.model(x)


def test_a_saved_model_directory_on_workers_without_its_code(client, tmp_path):
    module = SavedSeed()
    module.batch(tf.constant(cnn.inputs(3).astype(np.float64)))
    tf.saved_model.save(module, tmp_path / "seed")
    xs = cnn.inputs(20).astype(np.float64)
    want = in_process(lambda x: module.model(x[None])[0], xs)
    X = da.from_array(xs, chunks=(6, 784))
    for name in ("per_example", "batch"):  # one example, or a batch of one
        J = tfd.map_jacobian(str(tmp_path / "seed"), X, function=name)
        np.testing.assert_allclose(J.compute(), want, rtol=1e-12, atol=1e-15)
    # the default: the serving signature, when there is one (here there are two: none)
    with pytest.raises(ValueError, match="no serving signature and no __call__"):
        tfd.map_jacobian(str(tmp_path / "seed"), X)
    with pytest.raises(ValueError, match="holds no SavedModel"):
        tfd.map_jacobian(str(tmp_path), X)
    # in a process that never saw SavedSeed: tapeflow is all it needs
    np.save(tmp_path / "xs.npy", xs)
    code = (f"import numpy as np, dask.array as da\n"
            f"from tapeflow.dask import map_jacobian\n"
            f"xs = np.load({str(tmp_path / 'xs.npy')!r})\n"
            f"J = map_jacobian({str(tmp_path / 'seed')!r}, da.from_array(xs, chunks=(6, 784)), "
            f"function='per_example')\n"
            f"np.save({str(tmp_path / 'got.npy')!r}, J.compute(scheduler='processes'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(tmp_path / "got.npy"), want, rtol=1e-12, atol=1e-15)


def test_a_function_that_cannot_be_loaded_on_the_workers_says_so(client):
    def client_only(pid):
        if os.getpid() != pid:
            raise ImportError("No module named 'only_on_the_client'")
        return pid

    class ClientOnly:  # loads only where it was pickled, like a module the workers lack
        def __reduce__(self):
            return (client_only, (os.getpid(),))

    marker = ClientOnly()

    def f(x):
        return x * 2. if marker else x

    J = tfd.map_jacobian(f, da.zeros((4, 3), chunks=(2, 3)))
    with pytest.raises(RuntimeError, match=r"f could not be loaded on the Dask worker .*"
                       r"only_on_the_client.*must be installed on every worker"):
        J.compute()


def test_the_throughput_benchmark_runs(client):
    import dask_throughput  # benchmarks/dask_throughput.py, on the path with cnn

    f = dask_throughput.per_example(cnn.tapeflow_model(cnn.weights()))
    X = dask_throughput.inputs(40, 16)
    settings = [dask_throughput.in_process(f, X),
                dask_throughput.on_cluster(client, "two workers", f, X)]
    base, row = dask_throughput.measure(settings, repeat=1)  # checks the two agree
    assert row["workers"] == 2 and set(row["traces_per_worker"]) == {1}
    assert base["checksum_rel_err"] == 0 and row["checksum_rel_err"] < 1e-6
