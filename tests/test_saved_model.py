"""tf.saved_model.save and load (saving/saved_model.py): traced functions and variables,
loaded and run without the Python that defined them, as TensorFlow's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import DataLossError

S = tf.TensorSpec


class Affine(tf.Module):
    def __init__(self, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = tf.Variable(rng.standard_normal((3, 2)), name="w")
        self.b = tf.Variable(rng.standard_normal(2), name="b")
        self.frozen = tf.Variable(1.5, trainable=False, dtype=tf.float64, name="frozen")

    @tf.function(input_signature=[S([None, 3], tf.float64)])
    def __call__(self, x):
        return tf.tanh(x @ self.w + self.b) * self.frozen

    @tf.function
    def scaled(self, x, k=2.0):
        return self(x) * k


def _rand(n, seed=1):
    return tf.constant(np.random.default_rng(seed).standard_normal((n, 3)))


def test_a_loaded_module_gives_the_same_values_at_every_size(tmp_path):
    m = Affine()
    m.scaled(_rand(4))
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    for n in (5, 1, 2, 3, 8, 11):
        np.testing.assert_array_equal(loaded(_rand(n, n)).numpy(), m(_rand(n, n)).numpy())
    assert loaded.__call__.get_concrete_function().serves_all_sizes
    # the traced call of `scaled`, with its Python value, and only that one
    np.testing.assert_array_equal(loaded.scaled(_rand(4, 9)).numpy(),
                                  m.scaled(_rand(4, 9)).numpy())
    with pytest.raises(ValueError, match="Could not find matching concrete function.*scaled"):
        loaded.scaled(_rand(4), k=3.0)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.scaled(_rand(5))


def test_loaded_variables_are_variables(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    assert isinstance(loaded.w, tf.Variable) and loaded.w.name == "w:0"
    assert {v.name for v in loaded.trainable_variables} == {"w:0", "b:0"}
    assert {v.name for v in loaded.variables} == {"w:0", "b:0", "frozen:0"}
    loaded.b.assign([10.0, -10.0])  # the graphs read it at each call
    np.testing.assert_allclose(loaded(_rand(3)).numpy()[:, 0], 1.5, rtol=1e-6)
    np.testing.assert_array_equal(m.b.numpy(), Affine().b.numpy())  # the saved one unchanged
    # the variables file is a checkpoint of the module's object graph, as TensorFlow's
    fresh = Affine(seed=5)
    tf.train.Checkpoint(fresh).read(os.path.join(tmp_path, "variables", "variables")) \
        .assert_consumed()
    np.testing.assert_array_equal(fresh.w.numpy(), m.w.numpy())


def test_loaded_functions_are_differentiable_everywhere(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    x = _rand(5)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.reduce_sum(loaded(x) ** 2)
        y0 = tf.reduce_sum(m(x) ** 2)
    for got, want in ((tape.gradient(y, loaded.w), tape.gradient(y0, m.w)),
                      (tape.gradient(y, x), tape.gradient(y0, x))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    v = tf.constant(np.ones((5, 3)))
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        out = loaded(x)
    with tf.autodiff.ForwardAccumulator(x, v) as acc0:
        out0 = m(x)
    np.testing.assert_allclose(acc.jvp(out).numpy(), acc0.jvp(out0).numpy(), rtol=1e-12)
    np.testing.assert_allclose(tf.vectorized_map(lambda r: loaded(r[None])[0], x).numpy(),
                               m(x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(tf.jacfwd(lambda u: loaded(u))(x).numpy(),
                               tf.jacrev(lambda u: m(u))(x).numpy(), rtol=1e-10, atol=1e-14)
    tf.testing.check_grads(lambda u: loaded(u), [x.numpy()], order=2)


def test_the_seed_jacobian_module_loads_in_a_process_without_its_class(tmp_path):
    # The seed question: a CNN's input Jacobians for many inputs, recorded once, kept,
    # and evaluated elsewhere at new batches of any size.
    class JacobianModule(tf.Module):
        def __init__(self):
            super().__init__()
            tf.random.set_seed(0)
            self.model = tf.keras.Sequential([
                tf.keras.layers.Conv2D(4, 3, activation="relu", input_shape=(9, 9, 1)),
                tf.keras.layers.MaxPooling2D(2), tf.keras.layers.Flatten(),
                tf.keras.layers.Dense(10)])

        @tf.function(input_signature=[S([None, 9, 9, 1], tf.float32)])
        def jacobian(self, x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = self.model(x)
            return tape.batch_jacobian(y, x)

    m = JacobianModule()
    x = np.random.default_rng(1).standard_normal((13, 9, 9, 1)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", np.concatenate([m.jacobian(tf.constant(x[:n])).numpy()
                                                   for n in (1, 2, 3, 7)]))
    tf.saved_model.save(m, tmp_path / "saved")
    code = textwrap.dedent(f"""
        import numpy as np, tapeflow as tf
        loaded = tf.saved_model.load({str(tmp_path / 'saved')!r})
        x = np.load({str(tmp_path / 'x.npy')!r})
        got = [loaded.jacobian(tf.constant(x[:n])).numpy() for n in (1, 2, 3, 7)]
        np.save({str(tmp_path / 'got.npy')!r}, np.concatenate(got))
        print(loaded.jacobian(tf.constant(x)).shape)  # 13: a size no trace saw
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "(13, 10, 9, 9, 1)" in out.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "got.npy"), np.load(tmp_path / "want.npy"))


def test_a_keras_model_is_saved_with_its_call(tmp_path):
    # As TensorFlow saves a Keras model: its call (training=False) for its inputs, batch
    # size None, and that as the serving signature, named by its inputs.
    tf.random.set_seed(1)
    seq = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh"),
                               tf.keras.layers.Dropout(0.5), tf.keras.layers.Dense(2)])
    x = np.random.default_rng(2).standard_normal((6, 5)).astype(np.float32)
    seq.compile("adam", "mse")  # trained with fit: its traced steps are not the model's
    seq.fit(x, np.ones((6, 2), np.float32), epochs=1, verbose=0)
    inputs = tf.keras.Input((5,), name="features")
    functional = tf.keras.Model(inputs, tf.keras.layers.Dense(3)(inputs))
    for model, name in ((seq, f"{seq.layers[0].name}_input"), (functional, "features")):
        tf.saved_model.save(model, tmp_path / name)
        loaded = tf.saved_model.load(tmp_path / name)
        for n in (6, 1, 3):
            np.testing.assert_array_equal(loaded(x[:n]).numpy(), model(x[:n]).numpy())
        out = loaded.signatures["serving_default"](**{name: x})
        np.testing.assert_array_equal(out["output_0"].numpy(), model(x).numpy())
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = loaded(xt)
        with tf.GradientTape() as tape0:
            tape0.watch(xt)
            y0 = model(xt)
        np.testing.assert_allclose(tape.batch_jacobian(y, xt).numpy(),
                                   tape0.batch_jacobian(y0, xt).numpy(), rtol=1e-6)


def test_jit_compile_is_kept(tmp_path):
    pytest.importorskip("jax")
    m = tf.Module()
    m.v = tf.Variable(np.arange(3.0))
    m.f = tf.function(lambda x: tf.sin(x) * m.v, input_signature=[S([None, 3], tf.float64)],
                      jit_compile=True)
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    assert loaded.f._jit_compile
    x = _rand(6)
    np.testing.assert_allclose(loaded.f(x).numpy(), np.sin(x.numpy()) * np.arange(3.0),
                               rtol=1e-14)


def test_jit_compile_without_jax_loads_and_replays_with_numpy(tmp_path, monkeypatch):
    m = tf.Module()
    m.v = tf.Variable(np.arange(3.0))
    m.f = tf.function(lambda x: tf.sin(x) * m.v, input_signature=[S([None, 3], tf.float64)])
    tf.saved_model.save(m, tmp_path)
    _resigned(tmp_path / "saved_model.json",
              lambda model: model["functions"][0].update(jit_compile=True))
    monkeypatch.setitem(sys.modules, "jax", None)  # as on a machine without the xla extra
    with pytest.warns(UserWarning, match=r"jit_compile=True, but JAX is not installed.*"
                                         r"tapeflow\[xla\]"):
        loaded = tf.saved_model.load(tmp_path)
    assert not loaded.f._jit_compile
    x = _rand(5)
    np.testing.assert_allclose(loaded.f(x).numpy(), np.sin(x.numpy()) * np.arange(3.0),
                               rtol=1e-14)


def test_a_guard_that_would_need_the_python_names_its_line(tmp_path):
    m = tf.Module()

    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:  # a Python branch on a value: a guard
            return x * 2.0
        return -x

    m.f = f
    m.f(tf.constant([1.0, 2.0]))
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    np.testing.assert_array_equal(loaded.f(tf.constant([3.0, 1.0])).numpy(), [6.0, 2.0])
    with pytest.raises(ValueError, match=r"read at .*test_saved_model.py:\d+: if tf.reduce_sum\(x\) > 0.*this call reads "
                                         "another"):
        loaded.f(tf.constant([-3.0, 1.0]))
    m.f(tf.constant([-1.0, -2.0]))  # both branches traced: both saved
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    np.testing.assert_array_equal(loaded.f(tf.constant([-3.0, 1.0])).numpy(), [3.0, -1.0])
    np.testing.assert_array_equal(loaded.f(tf.constant([3.0, 1.0])).numpy(), [6.0, 2.0])


def test_host_callbacks_refuse_and_print_is_saved(tmp_path, capsys):
    m = tf.Module()
    m.f = tf.function(lambda x: tf.py_function(np.sin, [x], tf.float32),
                      input_signature=[S([2], tf.float32)])
    with pytest.raises(ValueError, match=r"function 'f'.*\(py_function\) cannot be saved"):
        tf.saved_model.save(m, tmp_path / "a")
    assert not os.path.exists(tmp_path / "a")

    def printing(x):
        tf.print("x is", x, {"k": 1}, output_stream=sys.stdout)
        return x + 1.0

    m.f = tf.function(printing, input_signature=[S([None], tf.float32)])
    tf.saved_model.save(m, tmp_path / "b")
    capsys.readouterr()
    loaded = tf.saved_model.load(tmp_path / "b")
    loaded.f(tf.constant([1.0, 2.0, 3.0]))
    loaded.f(tf.constant([4.0]))
    assert capsys.readouterr().out == "x is [1 2 3] {'k': 1}\nx is [4] {'k': 1}\n"


def test_an_untracked_variable_is_an_error_naming_it(tmp_path):
    hidden = tf.Variable(2.0, name="hidden")
    m = tf.Module()
    m.f = tf.function(lambda x: x * hidden, input_signature=[S([], tf.float32)])
    with pytest.raises(ValueError, match="'hidden:0', which no attribute of it holds"):
        tf.saved_model.save(m, tmp_path)


def test_draws_and_custom_gradients_are_saved(tmp_path):
    @tf.custom_gradient
    def clipped(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.5, 0.5)

    m = tf.Module()
    m.noise = tf.function(lambda x: x + tf.random.normal([4], seed=7, dtype=tf.float64),
                          input_signature=[S([4], tf.float64)])
    m.clip = tf.function(lambda x: clipped(x) * 3.0, input_signature=[S([None], tf.float64)])
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    x = tf.constant(np.zeros(4))
    a, b = loaded.noise(x).numpy(), loaded.noise(x).numpy()
    assert a.shape == (4,) and not np.array_equal(a, b)  # a draw at each call
    tf.random.set_seed(11)
    want = m.noise(x).numpy()
    tf.random.set_seed(11)
    np.testing.assert_array_equal(loaded.noise(x).numpy(), want)  # the same op-seeded stream
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(loaded.clip(x))
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.5] * 4)


def test_signatures(tmp_path):
    m = Affine()
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    out = loaded.signatures["serving_default"](x=_rand(2))
    np.testing.assert_array_equal(out["output_0"].numpy(), m(_rand(2)).numpy())
    with pytest.raises(TypeError, match="takes its inputs by keyword"):
        loaded.signatures["serving_default"](_rand(2))

    class Named(tf.Module):
        @tf.function(input_signature=[S([None], tf.float32, name="features")])
        def predict(self, x):
            return {"doubled": x * 2.0}

    n = Named()
    tf.saved_model.save(n, tmp_path / "n", signatures={"predict": n.predict})
    sig = tf.saved_model.load(tmp_path / "n").signatures["predict"]
    assert sig.input_names == ["features"]
    np.testing.assert_array_equal(sig(features=tf.constant([1.0]))["doubled"].numpy(), [2.0])


def test_nested_objects_and_a_loaded_object_saved_again(tmp_path):
    outer = tf.Module()
    outer.parts = [Affine(1), Affine(2)]
    outer.table = {"a": Affine(3)}
    outer.f = tf.function(lambda x: outer.parts[1](x) + outer.table["a"](x),
                          input_signature=[S([None, 3], tf.float64)])
    tf.saved_model.save(outer, tmp_path / "1")
    loaded = tf.saved_model.load(tmp_path / "1")
    x = _rand(4)
    np.testing.assert_array_equal(loaded.f(x).numpy(), outer.f(x).numpy())
    np.testing.assert_array_equal(loaded.parts[0](x).numpy(), outer.parts[0](x).numpy())
    np.testing.assert_array_equal(loaded.table["a"].w.numpy(), outer.table["a"].w.numpy())
    tf.saved_model.save(loaded, tmp_path / "2")
    again = tf.saved_model.load(tmp_path / "2")
    np.testing.assert_array_equal(again.f(_rand(7)).numpy(), outer.f(_rand(7)).numpy())


def test_a_failed_save_leaves_the_previous_directory(tmp_path, monkeypatch):
    m = Affine()
    tf.saved_model.save(m, tmp_path / "s")
    from tapeflow.saving import bundle

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(bundle, "write_bundle", broken)
    with pytest.raises(OSError, match="disk full"):
        tf.saved_model.save(Affine(seed=9), tmp_path / "s")
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["s"]
    np.testing.assert_array_equal(tf.saved_model.load(tmp_path / "s").w.numpy(), m.w.numpy())


def test_damaged_and_foreign_directories_raise_naming_the_file(tmp_path):
    tf.saved_model.save(Affine(), tmp_path / "s")
    model = tmp_path / "s" / "saved_model.json"
    text = model.read_text()
    model.write_text(text.replace('"tanh"', '"tanH"'))
    with pytest.raises(DataLossError, match="saved_model.json.*corrupted"):
        tf.saved_model.load(tmp_path / "s")
    model.write_text(text[:len(text) // 2])
    with pytest.raises(DataLossError, match="saved_model.json.*not JSON"):
        tf.saved_model.load(tmp_path / "s")
    model.write_text(text)
    data = tmp_path / "s" / "variables" / "variables.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[3] ^= 0x10
    data.write_bytes(bytes(raw))
    with pytest.raises(DataLossError, match="variables.data.*corrupted"):
        tf.saved_model.load(tmp_path / "s")
    with pytest.raises(tf.errors.NotFoundError, match="no SavedModel"):
        tf.saved_model.load(tmp_path / "nothing")
    assert tf.saved_model.contains_saved_model(tmp_path / "s")


def _resigned(path, edit):
    """The model file with `edit` applied and its checksum made right again (a file
    crafted to pass the checksum: the reader must still refuse what is wrong in it)."""
    import zlib
    model = json.loads(path.read_text())
    edit(model)
    model.pop("crc32")
    model["crc32"] = zlib.crc32(json.dumps(model, sort_keys=True,
                                           separators=(",", ":")).encode())
    path.write_text(json.dumps(model))


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["functions"][0]["traces"][0]["graph"]["nodes"][0].update(node="os.system"),
     "primitive 'os.system', which is not defined"),
    (lambda m: m["functions"][0]["traces"][0]["graph"]["nodes"][0].update(inputs=[99]),
     "slot 99"),
    (lambda m: m["functions"][0]["traces"][0]["graph"].update(outputs=[1000]),
     "slot 1000"),
    (lambda m: m["functions"][0]["traces"][0]["graph"]["nodes"][0]["params"].update(
        x={"pickle": "gASV"}), "unknown tag 'pickle'"),
    (lambda m: m["functions"][0]["traces"][0]["graph"]["avals"][0].__setitem__(2, "object"),
     "dtype 'object'"),
    (lambda m: m["functions"][0]["traces"][0]["graph"]["variables"].__setitem__(0, "nope"),
     "variable 'nope'"),
    (lambda m: m["functions"][0]["traces"][0].update(args={"list": []}),
     "does not match its graph's inputs"),
])
def test_a_crafted_model_file_is_refused(tmp_path, edit, message):
    tf.saved_model.save(Affine(), tmp_path)
    _resigned(tmp_path / "saved_model.json", edit)
    with pytest.raises(DataLossError, match=message):
        tf.saved_model.load(tmp_path)


def test_save_needs_a_module(tmp_path):
    with pytest.raises(ValueError, match="must be a tf.Module"):
        tf.saved_model.save(tf.function(lambda x: x), tmp_path)


# ------------------------------------------------------------------ the loader, fuzzed
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz_helpers import damaged  # noqa: E402

_FILES = ("saved_model.json", "functions.index", "functions.data-00000-of-00001",
          os.path.join("variables", "variables.index"),
          os.path.join("variables", "variables.data-00000-of-00001"))


@pytest.fixture(scope="module")
def fuzz_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("saved")
    m = Affine()
    m.scaled(_rand(2))
    tf.saved_model.save(m, directory)
    return {name: (directory / name).read_bytes() for name in _FILES}, m(_rand(3)).numpy()


def _write(directory, files):
    for name, content in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(content)


@settings(max_examples=max(20, settings.default.max_examples // 2), deadline=None)
@given(which=st.sampled_from(_FILES),
       edits=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                      max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 10 ** 6)))
def test_a_damaged_file_is_refused_or_loads_what_was_saved(fuzz_model, tmp_path_factory,
                                                           which, edits, cut):
    files, want = fuzz_model
    files = dict(files)
    files[which] = damaged(files[which], edits, cut)
    directory = tmp_path_factory.mktemp("case")
    _write(directory, files)
    try:
        loaded = tf.saved_model.load(directory)
    except DataLossError as e:
        assert os.path.basename(which).split(".")[0] in str(e) or str(directory) in str(e)
        return
    np.testing.assert_array_equal(loaded(_rand(3)).numpy(), want)


def _json_paths(x, path=()):
    yield path
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _json_paths(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _json_paths(v, path + (i,))


_JUNK = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-3, 10 ** 4),
                               st.floats(allow_nan=False), st.text(max_size=8),
                               st.sampled_from(["float32", "tuple", "size", "graph", "add",
                                                "read_variable", "custom_gradient", "scan"])),
                     lambda inner: st.one_of(st.lists(inner, max_size=3),
                                             st.dictionaries(st.sampled_from(
                                                 ["tuple", "list", "dict", "size", "array",
                                                  "graph", "node", "guard", "leaf", "spec"]),
                                                 inner, max_size=2)),
                     max_leaves=6)


@settings(max_examples=max(30, settings.default.max_examples), deadline=None)
@given(data=st.data())
def test_a_crafted_model_file_loads_or_raises_data_loss(fuzz_model, tmp_path_factory, data):
    # A model file edited anywhere and given a right checksum (so every check behind the
    # checksum is reached): loading raises DataLossError or succeeds, never another error.
    files, _ = fuzz_model
    model = json.loads(files["saved_model.json"])
    paths = [p for p in _json_paths(model) if p and p[0] not in ("crc32", "format", "version")]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        target = model
        try:  # (an earlier edit may have replaced a container on the path)
            for k in path[:-1]:
                target = target[k]
            target[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue
        target[path[-1]] = data.draw(_JUNK)
    directory = tmp_path_factory.mktemp("crafted")
    _write(directory, files)
    _resigned(directory / "saved_model.json", lambda m: m.update(model))
    try:
        tf.saved_model.load(directory)
    except DataLossError:
        pass


# ------------------------------------------------------------------ against TensorFlow
def _module_code(tf_):
    """The same TensorFlow-API module, for TensorFlow (`tf_`) or tapeflow."""

    class Jacobians(tf_.Module):
        def __init__(self):
            super().__init__()
            rng = np.random.default_rng(0)
            self.w = tf_.Variable(rng.standard_normal((4, 3)).astype(np.float32), name="w")

        @tf_.function(input_signature=[tf_.TensorSpec([None, 4], tf_.float32, name="x")])
        def jacobian(self, x):
            with tf_.GradientTape() as tape:
                tape.watch(x)
                y = tf_.tanh(x @ self.w)
            return tape.batch_jacobian(y, x)

        @tf_.function
        def scale(self, x, k=2.0):
            return x * k * tf_.reduce_sum(self.w)

    return Jacobians()


@pytest.mark.peers
def test_saved_model_semantics_match_tensorflow(tmp_path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    real = pytest.importorskip("tensorflow")
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    loaded = {}
    for name, tf_ in (("tensorflow", real), ("tapeflow", tf)):
        m = _module_code(tf_)
        m.scale(tf_.constant(x[:2]))
        tf_.saved_model.save(m, str(tmp_path / name))
        loaded[name] = tf_.saved_model.load(str(tmp_path / name))
    theirs, ours = loaded["tensorflow"], loaded["tapeflow"]
    for n in (5, 1, 3):  # every batch size, from the signature's trace
        np.testing.assert_allclose(ours.jacobian(tf.constant(x[:n])).numpy(),
                                   theirs.jacobian(real.constant(x[:n])).numpy(), rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(ours.scale(tf.constant(x[:2])).numpy(),
                               theirs.scale(real.constant(x[:2])).numpy(), rtol=1e-5)
    # the serving signature: the one method with an input_signature, inputs by name
    assert list(ours.signatures) == list(theirs.signatures) == ["serving_default"]
    got = ours.signatures["serving_default"](x=tf.constant(x))
    want = theirs.signatures["serving_default"](x=real.constant(x))
    assert list(got) == list(want) == ["output_0"]
    np.testing.assert_allclose(got["output_0"].numpy(), want["output_0"].numpy(), rtol=1e-5,
                               atol=1e-6)
    # a call no saved graph serves: both raise ValueError saying so
    for module, tf_ in ((theirs, real), (ours, tf)):
        with pytest.raises(ValueError, match="Could not find matching concrete function"):
            module.scale(tf_.constant(x[:3]))
    # variables are variables: assigning changes later results in both
    ours.w.assign(ours.w * 2.0)
    theirs.w.assign(theirs.w * 2.0)
    np.testing.assert_allclose(ours.jacobian(tf.constant(x)).numpy(),
                               theirs.jacobian(real.constant(x)).numpy(), rtol=1e-5, atol=1e-6)
