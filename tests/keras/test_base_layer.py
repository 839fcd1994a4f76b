"""What every layer inherits from the base `Layer` class: weights created on the first
call from the input shape, snake_case unique default names, the trainable flag (also
on nested layers), casting inputs to the layer's dtype, tapes through layer calls,
custom layers tracking their sublayers and variables, add_weight, get_weights and
set_weights, count_params; and the errors of unknown keyword arguments, counting an
unbuilt layer's parameters and setting weights of the wrong number or shape.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers


# ================================================================ layer semantics
def test_layers_build_on_first_call_from_the_input_shape():
    conv = layers.Conv2D(4, 3)
    assert not conv.built and conv.kernel is None and conv.weights == []
    conv(tf.zeros([1, 5, 5, 3]))
    assert conv.built and conv.kernel.shape == (3, 3, 3, 4)
    assert [v.name for v in conv.weights] == [f"{conv.name}/kernel:0", f"{conv.name}/bias:0"]
    assert conv.trainable_variables == conv.weights == conv.variables == [conv.kernel, conv.bias]
    kernel = conv.kernel
    conv(tf.zeros([2, 9, 9, 3]))  # another spatial size: same weights
    assert conv.kernel is kernel


def test_default_names_are_keras_snake_case_and_unique():
    a, b = layers.Dense(1), layers.Dense(1)
    assert a.name.startswith("dense") and b.name.startswith("dense_") and a.name != b.name
    assert layers.MaxPooling2D().name.startswith("max_pooling2d")
    assert layers.Conv2D(1, 1).name.startswith("conv2d")
    assert keras.Sequential().name.startswith("sequential")


def test_trainable_false_exposes_no_trainable_variables():
    conv = layers.Conv2D(4, 3, trainable=False)
    conv(tf.zeros([1, 5, 5, 2]))
    assert conv.trainable_variables == [] and conv.trainable_weights == []
    assert conv.non_trainable_weights == [conv.kernel, conv.bias] == conv.weights
    dense = layers.Dense(2)
    dense.build((None, 3))
    dense.trainable = False
    assert dense.trainable_variables == [] and len(dense.non_trainable_variables) == 2
    dense.trainable = True
    assert dense.trainable_variables == [dense.kernel, dense.bias]


def test_float_inputs_are_cast_to_the_layer_dtype():
    dense = layers.Dense(2)
    assert dense(np.ones((1, 3))).dtype == tf.float32          # float64 array -> float32
    assert dense(tf.ones([1, 3], tf.int32)).dtype == tf.float32  # Dense casts any input
    d64 = layers.Dense(2, dtype="float64")
    out = d64(tf.ones([1, 3]))
    assert out.dtype == tf.float64 and d64.kernel.dtype == tf.float64 and d64.dtype == "float64"
    conv = layers.Conv2D(1, 1, dtype=tf.float64)
    assert conv(tf.ones([1, 2, 2, 1])).dtype == tf.float64
    assert layers.MaxPooling2D()(tf.ones([1, 2, 2, 1], tf.int32)).dtype == tf.int32


def test_variables_as_inputs_and_tape_through_layers():
    dense = layers.Dense(1, kernel_initializer="ones")
    v = tf.Variable([[1., 2.]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(dense(v))
    np.testing.assert_allclose(tape.gradient(y, v), [[1., 1.]])


def test_custom_layer_tracks_sublayers_and_variables():
    class Block(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = layers.Dense(3)
            self.scale = tf.Variable(2., name="scale")

        def call(self, inputs, training=None):
            out = self.inner(inputs) * self.scale
            return out if not training else out * 0

    block = Block()
    y = block(tf.ones([2, 4]))
    assert y.shape == (2, 3)
    names = {id(v) for v in block.trainable_variables}
    assert names == {id(block.scale), id(block.inner.kernel), id(block.inner.bias)}
    block.trainable = False
    assert block.trainable_variables == [] and not block.inner.trainable
    assert len(block.non_trainable_variables) == 3
    model = keras.Sequential([block])
    np.testing.assert_array_equal(model(tf.ones([2, 4]), training=True), np.zeros((2, 3)))


def test_add_weight_defaults_and_initial_weights_kwarg():
    layer = layers.Layer(name="holder")
    w = layer.add_weight("w", shape=(3, 2))
    assert abs(w.numpy()).max() <= np.sqrt(6 / 5) and w.dtype == tf.float32  # glorot_uniform
    assert layer.add_weight("i", shape=(2,), dtype="int32").numpy().tolist() == [0, 0]
    k, b = np.full((2, 3), 0.5, np.float32), np.arange(3, dtype=np.float32)
    dense = layers.Dense(3, weights=[k, b])
    np.testing.assert_allclose(dense(np.ones((1, 2), np.float32)), [[1., 2., 3.]])


def test_get_and_set_weights():
    dense = layers.Dense(2)
    dense.build((None, 3))
    values = [np.ones((3, 2)), np.array([1., 2.])]
    dense.set_weights(values)
    assert [w.dtype for w in dense.get_weights()] == [np.float32, np.float32]
    np.testing.assert_array_equal(dense.get_weights()[1], [1., 2.])
    assert dense.count_params() == 8


# ================================================================ errors
@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.Dense(2, foo=1), TypeError, "Keyword argument not understood: 'foo'"),
    (lambda: layers.Dense(1).count_params(), ValueError, "isn't built"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_set_weights_errors():
    dense = layers.Dense(2)
    dense.build((None, 3))
    with pytest.raises(ValueError, match="weight list of length 1, but the layer was expecting 2"):
        dense.set_weights([np.ones((3, 2))])
    with pytest.raises(ValueError, match=r"weight shape \(3, 2\) is not compatible with provided "
                                         r"weight shape \(2, 3\)"):
        dense.set_weights([np.ones((2, 3)), np.ones(2)])
