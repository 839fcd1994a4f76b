"""Configs: `get_config`/`from_config` of every layer class, `keras.layers.serialize` and
`deserialize`, `Sequential` and functional models rebuilt from their configs (same
outputs once the weights are copied with get_weights/set_weights), Lambda functions
saved as code, initializers, activations and optimizers. Last, the same dicts as
tf_keras 2.21 gives for the same arguments, where TensorFlow is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

from keras_helpers import _rand, tf_keras

# (factory taking the `layers` namespace, an input shape to build with or None)
LAYERS = {
    "Dense": (lambda L: L.Dense(3, activation="relu", use_bias=False,
                                kernel_initializer="he_normal", name="d"), (None, 4)),
    "DenseInput": (lambda L: L.Dense(2, input_shape=(5,), name="din"), None),
    "Conv2D": (lambda L: L.Conv2D(4, (3, 2), strides=2, padding="same",
                                  data_format="channels_first", dilation_rate=1, groups=2,
                                  bias_initializer="ones", name="c"), (None, 2, 8, 8)),
    "MaxPooling2D": (lambda L: L.MaxPooling2D(3, strides=1, padding="same", name="mp"), None),
    "AveragePooling2D": (lambda L: L.AveragePooling2D((2, 1), name="ap"), None),
    "Flatten": (lambda L: L.Flatten(data_format="channels_first", name="f"), None),
    "Activation": (lambda L: L.Activation("tanh", name="act"), None),
    "Dropout": (lambda L: L.Dropout(0.3, noise_shape=(None, 1), seed=4, name="do"), None),
    "BatchNormalization": (lambda L: L.BatchNormalization(momentum=0.9, epsilon=1e-4,
                                                          center=False, name="bn"), (None, 3, 4)),
    "BatchNormalizationAxes": (lambda L: L.BatchNormalization(axis=[1, 2], name="bn2"),
                               (None, 3, 4)),
    "Embedding": (lambda L: L.Embedding(10, 4, mask_zero=True, input_length=6,
                                        embeddings_initializer="glorot_uniform", name="e"),
                  None),
    "EmbeddingPlain": (lambda L: L.Embedding(10, 4, name="e2"), None),
    "Masking": (lambda L: L.Masking(mask_value=-1.0, name="m"), None),
    "LSTM": (lambda L: L.LSTM(3, return_sequences=True, go_backwards=True,
                              unit_forget_bias=False, recurrent_activation="hard_sigmoid",
                              name="lstm"), (None, 5, 2)),
    "GRU": (lambda L: L.GRU(3, reset_after=False, return_state=True, use_bias=False,
                            name="gru"), (None, 5, 2)),
    "SimpleRNN": (lambda L: L.SimpleRNN(2, activation="relu", input_shape=(4, 3), name="srnn"),
                  None),
    "RNN": (lambda L: L.RNN(L.LSTMCell(2, name="cell"), return_sequences=True, unroll=True,
                            name="rnn"), (None, 3, 2)),
    "LSTMCell": (lambda L: L.LSTMCell(2, implementation=1, name="lc"), None),
    "GRUCell": (lambda L: L.GRUCell(2, name="gc"), None),
    "SimpleRNNCell": (lambda L: L.SimpleRNNCell(2, use_bias=False, name="sc"), None),
    "Add": (lambda L: L.Add(name="add"), None),
    "Subtract": (lambda L: L.Subtract(name="sub"), None),
    "Multiply": (lambda L: L.Multiply(name="mul"), None),
    "Average": (lambda L: L.Average(name="avg"), None),
    "Maximum": (lambda L: L.Maximum(name="max"), None),
    "Minimum": (lambda L: L.Minimum(name="min"), None),
    "Concatenate": (lambda L: L.Concatenate(axis=1, name="cat"), None),
    "Dot": (lambda L: L.Dot(axes=(1, 2), normalize=True, name="dot"), None),
    "Frozen": (lambda L: L.Dense(2, trainable=False, dtype="float64", name="frozen"), None),
}


def _build(layer, shape):
    if shape is not None:
        layer.build(shape)
    return layer


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_from_config_round_trips(name):
    make, shape = LAYERS[name]
    layer = _build(make(layers), shape)
    config = layer.get_config()
    copy = type(layer).from_config(config)
    assert copy.get_config() == config
    assert type(copy) is type(layer) and not copy.built
    for key in ("name", "trainable", "dtype"):
        assert config[key] == getattr(layer, key)


def test_hand_written_configs():
    assert layers.Dense(3, name="d").get_config() == {
        "name": "d", "trainable": True, "dtype": "float32", "units": 3, "activation": "linear",
        "use_bias": True,
        "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                               "config": {"seed": None}, "registered_name": None},
        "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
                             "config": {}, "registered_name": None},
        "kernel_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
        "kernel_constraint": None, "bias_constraint": None}
    assert layers.Concatenate(name="c").get_config() == {"name": "c", "trainable": True,
                                                         "dtype": "float32", "axis": -1}
    assert layers.Dot(1, name="d").get_config() == {"name": "d", "trainable": True,
                                                    "dtype": "float32", "axes": 1,
                                                    "normalize": False}
    config = layers.LSTM(2, name="l").get_config()
    assert config["units"] == 2 and config["implementation"] == 2 and "cell" not in config
    assert config["recurrent_initializer"]["class_name"] == "Orthogonal"
    rnn_config = layers.RNN(layers.GRUCell(2, name="g"), name="r").get_config()
    assert rnn_config["cell"]["class_name"] == "GRUCell"
    assert rnn_config["cell"]["config"]["reset_after"] is True
    assert layers.Embedding(3, 2, name="e").get_config()["batch_input_shape"] == (None, None)


def test_serialize_and_deserialize():
    dense = layers.Dense(2, name="out")
    assert "build_config" not in layers.serialize(dense)
    dense.build((None, 3))
    entry = layers.serialize(dense)
    assert entry["module"] == "keras.layers" and entry["class_name"] == "Dense"
    assert entry["registered_name"] is None and entry["build_config"] == {"input_shape": (None, 3)}
    again = layers.deserialize(entry)
    assert again.built and again.kernel.shape == (3, 2) and again.get_config() == dense.get_config()
    add = layers.Add()
    add([tf.ones([1, 2]), tf.ones([1, 2])])
    assert layers.serialize(add)["build_config"] == {"input_shape": [(1, 2), (1, 2)]}
    with pytest.raises(ValueError, match=r"Unknown layer: 'Nope'.*custom_objects"):
        layers.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(ValueError, match="expected a dict with 'class_name'"):
        layers.deserialize("Dense")
    with pytest.raises(TypeError, match="must be a Layer"):
        layers.serialize("Dense")


class Scale(keras.layers.Layer):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, inputs):
        return inputs * self.factor

    def get_config(self):
        return dict(super().get_config(), factor=self.factor)


def test_custom_objects():
    entry = layers.serialize(Scale(3.0, name="s"))
    with pytest.raises(ValueError, match="Unknown layer: 'Scale'"):
        layers.deserialize(entry)
    layer = layers.deserialize(entry, custom_objects={"Scale": Scale})
    assert layer.factor == 3.0 and layer.name == "s"
    model = keras.Sequential([layers.Dense(2, input_shape=(3,)), Scale(0.5)])
    copy = keras.Sequential.from_config(model.get_config(), custom_objects={"Scale": Scale})
    copy.set_weights(model.get_weights())
    x = _rand(2, 3)
    np.testing.assert_array_equal(copy(x).numpy(), model(x).numpy())


def test_from_config_errors_name_the_class_and_config():
    with pytest.raises(TypeError, match=r"Error when deserializing class 'Dense'.*units"):
        layers.Dense.from_config({"units": 2, "bogus": 1})


# ================================================================ models round-trip
def _same_outputs(a, b, x):
    ya, yb = a(x), b(x)
    for p, q in zip(tf.nest.flatten(ya), tf.nest.flatten(yb), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


SEQUENTIALS = {
    "mlp": (lambda: keras.Sequential([layers.Dense(8, activation="relu", input_shape=(4,)),
                                      layers.Dropout(0.2), layers.BatchNormalization(),
                                      layers.Dense(3, activation="softmax")]), (5, 4)),
    "cnn": (lambda: keras.Sequential([layers.Conv2D(4, 3, padding="same", activation="relu"),
                                      layers.MaxPooling2D(), layers.AveragePooling2D(),
                                      layers.Flatten(), layers.Dense(2)]), (2, 8, 8, 1)),
    "text": (lambda: keras.Sequential([layers.Embedding(10, 4, mask_zero=True),
                                       layers.LSTM(5, return_sequences=True),
                                       layers.GRU(3, go_backwards=True),
                                       layers.Dense(1)]), None),
    "rnn": (lambda: keras.Sequential([keras.Input((6, 3)), layers.Masking(),
                                      layers.RNN(layers.SimpleRNNCell(4), return_sequences=True),
                                      layers.SimpleRNN(2),
                                      layers.Lambda(lambda t, k: t * k, arguments={"k": 3.0})]),
            (2, 6, 3)),
}


def _without_code(config):
    """A config without the marshalled code of Lambda functions (marshal's bytes of a
    loaded function need not equal the original's: the outputs compare those)."""
    if isinstance(config, dict):
        if config.get("function_type") == "lambda":
            config = {k: v for k, v in config.items() if k != "function"}
        return {k: _without_code(v) for k, v in config.items()}
    if isinstance(config, list):
        return [_without_code(v) for v in config]
    return config


@pytest.mark.parametrize("name", sorted(SEQUENTIALS))
def test_sequential_round_trip(name):
    make, shape = SEQUENTIALS[name]
    model = make()
    x = tf.constant(np.array([[1, 4, 2, 0, 0], [3, 3, 0, 0, 0]])) if shape is None \
        else tf.constant(_rand(*shape))
    model(x)
    config = model.get_config()
    assert set(config) == {"name", "layers"}
    assert config["layers"][0]["class_name"] == "InputLayer"
    assert all("build_config" in entry for entry in config["layers"][1:])
    copy = keras.Sequential.from_config(config)
    assert copy.name == model.name and copy.built
    assert [type(a) for a in copy.layers] == [type(b) for b in model.layers]
    assert [w.shape for w in copy.weights] == [w.shape for w in model.weights]
    copy.set_weights(model.get_weights())
    _same_outputs(model, copy, x)
    assert _without_code(copy.get_config()) == _without_code(config)
    rebuilt = layers.deserialize(layers.serialize(model))
    rebuilt.set_weights(model.get_weights())
    _same_outputs(model, rebuilt, x)


def test_sequential_input_layer_forms():
    by_layer = keras.Sequential([layers.InputLayer(input_shape=(3,), name="x"), layers.Dense(2)])
    by_input = keras.Sequential([keras.Input(shape=(3,)), layers.Dense(2)])
    for model in (by_layer, by_input):
        assert model.built and len(model.layers) == 1
        assert model.get_config()["layers"][0]["config"]["batch_input_shape"] == (None, 3)
    assert by_layer.get_config()["layers"][0]["config"]["name"] == "x"
    unbuilt = keras.Sequential([layers.Dense(2)])
    assert [e["class_name"] for e in unbuilt.get_config()["layers"]] == ["Dense"]
    assert not keras.Sequential.from_config(unbuilt.get_config()).built
    with pytest.raises(ValueError, match="can only be the first layer"):
        keras.Sequential([layers.Dense(2), layers.InputLayer(input_shape=(3,))])


def _functional_models():
    a, b = keras.Input((3,), name="a"), keras.Input((3,), name="b")
    shared = layers.Dense(4, activation="tanh", name="shared")
    merged = layers.Concatenate(name="cat")([shared(a), shared(b),
                                             layers.subtract([a, b], name="subtract")])
    scores = layers.Dense(2, name="scores")(merged)
    siamese = keras.Model([a, b], [scores, layers.Dot(1, normalize=True)([shared(a), shared(b)])],
                          name="siamese")

    ids = keras.Input((None,), dtype="int32", name="ids")
    seq, h, c = layers.LSTM(4, return_sequences=True, return_state=True, name="enc")(
        layers.Embedding(9, 3, mask_zero=True, name="emb")(ids))
    dec = layers.LSTM(4, name="dec")(seq, initial_state=[h, c])
    head = keras.Sequential([layers.Dense(3, activation="relu"), layers.Dense(1)], name="head")
    out = head(layers.Average()([dec, h])) * 2.0 + 1.0
    text = keras.Model({"ids": ids}, {"out": out, "seq": layers.Lambda(lambda t: t[:, -1])(seq)},
                       name="text")

    inner_in = keras.Input((3,))
    inner = keras.Model(inner_in, layers.Dense(2)(inner_in), name="inner")
    x = keras.Input((3,), name="x")
    nested = keras.Model(x, layers.Maximum()([inner(x), layers.Dense(2)(x)]), name="nested")

    ids_v = np.array([[1, 2, 3, 0], [4, 0, 0, 0]])
    return {"siamese": (siamese, [_rand(2, 3), _rand(2, 3)]),
            "text": (text, {"ids": tf.constant(ids_v)}),
            "nested": (nested, _rand(2, 3))}


@pytest.mark.parametrize("name", ["siamese", "text", "nested"])
def test_functional_round_trip(name):
    model, x = _functional_models()[name]
    config = model.get_config()
    assert set(config) == {"name", "trainable", "layers", "input_layers", "output_layers"}
    copy = keras.Model.from_config(config)
    assert type(copy).__name__ == "Functional" and copy.name == model.name
    assert [l.name for l in copy.layers] == [l.name for l in model.layers]
    copy.set_weights(model.get_weights())
    _same_outputs(model, copy, x)


def test_functional_config_format():
    model, _ = _functional_models()["siamese"]
    entries = {e["name"]: e for e in model.get_config()["layers"]}
    assert entries["a"]["inbound_nodes"] == []
    assert entries["shared"]["inbound_nodes"] == [[["a", 0, 0, {}]], [["b", 0, 0, {}]],
                                                  [["a", 0, 0, {}]], [["b", 0, 0, {}]]]
    assert entries["cat"]["inbound_nodes"] == [[["shared", 0, 0, {}], ["shared", 1, 0, {}],
                                                ["subtract", 0, 0, {}]]]
    config = model.get_config()
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert config["output_layers"][0] == ["scores", 0, 0]


# ================================================================ Lambda
OFFSET = 0.5


def _shift(t, by=1.0):
    return t + by + OFFSET


def test_lambda_functions_saved_as_code():
    k = 3.0
    with_closure = layers.Lambda(lambda t, p=2.0: t * k ** p, output_shape=(2,),
                                 mask=lambda i, m: m, name="lam")
    config = with_closure.get_config()
    assert config["function_type"] == "lambda" and config["module"] == __name__
    assert config["output_shape"] == (2,) and config["output_shape_type"] == "raw"
    assert config["mask_type"] == "lambda"
    copy = layers.Lambda.from_config(config)
    x = tf.constant([[1., 2.]])
    np.testing.assert_array_equal(copy(x).numpy(), [[9., 18.]])
    named = layers.Lambda.from_config(layers.Lambda(_shift, arguments={"by": 2.0}).get_config())
    np.testing.assert_array_equal(named(x).numpy(), [[3.5, 4.5]])  # globals of its module
    by_name = layers.Lambda(np.negative).get_config()
    assert (by_name["function"], by_name["function_type"]) == ("negative", "function")
    assert layers.Lambda.from_config(by_name).function is np.negative
    with pytest.raises(ValueError, match="unknown function 'nowhere'"):
        layers.Lambda.from_config(dict(by_name, function="nowhere"))


# ================================================================ initializers, activations, optimizers
def test_initializer_and_activation_serialization():
    init = keras.initializers.VarianceScaling(2.0, mode="fan_out", seed=3)
    entry = keras.initializers.serialize(init)
    assert entry == {"module": "keras.initializers", "class_name": "VarianceScaling",
                     "config": {"scale": 2.0, "mode": "fan_out", "distribution": "truncated_normal",
                                "seed": 3}, "registered_name": None}
    assert keras.initializers.get(entry).get_config() == init.get_config()
    custom = layers.Dense(2, activation=lambda t: t * 2, kernel_initializer=lambda s, dtype=None:
                          tf.ones(s, dtype=dtype))
    config = custom.get_config()
    assert callable(config["activation"]) and callable(config["kernel_initializer"])
    copy = layers.Dense.from_config(config)
    np.testing.assert_array_equal(copy(tf.ones([1, 3])).numpy(), [[6., 6.]])


@pytest.mark.parametrize("make", [lambda o: o.SGD(0.1, momentum=0.9, nesterov=True),
                                  lambda o: o.Adam(0.01, amsgrad=True, clipnorm=1.0),
                                  lambda o: o.RMSprop(centered=True),
                                  lambda o: o.Adagrad(weight_decay=0.01)])
def test_optimizer_configs_round_trip(make):
    opt = make(keras.optimizers)
    config = opt.get_config()
    assert type(opt).from_config(config).get_config() == config


# ================================================================ against tf_keras
def _plain(value):
    """A config with TensorFlow's containers and NumPy scalars made plain (tuples as
    lists), for comparing dicts."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListWrapper":
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_configs_match_tf_keras(name):
    _, tk = tf_keras()
    make, shape = LAYERS[name]
    ours, theirs = _build(make(layers), shape), _build(make(tk.layers), shape)
    assert _plain(ours.get_config()) == _plain(theirs.get_config())
    ours_entry, theirs_entry = layers.serialize(ours), tk.layers.serialize(theirs)
    assert set(ours_entry) == set(theirs_entry)
    assert _plain(ours_entry.get("build_config")) == _plain(theirs_entry.get("build_config"))


def test_sequential_config_matches_tf_keras():
    tensorflow, tk = tf_keras()

    def build(k):
        return k.Sequential([k.layers.Dense(4, activation="relu", input_shape=(3,), name="h"),
                             k.layers.Dropout(0.5, name="drop"), k.layers.Dense(1, name="o")],
                            name="seq")

    ours, theirs = build(keras), build(tk)
    assert _plain(ours.get_config()) == _plain(theirs.get_config())
    copy = keras.Sequential.from_config(theirs.get_config())  # a tf_keras config, read here
    copy.set_weights(theirs.get_weights())
    x = _rand(2, 3)
    np.testing.assert_allclose(copy(x).numpy(), theirs(tensorflow.constant(x)).numpy(),
                               rtol=1e-6)


def test_functional_config_matches_tf_keras():
    tensorflow, tk = tf_keras()

    def build(k):
        a, b = k.Input((3,), name="a"), k.Input((3,), name="b")
        shared = k.layers.Dense(4, name="shared")
        merged = k.layers.Concatenate(name="cat")([shared(a), shared(b)])
        return k.Model([a, b], [k.layers.Dense(1, name="out")(merged), merged], name="m")

    ours, theirs = build(keras), build(tk)
    assert _plain(ours.get_config()) == _plain(theirs.get_config())
    copy = keras.Model.from_config(theirs.get_config())
    copy.set_weights(theirs.get_weights())
    x = [_rand(2, 3), _rand(2, 3)]
    for p, q in zip(copy(x), theirs([tensorflow.constant(v) for v in x]), strict=True):
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad"])
def test_optimizer_configs_match_tf_keras(name):
    _, tk = tf_keras()
    ours = getattr(keras.optimizers, name)(learning_rate=0.25, jit_compile=False)
    theirs = getattr(tk.optimizers, name)(learning_rate=0.25, jit_compile=False)
    assert _plain(ours.get_config()) == _plain(theirs.get_config())


def test_initializer_configs_match_tf_keras():
    _, tk = tf_keras()
    for name in ("GlorotUniform", "HeNormal", "Orthogonal", "RandomUniform", "TruncatedNormal",
                 "VarianceScaling", "Constant", "Identity", "Zeros"):
        ours = keras.initializers.serialize(getattr(keras.initializers, name)())
        theirs = tk.initializers.serialize(getattr(tk.initializers, name)())
        assert _plain(ours) == _plain(theirs), name
