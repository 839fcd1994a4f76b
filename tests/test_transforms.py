"""The JAX-style functional transforms (grad, value_and_grad, vjp,
jvp, linearize, jacfwd, jacrev, jacobian, hessian, hvp) and their compositions.

Results are checked against analytic derivatives, finite differences and Python loops.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
import tapeflow.transforms as transforms


def _np(x):
    return np.asarray(x)


def _rng():
    return np.random.default_rng(2024)


def _fd_jacobian(f, x, eps=1e-6):
    """Central-difference Jacobian of a NumPy-in, NumPy-out function: out.shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(*x.shape):
        d = np.zeros_like(x)
        d[idx] = eps
        jac[(Ellipsis,) + idx] = (np.asarray(f(x + d)) - np.asarray(f(x - d))) / (2 * eps)
    return jac


def _numpy_fn(f):
    return lambda z: _np(f(tf.constant(z)))


# R^3 -> R^5 and R^5 -> R^3 test functions (float64).
def f_3_to_5(x):
    return tf.stack([x[0] * x[1], tf.sin(x[2]), tf.exp(x[0]) * x[2],
                     tf.tanh(x[1] + x[2]), x[0] ** 3.0])


_A = _rng().normal(size=(5, 3))


def f_5_to_3(x):
    return tf.sigmoid(tf.reshape(tf.matmul(tf.reshape(x * x, (1, 5)), tf.constant(_A)), (3,))) \
        + tf.reduce_sum(tf.sin(x))


def scalar_fn(x):
    """A non-quadratic scalar function R^4 -> R with a dense Hessian."""
    return tf.reduce_sum(x ** 3.0) * x[0] + tf.reduce_sum(tf.sin(x)) * tf.reduce_sum(x * x)


X3 = np.array([0.3, -0.7, 1.1])
X4 = np.array([0.5, -1.2, 0.8, 2.0])
X5 = np.array([0.4, -0.3, 0.9, 1.5, -1.1])


# ============================================================================ grad
def test_grad_of_sum_of_cubes_is_three_x_squared():
    x = np.array([1.0, -2.0, 3.0])
    np.testing.assert_allclose(tf.grad(lambda a: tf.reduce_sum(a ** 3.0))(x), 3 * x ** 2)


def test_value_and_grad_returns_value_and_gradient():
    x = np.array([1.0, -2.0, 3.0])
    v, g = tf.value_and_grad(lambda a: tf.reduce_sum(tf.sin(a) * a))(x)
    np.testing.assert_allclose(v, np.sum(np.sin(x) * x), rtol=1e-15)
    np.testing.assert_allclose(g, np.sin(x) + x * np.cos(x), rtol=1e-15)


def test_grad_argnums_int_selects_argument():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    g = tf.grad(lambda u, v: tf.reduce_sum(u * v ** 2.0), argnums=1)(a, b)
    np.testing.assert_allclose(g, 2 * a * b)


def test_grad_argnums_negative_counts_from_the_end():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    g = tf.grad(lambda u, v: tf.reduce_sum(u * v ** 2.0), argnums=-1)(a, b)
    np.testing.assert_allclose(g, 2 * a * b)


def test_grad_argnums_tuple_returns_tuple_of_gradients():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    ga, gb = tf.grad(lambda u, v: tf.reduce_sum(u * v ** 2.0), argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, b ** 2)
    np.testing.assert_allclose(gb, 2 * a * b)


def test_grad_argnums_tuple_of_one_still_returns_a_tuple():
    g = tf.grad(lambda u: tf.reduce_sum(u * u), argnums=(0,))(np.array([1.0, 2.0]))
    assert isinstance(g, tuple) and len(g) == 1
    np.testing.assert_allclose(g[0], [2.0, 4.0])


def test_grad_unconnected_argument_gets_zeros():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    _, gb = tf.grad(lambda u, v: tf.reduce_sum(u * u), argnums=(0, 1))(a, b)
    np.testing.assert_array_equal(gb, [0.0, 0.0])


def test_grad_nested_dict_argument_keeps_structure():
    w0, w1 = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    params = {"w": [w0, w1], "b": np.float64(3.0)}
    g = tf.grad(lambda p: tf.reduce_sum(p["w"][0] * p["w"][1]) + p["b"] ** 2.0)(params)
    assert set(g) == {"w", "b"} and isinstance(g["w"], list) and len(g["w"]) == 2
    np.testing.assert_allclose(g["w"][0], w1)
    np.testing.assert_allclose(g["w"][1], w0)
    np.testing.assert_allclose(g["b"], 6.0)


def test_grad_nested_tuple_argument_keeps_structure():
    x = np.array([1.0, 2.0])
    g = tf.grad(lambda p: tf.reduce_sum(p[0] * p[1][0] ** 2.0))((x, [3 * x]))
    assert isinstance(g, tuple) and isinstance(g[1], list)
    np.testing.assert_allclose(g[0], 9 * x ** 2)
    np.testing.assert_allclose(g[1][0], 2 * x * 3 * x)


def test_grad_has_aux_returns_gradient_and_aux():
    x = np.array([1.0, 2.0, 3.0])
    g, aux = tf.grad(lambda a: (tf.reduce_sum(a * a), {"scaled": a * 10.0}), has_aux=True)(x)
    np.testing.assert_allclose(g, 2 * x)
    np.testing.assert_allclose(aux["scaled"], 10 * x)


def test_value_and_grad_has_aux_returns_value_aux_pair():
    x = np.array([1.0, 2.0, 3.0])
    (v, aux), g = tf.value_and_grad(lambda a: (tf.reduce_sum(a * a), a[0]), has_aux=True)(x)
    np.testing.assert_allclose(v, 14.0)
    np.testing.assert_allclose(aux, 1.0)
    np.testing.assert_allclose(g, 2 * x)


def test_grad_has_aux_function_not_returning_pair_raises_type_error():
    with pytest.raises(TypeError, match="has_aux"):
        tf.grad(lambda a: tf.reduce_sum(a), has_aux=True)(np.array([1.0, 2.0]))


def test_grad_python_scalar_argument_is_float32():
    g = tf.grad(lambda a: a ** 3.0)(2.0)
    assert g.dtype == tf.float32
    np.testing.assert_allclose(g, 12.0)


def test_grad_numpy_float64_argument_stays_float64():
    g = tf.grad(lambda a: tf.reduce_sum(a ** 3.0))(np.array([1.0, 2.0]))
    assert g.dtype == tf.float64
    g0 = tf.grad(lambda a: a ** 3.0)(np.float64(2.0))
    assert g0.dtype == tf.float64


def test_grad_numpy_float32_argument_stays_float32():
    g = tf.grad(lambda a: tf.reduce_sum(a ** 3.0))(np.array([1.0, 2.0], dtype=np.float32))
    assert g.dtype == tf.float32
    np.testing.assert_allclose(g, [3.0, 12.0])


def test_grad_non_differentiated_integer_argument_is_allowed():
    g = tf.grad(lambda a, n: tf.reduce_sum(a ** n))(np.array([1.0, 2.0]), 3)
    np.testing.assert_allclose(g, [3.0, 12.0])


def test_grad_keyword_arguments_are_passed_through():
    g = tf.grad(lambda a, scale=1.0: tf.reduce_sum(a * scale))(np.array([1.0, 2.0]), scale=4.0)
    np.testing.assert_allclose(g, [4.0, 4.0])


def test_grad_non_scalar_output_raises_type_error():
    with pytest.raises(TypeError, match="scalar"):
        tf.grad(lambda a: a * a)(np.array([1.0, 2.0]))


def test_grad_argnums_out_of_range_raises_value_error():
    with pytest.raises(ValueError, match="argnums"):
        tf.grad(lambda a: tf.reduce_sum(a), argnums=1)(np.array([1.0]))
    with pytest.raises(ValueError, match="argnums"):
        tf.grad(lambda a, b: tf.reduce_sum(a), argnums=(0, 2))(np.array([1.0]), np.array([1.0]))


def test_grad_integer_argument_in_argnums_raises_type_error_naming_it():
    with pytest.raises(TypeError, match="argument 1"):
        tf.grad(lambda a, n: tf.reduce_sum(a), argnums=1)(np.array([1.0]), np.array([1, 2]))


def test_grad_integer_leaf_inside_nested_argument_raises_type_error():
    with pytest.raises(TypeError, match="int"):
        tf.grad(lambda p: tf.reduce_sum(p[0]))([np.array([1.0]), np.array([1, 2])])


# ============================================================================ vjp
def test_vjp_fn_is_reusable_with_different_cotangents():
    x = np.array([1.0, 2.0, 3.0])
    y, f_vjp = tf.vjp(lambda a: a * a, x)
    np.testing.assert_allclose(y, x * x)
    (g1,) = f_vjp(np.ones(3))
    (g2,) = f_vjp(np.array([1.0, 0.0, -2.0]))
    np.testing.assert_allclose(g1, 2 * x)
    np.testing.assert_allclose(g2, [2.0, 0.0, -12.0])


def test_vjp_with_several_primals_and_dict_output():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    _, f_vjp = tf.vjp(lambda u, v: {"p": u * v, "s": tf.reduce_sum(u)}, a, b)
    ga, gb = f_vjp({"p": np.array([1.0, 2.0]), "s": np.float64(10.0)})
    np.testing.assert_allclose(ga, np.array([1.0, 2.0]) * b + 10.0)
    np.testing.assert_allclose(gb, np.array([1.0, 2.0]) * a)


def test_vjp_has_aux_returns_aux_third():
    x = np.array([1.0, 2.0])
    y, f_vjp, aux = tf.vjp(lambda a: (a * a, a + 1.0), x, has_aux=True)
    np.testing.assert_allclose(aux, x + 1)
    np.testing.assert_allclose(f_vjp(np.ones(2))[0], 2 * x)


def test_vjp_wrong_cotangent_shape_raises_value_error():
    _, f_vjp = tf.vjp(lambda a: a * a, np.array([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="shape"):
        f_vjp(np.ones(4))


def test_vjp_cotangent_missing_an_output_raises_value_error():
    _, f_vjp = tf.vjp(lambda a: (a * a, a), np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        f_vjp((np.ones(2),))


# ============================================================================ jvp / linearize
def test_jvp_matches_finite_differences():
    rng = _rng()
    t = rng.normal(size=3)
    y, jv = tf.jvp(f_3_to_5, (X3,), (t,))
    eps = 1e-6
    fd = (_np(f_3_to_5(tf.constant(X3 + eps * t))) - _np(f_3_to_5(tf.constant(X3 - eps * t)))) \
        / (2 * eps)
    np.testing.assert_allclose(y, _np(f_3_to_5(tf.constant(X3))), rtol=1e-15)
    np.testing.assert_allclose(jv, fd, rtol=1e-7, atol=1e-9)


def test_jvp_of_two_arguments_sums_contributions():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    ta, tb = np.array([1.0, -1.0]), np.array([0.5, 2.0])
    _, jv = tf.jvp(lambda u, v: u * v, (a, b), (ta, tb))
    np.testing.assert_allclose(jv, ta * b + a * tb)


def test_jvp_python_scalar_tangent_takes_primal_dtype():
    y, t = tf.jvp(tf.sin, (np.float64(0.5),), (2.0,))
    assert t.dtype == tf.float64
    np.testing.assert_allclose(t, 2.0 * np.cos(0.5), rtol=1e-15)


def test_jvp_primals_not_a_sequence_raises_type_error():
    with pytest.raises(TypeError):
        tf.jvp(tf.sin, np.array([1.0]), np.array([1.0]))


def test_jvp_wrong_tangent_shape_raises_value_error():
    with pytest.raises(ValueError, match="shape"):
        tf.jvp(tf.sin, (np.array([1.0, 2.0]),), (np.ones(3),))


def test_linearize_f_jvp_equals_jvp_at_several_tangents():
    y, f_jvp = tf.linearize(f_3_to_5, X3)
    np.testing.assert_allclose(y, _np(f_3_to_5(tf.constant(X3))), rtol=1e-15)
    rng = _rng()
    for t in [np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]), rng.normal(size=3)]:
        _, want = tf.jvp(f_3_to_5, (X3,), (t,))
        np.testing.assert_allclose(f_jvp(t), want, rtol=1e-14, atol=1e-15)


def test_linearize_does_not_rerun_the_function():
    calls = []

    def f(a):
        calls.append(1)
        return tf.sin(a) * a

    _, f_jvp = tf.linearize(f, X3)
    assert len(calls) == 1
    f_jvp(np.ones(3))
    f_jvp(np.array([1.0, 2.0, 3.0]))
    assert len(calls) == 1


def test_linearize_with_two_primals():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    _, f_jvp = tf.linearize(lambda u, v: tf.sin(u) * v, a, b)
    ta, tb = np.array([1.0, -1.0]), np.array([0.5, 2.0])
    np.testing.assert_allclose(f_jvp(ta, tb), np.cos(a) * ta * b + np.sin(a) * tb, rtol=1e-15)


def test_linearize_python_scalar_tangent_takes_primal_dtype():
    _, f_jvp = tf.linearize(tf.sin, np.float64(0.5))
    np.testing.assert_allclose(f_jvp(2.0), 2.0 * np.cos(0.5), rtol=1e-15)


def test_linearize_wrong_tangent_shape_raises_value_error():
    _, f_jvp = tf.linearize(tf.sin, X3)
    with pytest.raises(ValueError):
        f_jvp(np.ones((2, 3)))


# ============================================================================ jacobians
@pytest.mark.parametrize("f, x", [(f_3_to_5, X3), (f_5_to_3, X5)], ids=["R3toR5", "R5toR3"])
def test_jacfwd_jacrev_and_jacobian_modes_agree(f, x):
    jf = _np(tf.jacfwd(f)(x))
    jr = _np(tf.jacrev(f)(x))
    ja = _np(tf.jacobian(f)(x))
    jfm = _np(tf.jacobian(f, mode="forward")(x))
    jrm = _np(tf.jacobian(f, mode="reverse")(x))
    n_out = _np(f(tf.constant(x))).size
    assert jf.shape == (n_out, x.size)
    for other in (jr, ja, jfm, jrm):
        np.testing.assert_allclose(other, jf, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f, x", [(f_3_to_5, X3), (f_5_to_3, X5)], ids=["R3toR5", "R5toR3"])
def test_jacobian_matches_finite_differences(f, x):
    fd = _fd_jacobian(_numpy_fn(f), x)
    np.testing.assert_allclose(tf.jacfwd(f)(x), fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tf.jacrev(f)(x), fd, rtol=1e-6, atol=1e-8)


def test_jacobian_analytic_diagonal():
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tf.jacrev(lambda a: a ** 3.0)(x), np.diag(3 * x ** 2))
    np.testing.assert_allclose(tf.jacfwd(lambda a: a ** 3.0)(x), np.diag(3 * x ** 2))


def test_jacobian_of_matrix_input_has_out_plus_in_shape():
    x = _rng().normal(size=(2, 3))
    f = lambda a: tf.reduce_sum(a * a, axis=0)  # [2, 3] -> [3]
    want = np.zeros((3, 2, 3))
    for j in range(3):
        want[j, :, j] = 2 * x[:, j]
    for jac in (tf.jacfwd(f)(x), tf.jacrev(f)(x)):
        assert jac.shape == (3, 2, 3)
        np.testing.assert_allclose(jac, want)


def test_jacobian_argnums_tuple_gives_one_jacobian_per_argument():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    for jac_fn in (tf.jacfwd, tf.jacrev):
        ja, jb = jac_fn(lambda u, v: u * v, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(ja, np.diag(b))
        np.testing.assert_allclose(jb, np.diag(a))


def test_jacobian_nested_input_and_output_structure():
    x = np.array([1.0, 2.0])
    f = lambda p: {"s": tf.reduce_sum(p["a"] * p["b"][0]), "v": p["a"] * 3.0}
    for jac_fn in (tf.jacfwd, tf.jacrev):
        jac = jac_fn(f)({"a": x, "b": [2 * x]})
        np.testing.assert_allclose(jac["s"]["a"], 2 * x)
        np.testing.assert_allclose(jac["s"]["b"][0], x)
        np.testing.assert_allclose(jac["v"]["a"], 3 * np.eye(2))
        np.testing.assert_allclose(jac["v"]["b"][0], np.zeros((2, 2)))


def test_jacobian_has_aux():
    x = np.array([1.0, 2.0])
    for jac_fn in (tf.jacfwd, tf.jacrev):
        jac, aux = jac_fn(lambda a: (a * a, a + 1.0), has_aux=True)(x)
        np.testing.assert_allclose(jac, np.diag(2 * x))
        np.testing.assert_allclose(aux, x + 1.0)


def test_jacobian_of_constant_function_is_zero():
    x = np.array([1.0, 2.0, 3.0])
    f = lambda a: tf.constant(np.array([1.0, 2.0]))
    for jac in (tf.jacfwd(f)(x), tf.jacrev(f)(x)):
        assert jac.shape == (2, 3)
        np.testing.assert_array_equal(jac, np.zeros((2, 3)))


def test_jacobian_keeps_float32():
    jac = tf.jacrev(lambda a: a * a)(np.array([1.0, 2.0], dtype=np.float32))
    assert jac.dtype == tf.float32


def _record_calls(monkeypatch):
    seen = []
    real_fwd, real_rev = transforms._jacfwd_at, transforms._jacrev_from

    def fwd(*a, **k):
        seen.append("fwd")
        return real_fwd(*a, **k)

    def rev(*a, **k):
        seen.append("rev")
        return real_rev(*a, **k)

    monkeypatch.setattr(transforms, "_jacfwd_at", fwd)
    monkeypatch.setattr(transforms, "_jacrev_from", rev)
    return seen


def test_jacobian_auto_picks_forward_when_inputs_are_fewer(monkeypatch):
    seen = _record_calls(monkeypatch)
    jac = tf.jacobian(f_3_to_5, mode="auto")(X3)
    assert seen == ["fwd"]
    np.testing.assert_allclose(jac, _fd_jacobian(_numpy_fn(f_3_to_5), X3), rtol=1e-6, atol=1e-8)


def test_jacobian_auto_picks_reverse_when_outputs_are_fewer(monkeypatch):
    seen = _record_calls(monkeypatch)
    tf.jacobian(f_5_to_3, mode="auto")(X5)
    assert seen == ["rev"]


def test_jacobian_forced_modes_use_that_mode(monkeypatch):
    seen = _record_calls(monkeypatch)
    tf.jacobian(f_5_to_3, mode="forward")(X5)
    tf.jacobian(f_3_to_5, mode="reverse")(X3)
    assert seen == ["fwd", "rev"]


def test_jacobian_invalid_mode_raises_value_error():
    with pytest.raises(ValueError, match="mode"):
        tf.jacobian(f_3_to_5, mode="sideways")


@pytest.mark.parametrize("chunk", [1, 2, 4])
def test_jacobian_chunk_size_gives_same_jacobian(chunk):
    whole_f, whole_r = _np(tf.jacfwd(f_3_to_5)(X3)), _np(tf.jacrev(f_5_to_3)(X5))
    np.testing.assert_array_equal(tf.jacfwd(f_3_to_5, chunk_size=chunk)(X3), whole_f)
    np.testing.assert_array_equal(tf.jacrev(f_5_to_3, chunk_size=chunk)(X5), whole_r)
    np.testing.assert_array_equal(tf.jacobian(f_5_to_3, chunk_size=chunk)(X5), whole_r)
    np.testing.assert_allclose(tf.jacobian(f_3_to_5, mode="reverse", chunk_size=chunk)(X3),
                               whole_f, rtol=1e-12, atol=1e-12)


def test_jacobian_integer_argument_raises_type_error():
    with pytest.raises(TypeError, match="argument 0"):
        tf.jacobian(lambda a: a * a)(np.array([1, 2]))


# ============================================================================ hessian / hvp
def _analytic_hessian(x):
    """Hessian of scalar_fn, by finite differences of its analytic gradient."""
    def grad_np(z):
        s3, ssin, ssq = np.sum(z ** 3), np.sum(np.sin(z)), np.sum(z * z)
        g = 3 * z ** 2 * z[0] + np.cos(z) * ssq + ssin * 2 * z
        g[0] += s3
        return g
    return _fd_jacobian(grad_np, x)


def test_hessian_is_symmetric():
    h = _np(tf.hessian(scalar_fn)(X4))
    assert h.shape == (4, 4)
    np.testing.assert_allclose(h, h.T, rtol=1e-13, atol=1e-13)


def test_hessian_equals_finite_differences_of_grad():
    h = tf.hessian(scalar_fn)(X4)
    fd = _fd_jacobian(lambda z: _np(tf.grad(scalar_fn)(z)), X4)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(h, _analytic_hessian(X4), rtol=1e-6, atol=1e-7)


def test_hessian_of_sum_of_cubes_is_diagonal():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(tf.hessian(lambda a: tf.reduce_sum(a ** 3.0))(x), np.diag(6 * x))


def test_hessian_chunk_size_gives_same_hessian():
    np.testing.assert_allclose(tf.hessian(scalar_fn, chunk_size=3)(X4), tf.hessian(scalar_fn)(X4),
                               rtol=1e-14, atol=1e-14)


def test_hvp_equals_hessian_times_vector():
    h = _np(tf.hessian(scalar_fn)(X4))
    for v in (np.array([1.0, 0.0, 0.0, 0.0]), _rng().normal(size=4)):
        np.testing.assert_allclose(tf.hvp(scalar_fn, (X4,), (v,)), h @ v, rtol=1e-12, atol=1e-12)


def test_hvp_with_two_arguments_returns_tuple():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    f = lambda u, v: tf.reduce_sum(u * u * v)
    ha, hb = tf.hvp(f, (a, b), (np.ones(2), np.zeros(2)))
    # d2f/du2 = diag(2v), d2f/dvdu = diag(2u)
    np.testing.assert_allclose(ha, 2 * b)
    np.testing.assert_allclose(hb, 2 * a)


# ============================================================================ composition
def test_jacfwd_of_jacrev_equals_hessian_and_finite_differences():
    h = _np(tf.hessian(scalar_fn)(X4))
    np.testing.assert_allclose(tf.jacfwd(tf.jacrev(scalar_fn))(X4), h, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(h, _analytic_hessian(X4), rtol=1e-6, atol=1e-7)


def test_jacrev_of_jacrev_equals_hessian():
    h = _analytic_hessian(X4)
    np.testing.assert_allclose(tf.jacrev(tf.jacrev(scalar_fn))(X4), h, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tf.jacrev(tf.jacrev(scalar_fn))(X4), tf.hessian(scalar_fn)(X4),
                               rtol=1e-12, atol=1e-12)


def test_jacfwd_of_jacfwd_equals_hessian():
    np.testing.assert_allclose(tf.jacfwd(tf.jacfwd(scalar_fn))(X4), _analytic_hessian(X4),
                               rtol=1e-6, atol=1e-7)


def test_vmap_of_grad_equals_loop_of_grad():
    xs = _rng().normal(size=(5, 4))
    g = tf.grad(scalar_fn)
    want = np.stack([_np(g(x)) for x in xs])
    np.testing.assert_allclose(tf.vmap(g)(xs), want, rtol=1e-13, atol=1e-14)


def test_grad_of_sum_of_vmap_equals_loop_of_grad():
    xs = _rng().normal(size=(5, 4))
    got = tf.grad(lambda a: tf.reduce_sum(tf.vmap(scalar_fn)(a)))(xs)
    want = np.stack([_np(tf.grad(scalar_fn)(x)) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


def test_vmap_of_jacrev_equals_loop():
    xs = _rng().normal(size=(3, 3))
    want = np.stack([_np(tf.jacrev(f_3_to_5)(x)) for x in xs])
    np.testing.assert_allclose(tf.vmap(tf.jacrev(f_3_to_5))(xs), want, rtol=1e-13, atol=1e-14)


def test_vmap_of_hvp_equals_loop():
    rng = _rng()
    xs, vs = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    hvp1 = lambda x, v: tf.hvp(scalar_fn, (x,), (v,))
    want = np.stack([_np(hvp1(x, v)) for x, v in zip(xs, vs)])
    np.testing.assert_allclose(tf.vmap(hvp1)(xs, vs), want, rtol=1e-12, atol=1e-12)


def test_grad_of_grad_of_grad_is_third_derivative_of_x4():
    d3 = tf.grad(tf.grad(tf.grad(lambda a: a ** 4.0)))
    for x in (2.0, -1.5, 0.5):
        np.testing.assert_allclose(d3(np.float64(x)), 24.0 * x, rtol=1e-14)


def test_grad_of_grad_is_second_derivative():
    d2 = tf.grad(tf.grad(lambda a: tf.sin(a) * a))
    x = np.float64(0.7)
    np.testing.assert_allclose(d2(x), 2 * np.cos(x) - x * np.sin(x), rtol=1e-14)


# ---------------------------------------------------------------- perturbation confusion
# The argument a transform differentiates is a fresh tensor at every nesting level: a
# captured tensor that is the very object passed as the argument stays a constant.
_X = tf.constant(3.0, tf.float64)
_ONE = tf.constant(1.0, tf.float64)


@pytest.mark.parametrize("name, result, want", [
    ("grad", lambda: tf.grad(lambda y: _X * y)(_X), 3.0),
    ("value_and_grad", lambda: tf.value_and_grad(lambda y: _X * y)(_X)[1], 3.0),
    ("jvp", lambda: tf.jvp(lambda y: _X * y, (_X,), (_ONE,))[1], 3.0),
    ("vjp", lambda: tf.vjp(lambda y: _X * y, _X)[1](_ONE)[0], 3.0),
    ("linearize", lambda: tf.linearize(lambda y: _X * y, _X)[1](_ONE), 3.0),
    ("jacfwd", lambda: tf.jacfwd(lambda y: _X * y)(_X), 3.0),
    ("jacrev", lambda: tf.jacrev(lambda y: _X * y)(_X), 3.0),
    ("jacobian", lambda: tf.jacobian(lambda y: _X * y)(_X), 3.0),
    ("hessian", lambda: tf.hessian(lambda y: _X * y * y)(_X), 6.0),
    ("hvp", lambda: tf.hvp(lambda y: _X * y * y, (_X,), (_ONE,)), 6.0),
    ("vmap", lambda: tf.vmap(lambda y: tf.grad(lambda z: y * z)(y))(tf.reshape(_X, [1]))[0], 3.0),
])
def test_a_captured_tensor_that_is_the_argument_is_a_constant(name, result, want):
    assert float(result()) == want


def test_nested_grads_keep_their_perturbations_apart():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1 (JAX: 1.0)
    assert float(tf.grad(lambda x: x * tf.grad(lambda y: x + y)(x))(1.0)) == 1.0
    # the inner argument still carries the outer derivative: d/dx d/dy (x y^2)|y=x = 2
    assert float(tf.grad(lambda x: tf.grad(lambda y: x * y * y)(x))(1.5)) == 6.0


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "hessian", "jacobian_rev",
                                       "jacfwd_chunked"])
def test_jacobians_at_a_size_0_input_are_empty(transform):
    # They raised `range() arg 3 must not be zero` (an IndexError with chunk_size), where
    # tape.jacobian and JAX give the empty Jacobian.
    fns = {"jacfwd": lambda f: tf.jacfwd(f), "jacrev": lambda f: tf.jacrev(f),
           "hessian": lambda f: tf.hessian(lambda v: tf.reduce_sum(f(v))),
           "jacobian_rev": lambda f: tf.jacobian(f, mode="reverse"),
           "jacfwd_chunked": lambda f: tf.jacfwd(f, chunk_size=2)}
    got = fns[transform](lambda v: v * 2.0)(tf.constant(np.zeros(0)))
    assert got.shape == (0, 0) and got.dtype == tf.float64
    assert tf.jacfwd(lambda v: v[:0])(tf.constant([1.0, 2.0, 3.0])).shape == (0, 3)
    assert tf.jacrev(lambda v: v[:0])(tf.constant([1.0, 2.0, 3.0])).shape == (0, 3)


@pytest.mark.parametrize("transform", ["grad", "jacfwd", "jacrev", "jacobian", "hessian"])
def test_an_integer_valued_function_is_refused_naming_the_dtype(transform):
    # Its derivative would be zeros by construction: JAX raises, and so do these.
    f = (lambda v: tf.cast(tf.reduce_sum(v), tf.int32)) if transform in ("grad", "hessian") \
        else (lambda v: tf.cast(v, tf.int32))
    with pytest.raises(TypeError, match="output 0 of the function has dtype int32"):
        getattr(tf, transform)(f)(tf.constant([1.0, 2.0]))
