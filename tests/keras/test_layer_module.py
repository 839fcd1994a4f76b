"""Keras layers are tf.Modules: a Module holding layers finds their weights."""

from __future__ import annotations

import pytest

import tapeflow as tf


class Holder(tf.Module):
    def __init__(self):
        super().__init__(name="holder")
        self.first = tf.keras.layers.Dense(3, name="first")
        self.second = tf.keras.layers.Dense(2, name="second")

    def __call__(self, x):
        return self.second(self.first(x))


def test_layer_is_a_module():
    layer = tf.keras.layers.Dense(2)
    assert isinstance(layer, tf.Module)
    assert isinstance(tf.keras.Sequential(), tf.Module)


def test_module_finds_layer_variables():
    m = Holder()
    m(tf.ones([1, 4]))
    # TensorFlow's order: attributes sorted by name, each submodule's variables in turn
    assert [v.name for v in m.variables] == ["first/kernel:0", "first/bias:0",
                                             "second/kernel:0", "second/bias:0"]
    assert len(m.trainable_variables) == 4
    assert [s.name for s in m.submodules] == ["first", "second"]


def test_layer_name_is_read_only_property():
    layer = tf.keras.layers.Dense(2, name="d")
    assert layer.name == "d"
    with pytest.raises(AttributeError):
        layer.name = "other"


def test_layer_name_scope_names_variables():
    layer = tf.keras.layers.Dense(2, name="scoped")
    with layer.name_scope:
        v = tf.Variable(1.0, name="extra")
    assert v.name == "scoped/extra:0"
