"""Keras HDF5 weight files (saving/keras_h5.py): files tf_keras 2.21 wrote load and give
its outputs and input Jacobians; files tapeflow writes load back, and (with the peers)
in tf_keras. The fixtures are made by tests/fixtures/keras/make_fixtures.py."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import tapeflow as tf

h5py = pytest.importorskip("h5py")

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "keras")
EXPECTED = np.load(os.path.join(FIXTURES, "expected.npz"), allow_pickle=False)


class Sub(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = tf.keras.layers.Dense(4, activation="tanh")
        self.lstm = tf.keras.layers.LSTM(3)
        self.d2 = tf.keras.layers.Dense(2)

    def call(self, x):
        return self.d2(self.lstm(self.d1(x)))


def _make(name):
    tf.random.set_seed(11)  # other initial weights than tf_keras's
    if name == "seq":
        model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
                                     tf.keras.layers.Dense(2)])
    elif name == "cnn":
        inp = tf.keras.Input((6, 6, 1))
        h = tf.keras.layers.Conv2D(3, 3, activation="relu")(inp)
        h = tf.keras.layers.BatchNormalization()(h)
        h = tf.keras.layers.Flatten()(h)
        model = tf.keras.Model(inp, tf.keras.layers.Dense(2)(h))
    else:
        model = Sub()
        model(np.zeros((1, 5, 2), np.float32))
    return model


def _check(model, name):
    x = tf.constant(EXPECTED[f"{name}_x"])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x, training=False)
    np.testing.assert_allclose(y.numpy(), EXPECTED[f"{name}_y"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tape.batch_jacobian(y, x).numpy(), EXPECTED[f"{name}_jacobian"],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("suffix", [".h5", ".weights.h5"])
@pytest.mark.parametrize("name", ["seq", "cnn", "sub"])
def test_files_tf_keras_wrote_give_its_outputs_and_jacobians(name, suffix):
    model = _make(name)
    model.load_weights(os.path.join(FIXTURES, name + suffix))
    _check(model, name)


@pytest.mark.parametrize("suffix", [".h5", ".weights.h5"])
@pytest.mark.parametrize("name", ["seq", "cnn", "sub"])
def test_files_tapeflow_writes_load_back(tmp_path, name, suffix):
    model = _make(name)
    model.load_weights(os.path.join(FIXTURES, name + suffix))
    path = str(tmp_path / ("w" + suffix))
    model.save_weights(path)
    fresh = _make(name)
    fresh.load_weights(path)
    _check(fresh, name)
    with h5py.File(path, "r") as f, h5py.File(os.path.join(FIXTURES, name + suffix), "r") as g:
        def datasets(h):
            found = []
            h.visititems(lambda n, o: found.append((n, o.shape))
                         if isinstance(o, h5py.Dataset) else None)
            return sorted(found)
        if suffix == ".weights.h5":  # the same paths as tf_keras's
            assert datasets(f) == datasets(g)
        else:  # names follow the layers' (this process's); the same arrays
            assert sorted(s for _, s in datasets(f)) == sorted(s for _, s in datasets(g))


def test_a_model_file_s_weights_load_too(tmp_path):
    # model.save("m.h5") keeps the legacy layout under `model_weights`
    path = str(tmp_path / "m.h5")
    with h5py.File(os.path.join(FIXTURES, "seq.h5"), "r") as src, h5py.File(path, "w") as dst:
        src.copy(src["/"], dst, "model_weights")
        for k, v in src.attrs.items():
            dst["model_weights"].attrs[k] = v
    model = _make("seq")
    model.load_weights(path)
    _check(model, "seq")


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other_model", "bad_shape"])
def test_a_file_that_does_not_fit_loads_nothing(tmp_path, damage):
    path = str(tmp_path / "w.h5")
    if damage == "garbage":
        open(path, "wb").write(b"\x89HDF\r\n\x1a\n" + b"\x00" * 50)
        error = tf.errors.DataLossError
    elif damage == "truncated":
        raw = open(os.path.join(FIXTURES, "cnn.h5"), "rb").read()
        open(path, "wb").write(raw[: len(raw) // 2])
        error = tf.errors.DataLossError
    elif damage == "other_model":
        shutil.copy(os.path.join(FIXTURES, "seq.h5"), path)
        error = ValueError
    else:
        shutil.copy(os.path.join(FIXTURES, "cnn.h5"), path)
        with h5py.File(path, "r+") as f:
            def text(x):
                return x.decode() if isinstance(x, bytes) else str(x)
            last = text(f.attrs["layer_names"][-1])
            kernel = text(f[last].attrs["weight_names"][0])
            del f[last][kernel]
            f[last][kernel] = np.zeros((47, 2), np.float32)
        error = ValueError
    model = _make("cnn")
    before = [w.numpy().copy() for w in model.weights]
    with pytest.raises(error, match="w.h5"):
        model.load_weights(path)
    for w, b in zip(model.weights, before):
        np.testing.assert_array_equal(w.numpy(), b)


def test_an_unbuilt_model_is_told_to_build_first(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(4), tf.keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="no weights yet|not yet been created"):
        model.load_weights(os.path.join(FIXTURES, "seq.h5"))


@pytest.mark.peers
@pytest.mark.parametrize("suffix", [".h5", ".weights.h5"])
def test_tf_keras_loads_the_files_tapeflow_writes(tmp_path, suffix):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    model = _make("seq")
    model.load_weights(os.path.join(FIXTURES, "seq" + suffix))
    path = str(tmp_path / ("w" + suffix))
    model.save_weights(path)
    theirs = keras.Sequential([keras.layers.Dense(4, activation="tanh", input_shape=(3,)),
                               keras.layers.Dense(2)])
    theirs.load_weights(path)
    np.testing.assert_allclose(theirs(EXPECTED["seq_x"]).numpy(), EXPECTED["seq_y"], rtol=1e-5)


# ------------------------------------------------------------------ model files
@pytest.mark.parametrize("suffix", [".keras", "_model.h5"])
@pytest.mark.parametrize("name", ["seq", "cnn"])
def test_model_files_tf_keras_wrote_load_with_their_weights(name, suffix):
    model = tf.keras.models.load_model(os.path.join(FIXTURES, name + suffix))
    _check(model, name)


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
@pytest.mark.parametrize("name", ["seq", "cnn"])
def test_model_files_tapeflow_writes_load_back(tmp_path, name, suffix):
    model = _make(name)
    model.load_weights(os.path.join(FIXTURES, name + ".h5"))
    path = str(tmp_path / ("m" + suffix))
    model.save(path)
    if suffix == ".keras":
        import zipfile
        assert sorted(zipfile.ZipFile(path).namelist()) == ["config.json", "metadata.json",
                                                            "model.weights.h5"]
    again = tf.keras.models.load_model(path)
    assert type(again) is type(model) and [w.shape for w in again.weights] == \
        [w.shape for w in model.weights]
    _check(again, name)


def test_a_lambda_s_code_is_not_run_unless_the_caller_trusts_the_file(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Lambda(lambda x: x * 3.0, input_shape=(2,))])
    path = str(tmp_path / "lambda.keras")
    model.save(path)
    with pytest.raises(ValueError, match="safe_mode=False"):
        tf.keras.models.load_model(path)
    trusted = tf.keras.models.load_model(path, safe_mode=False)
    np.testing.assert_array_equal(trusted(tf.ones([1, 2])).numpy(), [[3.0, 3.0]])


@pytest.mark.parametrize("damage", ["truncated", "no_config", "config_not_json", "not_a_model"])
def test_a_damaged_model_file_is_refused_naming_it(tmp_path, damage):
    import zipfile
    src = os.path.join(FIXTURES, "seq.keras")
    path = str(tmp_path / "bad.keras")
    if damage == "truncated":
        raw = open(src, "rb").read()
        open(path, "wb").write(raw[: len(raw) * 2 // 3])
    else:
        with zipfile.ZipFile(src) as z, zipfile.ZipFile(path, "w") as out:
            for name in z.namelist():
                data = z.read(name)
                if name == "config.json" and damage == "no_config":
                    continue
                if name == "config.json" and damage == "config_not_json":
                    data = b"{not json"
                if name == "config.json" and damage == "not_a_model":
                    data = b"[1, 2, 3]"
                out.writestr(name, data)
    with pytest.raises(tf.errors.DataLossError, match="bad.keras"):
        tf.keras.models.load_model(path)


@pytest.mark.peers
@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_tf_keras_loads_the_model_files_tapeflow_writes(tmp_path, suffix):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    for name in ("seq", "cnn"):
        model = _make(name)
        model.load_weights(os.path.join(FIXTURES, name + ".h5"))
        path = str(tmp_path / (name + suffix))
        model.save(path)
        theirs = keras.models.load_model(path)
        np.testing.assert_allclose(theirs(EXPECTED[f"{name}_x"]).numpy(), EXPECTED[f"{name}_y"],
                                   rtol=1e-5, atol=1e-6)
