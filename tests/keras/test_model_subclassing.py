"""keras.Model subclassing: attribute tracking, build on call, weights and their names,
summary() (TensorFlow's table for the same model), the training flag, and the GradientTape
training loop one writes with a tape (compile/fit: tests/keras/test_fit.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

keras = tf.keras


class TwoDense(keras.Model):
    def __init__(self):
        super().__init__(name="my_model")
        self.d1 = keras.layers.Dense(4, activation="relu", name="hidden")
        self.d2 = keras.layers.Dense(2, name="out")
        self.seen_training = []

    def call(self, x, training=False):
        self.seen_training.append(training)
        return self.d2(self.d1(x))


# tf_keras 2.21's summary of the same model after model(tf.ones([3, 5]))
TF_SUMMARY = """\
Model: "my_model"
_________________________________________________________________
 Layer (type)                Output Shape              Param #
=================================================================
 hidden (Dense)              multiple                  24

 out (Dense)                 multiple                  10

=================================================================
Total params: 34 (136.00 Byte)
Trainable params: 34 (136.00 Byte)
Non-trainable params: 0 (0.00 Byte)
_________________________________________________________________"""


def test_layers_tracked_and_built_by_call():
    model = TwoDense()
    assert [l.name for l in model.layers] == ["hidden", "out"]
    assert not model.d1.built
    y = model(tf.ones([3, 5]))
    assert y.shape == (3, 2) and model.built and model.d1.built
    # TensorFlow names the weights under the model's name scope
    assert [v.name for v in model.weights] == ["my_model/hidden/kernel:0", "my_model/hidden/bias:0",
                                               "my_model/out/kernel:0", "my_model/out/bias:0"]
    assert model.trainable_variables == model.weights
    assert model.count_params() == 34
    assert isinstance(model, keras.layers.Layer) and isinstance(model, tf.Module)


def test_summary_matches_tensorflow():
    model = TwoDense()
    model(tf.ones([3, 5]))
    lines = []
    model.summary(print_fn=lines.append)
    assert "\n".join(line.rstrip() for line in lines) == TF_SUMMARY


def test_training_flag_reaches_call():
    model = TwoDense()
    model(tf.ones([1, 5]))
    model(tf.ones([1, 5]), training=True)
    assert model.seen_training == [False, True]


def test_lists_of_layers_and_nested_models_are_tracked():
    class Stack(keras.Model):
        def __init__(self):
            super().__init__(name="stack")
            self.blocks = [keras.layers.Dense(3, name=f"b{i}") for i in range(2)]
            self.inner = TwoDense()

        def call(self, x):
            for block in self.blocks:
                x = block(x)
            return self.inner(x)

    model = Stack()
    model(tf.ones([2, 3]))
    assert [l.name for l in model.layers] == ["b0", "b1", "my_model"]
    assert len(model.trainable_variables) == 8
    assert model.trainable_variables[-1].name == "stack/my_model/out/bias:0"
    # a tf.Module walk finds the same variables
    assert {id(v) for v in tf.Module.variables.fget(model)} == {id(v) for v in model.weights}


def test_explicit_build_and_predict():
    model = TwoDense()
    model.build((None, 5))
    assert model.d1.kernel.shape == (5, 4)
    assert model.predict(tf.ones([2, 5])).shape == (2, 2)


def test_trainable_false_freezes_layers():
    model = TwoDense()
    model(tf.ones([1, 5]))
    model.trainable = False
    assert model.trainable_variables == [] and len(model.non_trainable_variables) == 4


def test_gradient_tape_training_loop_learns():
    tf.random.set_seed(0)
    rng = np.random.default_rng(0)
    x = tf.constant(rng.standard_normal((32, 5)).astype(np.float32))
    y = tf.constant((rng.standard_normal((32, 2)) * 0.1).astype(np.float32) +
                    x.numpy()[:, :2])
    model = TwoDense()
    optimizer = keras.optimizers.Adam(0.05)
    loss_fn = keras.losses.MeanSquaredError()

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    losses = [float(train_step(x, y)) for _ in range(100)]
    assert train_step.experimental_get_tracing_count() == 1
    assert losses[-1] < losses[0] / 5


def test_compile_and_fit_train_a_subclassed_model():
    model = TwoDense()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss="mse")
    x = np.random.default_rng(0).standard_normal((32, 5)).astype(np.float32)
    history = model.fit(x, np.tile(x[:, :1], (1, 2)), epochs=20, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0] / 5


def test_positional_arguments_are_rejected():
    with pytest.raises(TypeError, match="positional"):
        TwoDense.__bases__[0].__init__(TwoDense(), "name")
