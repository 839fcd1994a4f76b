"""Tensors a trace made, kept by the user past the trace, are out of scope (as TensorFlow):
every use raises InaccessibleTensorError; recorders around a first call still differentiate
it exactly (NOTE(out-of-scope) in tensor.py)."""

import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InaccessibleTensorError


class Keeper:
    """Stores an intermediate on itself inside a traced method (the usual way to leak)."""

    def __init__(self):
        self.hidden = None
        self.step = tf.function(self._step)  # one traced function per object

    def _step(self, x):
        self.hidden = tf.sin(x) * 2.
        return self.hidden + 1.

    def __call__(self, x):
        return self.step(x)


def _leaked():
    k = Keeper()
    out = k(tf.constant([0.5, 1.0]))
    return k, out


def _watch(t):
    with tf.GradientTape() as tape:
        tape.watch(t)


USES = {
    "op": lambda t: t + 1.,
    "reflected op": lambda t: 1. + t,
    "public op": lambda t: tf.sin(t),
    "slice": lambda t: t[0],
    "numpy": lambda t: t.numpy(),
    "float": lambda t: float(tf.reduce_sum(t)),
    "np.asarray": lambda t: np.asarray(t),
    "format": lambda t: f"{t:.3f}",
    "equal": lambda t: t == 1.,
    "not equal": lambda t: t != 1.,
    "convert_to_tensor": lambda t: tf.convert_to_tensor(t),
    "constant": lambda t: tf.constant(t),
    "Variable": lambda t: tf.Variable(t),
    "concat": lambda t: tf.concat([t, t], 0),
    "assign": lambda t: tf.Variable([0., 0.]).assign(t),
    "traced call": lambda t: tf.function(lambda a: a * 2.)(t),
    "tape.watch": lambda t: _watch(t),
    "pickle": lambda t: __import__("pickle").dumps(t),
    "vmap": lambda t: tf.vmap(lambda a: a * 2.)(t),
    "grad": lambda t: tf.grad(lambda a: tf.reduce_sum(a * a))(t),
}


@pytest.mark.parametrize("use", sorted(USES))
def test_every_use_of_a_kept_tensor_raises(use):
    k, _ = _leaked()
    with pytest.raises(InaccessibleTensorError, match=r"tracing tapeflow.function '_step'"):
        USES[use](k.hidden)


def test_the_returned_tensor_is_the_callers_and_shape_and_dtype_stay_readable():
    k, out = _leaked()
    np.testing.assert_allclose(out.numpy(), np.sin([0.5, 1.0]) * 2. + 1., rtol=1e-6)
    assert k.hidden.shape == (2,) and k.hidden.dtype == tf.float32
    assert "out of scope" in repr(k.hidden) and "_step" in str(k.hidden)


def test_a_kept_tensor_would_otherwise_hold_the_first_calls_value():
    """The wrong value this guards against: after a replay at another input, the kept
    tensor still holds the first call's value."""
    k = Keeper()
    k(tf.constant([0.5, 1.0]))
    first = k.hidden
    k(tf.constant([2.0, 3.0]))          # replayed: the body does not run
    assert k.hidden is first
    with pytest.raises(InaccessibleTensorError):
        first.numpy()


def test_kept_in_a_global_list_and_in_a_closure():
    kept = []

    @tf.function
    def f(x):
        y = x * 3.
        kept.append(y)
        return tf.reduce_sum(y)

    assert float(f(tf.constant([1., 2.]))) == 9.
    with pytest.raises(InaccessibleTensorError):
        kept[0] * 2.


def test_a_tensor_kept_by_one_trace_cannot_enter_a_later_trace():
    store = {}

    @tf.function
    def f(x):
        if "y" not in store:
            store["y"] = x * 2.
        return x + store["y"]

    f(tf.constant([1.]))
    with pytest.raises(InaccessibleTensorError):
        f(tf.constant([1., 2.]))          # a new shape: a new trace reads the kept tensor


def test_a_nested_functions_intermediate_is_out_of_scope_in_the_outer_trace():
    box = []

    @tf.function
    def inner(x):
        box.append(x * x)
        return x + 1.

    @tf.function
    def outer(x):
        y = inner(x)
        return y + box[-1]

    with pytest.raises(InaccessibleTensorError):
        outer(tf.constant(2.))


def test_what_a_failed_trace_made_is_out_of_scope_too():
    kept = []

    @tf.function
    def f(x):
        kept.append(x * 2.)
        raise KeyError("user error")

    with pytest.raises(KeyError):
        f(tf.constant(1.))
    with pytest.raises(InaccessibleTensorError):
        kept[0].numpy()


def test_the_functions_own_inputs_and_outputs_and_variables_stay_usable():
    v_box = []

    @tf.function
    def f(x):
        if not v_box:
            v_box.append(tf.Variable(tf.ones([2]) * 3.))
        return x, x * v_box[0]

    x = tf.constant([1., 2.])
    a, b = f(x)
    assert a is not x
    np.testing.assert_array_equal(a.numpy(), [1., 2.])
    np.testing.assert_array_equal(b.numpy(), [3., 6.])
    np.testing.assert_array_equal(x.numpy(), [1., 2.])
    np.testing.assert_array_equal(v_box[0].numpy(), [3., 3.])
    v_box[0].assign_add([1., 1.])
    np.testing.assert_array_equal(f(x)[1].numpy(), [4., 8.])


def _fresh(fn):
    """A new traced function of `fn` (so the call under test is its first: it traces)."""
    return tf.function(lambda x: fn(x))


def _body(x):
    return tf.reduce_sum(tf.sin(x) * x * x)


X = np.array([0.3, -1.2, 2.0])


def _eager_grad(x):
    return np.cos(x) * x * x + 2. * x * np.sin(x)


def test_a_tape_around_the_first_call_differentiates_it():
    x = tf.constant(X)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _fresh(_body)(x)
        z = tf.sin(x) * _fresh(tf.exp)(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _eager_grad(X), rtol=1e-12)
    # Again, after the trace's tensors went out of scope (the tape still holds them).
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), _eager_grad(X), rtol=1e-12)
    jac = tape.jacobian(z, x)
    np.testing.assert_allclose(np.diag(jac.numpy()), np.cos(X) * np.exp(X) + np.sin(X) * np.exp(X),
                               rtol=1e-12)


def test_looped_and_batch_jacobians_around_a_first_call():
    x = tf.constant(np.arange(6.).reshape(2, 3) / 5.)
    f = _fresh(lambda a: tf.tanh(a) * a)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    expect = np.tanh(x.numpy()) + x.numpy() / np.cosh(x.numpy()) ** 2
    loop = tape.jacobian(y, x, experimental_use_pfor=False).numpy().reshape(6, 6)
    np.testing.assert_allclose(np.diag(loop), expect.ravel(), rtol=1e-12)
    bj = tape.batch_jacobian(y, x).numpy()
    np.testing.assert_allclose(np.stack([np.diag(b) for b in bj]), expect, rtol=1e-12)


def test_second_derivatives_around_a_first_call():
    x = tf.constant(1.3, tf.float64)
    f = _fresh(lambda a: a ** 4.)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    assert abs(float(outer.gradient(dy, x)) - 12. * 1.3 ** 2) < 1e-12


def test_forward_over_backward_around_a_first_call():
    x = tf.constant(X)
    v = tf.constant([1., 0.5, -2.], tf.float64)
    f = _fresh(_body)
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        g = tape.gradient(y, x)
    h = tf.hessian(_body)(x).numpy()
    np.testing.assert_allclose(acc.jvp(g).numpy(), h @ v.numpy(), rtol=1e-10)


def test_an_accumulator_lookup_of_a_kept_tensor_raises():
    k = Keeper()
    x = tf.constant([0.5, 1.0])
    with tf.autodiff.ForwardAccumulator(x, tf.ones([2])) as acc:
        out = k(x)
    np.testing.assert_allclose(acc.jvp(out).numpy(), 2. * np.cos([0.5, 1.0]), rtol=1e-6)
    with pytest.raises(InaccessibleTensorError):
        acc.jvp(k.hidden)


def test_a_tape_refuses_a_kept_tensor_as_target_or_source():
    k = Keeper()
    x = tf.constant([0.5, 1.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        out = k(x)
    with pytest.raises(InaccessibleTensorError):
        tape.gradient(k.hidden, x)
    with pytest.raises(InaccessibleTensorError):
        tape.gradient(out, k.hidden)


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev", "hessian", "vmap",
                                       "linearize", "vjp"])
def test_transforms_of_a_function_on_its_first_call(transform):
    x = tf.constant(X)
    f = _fresh(_body)
    if transform == "grad":
        got, want = tf.grad(f)(x), _eager_grad(X)
    elif transform == "jacfwd":
        got, want = tf.jacfwd(f)(x), _eager_grad(X)
    elif transform == "jacrev":
        got, want = tf.jacrev(f)(x), _eager_grad(X)
    elif transform == "hessian":
        got, want = tf.hessian(f)(x), tf.hessian(_body)(x).numpy()
    elif transform == "vmap":
        g = _fresh(lambda a: tf.sin(a) * a)
        got, want = tf.vmap(g)(tf.constant(X.reshape(3, 1))), (np.sin(X) * X).reshape(3, 1)
    elif transform == "linearize":
        _, f_jvp = tf.linearize(f, x)
        got, want = f_jvp(tf.constant([1., 0., 0.], tf.float64)), _eager_grad(X)[0]
    else:
        _, f_vjp = tf.vjp(f, x)
        (got,) = f_vjp(tf.constant(1., tf.float64))
        want = _eager_grad(X)
    np.testing.assert_allclose(np.asarray(got.numpy()), want, rtol=1e-10)


def test_a_custom_gradient_replayed_under_a_tape_after_its_trace():
    @tf.custom_gradient
    def clip_grad(x):
        def grad_fn(dy):
            scale = float(tf.reduce_max(tf.abs(dy)))  # a value read: the traced grad_fn guards it
            return dy / max(scale, 1.)
        return tf.identity(x), grad_fn

    f = tf.function(lambda x: clip_grad(x) * 3.)
    x = tf.constant([1., 2.])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1., 1.])
    with tf.GradientTape() as tape:    # a replay: the fallback reads the traced call's tensors
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [1., 1.])


def test_the_exemption_is_per_thread():
    """A backward pass on one thread does not open kept tensors to another thread."""
    k, _ = _leaked()
    x = tf.constant(X)
    f = _fresh(_body)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    errors = []
    started, release = threading.Event(), threading.Event()

    @tf.custom_gradient
    def pause(a):
        def grad_fn(dy):
            started.set()
            release.wait(10)
            return dy
        return tf.identity(a), grad_fn

    with tf.GradientTape() as tape2:
        tape2.watch(x)
        z = pause(y)

    def other():
        started.wait(10)
        try:
            k.hidden.numpy()
        except InaccessibleTensorError:
            errors.append("raised")
        finally:
            release.set()

    t = threading.Thread(target=other)
    t.start()
    tape2.gradient(z, x)
    t.join()
    assert errors == ["raised"]


def test_the_leaked_tensor_of_tensorflows_guide():
    # The tf.function guide's "leaking tensors": `.numpy()` of the leaked tensor raises
    # AttributeError, and using it in another function raises TypeError.
    leaked = []

    @tf.function
    def leaky_function(a):
        leaked.append(a + 1)
        return a + 2

    assert leaky_function(tf.constant(1)).numpy() == 3
    x = leaked[0]
    with pytest.raises(AttributeError, match="made while tracing tapeflow.function"):
        x.numpy()

    @tf.function
    def captures_leaked_tensor(b):
        b += x
        return b

    with pytest.raises(TypeError, match="made while tracing tapeflow.function"):
        captures_leaked_tensor(tf.constant(2))
    # an op that converts its arguments keeps the error's kind and message
    with pytest.raises(tf.errors.InaccessibleTensorError, match="'leaky_function'"):
        tf.sin(x)
