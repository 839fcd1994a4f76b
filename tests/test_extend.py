"""A user's primitive from tapeflow.extend with an impl, a JVP and a VJP only: the
catalog's defaults carry it through every interpreter (a tape, an accumulator, vmap by a
loop, jacobian_sparsity's dense pattern, tracing, and jit_compile=True by a host
callback), and a rule it lacks is an error naming the primitive and the rule."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import extend

# softsign-like: f(x) = x / (1 + x^2), f'(x) = (1 - x^2) / (1 + x^2)^2
_impl = lambda x: x / (1.0 + x * x)  # noqa: E731


def _deriv(x):
    d = 1.0 + x * x
    return (1.0 - x * x) / (d * d)


bump_p = extend.define(
    extend.Primitive("test_extend_bump", _impl),
    extend.per_input(jvp=(lambda t, ans, x: t * _deriv(x),),
                     vjp=(lambda g, ans, x: g * _deriv(x),), reads=("x",)))
bare_p = extend.Primitive("test_extend_bare", lambda x: 2.0 * x)


def bump(x):
    return extend.bind(bump_p, extend.as_tensor(x, "bump", "x"))


X = np.array([0.3, -1.2, 2.0])


def _np_deriv(x):
    return (1 - x * x) / (1 + x * x) ** 2


def test_a_tape_and_an_accumulator_differentiate_it():
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(bump(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _np_deriv(X), rtol=1e-12)
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        z = bump(x)
    np.testing.assert_allclose(acc.jvp(z).numpy(), _np_deriv(X), rtol=1e-12)
    tf.testing.check_grads(bump, [X], order=2)


def test_vmap_runs_it_once_per_example_with_a_warning():
    xs = tf.constant(np.stack([X, 2 * X]))
    with pytest.warns(UserWarning, match="test_extend_bump.*no batching rule"):
        out = tf.vmap(bump)(xs)
    np.testing.assert_allclose(out.numpy(), _impl(xs.numpy()), rtol=1e-12)
    jac = tf.jacrev(lambda v: bump(v))(tf.constant(X))  # a vmap of its VJP
    np.testing.assert_allclose(jac.numpy(), np.diag(_np_deriv(X)), rtol=1e-12)


def test_jacobian_sparsity_takes_it_as_dense():
    pattern = tf.jacobian_sparsity(lambda v: bump(v) * 2.0, tf.constant(X))
    assert np.asarray(pattern.todense() if hasattr(pattern, "todense") else pattern).all()


def test_a_traced_function_replays_it():
    f = tf.function(lambda v: tf.reduce_sum(bump(v) * v))
    for x in (X, 3 * X):
        want = np.sum(_impl(x) * x)
        np.testing.assert_allclose(f(tf.constant(x)).numpy(), want, rtol=1e-12)
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs JAX (the xla extra)")
def test_jit_compile_calls_its_impl_back_on_the_host():
    @tf.function(jit_compile=True)
    def grad(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.reduce_sum(tf.sin(bump(v)))
        return tape.gradient(y, v)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-time warning of the host callback
        for x in (X, -X):
            got = grad(tf.constant(x)).numpy()
            np.testing.assert_allclose(got, np.cos(_impl(x)) * _np_deriv(x), rtol=1e-12)
    assert grad.get_concrete_function(tf.constant(X)).executable.inner.compiled


def test_a_missing_rule_is_an_error_naming_the_primitive_and_the_rule():
    x = tf.constant(X)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = extend.bind(bare_p, x)
    with pytest.raises(NotImplementedError, match="test_extend_bare.*vjp"):
        tape.gradient(y, x)
    with pytest.raises(NotImplementedError, match="test_extend_bare.*jvp"):
        with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)):
            extend.bind(bare_p, x)


def test_define_rejects_unknown_kinds_and_a_kind_given_twice():
    p = extend.Primitive("test_extend_defined_twice", np.negative)
    with pytest.raises(TypeError, match="test_extend_defined_twice.*unknown rule kind 'jpv'"):
        extend.define(p, jpv=lambda *a: a)
    extend.define(p, lower=lambda jax, x: -x)
    with pytest.raises(ValueError, match="test_extend_defined_twice.*`lower` rule is given twice"):
        extend.define(p, lower=lambda jax, x: -x)
