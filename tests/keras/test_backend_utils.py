"""keras.backend, keras.utils (to_categorical, pad_sequences, normalize, Sequence, custom
objects), tf.device and the tf.*_initializer names: values against NumPy, errors, and
tf_keras's results (peers)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import utils as U

K = tf.keras.backend


def test_floatx_sets_the_default_dtype_of_layers_weights_and_inputs():
    try:
        K.set_floatx("float64")
        assert tf.keras.Input((3,)).dtype == tf.float64
        dense = tf.keras.layers.Dense(2)
        y = dense(np.ones((1, 3), np.float32))
        assert dense.kernel.dtype == tf.float64 and y.dtype == tf.float64
        assert tf.keras.initializers.GlorotUniform()((2, 2)).dtype == tf.float64
        assert K.zeros((2,)).dtype == tf.float64 and K.random_normal((2,)).dtype == tf.float64
    finally:
        K.set_floatx("float32")
    assert tf.keras.layers.Dense(2).dtype == "float32"
    with pytest.raises(ValueError, match="Unknown `floatx`"):
        K.set_floatx("int32")


def test_backend_math_against_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(K.dot(tf.constant(a), tf.constant(b)).numpy(), a @ b)
    c = rng.standard_normal((6, 4, 5))
    np.testing.assert_allclose(K.dot(tf.constant(a[0]), tf.constant(c)).numpy(),
                               np.einsum("ij,kjl->ikl", a[0], c))
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(K.batch_dot(tf.constant(x), tf.constant(y)).numpy(), x @ y)
    u, v = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_allclose(K.batch_dot(tf.constant(u), tf.constant(v), axes=1).numpy(),
                               (u * v).sum(1, keepdims=True))
    np.testing.assert_allclose(K.mean(tf.constant(a), axis=1).numpy(), a.mean(1))
    np.testing.assert_allclose(K.sum(tf.constant(a), axis=(0, 2), keepdims=True).numpy(),
                               a.sum((0, 2), keepdims=True))
    np.testing.assert_allclose(K.clip(tf.constant(a), -0.5, 0.5).numpy(), np.clip(a, -0.5, 0.5))
    np.testing.assert_allclose(K.l2_normalize(tf.constant(u), axis=1).numpy(),
                               u / np.linalg.norm(u, axis=1, keepdims=True))
    assert K.int_shape(tf.zeros([2, 3])) == (2, 3) and K.ndim(tf.zeros([2, 3])) == 2
    assert K.count_params(tf.zeros([2, 3])) == 6
    assert K.batch_flatten(tf.zeros([2, 3, 4])).shape == (2, 12)
    p = np.array([0.2, 0.9], np.float32)
    np.testing.assert_allclose(K.binary_crossentropy(tf.constant([0.0, 1.0]), tf.constant(p)),
                               -np.log([1 - 0.2 + 1e-7, 0.9 + 1e-7]), rtol=1e-6)
    tf.testing.check_grads(lambda t: K.batch_dot(t, t, axes=1), [u], order=2)


def test_backend_values_and_variables():
    v = K.variable([1.0, 2.0])
    assert v.dtype == tf.float32
    K.set_value(v, [3.0, 4.0])
    np.testing.assert_array_equal(K.get_value(v), [3.0, 4.0])
    K.batch_set_value([(v, [5.0, 6.0])])
    np.testing.assert_array_equal(K.batch_get_value([v])[0], [5.0, 6.0])
    with pytest.raises(TypeError, match="must be a tf.Variable"):
        K.set_value(tf.constant(1.0), 2.0)
    assert not K.is_keras_tensor(tf.constant(1.0))
    assert K.is_keras_tensor(tf.keras.Input((2,)))
    with pytest.raises(ValueError, match="Expected a symbolic Tensors|symbolic tensor"):
        K.is_keras_tensor(np.ones(2))
    assert K.epsilon() == 1e-7 and K.image_data_format() == "channels_last"


def test_clear_session_restarts_layer_names():
    tf.keras.layers.Dense(1)
    K.clear_session()
    assert tf.keras.layers.Dense(1).name == "dense"
    assert tf.keras.layers.Dense(1).name == "dense_1"


def test_to_categorical():
    np.testing.assert_array_equal(U.to_categorical([[1], [0], [2]]),
                                  np.eye(3, dtype=np.float32)[[1, 0, 2]])
    out = U.to_categorical(np.array([[0, 1], [2, 2]]), num_classes=4, dtype="int64")
    assert out.shape == (2, 2, 4) and out.dtype == np.int64
    np.testing.assert_array_equal(out.argmax(-1), [[0, 1], [2, 2]])
    assert U.to_categorical(tf.constant([1.0, 0.0])).tolist() == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(ValueError, match="out of range"):
        U.to_categorical([3], num_classes=3)
    with pytest.raises(ValueError, match="non-negative"):
        U.to_categorical([-1, 2])
    with pytest.raises(ValueError, match="integer class labels"):
        U.to_categorical([0.5, 1.0])


def test_pad_sequences():
    seqs = [[1, 2, 3], [4], [], [5, 6, 7, 8]]
    np.testing.assert_array_equal(U.pad_sequences(seqs),
                                  [[0, 1, 2, 3], [0, 0, 0, 4], [0, 0, 0, 0], [5, 6, 7, 8]])
    np.testing.assert_array_equal(U.pad_sequences(seqs, maxlen=2, padding="post",
                                                  truncating="post", value=-1),
                                  [[1, 2], [4, -1], [-1, -1], [5, 6]])
    np.testing.assert_array_equal(U.pad_sequences(seqs, maxlen=2), [[2, 3], [0, 4], [0, 0],
                                                                    [7, 8]])
    vectors = U.pad_sequences([np.ones((2, 3)), np.zeros((1, 3))], dtype="float32")
    assert vectors.shape == (2, 2, 3) and vectors.dtype == np.float32
    with pytest.raises(ValueError, match='Padding type "middle" not understood'):
        U.pad_sequences(seqs, padding="middle")
    with pytest.raises(ValueError, match="non-iterable"):
        U.pad_sequences([[1], 2])
    with pytest.raises(ValueError, match="is different from expected shape"):
        U.pad_sequences([np.ones((2, 3)), np.ones((1, 4))])
    with pytest.raises(ValueError, match="dtype=object"):
        U.pad_sequences([["a"]], value="x")


def test_normalize_and_seeds():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    np.testing.assert_allclose(U.normalize(x), [[0.6, 0.8], [0.0, 0.0]])
    np.testing.assert_allclose(U.normalize(x, axis=0, order=1), [[1.0, 1.0], [0.0, 0.0]])
    U.set_random_seed(3)
    a = (np.random.rand(), tf.random.normal([2]).numpy())
    U.set_random_seed(3)
    assert a[0] == np.random.rand() and (a[1] == tf.random.normal([2]).numpy()).all()
    with pytest.raises(ValueError, match="integer"):
        U.set_random_seed(1.5)


def test_sequences_and_generators_feed_fit():
    class Batches(U.Sequence):
        def __init__(self):
            self.ends, self.seen = 0, []

        def __len__(self):
            return 3

        def __getitem__(self, i):
            self.seen.append(i)
            x = np.full((2, 1), float(i), np.float32)
            return x, 3 * x

        def on_epoch_end(self):
            self.ends += 1

    model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="zeros")])
    model.compile("sgd", "mse")
    batches = Batches()
    tf.random.set_seed(0)
    history = model.fit(batches, epochs=4, verbose=0)
    assert len(history.history["loss"]) == 4 and batches.ends == 4
    orders = [batches.seen[k:k + 3] for k in range(0, 12, 3)]
    assert all(sorted(o) == [0, 1, 2] for o in orders) and len({tuple(o) for o in orders}) > 1
    batches.seen.clear()
    model.fit(batches, epochs=1, shuffle=False, verbose=0)
    assert batches.seen == [0, 1, 2]

    def stream():
        while True:
            yield np.ones((2, 1), np.float32), np.ones((2, 1), np.float32)

    assert len(model.fit(stream(), steps_per_epoch=2, epochs=3, verbose=0).history["loss"]) == 3
    assert model.predict(Batches(), verbose=0).shape == (6, 1)
    with pytest.raises(ValueError, match="`y` and `sample_weight` must not be given"):
        model.fit(Batches(), np.ones(3), verbose=0)


def test_custom_objects_registry_and_scopes():
    class Twice(tf.keras.layers.Layer):
        def call(self, x):
            return 2 * x

    config = tf.keras.layers.serialize(Twice())
    with pytest.raises(ValueError, match="Unknown layer"):
        tf.keras.layers.deserialize(config)
    with U.custom_object_scope({"Twice": Twice}):
        assert type(tf.keras.layers.deserialize(config)) is Twice
    with pytest.raises(ValueError, match="Unknown layer"):
        tf.keras.layers.deserialize(config)

    @U.register_keras_serializable(package="tests")
    class Thrice(tf.keras.layers.Layer):
        def call(self, x):
            return 3 * x

    try:
        assert U.get_registered_name(Thrice) == "tests>Thrice"
        assert type(tf.keras.layers.deserialize(tf.keras.layers.serialize(Thrice()))) is Thrice
        with pytest.raises(ValueError, match="already been registered"):
            U.register_keras_serializable(package="tests", name="Thrice")(Twice)
    finally:
        U.get_custom_objects().pop("tests>Thrice", None)
        U.get_custom_objects().pop("Thrice", None)


def test_device_scopes():
    with tf.device("/CPU:0"), tf.device("cpu:0"), tf.device(None), \
            tf.device("/job:localhost/replica:0/task:0/device:CPU:0"):
        assert float(tf.constant(2.0) * 3) == 6.0
    for name in ("/GPU:0", "TPU:0", "/CPU:1"):
        with pytest.raises(tf.errors.InvalidArgumentError, match="CPU only"):
            with tf.device(name):
                pass
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot parse"):
        with tf.device("gpu zero"):
            pass
    with pytest.raises(TypeError):
        with tf.device(0):
            pass
    tf.config.set_soft_device_placement(True)
    try:
        with tf.device("/GPU:0"):
            assert float(tf.constant(1.0) + 1) == 2.0
    finally:
        tf.config.set_soft_device_placement(False)
    assert tf.config.list_physical_devices("GPU") == []
    assert [d.device_type for d in tf.config.list_logical_devices()] == ["CPU"]
    tf.config.set_visible_devices([], "GPU")
    with pytest.raises(ValueError, match="CPU cannot be hidden"):
        tf.config.set_visible_devices([])
    for gpu in tf.config.experimental.list_physical_devices("GPU"):
        tf.config.experimental.set_memory_growth(gpu, True)  # the usual loop: none here


def test_initializer_names():
    init = tf.random_normal_initializer(stddev=0.5, seed=1)
    w = init((200, 50))
    assert w.dtype == tf.float32 and abs(float(tf.math.reduce_std(w)) - 0.5) < 0.02
    np.testing.assert_array_equal(tf.zeros_initializer()((2,), dtype=tf.int32), [0, 0])
    np.testing.assert_array_equal(tf.ones_initializer()((2,)), [1.0, 1.0])
    np.testing.assert_array_equal(tf.constant_initializer([1, 2, 3, 4])((2, 2)),
                                  [[1.0, 2.0], [3.0, 4.0]])
    u = tf.random_uniform_initializer(-1.0, 1.0, seed=2)((1000,)).numpy()
    assert u.min() >= -1.0 and u.max() < 1.0


def test_constant_initializer_keeps_the_values_dtype():
    # TensorFlow 2.21: tf.constant_initializer([1, 2])(shape=[2]) is int32, of a float
    # list float32, and a dtype given wins; tf_keras serializes it as TensorFlow's Constant
    assert tf.constant_initializer([1, 2])(shape=[2]).dtype == tf.int32
    assert tf.constant_initializer(3)(shape=[2]).dtype == tf.int32
    assert tf.constant_initializer([1.0, 2.0])(shape=[2]).dtype == tf.float32
    assert tf.constant_initializer(3)(shape=[2], dtype=tf.float64).dtype == tf.float64
    assert tf.keras.initializers.Constant(3)(shape=[2]).dtype == tf.float32  # Keras: floatx
    dense = tf.keras.layers.Dense(2, kernel_initializer=tf.constant_initializer(0.5))
    config = dense.get_config()
    assert config["kernel_initializer"]["class_name"] == "Constant"
    copy = tf.keras.layers.Dense.from_config(config)
    copy.build((None, 3))
    assert copy.kernel.dtype == tf.float32
    np.testing.assert_array_equal(copy.kernel.numpy(), np.full((3, 2), 0.5, np.float32))
    with pytest.raises(TypeError, match="shape"):
        tf.constant_initializer([1, 2])(shape=[3])


@pytest.mark.peers
def test_against_tf_keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    real = pytest.importorskip("tensorflow")
    seqs = [[1, 2, 3], [4], [], [5, 6, 7, 8, 9]]
    for kw in ({}, {"maxlen": 3}, {"maxlen": 3, "padding": "post", "truncating": "post",
                                   "value": 7}, {"dtype": "float32", "maxlen": 6}):
        ours, theirs = U.pad_sequences(seqs, **kw), keras.utils.pad_sequences(seqs, **kw)
        np.testing.assert_array_equal(ours, theirs)
        assert ours.dtype == theirs.dtype
    for y, kw in (([0, 2, 1], {}), ([[1], [0]], {"num_classes": 3}),
                  (np.array([[0, 1], [2, 2]]), {})):
        np.testing.assert_array_equal(U.to_categorical(y, **kw), keras.utils.to_categorical(y, **kw))
    x = np.random.default_rng(1).standard_normal((3, 4))
    np.testing.assert_allclose(U.normalize(x, axis=0), keras.utils.normalize(x, axis=0))
    rng = np.random.default_rng(2)
    for a, b, axes in ((rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5)), None),
                       (rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), 1),
                       (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), (2, 2))):
        np.testing.assert_allclose(
            K.batch_dot(tf.constant(a), tf.constant(b), axes=axes).numpy(),
            keras.backend.batch_dot(real.constant(a), real.constant(b), axes=axes).numpy(),
            rtol=1e-10)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((4, 3, 5))
    np.testing.assert_allclose(K.dot(tf.constant(a), tf.constant(b)).numpy(),
                               keras.backend.dot(real.constant(a), real.constant(b)).numpy(),
                               rtol=1e-10)
    t, p = np.array([0.0, 1.0, 1.0], np.float32), np.array([0.1, 0.8, 1.0], np.float32)
    np.testing.assert_allclose(K.binary_crossentropy(tf.constant(t), tf.constant(p)).numpy(),
                               keras.backend.binary_crossentropy(real.constant(t),
                                                                 real.constant(p)).numpy(),
                               rtol=1e-6)
    for name in ("zeros_initializer", "ones_initializer", "random_normal_initializer",
                 "random_uniform_initializer", "constant_initializer"):
        assert getattr(tf, name)().get_config() == getattr(real, name)().get_config(), name
