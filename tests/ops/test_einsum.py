"""einsum and tensordot (src/tapeflow/ops/einsum.py) beyond the op table: every einsum
form against NumPy, gradients through broadcast ellipses, repeated and summed-out
labels, complex gradients against finite differences, and the errors bad equations,
dtypes, keywords and axes raise.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import RNG, assert_complex_gradient, cplx, numeric_gradient, numpy_grads


# ------------------------------------------------------------------ einsum
def test_einsum_forms_match_numpy():
    a, b, c = RNG.standard_normal((2, 3, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    cases = [("bij,jk->bik", a, b), ("bii->b", a), ("bii->bi", a), ("...ij,jk->...ik", a, b),
             ("ij,j", b, c), ("i,i", c, c), ("i,j->ij", c, c), ("bij->", a), ("bij->jib", a),
             ("bij , jk", a, b), ("Bij,jk->kB", a, b)]
    for eq, *ops in cases:
        got = tf.einsum(eq, *[tf.constant(o) for o in ops])
        np.testing.assert_allclose(got.numpy(), np.einsum(eq.replace(" ", ""), *ops),
                                   rtol=1e-12, atol=1e-12, err_msg=eq)


def test_einsum_broadcasts_ellipsis_axes_and_sums_the_gradient_back():
    a, b = RNG.standard_normal((2, 1, 3, 4)), RNG.standard_normal((5, 4, 2))
    ga, gb = numpy_grads(lambda x, y: tf.reduce_sum(tf.sin(tf.einsum("...ij,...jk->...ik", x, y))),
                      a, b)
    na, nb = numeric_gradient(lambda x, y: tf.reduce_sum(tf.sin(
        tf.einsum("...ij,...jk->...ik", x, y))), a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_allclose(ga, na, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, nb, rtol=1e-6, atol=1e-7)


def test_einsum_repeated_and_summed_labels_gradient():
    # 'i' twice in x (a diagonal), 'k' only in x (summed out), 'j' shared, three operands.
    x, y, z = RNG.standard_normal((3, 3, 2, 4)), RNG.standard_normal((4, 2)), RNG.standard_normal(2)
    f = lambda x, y, z: tf.reduce_sum(tf.cos(tf.einsum("iikj,jl,l->i", x, y, z)))  # noqa: E731
    for got, want in zip(numpy_grads(f, x, y, z), numeric_gradient(f, x, y, z)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_einsum_complex_gradient_uses_conjugates():
    assert_complex_gradient(lambda a, b: tf.einsum("ij,jk->ik", a, b), (2, 2), cplx(2, 3),
                            cplx(3, 2))
    assert_complex_gradient(lambda a: tf.einsum("ii->i", a), (3,), cplx(3, 3))


@pytest.mark.parametrize("eq, shapes, message", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "label 'j'"),
    ("ij,jk", [(2, 3)], "names 2 operand"),
    ("ij->ik", [(2, 3)], "'k' appears in no input"),
    ("ij->ii", [(2, 2)], "repeated"),
    ("ij", [(2, 3, 4)], "rank 3"),
    ("...ij->ij", [(5, 2, 3)], "no ellipsis"),
    ("i1->i", [(2, 2)], "letters"),
    ("...i,...i->...i", [(2, 3), (4, 3)], "broadcast"),
    ("ij->i->j", [(2, 2)], "more than one '->'"),
])
def test_einsum_errors_name_the_problem(eq, shapes, message):
    with pytest.raises(InvalidArgumentError, match="einsum") as info:
        tf.einsum(eq, *[tf.zeros(s) for s in shapes])
    assert message in str(info.value)


def test_einsum_rejects_mixed_dtypes_and_bad_kwargs():
    with pytest.raises(TypeError, match="einsum"):
        tf.einsum("i,i", tf.zeros([2]), tf.zeros([2], tf.float64))
    with pytest.raises(TypeError, match="einsum"):
        tf.einsum("i,i", tf.zeros([2]), tf.zeros([2]), bogus=1)
    out = tf.einsum("i,i", tf.constant([1., 2.]), [3., 4.], optimize="greedy", name="dot")
    assert out.dtype == tf.float32 and float(out) == 11.0


# ------------------------------------------------------------------ tensordot
def test_tensordot_axes_forms():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    for axes, np_axes in ((0, 0), (1, 1), ([1, 0], (1, 0)), ([[1], [0]], ([1], [0])),
                          ([[-1], [0]], ([1], [0]))):
        got = tf.tensordot(tf.constant(a), tf.constant(b), axes)
        np.testing.assert_allclose(got.numpy(), np.tensordot(a, b, np_axes), rtol=1e-12)


def test_tensordot_errors():
    a, b = tf.zeros([2, 3]), tf.zeros([4, 2])
    with pytest.raises(InvalidArgumentError, match="tensordot.*size 3.*size 4"):
        tf.tensordot(a, b, 1)
    with pytest.raises(InvalidArgumentError, match="tensordot"):
        tf.tensordot(a, b, 3)
    with pytest.raises(InvalidArgumentError, match="counts must match"):
        tf.tensordot(a, b, [[0, 1], [1]])
