"""One trace for every size of an input_signature's None dimensions (graph/polymorphic.py).

A trace serves other sizes only when the trace at the next other size shows that nothing
in its graph was computed from the sizes (NOTE(two-sizes)); then every size must give what
the Python function gives eagerly, and the body runs once per trace, for a call. Where the graph does depend on the sizes, each size is traced on its own, and
still gives the eager values: never a graph replayed at sizes it was not made for.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tapeflow as tf

S = tf.TensorSpec
SIZES = (5, 7, 2, 12, 5)


def _rand(rng, shape, dtype=np.float64):
    if np.dtype(dtype).kind in "iu":
        return tf.constant(rng.integers(0, 4, shape).astype(dtype))
    return tf.constant(rng.standard_normal(shape).astype(dtype))


def _same(got, want, tol=1e-12):
    got, want = tf.nest.flatten(got), tf.nest.flatten(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def _check(fn, specs, sizes=SIZES, traces=2, tol=1e-12):
    """fn under tf.function(input_signature=specs) at each size, against fn eagerly; a
    graph that serves every size is traced twice (the first two sizes), then replayed."""
    f = tf.function(fn, input_signature=specs)
    rng = np.random.default_rng(0)
    for n in sizes:
        args = [_rand(rng, [n if d is None else d for d in s.shape], s.dtype.as_numpy_dtype)
                for s in specs]
        _same(f(*args), fn(*args), tol)
    assert f.experimental_get_tracing_count() == traces
    return f


# ------------------------------------------------------------------ graphs that serve every size
def _dense_loss_grad(x):
    w = tf.constant(np.linspace(-1, 1, 6).reshape(3, 2))
    b = tf.constant([0.5, -0.25], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_mean(tf.tanh(x @ w + b) ** 2)
    return loss, tape.gradient(loss, w)


def _input_grad(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_mean(tf.reduce_max(x, axis=1) * tf.reduce_sum(x ** 2, axis=1))
    return tape.gradient(y, x)


def _vector_target_grad(x):
    with tf.GradientTape() as tape:  # a non-scalar target: its seed has the target's shape
        tape.watch(x)
        y = tf.sin(x) * tf.reshape(tf.range(3, dtype=tf.float64), [1, 3])
    return tape.gradient(y, x)


def _batch_jacobian(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reshape(tf.sin(x) * x[:, :1], [-1, 3, 1])  # a target of rank 3
    return tape.batch_jacobian(y, x)


def _hvp(x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.exp(x) * tf.reduce_mean(x))
        g = tape.gradient(y, x)
    return acc.jvp(g)


def _shape_ops(x):
    n = tf.shape(x)[0]
    flat = tf.reshape(x, [n, -1])
    back = tf.reshape(flat, tf.shape(x))
    z = tf.zeros(tf.shape(x), tf.float64) + tf.ones_like(x) + tf.fill(
        tf.shape(x), tf.constant(2.0, tf.float64))
    count = tf.cast(tf.size(x), tf.float64)
    return back + z, tf.broadcast_to(x[:1], tf.shape(x)), count, tf.cast(n, tf.float64)


def _broadcast_back(x, y):
    # y [None, 1] against x [None, 3]: y's gradient sums back to [None, 1] (no reshape)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = tf.reduce_sum((x - y) ** 2)
    return tape.gradient(z, [x, y])


def _forward_broadcast(x, v):
    b = tf.constant([1.0, 2.0, 3.0], tf.float64)
    with tf.autodiff.ForwardAccumulator(b, tf.constant([1.0, 0.0, -1.0], tf.float64)) as acc:
        y = tf.reduce_mean(x * b, axis=0) + v[0]  # b's tangent broadcast to x's shape
    return y, acc.jvp(y)


@pytest.mark.parametrize("fn, specs", [
    (lambda x: tf.reduce_sum(x * x, axis=1), [S([None, 3], tf.float64)]),
    (lambda x: tf.reduce_mean(x), [S([None, 3], tf.float64)]),
    (lambda x: tf.reduce_mean(x, axis=0), [S([None, 4], tf.int32)]),
    (lambda x: tf.where(x % 2 == 0, x // 2, 3 * x + 1), [S([None], tf.int32)]),
    (_dense_loss_grad, [S([None, 3], tf.float64)]),
    (_input_grad, [S([None, 3], tf.float64)]),
    (_vector_target_grad, [S([None, 3], tf.float64)]),
    (_batch_jacobian, [S([None, 3], tf.float64)]),
    (_hvp, [S([None], tf.float64), S([None], tf.float64)]),
    (_shape_ops, [S([None, 2, 3], tf.float64)]),
    (_broadcast_back, [S([None, 3], tf.float64), S([None, 1], tf.float64)]),
    (_forward_broadcast, [S([None, 3], tf.float64), S([None], tf.float64)]),
    (lambda x: (tf.concat([x, 2 * x], axis=1)[1:, :2] - x[:-1, ::-1]) * x[-1], [S([None, 2],
                                                                                 tf.float64)]),
    (lambda x: tf.reduce_sum(x, axis=[1, 2]), [S(None, tf.float64)]),
], ids=["sum", "mean", "int_mean", "collatz", "dense_grad", "input_grad", "vector_target",
        "batch_jacobian", "hvp", "shape_ops", "broadcast_back", "forward_broadcast",
        "slices", "unknown_rank"])
def test_one_trace_serves_every_size(fn, specs):
    if specs[0].shape.rank is None:
        f = tf.function(fn, input_signature=specs)
        rng = np.random.default_rng(1)
        for shape in ((4, 2, 3), (6, 3, 2), (4, 2, 3), (3, 5, 7)):
            x = _rand(rng, shape)
            _same(f(x), fn(x))
        assert f.experimental_get_tracing_count() == 2
        return
    f = _check(fn, specs)
    cf = f.get_concrete_function(*[
        tf.zeros([9 if d is None else d for d in s.shape], s.dtype) for s in specs])
    assert cf.serves_all_sizes


# ------------------------------------------------------------------ graphs that depend on the sizes
def test_a_graph_computed_from_the_sizes_is_traced_per_size():
    def f(x):  # the static size read by Python: baked into the graph
        return tf.reshape(x, [x.shape[0] * 3]) * float(x.shape[0])

    g = _check(f, [S([None, 3], tf.float64)], sizes=(5, 7, 5, 2), traces=3)
    cf = g.get_concrete_function(tf.zeros([5, 3], tf.float64))
    assert not cf.serves_all_sizes


# Python computing from a None size in ways the traces at n and 2n agree on: the first
# graph served every size (zeros at n = 3 after a call at n = 2, eager gives x).
_SIZE_READS = {
    "float(n % 2)": lambda x: x * float(x.shape[0] % 2),
    "n >= 4": lambda x: x * 2.0 if x.shape[0] >= 4 else x,
    "min(n, 4)": lambda x: x * float(min(x.shape[0], 4)),
    "n in (2, 4, 8)": lambda x: x * 2.0 if x.shape[0] in (2, 4, 8) else x,
    "n % 3": lambda x: x * float(x.shape[0] % 3),
    "pad by n % 2": lambda x: tf.pad(x, [[0, x.shape[0] % 2], [0, 0]]),
    "isqrt(n)": lambda x: x * float(__import__("math").isqrt(x.shape[0])),
    "len(x)": lambda x: x * float(len(x) % 2),
    "get_shape()": lambda x: x * float(x.get_shape()[0] % 2),
    "as_list()": lambda x: x * float(x.shape.as_list()[0] % 2),
    "unpacked": lambda x: (lambda n, m: x * float(n % 2))(*x.shape),
    "shape ==": lambda x: x * 2.0 if x.shape == (4, 3) else x,
    "num_elements()": lambda x: x * float(x.shape.num_elements() % 2),
    # a size of a value computed from x: ceil(n / 2) rows, 2 at both n = 3 and n = 4
    "x[::2].shape": lambda x: x * float(x[::2].shape[0] % 2),
    "len(x[::3])": lambda x: x * float(len(x[::3]) % 2),
}


@pytest.mark.filterwarnings("ignore:tapeflow.function .* has been traced")  # per size
@pytest.mark.parametrize("jit", [False, True], ids=["numpy", "xla"])
@pytest.mark.parametrize("fn", list(_SIZE_READS.values()), ids=list(_SIZE_READS))
def test_python_arithmetic_on_a_size_never_replays_at_another(fn, jit):
    if jit:
        pytest.importorskip("jax")
    for first in ((2, 4), (3, 4)):  # the first two sizes, which the reads agree at
        f = tf.function(fn, input_signature=[S([None, 3], tf.float32)], jit_compile=jit)
        for n in first + (3, 5, 8, 7, 1, 6, 9, 11, 4, 3, 10):  # odd and prime sizes, and 1
            x = tf.constant(np.arange(3.0 * n, dtype=np.float32).reshape(n, 3))
            want = fn(x)
            got = f(x)
            assert got.shape == want.shape, n
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"n = {n}")


@pytest.mark.parametrize("fn", [
    lambda x, y: x * float(x.shape[0] % 2) + tf.reduce_sum(y),  # Python reads x's size
    lambda x, y: x - tf.reduce_mean(x) + tf.reduce_sum(y),  # a mean's divisor over x
    lambda x, y: tf.reshape(tf.tile(x[None], [2, 1]), [-1])[:tf.shape(x)[0] + 1] * tf.reduce_sum(y),
], ids=["python", "mean", "reshape"])
def test_two_traces_at_sizes_equal_in_one_none_dimension_are_not_compared(fn):
    # Calls at (3, 5) and (3, 7) agree on everything computed from x's size 3, and were
    # taken for a graph of every size: (4, 7) gave x * 1.0 (eager: x * 0.0).
    f = tf.function(fn, input_signature=[S([None]), S([None])])
    for n, m in [(3, 5), (3, 7), (4, 7), (5, 9), (6, 2), (4, 4), (7, 3)]:
        x = tf.constant(np.arange(1.0, n + 1, dtype=np.float32))
        y = tf.ones([m])
        np.testing.assert_allclose(f(x, y).numpy(), fn(x, y).numpy(), rtol=1e-6,
                                   err_msg=f"sizes {n}, {m}")


def test_branches_taken_at_different_sizes_are_compared_per_branch():
    # A trace is compared with an earlier one of its own branch: the branch taken at 3,
    # then the other at 5, says nothing about sizes.
    def fn(x):
        if tf.reduce_sum(x) > 0:
            return x - tf.reduce_mean(x)
        return x * 2.0

    f = tf.function(fn, input_signature=[S([None], tf.float64)])
    for n, sign in [(3, 1), (5, -1), (6, 1), (4, -1), (7, 1), (9, -1), (2, 1), (11, -1)]:
        x = tf.constant(sign * np.arange(1.0, n + 1))
        np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=1e-12)
    assert f.experimental_get_tracing_count() == 4  # two sizes of each branch


def test_two_none_sizes_compared_by_python():
    f = tf.function(lambda x, y: x * 2.0 if x.shape[0] == y.shape[0] else x,
                    input_signature=[S([None]), S([None])])
    for n, m in [(2, 3), (4, 6), (3, 3), (5, 7), (6, 6), (2, 3)]:
        x, y = tf.ones([n]), tf.ones([m])
        np.testing.assert_array_equal(f(x, y).numpy(), np.full(n, 2.0 if n == m else 1.0))

def _window_ops(x, w):
    return tf.nn.max_pool2d(tf.nn.conv2d(x, w, strides=2, padding="SAME"), 2, 2, "SAME")


def _window_ops_and_gradient(x, w):
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = _window_ops(x, w)
        loss = tf.reduce_sum(z * z)
    return z, tape.gradient(loss, x)


@pytest.mark.parametrize("ops", [_window_ops, _window_ops_and_gradient])
@pytest.mark.parametrize("spec, shape, traces", [
    # SAME pads as expressions of the size (NOTE(symbolic-sizes)); the pool decides on the
    # size's parity: 4 serves the even sizes, and 7 and 5 the odd ones
    ([2, None, 1, 1], lambda n: [2, n, 1, 1], 3),
    ([None, 6, 5, 1], lambda n: [n, 6, 5, 1], 2),  # the batch alone varies: 4 and 7 serve all
])
def test_strided_same_windows_over_a_varying_size_trace_per_size(ops, spec, shape, traces):
    # SAME padding with stride 2 depends on the size's parity: traces at 4 and 8 would
    # agree (no padding), yet 7 and 5 need one row of it: never a graph of the even sizes
    # at an odd one.
    w = tf.constant(np.linspace(-1, 1, 2 * 2 * 1).reshape(2, 2, 1, 1))

    def fn(x):
        return ops(x, w)

    f = tf.function(fn, input_signature=[S(spec, tf.float64)])
    rng = np.random.default_rng(2)
    for n in (4, 7, 5, 4, 8):
        x = _rand(rng, shape(n))
        _same(f(x), fn(x))
    assert f.experimental_get_tracing_count() == traces


def test_a_full_jacobian_over_a_none_dimension_serves_every_size():
    # The basis has as many rows as the target has elements: made when the graph runs.
    def f(x, w):
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            y = tf.sin(x) * tf.reduce_sum(x) + tf.reduce_sum(w)
        return tape.jacobian(y, [x, w])

    _check(f, [S([None, 2], tf.float64), S([3], tf.float64)], sizes=(3, 4, 2, 3))

    def chunked(x):  # chunks of 2 rows: how many depends on the size
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sin(x) * x[0]
        return tape.jacobian(y, x, parallel_iterations=2)

    _check(chunked, [S([None], tf.float64)], sizes=(3, 5, 3), traces=2)


def test_sizes_one_and_zero_trace_on_their_own():
    # A dimension of 1 broadcasts against any size; an empty one has no elements.
    fn = lambda x, y: tf.reduce_sum(x * y, axis=0)  # noqa: E731
    f = _check(fn, [S([None, 3], tf.float64), S([None, 3], tf.float64)], sizes=(4, 6))
    rng = np.random.default_rng(2)
    x1, y4 = _rand(rng, [1, 3]), _rand(rng, [4, 3])
    _same(f(x1, y4), fn(x1, y4))  # broadcasts: a trace of its own
    x0 = _rand(rng, [0, 3])
    _same(f(x0, x0), fn(x0, x0))
    assert f.experimental_get_tracing_count() == 4


def test_which_none_dimensions_are_equal_is_part_of_the_key():
    fn = lambda x, y: tf.reduce_sum(x) * tf.reduce_sum(y)  # noqa: E731
    f = _check(fn, [S([None], tf.float64), S([None], tf.float64)], sizes=(5, 7))
    rng = np.random.default_rng(3)
    x, y = _rand(rng, [5]), _rand(rng, [8])
    _same(f(x, y), fn(x, y))  # unequal sizes: other traces (which serve unequal pairs)
    x, y = _rand(rng, [3]), _rand(rng, [9])
    _same(f(x, y), fn(x, y))
    x, y = _rand(rng, [6]), _rand(rng, [2])
    _same(f(x, y), fn(x, y))
    assert f.experimental_get_tracing_count() == 4


def test_the_retracing_warning_says_why_sizes_retrace():
    @tf.function(input_signature=[S([None], tf.float64)])
    def f(x):
        return x * float(x.shape[0])

    with pytest.warns(UserWarning, match="None dimension.*depends on"):
        for n in range(2, 10):
            f(tf.ones([n], tf.float64))


# ------------------------------------------------------------------ the body runs once per trace
def test_a_none_dimension_writes_and_draws_as_without_one():
    v = tf.Variable(np.zeros(3))

    def step(x):
        v.assign_add(tf.reduce_sum(x, axis=0))
        return tf.random.normal([3], dtype=tf.float64) + v

    def run(signature):
        v.assign(np.zeros(3))
        tf.random.set_seed(7)
        f = tf.function(step, input_signature=signature)
        outs = [f(tf.ones([n, 3], tf.float64)).numpy() for n in (4, 6, 4)]
        return outs, v.numpy()

    outs, final = run([S([None, 3], tf.float64)])
    want_outs, want_final = run(None)  # no None dimension: a trace per shape
    np.testing.assert_array_equal(final, [14.0, 14.0, 14.0])
    np.testing.assert_array_equal(final, want_final)
    for a, b in zip(outs, want_outs):
        np.testing.assert_array_equal(a, b)


def test_the_body_runs_once_per_trace_and_only_for_a_call(capsys):
    # A second run of the body at a size no caller passed (a probe) printed, appended and
    # drew in Python where no call asked for it.
    seen = []

    @tf.function(input_signature=[S([None], tf.float64)])
    def f(x):
        print("tracing")
        seen.append(np.random.random())
        tf.print("replay", tf.reduce_sum(x), output_stream="stdout")
        return x + 1.0

    np.random.seed(0)
    for n in (3, 5, 3, 4, 9):
        f(tf.ones([n], tf.float64))
    out = capsys.readouterr().out
    assert out.splitlines().count("tracing") == 2 == f.experimental_get_tracing_count()
    np.random.seed(0)
    assert seen == [np.random.random(), np.random.random()]  # one draw per trace, no more
    assert [line for line in out.splitlines() if line.startswith("replay")] == \
        ["replay 3", "replay 5", "replay 3", "replay 4", "replay 9"]


def test_py_function_runs_once_per_call():
    # Its callback runs at every call and at each trace, never more.
    calls = []

    def py(a):
        calls.append(a.shape[0])
        return a * 2.0

    def fn(x):
        return tf.py_function(py, [x], tf.float64) + 1.0

    f = tf.function(fn, input_signature=[S([None], tf.float64)])
    for n in (3, 4, 3, 6):
        np.testing.assert_array_equal(f(tf.ones([n], tf.float64)).numpy(), np.full(n, 3.0))
    # the trace at 3, the trace at 4 (compared with the first: they serve every size), the
    # replays at 3 and at 6
    assert calls == [3, 4, 3, 6]
    assert f.experimental_get_tracing_count() == 2


def test_a_guard_still_guards_at_every_size():
    def fn(x):
        if tf.reduce_sum(x) > 0:  # a value read: a guard in the graph
            return x * 2.0
        return -x

    f = tf.function(fn, input_signature=[S([None], tf.float64)])
    for x in ([1.0, 2.0], [1.0, 2.0, 3.0], [-1.0, -2.0, -3.0], [-4.0, 1.0], [5.0] * 7,
              [-5.0] * 6):
        x = tf.constant(x, tf.float64)
        _same(f(x), fn(x))
    assert f.experimental_get_tracing_count() == 4  # two sizes per branch


# ------------------------------------------------------------------ calling the generic graph
def test_concrete_function_takes_every_size_of_its_signature():
    f = tf.function(lambda x: tf.reduce_mean(x, axis=1),
                    input_signature=[S([None, 2], tf.float64)])
    cf = f.get_concrete_function(tf.zeros([3, 2], tf.float64))
    assert cf is f.get_concrete_function(tf.zeros([8, 2], tf.float64))
    np.testing.assert_array_equal(cf(tf.ones([6, 2], tf.float64)).numpy(), np.ones(6))
    with pytest.raises(TypeError, match="traced for shape"):
        cf(tf.ones([6, 3], tf.float64))
    # size 1 is not a size this graph serves; the concrete function of the signature
    # serves it, as TensorFlow's (through a trace of its own)
    np.testing.assert_array_equal(cf(tf.ones([1, 2], tf.float64)).numpy(), np.ones(1))


def test_gradient_through_a_generic_call_from_outside():
    f = tf.function(lambda x: tf.reduce_mean(tf.sin(x) * x),
                    input_signature=[S([None, 2], tf.float64)])
    for n in (3, 6, 4):
        x = tf.constant(np.linspace(-1, 1, 2 * n).reshape(n, 2))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x).numpy()
        want = (np.sin(x.numpy()) + x.numpy() * np.cos(x.numpy())) / (2 * n)
        np.testing.assert_allclose(g, want, rtol=1e-12)
    assert f.experimental_get_tracing_count() == 2


def test_generic_function_inside_another_traced_function():
    inner = tf.function(lambda x: tf.reduce_mean(x, axis=0),
                        input_signature=[S([None, 2], tf.float64)])
    outer = tf.function(lambda x: inner(x * 2.0) + inner(x[:2]))
    for n in (3, 5):
        x = tf.constant(np.arange(2.0 * n).reshape(n, 2))
        want = np.mean(2 * x.numpy(), axis=0) + np.mean(x.numpy()[:2], axis=0)
        np.testing.assert_allclose(outer(x).numpy(), want)


def test_concurrent_calls_at_different_sizes():
    f = tf.function(lambda x: tf.reduce_mean(x * x, axis=1),
                    input_signature=[S([None, 3], tf.float64)])
    f(tf.ones([2, 3], tf.float64))
    errors = []

    def work(n):
        try:
            for _ in range(30):
                x = tf.constant(np.full((n, 3), float(n)))
                np.testing.assert_array_equal(f(x).numpy(), np.full(n, float(n * n)))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in (3, 4, 5, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert f.experimental_get_tracing_count() == 2


def test_keras_training_step_serves_every_batch_size():
    def make():
        tf.random.set_seed(3)
        model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"),
                                     tf.keras.layers.Dense(3)])
        model(np.zeros((1, 4), np.float32))
        opt = tf.keras.optimizers.Adam(0.01)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metric = tf.keras.metrics.SparseCategoricalAccuracy()

        def step(x, y):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = loss_fn(y, logits)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            metric.update_state(y, logits)
            return loss
        return model, metric, step

    rng = np.random.default_rng(4)
    batches = [(rng.standard_normal((n, 4)).astype(np.float32), rng.integers(0, 3, n))
               for n in (16, 7, 16, 9, 5)]
    model, metric, step = make()
    traced = tf.function(step, input_signature=[S([None, 4], tf.float32), S([None], tf.int64)])
    losses = [float(traced(x, y)) for x, y in batches]
    weights = [w.numpy() for w in model.weights]
    accuracy = float(metric.result())
    model, metric, step = make()
    eager = [float(step(tf.constant(x), tf.constant(y))) for x, y in batches]
    np.testing.assert_allclose(losses, eager, rtol=1e-6)
    for a, b in zip(weights, model.weights):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-5, atol=1e-6)
    assert accuracy == float(metric.result())
    assert traced.experimental_get_tracing_count() == 2


# ------------------------------------------------------------------ sizes in params (NOTE(sized-params))
def test_layers_whose_params_hold_the_batch_size_serve_every_size():
    # Flatten's reshape target, MaxPooling's and Conv2D's internal reshapes, an LSTM's
    # zero initial state (a constant filled with one value): all read at replay.
    tf.random.set_seed(5)
    cnn = tf.keras.Sequential([tf.keras.layers.Conv2D(3, 3, activation="relu"),
                               tf.keras.layers.MaxPooling2D(2), tf.keras.layers.Flatten(),
                               tf.keras.layers.Dense(2)])
    cnn(np.zeros((1, 8, 8, 1), np.float32))
    lstm = tf.keras.Sequential([tf.keras.layers.LSTM(4), tf.keras.layers.Dense(2)])
    lstm(np.zeros((1, 5, 3), np.float32))

    def grads(model):
        def fn(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_mean(model(x) ** 2)
            return [loss] + tape.gradient(loss, [x] + model.trainable_variables)
        return fn

    _check(grads(cnn), [S([None, 8, 8, 1], tf.float32)], sizes=(4, 6, 3, 4), tol=2e-5)
    f = _check(grads(lstm), [S([None, 5, 3], tf.float32)], sizes=(4, 6, 3, 4), tol=2e-5)
    cf = f.get_concrete_function(tf.zeros([4, 5, 3]))
    assert cf.serves_all_sizes and "size(%" in str(cf.graph)


def test_dropout_draws_a_mask_of_each_call_size():
    drop = tf.keras.layers.Dropout(0.5)
    f = tf.function(lambda x: drop(x, training=True), input_signature=[S([None, 6])])
    for n in (4, 9, 4, 3):
        y = f(tf.ones([n, 6])).numpy()
        assert y.shape == (n, 6) and set(np.unique(y)) <= {0.0, 2.0}
    assert f.experimental_get_tracing_count() == 2


def test_a_cnn_batch_jacobian_serves_every_batch_size():
    # Its rows are (examples x outputs): reshapes and a convolution's input shape hold the
    # batch size times the output count, which one graph reads when it runs.
    tf.random.set_seed(3)
    model = tf.keras.Sequential([tf.keras.layers.Conv2D(3, 3, activation="tanh",
                                                        input_shape=(7, 7, 1)),
                                 tf.keras.layers.MaxPooling2D(2), tf.keras.layers.Flatten(),
                                 tf.keras.layers.Dense(5)])

    def jac(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = model(x)
        return tape.batch_jacobian(y, x)

    f = tf.function(jac, input_signature=[S([None, 7, 7, 1], tf.float64)])
    rng = np.random.default_rng(0)
    for n in (4, 6, 1, 3, 13, 2, 7):
        x = _rand(rng, (n, 7, 7, 1))
        _same(f(x), jac(x))
    assert f.get_concrete_function().serves_all_sizes
    assert f.experimental_get_tracing_count() == 3  # sizes 4 and 6, then 1 (its own)


def test_python_reading_a_size_keeps_its_graph_to_that_size():
    # min(n, 5) equals n at the traced sizes 2 and 3, but not at 8: whatever
    # Python computes from a size it reads, the graph is not taken for one that serves
    # every size (TensorFlow code reads the sizes of None dimensions with tf.shape).
    def fn(x):
        k = min(x.shape[0], 5)
        return x[:k] * 2.0, tf.reshape(x, [x.shape[0], -1])

    _check(fn, [S([None, 2, 2], tf.float64)], sizes=(2, 3, 8, 2), traces=3)
    _check(lambda x: x[:min(len(x), 4)] + 1.0, [S([None], tf.float64)], sizes=(2, 3, 9),
           traces=3)
    # the static dims may be read freely
    f = _check(lambda x: tf.reshape(x, [-1, x.shape[1] * x.shape[2]]),
               [S([None, 2, 2], tf.float64)], sizes=(2, 3, 8))
    assert f.get_concrete_function(tf.zeros([3, 2, 2], tf.float64)).serves_all_sizes


def test_sized_params_replay_under_a_tape_and_compiled():
    def fn(x):
        return tf.reduce_sum(tf.expand_dims(x, 1) * tf.squeeze(x[:, None, :1], 2), axis=1)

    f = tf.function(fn, input_signature=[S([None, 3], tf.float64)])
    for n in (3, 5, 4):
        x = tf.constant(np.random.default_rng(n).standard_normal((n, 3)))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(f(x) ** 2)
        with tf.GradientTape() as tape2:
            tape2.watch(x)
            want = tf.reduce_sum(fn(x) ** 2)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), tape2.gradient(want, x).numpy(),
                                   rtol=1e-12)
    assert f.experimental_get_tracing_count() == 2
    assert f.get_concrete_function(x).graph.sized


def test_get_concrete_function_of_tensor_specs():
    # TensorFlow's guide: a concrete function for a TensorSpec serves every matching shape.
    printed = []

    @tf.function
    def double(a):
        printed.append(str(a))
        return a + a

    cf = double.get_concrete_function(tf.TensorSpec(shape=[None], dtype=tf.float32))
    np.testing.assert_array_equal(cf(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(cf(tf.constant([1.0, 2.0, 3.0])).numpy(), [2.0, 4.0, 6.0])
    # traced on its placeholder, then at 2: the two serve every size from then on
    assert cf.serves_all_sizes and double.experimental_get_tracing_count() == 2
    assert printed[0] == 'Tensor("a:0", shape=(None,), dtype=float32)'
    assert cf is double.get_concrete_function(tf.TensorSpec([None], tf.float32))
    # the function's own calls of matching shapes reuse that trace (TensorFlow does)
    np.testing.assert_array_equal(double(tf.constant([1.0, 2.0, 3.0, 4.0])).numpy(),
                                  [2.0, 4.0, 6.0, 8.0])
    assert double.experimental_get_tracing_count() == 2

    sig = tf.function(lambda x: tf.reduce_sum(x, axis=0),
                      input_signature=[tf.TensorSpec([None, 3], tf.float64)])
    cf = sig.get_concrete_function()  # the signature's own specs
    np.testing.assert_array_equal(cf(tf.ones([4, 3], tf.float64)).numpy(), [4.0] * 3)
    np.testing.assert_array_equal(cf(tf.ones([5, 3], tf.float64)).numpy(), [5.0] * 3)
    assert sig.experimental_get_tracing_count() == 2 and cf.serves_all_sizes


def test_a_method_with_an_input_signature():
    # TensorFlow's modules guide: the signature describes the arguments after `self`.
    class Scale(tf.Module):
        def __init__(self, k):
            super().__init__()
            self.k = tf.Variable(k)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return x * self.k

    a, b = Scale(2.0), Scale(3.0)
    np.testing.assert_array_equal(a(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(a(tf.constant([1.0, 2.0, 3.0])).numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(b(tf.constant([1.0])).numpy(), [3.0])
    a.k.assign(5.0)  # read at each call
    np.testing.assert_array_equal(a(tf.constant([1.0, 1.0, 1.0, 1.0])).numpy(), [5.0] * 4)
    cf = a.__call__.get_concrete_function()
    assert cf.serves_all_sizes
    with pytest.raises(TypeError, match="input_signature"):
        a(tf.constant([[1.0]]))
    # a's graph serves every size of a's calls, not b's: b's variable is its own
    for n in (4, 6, 2, 7):
        np.testing.assert_array_equal(b(tf.ones([n])).numpy(), [3.0] * n)
        np.testing.assert_array_equal(a(tf.ones([n])).numpy(), [5.0] * n)
    assert b.__call__.get_concrete_function().serves_all_sizes


def test_the_tensors_only_call_key_is_the_general_one():
    # Function._key's fast path for calls of tensors only must key as _walk does: a
    # ConcreteFunction (keyed by _walk) and later calls must find the same graphs.
    from tapeflow.graph.signature import walk as _walk

    f = tf.function(lambda *a: a)
    for args in [(), (tf.constant(1.0),), (tf.constant([1.0, 2.0]), tf.constant(np.int64(3))),
                 (tf.zeros([2, 0, 3], tf.float64),)]:
        leaves: list = []
        assert f._key(args, {})[0] == _walk((list(args), {}), leaves)


def test_a_concrete_function_of_unknown_rank_serves_every_rank():
    # TensorFlow: get_concrete_function(TensorSpec(None)) serves tensors of any rank
    # (tapeflow raised "unknown rank"); each rank is traced on its first call.
    f = tf.function(lambda x: tf.reduce_sum(x * 2.0))
    cf = f.get_concrete_function(tf.TensorSpec(None, tf.float32))
    for shape in [(), (3,), (5,), (2, 3), (4, 1), (1,), (2, 2, 2)]:
        x = tf.ones(shape)
        assert float(cf(x)) == 2.0 * np.prod(shape)
    # rank 0; rank 1 at 3 and 5, which serve every size; (1,) and (4, 1) on their own
    # (a size 1); rank 2 at (2, 3); rank 3
    assert f.experimental_get_tracing_count() == 7
    assert float(f(tf.ones([7, 5]))) == 70.0  # the function's calls reuse them
    with pytest.raises(TypeError, match=r"shape \(2,\) and dtype int32, which does not match"):
        cf(tf.constant([1, 2]))
    assert "multiply" in str(cf.graph)


def test_concrete_functions_of_specs_keep_their_python_arguments_apart():
    # The key of a trace for TensorSpecs left out the Python arguments: the second
    # concrete function was the first, and added 3 where 4 was asked for.
    g = tf.function(lambda x, k: x + k)
    three = g.get_concrete_function(tf.TensorSpec([None], tf.float32), 3.0)
    four = g.get_concrete_function(tf.TensorSpec([None], tf.float32), 4.0)
    x = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(three(x).numpy(), [4.0, 5.0])
    np.testing.assert_array_equal(four(x).numpy(), [5.0, 6.0])
    np.testing.assert_array_equal(g(tf.constant([1.0, 2.0, 3.0]), 4.0).numpy(), [5.0, 6.0, 7.0])
    # each traced on its placeholder and at 2, which serve every size from then on
    assert g.experimental_get_tracing_count() == 4


def test_a_concrete_function_of_two_none_dimensions_takes_unequal_sizes():
    # Traced on placeholders of equal sizes, it refused (2, 3) ("traced for shape (8, 8)").
    g = tf.function(lambda x: tf.reduce_sum(x, 1))
    cf = g.get_concrete_function(tf.TensorSpec([None, None], tf.float32))
    np.testing.assert_array_equal(cf(tf.ones([2, 3])).numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(cf(tf.ones([1, 4])).numpy(), [4.0])


def test_reduce_retracing_relaxes_the_shapes_that_changed():
    # TensorFlow: after a trace at one size, another size traces once for a shape with
    # None where they differ, and later sizes reuse it (tapeflow ignored the flag). Here
    # the relaxed shape is traced at two sizes (NOTE(two-sizes)): 3, then 4 and 5.
    h = tf.function(lambda x: x * 3.0, reduce_retracing=True)
    for n in (3, 4, 5, 2, 9, 3):
        np.testing.assert_array_equal(h(tf.ones([n, 2])).numpy(), np.full((n, 2), 3.0))
    assert h.experimental_get_tracing_count() == 3
    plain = tf.function(lambda x: x * 3.0)
    for n in (3, 4, 5, 2, 9):
        plain(tf.ones([n, 2]))
    assert plain.experimental_get_tracing_count() == 5


def test_a_shape_computed_from_values_is_guarded_in_a_size_generic_trace():
    """tf.range of a value (not of a size) has a shape no size determines: a graph made at
    one count must not serve another at the same sizes."""
    def body(x, n):
        return tf.reduce_sum(x) + tf.cast(tf.shape(tf.range(n))[0], tf.float32)

    traced = tf.function(body, input_signature=[tf.TensorSpec([None], tf.float32),
                                                tf.TensorSpec([], tf.int32)])
    for x, n in (([1, 2], 3), ([1, 2, 3], 4), ([1, 2], 5), ([1, 2, 3, 4], 7),
                 ([1, 2, 3, 4], 1), ([1, 2, 3, 4, 5], 1), ([1, 2, 3, 4, 5], 6)):
        args = (tf.constant(x, tf.float32), tf.constant(n))
        assert float(traced(*args)) == float(body(*args)), (x, n)
    # a range of a size is the sizes' alone: one graph serves every size
    ramp = tf.function(lambda x: x * tf.cast(tf.range(tf.shape(x)[0]), tf.float32),
                       input_signature=[tf.TensorSpec([None], tf.float32)])
    for n in (2, 4, 3, 7, 9):
        np.testing.assert_array_equal(ramp(tf.ones([n])).numpy(), np.arange(n))
    assert ramp.experimental_get_tracing_count() == 2
