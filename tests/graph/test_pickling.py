"""Pickling traced functions (how tapeflow.dask sends them to workers): a `tf.function`
pickles with what defines it and none of its traces, and traces again where it is loaded;
a traced graph (ConcreteFunction) refuses with a message saying to pickle the function;
a primitive loads by name as the registered one."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import _registered, registry

W = np.array([[1., -2.], [0.5, 3.], [2., 1.]])


@tf.function
def model(x):
    return tf.tanh(tf.matmul(x, W))


@tf.function
def model_jacobian(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = model(x)
    return tape.batch_jacobian(y, x)


class Layer:
    @tf.function
    def call(self, x):
        return model(x)

    __call__ = call


def test_a_module_level_function_pickles_by_name_as_python_functions_do():
    x = np.array([[0.1, 0.2, 0.3], [1., -1., 0.5]])
    want = model_jacobian(x).numpy()
    assert pickle.loads(pickle.dumps(model_jacobian)) is model_jacobian
    assert pickle.loads(pickle.dumps(Layer.call)) is Layer.call
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(Layer()))(x).numpy(), model(x))
    np.testing.assert_array_equal(model_jacobian(x).numpy(), want)


def test_a_local_function_pickles_without_its_traces_and_retraces_on_load():
    cloudpickle = pytest.importorskip("cloudpickle")

    @tf.function
    def local_jacobian(x):
        return tf.vmap(tf.jacfwd(lambda e: model(e[None])[0]))(x)

    x = np.array([[0.1, 0.2, 0.3], [1., -1., 0.5]])
    want = local_jacobian(x).numpy()
    np.testing.assert_allclose(want, model_jacobian(x).numpy(), rtol=1e-12)
    copy = cloudpickle.loads(cloudpickle.dumps(local_jacobian))
    assert copy is not local_jacobian and copy.experimental_get_tracing_count() == 0
    np.testing.assert_array_equal(copy(x).numpy(), want)
    np.testing.assert_array_equal(copy(x + 1.).numpy(), local_jacobian(x + 1.).numpy())
    assert copy.experimental_get_tracing_count() == 1  # one trace, then replays
    assert copy.__name__ == "local_jacobian"


def test_closures_over_tensors_and_variables_pickle_by_value():
    cloudpickle = pytest.importorskip("cloudpickle")
    w = tf.constant([[1., 2.], [3., 4.]])
    v = tf.Variable([0.5, -1.])

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def jac(x):
        return tf.vmap(tf.jacrev(lambda e: tf.sin(tf.linalg.matmul(w, e[:, None])[:, 0]) * v))(x)

    x = tf.constant([[0.1, 0.2], [0.3, 0.4]])
    want = jac(x).numpy()
    copy = cloudpickle.loads(cloudpickle.dumps(jac))
    np.testing.assert_array_equal(copy(x).numpy(), want)
    assert copy._input_signature[0].shape.as_list() == [None, 2]
    with pytest.raises(TypeError, match="input_signature"):
        copy(tf.constant([[1., 2., 3.]]))


def test_a_concrete_function_says_to_pickle_the_function():
    concrete = model.get_concrete_function(np.ones((1, 3)))
    with pytest.raises(TypeError, match="pickle the tf.function it came from"):
        pickle.dumps(concrete)


def test_a_primitive_loads_by_name_as_the_registered_one():
    sin = registry()["sin"]
    assert pickle.loads(pickle.dumps(sin)) is sin
    with pytest.raises(LookupError, match="'no_such_primitive' is not defined in this process"):
        _registered("no_such_primitive")
