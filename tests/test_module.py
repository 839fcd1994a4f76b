"""tf.Module and tf.name_scope, against the results TensorFlow's guides print (the
introduction to modules, layers and models)."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


class SimpleModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.a_variable = tf.Variable(5.0, name="train_me")
        self.non_trainable_variable = tf.Variable(5.0, trainable=False, name="do_not_train_me")

    def __call__(self, x):
        return self.a_variable * x + self.non_trainable_variable


class Dense(tf.Module):
    def __init__(self, in_features, out_features, name=None):
        super().__init__(name=name)
        self.w = tf.Variable(tf.random.normal([in_features, out_features]), name="w")
        self.b = tf.Variable(tf.zeros([out_features]), name="b")

    def __call__(self, x):
        return tf.nn.relu(tf.matmul(x, self.w) + self.b)


class SequentialModule(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.dense_1 = Dense(in_features=3, out_features=3)
        self.dense_2 = Dense(in_features=3, out_features=2)

    def __call__(self, x):
        return self.dense_2(self.dense_1(x))


def test_the_guides_simple_module():
    m = SimpleModule(name="simple")
    assert float(m(tf.constant(5.0))) == 30.0
    assert [v.name for v in m.trainable_variables] == ["train_me:0"]
    assert [v.name for v in m.variables] == ["train_me:0", "do_not_train_me:0"]
    assert [v.name for v in m.non_trainable_variables] == ["do_not_train_me:0"]
    assert m.name == "simple" and m.submodules == ()


def test_the_guides_sequential_module_and_its_gradient():
    model = SequentialModule(name="the_model")
    assert [type(s).__name__ for s in model.submodules] == ["Dense", "Dense"]
    assert [(v.name, tuple(v.shape)) for v in model.variables] == [
        ("b:0", (3,)), ("w:0", (3, 3)), ("b:0", (2,)), ("w:0", (3, 2))]
    x = tf.constant([[2.0, 2.0, 2.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    assert len(grads) == 4 and all(g is not None for g in grads)


def test_default_names_scopes_and_with_name_scope():
    class MyModule(tf.Module):
        @tf.Module.with_name_scope
        def __call__(self, x):
            if not hasattr(self, "w"):
                self.w = tf.Variable(tf.random.normal([x.shape[1], 3]))
            return tf.matmul(x, self.w)

    mod = MyModule()
    assert mod.name == "my_module"
    mod(tf.ones([1, 2]))
    assert mod.w.name == "my_module/Variable:0"
    with tf.name_scope("outer"):
        inner = MyModule(name="inner")
        with tf.name_scope("sub") as scope:
            assert scope == "outer/sub/"
    assert inner.name_scope.name == "outer/inner/"
    inner(tf.ones([1, 2]))
    assert inner.w.name == "outer/inner/Variable:0"
    with tf.name_scope("a/"):  # absolute
        with tf.name_scope("b") as scope:
            assert scope == "a/b/"
    assert tf.Variable(1.0, name="v").name == "v:0"  # scopes are left on exit


def test_nested_containers_cycles_and_sharing():
    class Holder(tf.Module):
        pass

    h = Holder()
    shared = tf.Variable(1.0, name="shared")
    h.items = {"z": [shared, tf.Variable(2.0, name="in_list")], "a": (Dense(2, 2, name="d"),)}
    h.again = shared  # the same variable twice: listed once
    h.me = h          # a cycle: not walked again
    names = [v.name for v in h.variables]
    assert names == ["shared:0", "in_list:0", "b:0", "w:0"]  # own attributes, then submodules
    assert [m.name for m in h.submodules] == ["d"]
    paths = [p for p, _ in h._flatten(predicate=lambda v: isinstance(v, tf.Variable),
                                      with_path=True)]
    assert ("again",) in paths and ("items", "z", 1) in paths


def test_bad_names():
    with pytest.raises(ValueError, match="valid module name"):
        tf.Module(name="has space")
    with pytest.raises(TypeError, match="must be a string"):
        tf.name_scope(3)
    with pytest.raises(ValueError, match="not a valid scope name"):
        tf.name_scope("-bad")


def test_a_traced_call_of_a_module():
    model = SequentialModule()
    call = tf.function(model.__call__)
    x = tf.constant(np.ones((4, 3), np.float32))
    np.testing.assert_allclose(call(x).numpy(), model(x).numpy())
    model.dense_1.w.assign(tf.zeros([3, 3]))  # variables are read at each replay
    np.testing.assert_allclose(call(x).numpy(), model(x).numpy())
