"""A loop over a tf.data.Dataset inside a tf.function (graph/dataset_loops.py,
NOTE(dataset-loops)): traced once and run as a loop, with the eager run's values; where the
loop cannot be read off the trace, the Python runs eagerly with a warning that says why."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import tapeflow as tf

D = tf.data.Dataset
RNG = np.random.default_rng(0)
X = RNG.standard_normal((50, 3)).astype(np.float32)
Y = X @ np.array([[1.0], [-2.0], [0.5]], np.float32)


def _regression():
    w = tf.Variable(np.zeros((3, 1), np.float32))
    opt = tf.keras.optimizers.Adam(0.05)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((xb @ w - yb) ** 2)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss
    return w, opt, step


def _both(make, epochs=3, jit_compile=False):
    """(eager results, traced results, tracing count, eager warnings) of `make()` -> (fn,
    the argument tuple, the state to compare), run `epochs` times each way from the
    same seed."""
    out = []
    for traced in (False, True):
        tf.random.set_seed(7)
        fn, args, state = make()
        f = tf.function(fn, jit_compile=jit_compile) if traced else fn
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results = [tf.nest.map_structure(lambda t: np.asarray(t), f(*args))
                       for _ in range(epochs)]
        out.append((results, [np.asarray(v) for v in state()],
                    f.experimental_get_tracing_count() if traced else None,
                    [str(c.message) for c in caught if "eagerly" in str(c.message)]))
    return out


def _assert_same(eager, traced, exact=True):
    check = np.testing.assert_array_equal if exact else \
        (lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6))
    for a, b in zip(tf.nest.flatten(eager[0]), tf.nest.flatten(traced[0]), strict=True):
        check(a, b)
    for a, b in zip(eager[1], traced[1], strict=True):
        check(a, b)


def _pipeline(kind):
    if kind == "shuffled":
        return D.from_tensor_slices((X, Y)).shuffle(50, seed=3).batch(8)
    if kind == "dict":
        return D.from_tensor_slices({"x": X, "y": Y}).batch(8)
    if kind == "mapped":
        return D.from_tensor_slices((X, Y)).map(lambda a, b: (a * 2.0, b)).batch(16)
    if kind == "fixed":
        return D.from_tensor_slices((X, Y)).batch(10, drop_remainder=True)
    if kind == "one_left":  # a last batch of one row
        return D.from_tensor_slices((X[:49], Y[:49])).batch(16)
    if kind == "batch_one":
        return D.from_tensor_slices((X[:9], Y[:9])).batch(1)
    return D.from_tensor_slices((X, Y)).batch(8)  # 6 batches of 8, then one of 2


@pytest.mark.parametrize("kind", ["plain", "shuffled", "dict", "mapped", "fixed", "one_left",
                                  "batch_one"])
def test_a_training_loop_runs_as_a_loop_with_the_eager_values(kind):
    ran = types.SimpleNamespace(steps=0)  # an attribute: Python state the probe does not see

    def make():
        w, opt, step = _regression()
        ds = _pipeline(kind)

        def epoch(dataset):
            total, n = tf.constant(0.0), tf.constant(0)
            for element in dataset:
                ran.steps += 1
                xb, yb = (element["x"], element["y"]) if kind == "dict" else element
                loss = step(xb, yb)
                total += loss
                n += 1
            return total / tf.cast(n, tf.float32), loss
        return epoch, (ds,), lambda: [w, opt.iterations]

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert traced[2] == 1 and not traced[3]
    # the eager epochs ran the Python for each batch, the traced ones three times (while
    # traced; TensorFlow's autograph runs it once)
    assert ran.steps == 3 * len(list(_pipeline(kind))) + 3


@pytest.mark.parametrize("rows, batch", [(50, 16), (49, 16), (5, 1)])
def test_a_model_built_and_an_optimizer_made_in_the_first_step(rows, batch):
    def make():
        tf.keras.utils.set_random_seed(1)
        model = tf.keras.Sequential([
            tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.BatchNormalization(),
            tf.keras.layers.Dense(3)])
        opt = tf.keras.optimizers.Adam(1e-2)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        labels = (np.abs(X[:rows, 0] * 3).astype(np.int64) % 3)
        ds = D.from_tensor_slices((X[:rows], labels)).batch(batch)

        def epoch(dataset):
            for xb, yb in dataset:
                with tf.GradientTape() as tape:
                    loss = loss_fn(yb, model(xb))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return epoch, (ds,), lambda: model.weights + [opt.iterations]

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert traced[2] == 1 and not traced[3]


def test_a_captured_dataset_and_a_nested_traced_step():
    def make():
        w, opt, step = _regression()
        ds = _pipeline("plain")
        traced_step = tf.function(step)

        def epoch():
            for xb, yb in ds:
                loss = traced_step(xb, yb)
            return loss
        return epoch, (), lambda: [w]

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert traced[2] == 1 and not traced[3]


def test_variables_written_before_the_loop_and_python_numbers():
    v = tf.Variable(0.0)

    @tf.function
    def f(ds):
        v.assign_add(1.0)
        total = 0.0
        for x in ds:
            total += x * v
        return total

    ds = D.range(4).map(lambda i: tf.cast(i, tf.float32))
    assert float(f(ds)) == 6.0 and float(v) == 1.0
    assert float(f(ds)) == 12.0 and float(v) == 2.0
    assert f.experimental_get_tracing_count() == 1


def test_each_step_draws_new_random_numbers():
    @tf.function
    def f(ds):
        total, squares = tf.constant(0.0), tf.constant(0.0)
        for _ in ds:
            r = tf.random.uniform([])
            total += r
            squares += r * r
        return total, squares

    total, squares = f(D.range(6))
    # Cauchy-Schwarz: equality only where every step drew the same number
    assert float(total) ** 2 < 6 * float(squares) * (1 - 1e-3)
    assert 0 < float(total) < 6


def test_varying_element_sizes_and_a_carried_state():
    def gen():
        for n in (3, 5, 2, 7, 4):
            yield np.arange(n, dtype=np.float32)

    def make():
        ds = D.from_generator(gen, output_signature=tf.TensorSpec([None], tf.float32))

        def f(dataset):
            state = tf.zeros([2])
            for x in dataset:
                state = tf.stack([state[1], state[0] + tf.reduce_sum(x ** 2)])
            return state
        return f, (ds,), lambda: []

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert traced[2] == 1 and not traced[3]


@pytest.mark.parametrize("case", ["break", "list", "enumerate", "branch", "middle",
                                  "numpy_counter"])
def test_loops_no_graph_can_be_run_eagerly_with_the_eager_values(case):
    def make():
        w, opt, step = _regression()
        ds = _pipeline("plain")

        def epoch(dataset):
            losses, first, seen = [], None, np.zeros(1)
            for i, (xb, yb) in enumerate(dataset):
                if case == "break" and i == 4:
                    break
                if case == "numpy_counter":  # Python state in a NumPy array, no enumerate
                    seen += 1
                    if seen[0] > 4:
                        break
                    i = 0
                if case == "enumerate":
                    xb = xb * tf.cast(i + 1, tf.float32) / 4.0
                loss = step(xb, yb)
                if case == "branch" and loss > 1.0:
                    opt.apply_gradients([(tf.ones_like(w), w)])
                if i == 1:
                    first = loss
                if case != "numpy_counter":
                    losses.append(loss)
            if case == "middle":
                return first
            return tf.add_n(losses) if case == "list" else loss
        return epoch, (ds,), lambda: [w]

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert len(traced[3]) == 1 and "could not be traced as a loop" in traced[3][0]


def test_a_dataset_of_one_element_runs_eagerly():
    v = tf.Variable(1.0)

    @tf.function
    def f(ds):
        for x in ds:
            v.assign(v * x)
        return v.read_value()

    with pytest.warns(UserWarning, match="fewer than two elements"):
        assert float(f(D.from_tensors(3.0))) == 3.0
    assert float(f(D.from_tensors(2.0).repeat(3))) == 24.0


def test_a_step_that_fails_at_the_widened_size_runs_eagerly():
    # tf.split by 2 of the 9 rows the third traced step gets: the dataset's 8 are fine
    def make():
        ds = D.from_tensor_slices(X[:48]).batch(8)

        def f(dataset):
            total = tf.constant(0.0)
            for xb in dataset:
                a, b = tf.split(xb, 2)
                total += tf.reduce_sum(a * b)
            return total
        return f, (ds,), lambda: []

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert "a step raised at sizes the trace chose" in traced[3][0]


def test_python_reading_an_element_size_runs_eagerly():
    def gen():
        for n in (4, 4, 4, 12):
            yield np.ones((n, 2), np.float32)

    def make():
        v = tf.Variable(0.0)
        ds = D.from_generator(gen, output_signature=tf.TensorSpec([None, 2], tf.float32))

        def f(dataset):
            for x in dataset:
                y = x * 2.0 if x.shape[0] < 10 else x  # 4 and 5 rows decide alike; 12 not
                v.assign_add(tf.reduce_sum(y))
            return v.read_value()
        return f, (ds,), lambda: [v]

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert "Python reads a size" in traced[3][0] and "x.shape[0] < 10" in traced[3][0]


def test_a_step_whose_size_check_fails_stops_with_a_clear_error(monkeypatch):
    from tapeflow.graph.dataset_loops import LoopedFunction
    from tapeflow.graph.ir import Guard
    from tapeflow.graph.replay import GuardFailed

    v = tf.Variable(0.0)

    @tf.function
    def f(ds):
        for x in ds:
            v.assign_add(x)
        return v.read_value()

    ds = D.range(1, 6).map(lambda i: tf.cast(i, tf.float32))
    assert float(f(ds)) == 15.0
    looped = next(c for b in f._cache.values() for c in b if isinstance(c, LoopedFunction))
    run, seen = looped.body.executable.run, []

    def failing(tensors):  # the fourth element's sizes decide a check otherwise
        seen.append(1)
        if len(seen) == 3:
            raise GuardFailed(Guard(0, "size", True, "here.py:1: n % 3"))
        return run(tensors)

    monkeypatch.setattr(looped.body.executable, "run", failing)
    with pytest.raises(tf.errors.TracingError if hasattr(tf.errors, "TracingError") else
                       RuntimeError, match=r"element 4 of the dataset has sizes .*here.py:1"):
        f(ds)
    assert float(v) == 15.0 + 1 + 2 + 3  # the steps before it ran


def test_a_call_under_a_tape_runs_the_python_for_the_tape():
    w = tf.Variable(2.0)

    @tf.function
    def f(ds):
        total = tf.constant(0.0)
        for x in ds:
            total += w * x
        return total

    ds = D.range(1, 5).map(lambda i: tf.cast(i, tf.float32))
    f(ds)  # traced here, then replayed under the tape
    with tf.GradientTape() as tape:
        total = f(ds)
    assert float(total) == 20.0 and float(tape.gradient(total, w)) == 10.0


@pytest.mark.parametrize("where", ["tape", "second"])
def test_loops_inside_a_tape_or_a_second_loop_run_eagerly(where):
    def make():
        v = tf.Variable(1.0)
        ds = D.range(1, 4).map(lambda i: tf.cast(i, tf.float32)).shuffle(3, seed=2)

        def f(dataset):
            v.assign(v * 2.0)
            if where == "second":
                for x in dataset:
                    v.assign(v * x + 1.0)
            with tf.GradientTape():
                for x in dataset:
                    v.assign(v * x - 1.0)
            return v.read_value()
        return f, (ds,), lambda: [v]

    eager, traced = _both(make)
    _assert_same(eager, traced)
    assert "inside a tape or a loop body, or in a second loop" in traced[3][0]


def test_a_loop_that_cannot_be_read_off_after_a_draw_says_what_to_do():
    @tf.function
    def f(ds):
        r = tf.random.uniform([])
        with tf.GradientTape():
            for x in ds:
                r += tf.cast(x, tf.float32)
        return r

    with pytest.raises(TypeError, match="after the function drew random numbers"):
        f(D.range(3))


def test_jit_compiled_loop():
    pytest.importorskip("jax")

    def make():
        w, opt, step = _regression()
        ds = _pipeline("plain")

        def epoch(dataset):
            for xb, yb in dataset:
                loss = step(xb, yb)
            return loss
        return epoch, (ds,), lambda: [w]

    eager, traced = _both(make, jit_compile=True)
    _assert_same(eager, traced, exact=False)
    assert traced[2] == 1 and not traced[3]


@pytest.mark.parametrize("reads_size", [False, True])
def test_a_first_element_of_other_sizes_at_a_later_call(reads_size):
    sizes = [3, 5, 2]

    def gen():
        for n in list(sizes):
            yield np.arange(n, dtype=np.float32) + 1

    def make():
        v = tf.Variable(1.0)
        ds = D.from_generator(gen, output_signature=tf.TensorSpec([None], tf.float32))
        built = []

        def f(dataset):
            for x in dataset:
                if not built:  # the first step: Python reads its element's size
                    built.append(x.shape[0] if reads_size else 0)
                    v.assign(v + float(built[0]))
                v.assign(v * 0.5 + tf.reduce_sum(x))
            return v.read_value()
        return f, (ds,), lambda: [v]

    out = []
    for traced in (False, True):
        sizes[:] = [3, 5, 2]
        fn, args, state = make()
        f = tf.function(fn) if traced else fn
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = float(f(*args))
            sizes[:] = [4, 2, 6, 3]
            out.append((first, float(f(*args)), float(state()[0])))
    assert out[0] == out[1]


def test_the_cache_keeps_no_dataset_alive():
    import gc
    import weakref

    @tf.function
    def f(ds):
        total = tf.constant(0.0)
        for x in ds:
            total += x
        return total

    ds = D.from_tensor_slices(np.arange(6.0, dtype=np.float32))
    assert float(f(ds)) == 15.0
    ref = weakref.ref(ds)
    del ds
    gc.collect()
    assert ref() is None


def test_a_branch_before_the_loop_traces_each_way_with_the_eager_values():
    def make():
        v = tf.Variable(0.0)
        ds = D.from_tensor_slices(np.arange(1.0, 6.0, dtype=np.float32)).shuffle(5, seed=4)

        def f(dataset, sign):
            scale = 2.0 if sign > 0 else -1.0  # a guard in the prologue
            for x in dataset:
                v.assign(v * 0.5 + scale * x)
            return v.read_value()
        return f, (ds,), lambda: [v]

    out = []
    for traced in (False, True):
        fn, (ds,), state = make()
        f = tf.function(fn) if traced else fn
        out.append([float(f(ds, tf.constant(s))) for s in (1.0, -1.0, 1.0, -1.0)])
    assert out[0] == out[1]


@pytest.mark.peers
def test_a_traced_epoch_loop_equals_tensorflows():
    real = pytest.importorskip("tensorflow")
    tk = pytest.importorskip("tf_keras")
    labels = (np.abs(X[:, 0] * 3).astype(np.int64) % 3)

    def run(tf_, keras):
        model = keras.Sequential([keras.layers.Dense(8, activation="tanh"),
                                  keras.layers.Dense(3)])
        model.build((None, 3))
        rng = np.random.default_rng(5)
        model.set_weights([rng.standard_normal(w.shape).astype(np.float32) * 0.5
                           for w in model.get_weights()])
        opt = keras.optimizers.SGD(0.1, momentum=0.9)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        ds = tf_.data.Dataset.from_tensor_slices((X, labels)).batch(16)

        @tf_.function
        def epoch(dataset):
            total = tf_.constant(0.0)
            for xb, yb in dataset:
                with tf_.GradientTape() as tape:
                    loss = loss_fn(yb, model(xb))
                grads = tape.gradient(loss, model.trainable_variables)
                opt.apply_gradients(zip(grads, model.trainable_variables))
                total += loss
            return total

        losses = [float(epoch(ds)) for _ in range(3)]
        return losses, model.get_weights(), epoch.experimental_get_tracing_count()

    ours = run(tf, tf.keras)
    theirs = run(real, tk)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6)
    assert ours[2] == theirs[2] == 1


def test_saving_a_looped_function_says_it_does_not_save(tmp_path):
    module = tf.Module()
    module.v = tf.Variable(0.0)

    @tf.function
    def epoch(ds):
        for x in ds:
            module.v.assign_add(x)
        return module.v.read_value()

    module.epoch = epoch
    assert float(epoch(D.range(1, 4).map(lambda i: tf.cast(i, tf.float32)))) == 6.0
    with pytest.raises(ValueError, match="loops over a tf.data.Dataset in its trace"):
        tf.saved_model.save(module, str(tmp_path / "m"))
