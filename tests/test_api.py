"""Pins the public names of TensorFlow that tapeflow provides: each exists where TensorFlow
puts it (the top level, tf.math, tf.linalg, tf.nn, tf.autodiff, tf.random, tf.keras)."""

from __future__ import annotations

import pytest

import tapeflow as tf

ELEMENTWISE = """add subtract multiply divide truediv floordiv floormod pow negative abs sign
square sqrt rsqrt reciprocal exp expm1 log log1p sin cos tan asin acos atan atan2 sinh cosh
tanh asinh acosh atanh sigmoid softplus erf floor ceil round maximum minimum squared_difference
clip_by_value where equal not_equal less less_equal greater greater_equal logical_and logical_or
logical_not cast""".split()
REDUCTIONS = """reduce_sum reduce_mean reduce_prod reduce_max reduce_min reduce_logsumexp reduce_std
reduce_variance reduce_all reduce_any argmax argmin cumsum cumprod""".split()
SHAPE = """reshape transpose expand_dims squeeze concat stack unstack split tile broadcast_to pad
gather gather_nd reverse one_hot shape size rank identity stop_gradient zeros ones fill
zeros_like ones_like eye range linspace matmul tensordot einsum""".split()
LINALG = """inv det slogdet solve cholesky triangular_solve norm trace diag_part matrix_transpose
eigh matmul""".split()
NN = """relu relu6 elu selu gelu leaky_relu softmax log_softmax sigmoid tanh softplus bias_add
conv2d max_pool2d avg_pool2d l2_loss sigmoid_cross_entropy_with_logits
softmax_cross_entropy_with_logits sparse_softmax_cross_entropy_with_logits""".split()
CORE = """Tensor Variable TensorShape DType constant convert_to_tensor as_dtype newaxis float16
float32 float64 int8 int16 int32 int64 uint8 bool complex64 complex128 GradientTape
UnconnectedGradients custom_gradient recompute_grad stop_gradient function TensorSpec Graph vmap grad
value_and_grad jvp vjp linearize jacfwd jacrev jacobian hessian hvp""".split()


@pytest.mark.parametrize("name", ELEMENTWISE + REDUCTIONS)
def test_elementwise_and_reductions_at_top_level_and_in_math(name):
    assert callable(getattr(tf, name)) and callable(getattr(tf.math, name))


@pytest.mark.parametrize("name", SHAPE)
def test_shape_ops_at_top_level(name):
    assert callable(getattr(tf, name))


@pytest.mark.parametrize("name", LINALG)
def test_linalg_namespace(name):
    assert callable(getattr(tf.linalg, name))


@pytest.mark.parametrize("name", NN)
def test_nn_namespace(name):
    assert callable(getattr(tf.nn, name))


@pytest.mark.parametrize("name", CORE)
def test_core_names(name):
    assert hasattr(tf, name)


def test_autodiff_and_random_namespaces():
    assert tf.autodiff.ForwardAccumulator is tf.ForwardAccumulator
    assert tf.autodiff.GradientTape is tf.GradientTape
    for name in ("normal", "uniform", "set_seed"):
        assert callable(getattr(tf.random, name))
    assert isinstance(tf.keras.layers.Dense, type)
    assert issubclass(tf.keras.layers.Dense, tf.keras.layers.Layer)


def test_all_lists_only_existing_names():
    for module in (tf, tf.math, tf.linalg, tf.nn):
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert not missing, (module.__name__, missing)
        assert len(module.__all__) == len(set(module.__all__)), module.__name__


def test_each_family_declares_existing_names_in_known_namespaces():
    """A typo in an EXPORTS entry must not drop an op from a namespace silently."""
    seen: dict = {}
    for family in tf.ops.FAMILIES:
        for name, where in family.EXPORTS.items():
            assert callable(getattr(family, name, None)), (family.__name__, name)
            unknown = set(where.split()) - set(tf.ops.NAMESPACES)
            assert not unknown, (family.__name__, name, unknown)
            assert name not in seen, f"{name} is declared by {seen[name]} and {family.__name__}"
            seen[name] = family.__name__
    assert tf.ops.public_ops().keys() == seen.keys()
