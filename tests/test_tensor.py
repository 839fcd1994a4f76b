"""Tensors, variables and dtypes, with TensorFlow's behaviour (inference, no implicit
promotion, errors)."""

from __future__ import annotations

import collections
import gc
import operator
import weakref

import numpy as np
import pytest

import tapeflow as tf


# ---------------------------------------------------------------- dtype inference

@pytest.mark.parametrize("make", [tf.constant, tf.convert_to_tensor], ids=["constant", "convert"])
@pytest.mark.parametrize("value, dtype", [
    (1.5, "float32"),
    (1, "int32"),
    (True, "bool"),
    (1 + 2j, "complex128"),
    ([1.0, 2.0], "float32"),
    ([[1.0, 2.0], [3.0, 4.0]], "float32"),
    ([1, 2.5], "float32"),
    ([1, 2], "int32"),
    ([True, False], "bool"),
    (np.array([1.0, 2.0]), "float64"),
    (np.array([1.0], np.float32), "float32"),
    (np.float64(1.0), "float64"),
    (np.array([1, 2], np.int64), "int64"),
], ids=lambda v: repr(v) if not isinstance(v, np.ndarray) else f"ndarray-{v.dtype}")
def test_dtype_inference(make, value, dtype):
    t = make(value)
    assert t.dtype == tf.as_dtype(dtype)
    assert t.dtype.name == dtype
    assert t.numpy().dtype == np.dtype(tf.as_dtype(dtype).as_numpy_dtype)


def test_constant_with_explicit_dtype_casts_python_value():
    t = tf.constant([1, 2], dtype=tf.float64)
    assert t.dtype == tf.float64
    np.testing.assert_array_equal(t, [1.0, 2.0])


def test_constant_shape_fills_scalar():
    t = tf.constant(7., shape=(2, 3))
    assert t.shape == (2, 3)
    np.testing.assert_array_equal(t, np.full((2, 3), 7., np.float32))


# ---------------------------------------------------------------- no implicit promotion

def test_float32_plus_float64_raises_invalid_argument_naming_both_dtypes():
    a = tf.constant([1.0, 2.0])
    b = tf.constant([1.0, 2.0], dtype=tf.float64)
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        a + b
    assert "float32" in str(info.value) and "float64" in str(info.value)


def test_int32_times_float32_raises_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        tf.constant([1, 2]) * tf.constant([1.0, 2.0])
    assert "int32" in str(info.value) and "float32" in str(info.value)


@pytest.mark.parametrize("tensor_dtype", ["float32", "float64", "int32", "int64"])
def test_python_scalar_takes_tensor_dtype(tensor_dtype):
    t = tf.constant([1, 2], dtype=tensor_dtype)
    for result in (t + 2, 2 + t, t * 3, 3 * t):
        assert result.dtype == tf.as_dtype(tensor_dtype)
    np.testing.assert_array_equal(t * 3, [3, 6])


@pytest.mark.parametrize("scalar", [np.float64(1.5), np.float16(1.5), np.float32(1.5)])
def test_numpy_scalar_takes_tensor_dtype(scalar):
    t = tf.constant([1.0, 2.0])  # float32
    for result in (t + scalar, scalar + t, t * scalar, scalar * t):
        assert isinstance(result, tf.Tensor)
        assert result.dtype == tf.float32
    np.testing.assert_allclose(t + scalar, [2.5, 3.5])


def test_float64_tensor_plus_python_float_stays_float64():
    t = tf.constant(np.array([1.0, 2.0]))
    r = t + 0.1
    assert r.dtype == tf.float64
    np.testing.assert_array_equal(r, np.array([1.0, 2.0]) + 0.1)



@pytest.mark.parametrize("make", [
    lambda: tf.constant(1.0) + None,
    lambda: None * tf.constant([1.0, 2.0]),
    lambda: tf.constant(None, dtype=tf.float32),
    lambda: tf.convert_to_tensor(None, dtype=tf.float64),
], ids=["add", "rmul", "constant", "convert"])
def test_none_is_not_a_tensor_value(make):
    with pytest.raises((TypeError, ValueError)):
        make()


def test_variable_assign_none_element_raises():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises((TypeError, ValueError)):
        v.assign([None, 1.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_none_without_dtype_raises():
    with pytest.raises((TypeError, ValueError)):
        tf.constant(None)
    with pytest.raises((TypeError, ValueError)):
        tf.constant([1.0, None])


def test_equality_with_none_is_python_bool():
    t = tf.constant(1.0)
    assert (t == None) is False  # noqa: E711
    assert (t != None) is True  # noqa: E711


# ---------------------------------------------------------------- operators

A = np.array([[1.5, -2.0], [3.0, 4.5]], np.float32)
B = np.array([[0.5, 3.0], [-1.0, 2.0]], np.float32)


@pytest.mark.parametrize("op", [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.pow, operator.matmul,
], ids=lambda f: f.__name__)
def test_binary_operator_matches_numpy(op):
    a_np = np.abs(A) if op is operator.pow else A  # positive bases for a real power
    result = op(tf.constant(a_np), tf.constant(B))
    assert isinstance(result, tf.Tensor)
    assert result.dtype == tf.float32
    np.testing.assert_allclose(result, op(a_np, B), rtol=1e-6)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv,
                                operator.floordiv, operator.mod, operator.pow],
                         ids=lambda f: f.__name__)
def test_reflected_operator_with_python_scalar(op):
    t = tf.constant([1.0, 2.0, 4.0])
    result = op(3.0, t)
    assert isinstance(result, tf.Tensor) and result.dtype == tf.float32
    np.testing.assert_allclose(result, op(np.float32(3.0), np.array([1.0, 2.0, 4.0], np.float32)),
                               rtol=1e-6)


def test_tensors_are_immutable():
    t = tf.constant([1.0, 2.0])
    with pytest.raises(TypeError):
        t[0] = 5.0
    np.testing.assert_array_equal(t, [1.0, 2.0])


def test_constant_copies_its_numpy_input():
    arr = np.array([1.0, 2.0])
    t = tf.constant(arr)
    arr[0] = 100.0
    np.testing.assert_array_equal(t, [1.0, 2.0])


def test_floordiv_and_mod_follow_python_sign_convention():
    t = tf.constant([7., -7., 7., -7.])
    d = tf.constant([2., 2., -2., -2.])
    np.testing.assert_array_equal(t // d, [3., -4., -4., 3.])
    np.testing.assert_array_equal(t % d, [1., 1., -1., -1.])


def test_integer_floordiv_and_mod():
    t = tf.constant([7, -7])
    assert (t // 2).dtype == tf.int32
    np.testing.assert_array_equal(t // 2, [3, -4])
    np.testing.assert_array_equal(t % 2, [1, 1])


def test_unary_negative_and_abs():
    t = tf.constant([-1.5, 0.0, 2.0])
    np.testing.assert_array_equal(-t, [1.5, -0.0, -2.0])
    np.testing.assert_array_equal(abs(t), [1.5, 0.0, 2.0])
    assert (-t).dtype == tf.float32 and abs(t).dtype == tf.float32


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge,
                                operator.eq, operator.ne], ids=lambda f: f.__name__)
def test_comparisons_give_bool_tensors(op):
    a = tf.constant([1.0, 2.0, 3.0])
    b = tf.constant([2.0, 2.0, 2.0])
    result = op(a, b)
    assert isinstance(result, tf.Tensor)
    assert result.dtype == tf.bool
    np.testing.assert_array_equal(result, op(np.array([1., 2., 3.]), np.array([2., 2., 2.])))


def test_comparison_with_python_scalar():
    result = tf.constant([1, 5, 3]) > 2
    assert result.dtype == tf.bool
    np.testing.assert_array_equal(result, [False, True, True])


def test_logical_operators_on_bool_tensors():
    a = tf.constant([True, True, False, False])
    b = tf.constant([True, False, True, False])
    for result, want in ((a & b, [True, False, False, False]),
                         (a | b, [True, True, True, False]),
                         (~a, [False, False, True, True])):
        assert result.dtype == tf.bool
        np.testing.assert_array_equal(result, want)


def test_matmul_operator_shapes():
    a = tf.constant(np.ones((2, 3), np.float32))
    b = tf.constant(np.ones((3, 4), np.float32))
    assert (a @ b).shape == (2, 4)
    np.testing.assert_array_equal(a @ b, np.full((2, 4), 3.0))


# ---------------------------------------------------------------- indexing, len, iter

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("key", [
    0, -1, 1,
    slice(1, None), slice(None, None, -1), slice(None, None, -2),
    (0, 1), (1, -1, 2), (slice(None), 0), (-1, slice(None, None, -1)),
    (slice(None), slice(None, None, -1), slice(1, 3)),
    (Ellipsis, 1), (0, Ellipsis), (Ellipsis, slice(None, None, -1)),
    None, (None, 0), (slice(None), None, 1), (Ellipsis, None),
    (1, Ellipsis, None, slice(None, None, -3)),
    (slice(3, 0, -1), slice(None, None, 2)),
], ids=repr)
def test_getitem_matches_numpy(key):
    got = tf.constant(X)[key]
    want = X[key]
    assert isinstance(got, tf.Tensor)
    assert got.shape == want.shape
    assert got.dtype == tf.float32
    np.testing.assert_array_equal(got, want)


def test_getitem_with_tf_newaxis():
    t = tf.constant([1.0, 2.0])
    assert t[tf.newaxis].shape == (1, 2)
    assert t[:, tf.newaxis].shape == (2, 1)
    assert tf.newaxis is None


def test_getitem_with_scalar_integer_tensor_index():
    np.testing.assert_array_equal(tf.constant(X)[tf.constant(1)], X[1])


def test_getitem_out_of_range_raises():
    with pytest.raises(IndexError):
        tf.constant([1.0, 2.0])[5]


def test_len_is_first_dimension():
    assert len(tf.constant(X)) == 2
    assert len(tf.constant([1, 2, 3])) == 3


def test_len_of_scalar_raises_type_error():
    with pytest.raises(TypeError):
        len(tf.constant(1.0))


def test_iter_yields_rows_as_tensors():
    rows = list(tf.constant(X))
    assert len(rows) == 2
    for row, want in zip(rows, X):
        assert isinstance(row, tf.Tensor)
        np.testing.assert_array_equal(row, want)


def test_iter_over_scalar_raises_type_error():
    with pytest.raises(TypeError):
        iter(tf.constant(1.0)).__next__()


# ---------------------------------------------------------------- Python scalar conversions

def test_float_int_bool_index_on_scalars():
    assert float(tf.constant(2.5)) == 2.5
    assert isinstance(float(tf.constant(2.5)), float)
    assert int(tf.constant(3)) == 3
    assert int(tf.constant(3.7)) == 3
    assert bool(tf.constant(True)) is True
    assert bool(tf.constant(0.0)) is False
    assert operator.index(tf.constant(2)) == 2
    assert [10, 20, 30][tf.constant(2)] == 30
    assert range(10)[tf.constant(4, tf.int64)] == 4


@pytest.mark.parametrize("convert", [float, int], ids=["float", "int"])
def test_float_int_of_non_scalar_raise(convert):
    with pytest.raises(TypeError, match=r"\(2,\)"):
        convert(tf.constant([1.0, 2.0]))


def test_bool_of_non_scalar_raises_value_error():
    with pytest.raises(ValueError):
        bool(tf.constant([True, False]))


def test_index_of_non_scalar_raises():
    with pytest.raises(TypeError):
        operator.index(tf.constant([1, 2]))


def test_index_of_float_scalar_raises():
    with pytest.raises(TypeError, match="float32"):
        operator.index(tf.constant(1.0))


# ---------------------------------------------------------------- __array__, numpy, repr

def test_array_protocol_lets_numpy_testing_compare_tensors():
    t = tf.constant([1.0, 2.0])
    np.testing.assert_allclose(t, [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(t), np.array([1.0, 2.0], np.float32))
    assert np.asarray(t).dtype == np.float32
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(t, [1.0, 2.5])


def test_numpy_of_scalar_is_numpy_scalar():
    v = tf.constant(2.0).numpy()
    assert np.ndim(v) == 0 and v.dtype == np.float32


def test_ndim_and_shape():
    t = tf.constant(X)
    assert t.ndim == 3
    assert t.shape == (2, 3, 4)
    assert tf.constant(1.0).shape == ()


def test_repr_format_vector():
    t = tf.constant([1., 2.]) * tf.constant([3., 6.])
    assert repr(t) == ("<tapeflow.Tensor: shape=(2,), dtype=float32, "
                       "numpy=array([ 3., 12.], dtype=float32)>")


def test_repr_format_scalar_and_matrix():
    assert repr(tf.constant(4.5)) == "<tapeflow.Tensor: shape=(), dtype=float32, numpy=4.5>"
    assert repr(tf.constant([[1, 2]])) == ("<tapeflow.Tensor: shape=(1, 2), dtype=int32, "
                                           "numpy=array([[1, 2]], dtype=int32)>")


# ---------------------------------------------------------------- ref, hashing, weakrefs

def test_tensors_are_unhashable():
    with pytest.raises(TypeError):
        hash(tf.constant(1.0))
    with pytest.raises(TypeError):
        {tf.constant(1.0): 1}
    with pytest.raises(TypeError):
        hash(tf.Variable(1.0))


def test_ref_is_hashable_and_identity_based():
    a = tf.constant([1.0, 2.0])
    b = tf.constant([1.0, 2.0])
    d = {a.ref(): "a", b.ref(): "b"}
    assert len(d) == 2
    assert d[a.ref()] == "a" and d[b.ref()] == "b"
    assert a.ref() == a.ref()
    assert a.ref() != b.ref()
    assert a.ref().deref() is a


def test_variable_ref_is_hashable():
    v = tf.Variable(1.0)
    assert {v.ref(): 1}[v.ref()] == 1
    assert v.ref().deref() is v


def test_weak_references_to_tensors():
    t = tf.constant([1.0, 2.0]) * 2.0
    r = weakref.ref(t)
    assert r() is t
    del t
    gc.collect()
    assert r() is None


def test_weak_references_to_variables():
    v = tf.Variable([1.0])
    r = weakref.ref(v)
    assert r() is v
    del v
    gc.collect()
    assert r() is None


# ---------------------------------------------------------------- ndarray interop

def test_ndarray_plus_tensor_returns_tensor():
    arr = np.array([1.0, 2.0], np.float32)
    t = tf.constant([10.0, 20.0])
    for result in (arr + t, t + arr, arr * t, arr - t):
        assert isinstance(result, tf.Tensor)
    np.testing.assert_array_equal(arr + t, [11.0, 22.0])
    np.testing.assert_array_equal(arr - t, [-9.0, -18.0])


def test_ndarray_matmul_tensor_returns_tensor():
    arr = np.eye(2, dtype=np.float32)
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    result = arr @ t
    assert isinstance(result, tf.Tensor)
    np.testing.assert_array_equal(result, [[1.0, 2.0], [3.0, 4.0]])


# ---------------------------------------------------------------- TensorShape, DType

def test_tensor_shape_as_list_and_tuple_behaviour():
    s = tf.constant(X).shape
    assert s.as_list() == [2, 3, 4]
    assert isinstance(s.as_list(), list)
    assert s == (2, 3, 4)
    assert s[0] == 2 and len(s) == 3
    assert s.rank == 3
    assert tf.constant(1.0).shape.as_list() == []


@pytest.mark.parametrize("dtype, np_type, floating, complex_, integer", [
    (tf.float16, np.float16, True, False, False),
    (tf.float32, np.float32, True, False, False),
    (tf.float64, np.float64, True, False, False),
    (tf.int8, np.int8, False, False, True),
    (tf.int16, np.int16, False, False, True),
    (tf.int32, np.int32, False, False, True),
    (tf.int64, np.int64, False, False, True),
    (tf.uint8, np.uint8, False, False, True),
    (tf.bool, np.bool_, False, False, False),
    (tf.complex64, np.complex64, False, True, False),
    (tf.complex128, np.complex128, False, True, False),
], ids=lambda v: getattr(v, "name", None) if isinstance(v, tf.DType) else None)
def test_dtype_attributes(dtype, np_type, floating, complex_, integer):
    assert dtype.as_numpy_dtype is np_type
    assert dtype.name == np.dtype(np_type).name
    assert dtype.is_floating is floating
    assert dtype.is_complex is complex_
    assert dtype.is_integer is integer


@pytest.mark.parametrize("value, want", [
    ("float32", "float32"), ("float64", "float64"), ("int32", "int32"), ("bool", "bool"),
    (np.float32, "float32"), (np.float64, "float64"), (np.dtype("int64"), "int64"),
    (np.complex64, "complex64"),
])
def test_as_dtype(value, want):
    d = tf.as_dtype(value)
    assert isinstance(d, tf.DType)
    assert d.name == want
    assert d == getattr(tf, want)


def test_dtype_compares_with_numpy_types_and_names():
    assert tf.float32 == np.float32
    assert tf.float32 == "float32"
    assert tf.float32 != tf.float64
    assert tf.constant(1.0).dtype == np.float32
    assert len({tf.float32, tf.as_dtype("float32"), tf.float64}) == 2


def test_as_dtype_of_dtype_is_identity():
    assert tf.as_dtype(tf.float32) is tf.float32


def test_as_dtype_rejects_unknown():
    with pytest.raises(TypeError):
        tf.as_dtype("not_a_dtype")


def test_dtypes_are_module_attributes():
    for name in ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
                 "uint8", "bool", "complex64", "complex128"]:
        assert isinstance(getattr(tf, name), tf.DType)
        assert getattr(tf, name).name == name


# ---------------------------------------------------------------- Variable

def test_variable_basic_attributes():
    v = tf.Variable([1.0, 2.0], name="w")
    assert v.shape == (2,)
    assert v.dtype == tf.float32
    assert v.trainable is True
    assert v.name == "w:0"
    assert isinstance(v.numpy(), np.ndarray)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_variable_default_name_and_non_trainable():
    v = tf.Variable(1.0, trainable=False)
    assert v.trainable is False
    assert v.name == "Variable:0"


def test_variable_dtype_argument():
    v = tf.Variable([1, 2], dtype=tf.float64)
    assert v.dtype == tf.float64
    np.testing.assert_array_equal(v, [1.0, 2.0])


def test_variable_read_value_and_value_are_tensors_snapshotting_the_value():
    v = tf.Variable([1.0, 2.0])
    before = v.read_value()
    value = v.value()
    assert isinstance(before, tf.Tensor) and isinstance(value, tf.Tensor)
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(before, [1.0, 2.0])
    np.testing.assert_array_equal(value, [1.0, 2.0])
    np.testing.assert_array_equal(v.read_value(), [5.0, 6.0])


def test_variable_assign_add_sub():
    v = tf.Variable([1.0, 2.0])
    v.assign([3.0, 4.0])
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    v.assign_add([1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [4.0, 5.0])
    v.assign_sub(tf.constant([0.5, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [3.5, 3.0])
    assert v.dtype == tf.float32


def test_variable_copies_initial_buffer():
    arr = np.array([1.0, 2.0], np.float32)
    v = tf.Variable(arr)
    arr[0] = 100.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_variable_assign_shape_mismatch_is_clear():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(ValueError) as info:
        v.assign([1.0, 2.0, 3.0])
    assert "(3,)" in str(info.value) and "(2,)" in str(info.value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_variable_assign_dtype_mismatch_is_clear():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises((TypeError, ValueError)) as info:
        v.assign(tf.constant([1.0, 2.0], dtype=tf.float64))
    assert "float64" in str(info.value) and "float32" in str(info.value)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_variable_usable_wherever_a_tensor_is():
    v = tf.Variable([1.0, 2.0])
    for result in (v + 1.0, 1.0 + v, v * v, tf.reduce_sum(v), tf.square(v), v[0], -v):
        assert isinstance(result, tf.Tensor)
    np.testing.assert_allclose(tf.reduce_sum(v * v), 5.0)
    np.testing.assert_array_equal(v[::-1], [2.0, 1.0])
    assert len(v) == 2
    assert float(tf.Variable(3.0)) == 3.0


@pytest.mark.parametrize("op, want", [
    (lambda v: tf.matmul(v, v), [[7.0, 10.0], [15.0, 22.0]]),
    (lambda v: tf.reshape(v, [4]), [1.0, 2.0, 3.0, 4.0]),
    (lambda v: tf.transpose(v), [[1.0, 3.0], [2.0, 4.0]]),
    (lambda v: tf.concat([v, tf.constant([[5.0, 6.0]])], 0), [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]),
    (lambda v: tf.stack([v, v])[1], [[1.0, 2.0], [3.0, 4.0]]),
    (lambda v: tf.gather(v, [1]), [[3.0, 4.0]]),
    (lambda v: tf.where(v > 2.0, v, 0.0), [[0.0, 0.0], [3.0, 4.0]]),
    (lambda v: tf.maximum(v, 2.5), [[2.5, 2.5], [3.0, 4.0]]),
    (lambda v: tf.cast(v, tf.int32), [[1, 2], [3, 4]]),
], ids=["matmul", "reshape", "transpose", "concat", "stack", "gather", "where", "maximum", "cast"])
def test_variable_accepted_by_ops(op, want):
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    result = op(v)
    assert isinstance(result, tf.Tensor)
    np.testing.assert_array_equal(result, want)


def test_variable_from_callable_initial_value():
    v = tf.Variable(lambda: tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_convert_to_tensor_of_variable_and_is_tensor():
    v = tf.Variable([1.0, 2.0])
    t = tf.convert_to_tensor(v)
    assert isinstance(t, tf.Tensor)
    np.testing.assert_array_equal(t, [1.0, 2.0])
    assert tf.is_tensor(v) and tf.is_tensor(t) and not tf.is_tensor(np.ones(2))


# ---------------------------------------------------------------- constant of a tensor
def test_constant_of_a_tensor_is_differentiable():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.constant(x) * 2.0
        z = tf.constant(x, dtype=tf.float64) * 3.0
        w = tf.constant(tf.reduce_sum(x), shape=[2, 2])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(w, x).numpy(), [4.0, 4.0])
    assert z.dtype == tf.float64 and w.shape == (2, 2)


@pytest.mark.parametrize("make", [
    lambda x: tf.constant(x),
    lambda x: tf.constant(x, dtype=tf.float64),
    lambda x: tf.constant(x, shape=[2, 1]),
    lambda x: tf.convert_to_tensor(x),
])  # tf.Variable(x) at a new value retraces, which raises: tests/graph/test_traced_variables.py
def test_constant_of_a_traced_input_is_not_frozen(make):
    f = tf.function(lambda x: make(x) * 2.0)
    for value in ([1.0, 2.0], [5.0, -1.0]):
        x = tf.constant(value)
        np.testing.assert_allclose(np.asarray(f(x)).reshape(-1), np.multiply(value, 2.0))


def test_constant_of_a_batched_value_under_vmap():
    out = tf.vmap(lambda x: tf.constant(x) * 2.0)(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(out.numpy(), [[2.0, 4.0], [6.0, 8.0]])


def test_a_variable_of_a_batched_value_raises_under_vmap():
    with pytest.raises(tf.batching.BatchingError, match="tf.Variable"):
        tf.vmap(lambda x: tf.Variable(x).read_value())(tf.constant([[1.0], [2.0]]))


# ---------------------------------------------------------------- aliasing
def test_a_tensor_does_not_share_the_callers_array():
    a = np.array([1.0, 2.0])
    made = [tf.convert_to_tensor(a), tf.constant(a), tf.reshape(a, [2]), tf.identity(a),
            tf.add(a, 0.0), tf.Variable(a)]
    a[0] = 50.0
    for t in made:
        assert float(np.asarray(t)[0]) == 1.0, t


def test_writing_into_the_callers_array_keeps_a_recorded_gradient():
    a = np.array([3.0, 4.0])
    x = tf.constant([1.0, 2.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * a)
    a[:] = 0.0
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [3.0, 4.0])


def test_numpy_returns_a_new_array():
    t = tf.constant([1.0, 2.0])
    v = tf.Variable([1.0, 2.0])
    t.numpy()[0] = 50.0
    v.numpy()[0] = 50.0
    assert float(t[0]) == 1.0 and float(v[0]) == 1.0


def test_numpy_views_of_a_tensor_are_read_only():
    t = tf.constant([1.0, 2.0])
    view = np.asarray(t)
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 50.0
    assert float(t[0]) == 1.0
    np.asarray(t, dtype=np.float64)[0] = 7.0   # a converted copy is the caller's own
    np.array(t)[0] = 7.0
    assert float(t[0]) == 1.0


def test_a_traced_call_does_not_share_a_numpy_argument():
    f = tf.function(lambda x: x)
    a = np.array([1.0, 2.0])
    f(a)
    out = f(a)                  # replayed: the identity passes its input through
    a[0] = 50.0
    assert float(out[0]) == 1.0


@pytest.mark.parametrize("value, what", [("a", "strings"), ([1.0, "a"], "strings"),
                                         (b"x", "bytes")])
def test_non_numeric_values_are_refused_clearly(value, what):
    for make in (tf.constant, tf.convert_to_tensor, tf.Variable):
        with pytest.raises(TypeError, match=f"numbers and bools, not {what}"):
            make(value)


def test_str_and_format_print_as_tensorflow():
    """The strings TensorFlow 2.21 prints for the same tensors."""
    assert str(tf.constant([1.0, 2.5])) == "tf.Tensor([1.  2.5], shape=(2,), dtype=float32)"
    assert str(tf.constant(3)) == "tf.Tensor(3, shape=(), dtype=int32)"
    assert str(tf.constant([[1, 2], [3, 4]])) == \
        "tf.Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)"
    assert str(tf.range(2000)) == \
        "tf.Tensor([   0    1    2 ... 1997 1998 1999], shape=(2000,), dtype=int32)"
    assert format(tf.constant(2.345), ".2f") == "2.35"
    assert f"{tf.constant([1.0, 2.5])}" == "[1.  2.5]"
    with pytest.raises(TypeError, match="unsupported format string"):
        format(tf.constant([1.0, 2.5]), ".2f")


def test_big_endian_arrays_convert_to_the_machines_byte_order():
    # As read from a file (np.frombuffer(..., ">f4")): TensorFlow converts them too.
    data = np.frombuffer(np.arange(3, dtype=">f4").tobytes(), dtype=">f4")
    for t in (tf.constant(data), tf.convert_to_tensor(data), tf.Variable(data).value(),
              tf.constant(data[1])):
        assert t.dtype == tf.float32 and t.numpy().dtype.isnative
    assert tf.constant(data).numpy().tolist() == [0.0, 1.0, 2.0]
    f = tf.function(lambda x: x * 2.0)
    assert f(data).numpy().tolist() == f(data).numpy().tolist() == [0.0, 2.0, 4.0]


def test_nest_treats_a_shape_as_a_leaf():
    # TensorFlow 2.21: tf.nest.flatten(tf.TensorShape([1, 2])) is [TensorShape([1, 2])]
    shape = tf.TensorShape([None, 2])
    assert tf.nest.flatten(shape) == [shape] and tf.nest.flatten((shape, 3)) == [shape, 3]
    assert tf.nest.map_structure(lambda s: s.as_list(), {"a": shape}) == {"a": [None, 2]}
    assert not tf.nest.is_nested(shape) and tf.nest.is_nested((1,))
    pair = collections.namedtuple("pair", "a b")(1, [2, 3])
    assert tf.nest.flatten(pair) == [1, 2, 3]  # a namedtuple is still a structure
