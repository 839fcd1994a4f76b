"""Shape-specialized node implementations (graph/specialize.py) against NumPy's own call.

A tiled broadcast must equal the ufunc bit for bit for every operand order, dtype mix,
memory layout and `out=` target, decline shapes it does not serve, and a traced bias add
(the case it exists for) must replay exactly as eager, buffer reuse included.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.ir import Node
from tapeflow.graph.replay import COMPILE_AFTER
from tapeflow.graph.specialize import node_impl, tiled_broadcast

_CASES = [
    ((128, 24, 24, 6), (6,)),
    ((6,), (128, 24, 24, 6)),
    ((64, 8, 8, 16), (1, 1, 1, 16)),
    ((100003, 3), (3,)),            # a prime number of rows: no repeat divides it
    ((4096, 7), (1, 7)),
    ((32, 40, 5, 6), (5, 6)),
    ((2, 3, 4096), (3, 1)),         # broadcast inside, not trailing: declined
    ((640, 14, 14, 8), (8,)),       # rows of up to _ROW_WIDTH
    ((45, 2, 7, 9, 3), (3,)),
]


def _arrays(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.maximum,
                                   np.true_divide, np.greater, np.arctan2])
@pytest.mark.parametrize("shapes", _CASES)
def test_equals_the_ufunc_bit_for_bit(ufunc, shapes):
    rng = np.random.default_rng(0)
    a, b = (_arrays(rng, s, np.float32) for s in shapes)
    b[..., 0] = np.nan  # NaN propagates through the same elements
    fast = tiled_broadcast(ufunc, a.shape, b.shape)
    want = ufunc(a, b)
    if fast is None:
        return
    got = fast(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_serves_the_bias_add_and_declines_the_rest():
    assert tiled_broadcast(np.add, (128, 24, 24, 6), (6,)) is not None
    assert tiled_broadcast(np.add, (6,), (128, 24, 24, 6)) is not None
    assert tiled_broadcast(np.add, (100003, 3), (3,)) is None       # no row width divides
    assert tiled_broadcast(np.add, (2, 3, 4096), (3, 1)) is None    # not a trailing block
    assert tiled_broadcast(np.add, (128, 6), (6,)) is None          # too small to pay
    assert tiled_broadcast(np.add, (625, 32), (32,)) is None        # too few short loops
    assert tiled_broadcast(np.add, (640, 10, 2), (2,)) is not None  # 6,400 of them
    assert tiled_broadcast(np.add, (4096, 64), (64,)) is None       # rows already long
    assert tiled_broadcast(np.add, (4096, 8), (4096, 8)) is None    # no broadcast
    assert tiled_broadcast(np.add, (3, 5), (4, 5)) is None          # not broadcastable
    assert tiled_broadcast(np.add, (1, 6), (4096, 1)) is None       # both broadcast


@pytest.mark.parametrize("ufunc", [np.maximum, np.minimum])
@pytest.mark.parametrize("scalar", [0.0, -0.0, 0.5, np.nan, -np.inf])
def test_a_float32_scalar_against_a_large_array_is_tiled_for_maximum_and_minimum(ufunc,
                                                                                 scalar):
    """maximum and minimum have no SIMD loop for a scalar operand: in float32 it is tiled
    into a row, with the ufunc's values (NaN, signed zeros, ties)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 32, 32)).astype(np.float32)
    x.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 0.5]
    c = np.asarray(scalar, np.float32)
    f32 = (np.float32, np.float32)
    for a, b in ((x, c), (c, x), (x, c.reshape(1, 1))):
        fast = tiled_broadcast(ufunc, a.shape, b.shape, f32)
        assert fast is not None
        want, got = ufunc(a, b), fast(a, b)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    assert tiled_broadcast(ufunc, (255, 257), (), f32) is None       # no row width divides
    assert tiled_broadcast(ufunc, (64, 64), (), f32) is None         # too small to pay
    assert tiled_broadcast(np.add, (64, 32, 32), (), f32) is None    # add has its scalar loop
    for dtypes in ((np.float64, np.float64), (np.float32, np.float64), (np.int32, np.int32)):
        assert tiled_broadcast(ufunc, x.shape, (), dtypes) is None   # float32 only
    assert tiled_broadcast(ufunc, x.shape, ()) is None               # dtypes unknown
    assert tiled_broadcast(ufunc, (1 << 22,), (), f32) is None       # 16 MiB: past the cache


@pytest.mark.parametrize("dtypes", [(np.float64, np.float32), (np.int8, np.float32),
                                    (np.int32, np.int64), (np.complex64, np.float64)])
def test_dtype_promotion_is_the_ufuncs(dtypes):
    rng = np.random.default_rng(1)
    a = _arrays(rng, (64, 16, 16, 4), dtypes[0])
    b = _arrays(rng, (4,), dtypes[1])
    for x, y in ((a, b), (b, a)):
        fast = tiled_broadcast(np.multiply, x.shape, y.shape)
        want = np.multiply(x, y)
        got = fast(x, y)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_layouts_and_out_targets():
    rng = np.random.default_rng(2)
    b = rng.standard_normal(6).astype(np.float32)
    base = rng.standard_normal((6, 32, 32, 64)).astype(np.float32)
    strided = np.transpose(base, (3, 2, 1, 0))       # [64, 32, 32, 6], not C-contiguous
    fast = tiled_broadcast(np.add, strided.shape, b.shape)
    np.testing.assert_array_equal(fast(strided, b), strided + b)
    # into a C-contiguous out, as the replay's buffer reuse passes it
    x = np.ascontiguousarray(strided)
    out = np.empty_like(x)
    assert fast(x, b, out=out) is out
    np.testing.assert_array_equal(out, x + b)
    # in place over an operand (the reused buffer is the large input itself)
    want = x + b
    assert fast(x, b, out=x) is x
    np.testing.assert_array_equal(x, want)
    # into an F-ordered out: NumPy's own path, still written in place
    out_f = np.asfortranarray(np.zeros_like(x))
    assert fast(x, b, out=out_f) is out_f
    np.testing.assert_array_equal(out_f, x + b)


def test_traced_bias_add_replays_as_eager_with_reuse():
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((128, 24, 24, 6)).astype(np.float32))
    b = tf.Variable(rng.standard_normal(6).astype(np.float32))

    def f(x):
        h = tf.nn.relu(x * 2.0 + b)         # the add's output buffer is reused by relu
        return tf.reduce_sum(h * h + b, axis=[1, 2])

    traced = tf.function(f)
    want = f(x).numpy()
    for _ in range(COMPILE_AFTER + 2):      # the plan interpreter, then compiled code
        np.testing.assert_array_equal(traced(x).numpy(), want)
    b.assign(b * -1.5)                       # a new bias value: read at every replay
    np.testing.assert_array_equal(traced(x).numpy(), f(x).numpy())
    g = traced.get_concrete_function(x).graph
    adds = [n for n in g.nodes if isinstance(n, Node) and n.prim.name == "add"]
    assert adds and any(node_impl(g, n) is not n.prim.impl for n in adds)


_SPECIALS = [0.0, -0.0, 1.0, -2.5, 1e-310, 1e308, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.divide])
def test_scalar_operators_equal_the_ufunc_bit_for_bit(ufunc, dtype):
    """Every pair of special values (signed zeros, subnormals, overflow, inf, NaN), as
    NumPy scalars and as rank-0 arrays (an input the replay did not make): the operator a
    rank-0 float node runs by gives the ufunc's value, dtype and warnings."""
    g = tf.function(_binary(ufunc))
    spec = tf.TensorSpec((), dtype)
    cf = g.get_concrete_function(spec, spec)
    (node,) = [n for n in cf.graph.nodes if isinstance(n, Node)]
    fast = node_impl(cf.graph, node)
    assert fast is not ufunc
    for x in _SPECIALS:
        for y in _SPECIALS:
            with np.errstate(all="ignore"):
                pairs = ((dtype(x), dtype(y)), (np.array(x, dtype), np.array(y, dtype)))
            for a, b in pairs:
                with np.errstate(all="ignore"):
                    want = ufunc(a, b)
                    got = fast(a, b)
                assert np.asarray(got).dtype == np.asarray(want).dtype
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (x, y)
    if ufunc is np.divide:
        with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
            fast(dtype(1.0), dtype(0.0))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_scalar_negation_equals_the_ufunc_bit_for_bit(dtype):
    cf = tf.function(tf.negative).get_concrete_function(tf.TensorSpec((), dtype))
    (node,) = [n for n in cf.graph.nodes if isinstance(n, Node)]
    fast = node_impl(cf.graph, node)
    assert fast is not np.negative
    for x in _SPECIALS:
        with np.errstate(all="ignore"):
            a = dtype(x)
        got, want = fast(a), np.negative(a)
        assert type(got) is type(want) and got.tobytes() == want.tobytes(), x


def _binary(ufunc):
    return {np.add: tf.add, np.subtract: tf.subtract, np.multiply: tf.multiply,
            np.divide: tf.divide}[ufunc]


@pytest.mark.parametrize("shapes", [((), (3,)), ((3,), ())])
def test_scalar_operators_only_for_rank_0_floats_of_one_dtype(shapes):
    """A broadcast against an array, an integer, a complex (whose scalar product signs a
    NaN differently) or a bfloat16 keeps the ufunc."""
    def first_node(fn, *specs):
        cf = tf.function(fn).get_concrete_function(*specs)
        (node,) = [n for n in cf.graph.nodes if isinstance(n, Node)]
        return node_impl(cf.graph, node), node.prim.impl

    fast, impl = first_node(tf.multiply, *(tf.TensorSpec(s, tf.float64) for s in shapes))
    assert fast is impl
    for dtype in (tf.int64, tf.int32, tf.complex128, tf.bfloat16):
        fast, impl = first_node(tf.multiply, tf.TensorSpec((), dtype), tf.TensorSpec((), dtype))
        assert fast is impl, dtype
    fast, impl = first_node(tf.negative, tf.TensorSpec((), tf.float32))
    assert fast is not impl


def test_scalar_code_replays_as_eager():
    """A cofactor determinant's gradient (scalar code, the case the operators serve)
    replays bit for bit as the plan interpreter ran it, before and after compiling."""
    rng = np.random.default_rng(4)
    a = tf.constant(rng.standard_normal((4, 4)))

    def det_gradient(m):
        with tf.GradientTape() as tape:
            tape.watch(m)
            e = [[m[i, j] for j in range(4)] for i in range(4)]
            d = sum(((-1) ** j) * e[0][j] * _minor3(e, j) for j in range(4))
        return tape.gradient(d, m)

    traced = tf.function(det_gradient)
    first = traced(a).numpy()
    for _ in range(COMPILE_AFTER + 2):
        np.testing.assert_array_equal(traced(a).numpy(), first)
    want = np.linalg.det(a.numpy()) * np.linalg.inv(a.numpy()).T
    np.testing.assert_allclose(first, want, rtol=1e-12)
    np.testing.assert_allclose(det_gradient(a).numpy(), first, rtol=1e-12)


def _minor3(e, skip):
    cols = [c for c in range(4) if c != skip]
    r = [[e[i][c] for c in cols] for i in (1, 2, 3)]
    return (r[0][0] * (r[1][1] * r[2][2] - r[1][2] * r[2][1])
            - r[0][1] * (r[1][0] * r[2][2] - r[1][2] * r[2][0])
            + r[0][2] * (r[1][0] * r[2][1] - r[1][1] * r[2][0]))


def test_traced_clip_by_value_replays_as_eager_with_tiled_scalars():
    """clip_by_value is minimum then maximum with scalars: both tiled in the replay."""
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((256, 512)).astype(np.float32))

    def f(x):
        return tf.clip_by_value(x * 3.0, -1.0, 1.0) + tf.maximum(x, 0.0)

    traced = tf.function(f)
    want = f(x).numpy()
    for _ in range(COMPILE_AFTER + 2):
        np.testing.assert_array_equal(traced(x).numpy(), want)
    g = traced.get_concrete_function(x).graph
    extrema = [n for n in g.nodes if isinstance(n, Node) and n.prim.name in ("maximum", "minimum")]
    assert len(extrema) == 3 and all(node_impl(g, n) is not n.prim.impl for n in extrema)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.bool_, np.complex64])
@pytest.mark.parametrize("shapes", [((1,), (14,)), ((3, 1), (3, 5)), ((), (7,)), ((1, 1), (16, 16)),
                                    ((4,), (2, 3, 4)), ((2, 1, 3), (5, 2, 4, 3))], ids=str)
def test_broadcasts_are_numpys_view_made_from_the_static_shapes(shapes, dtype):
    """broadcast_to replays as the view np.broadcast_to makes (the same strides, read-only,
    on the same memory), made from the graph's static shapes; inputs of another layout
    take np.broadcast_to. The traced function gives eager's values."""
    small, big = shapes
    g = tf.function(lambda x: tf.broadcast_to(x, big))
    cf = g.get_concrete_function(tf.TensorSpec(small, dtype))
    (node,) = [n for n in cf.graph.nodes if isinstance(n, Node) and n.prim.name == "broadcast_to"]
    fast = node_impl(cf.graph, node)
    assert fast is not node.prim.impl
    rng = np.random.default_rng(5)
    x = np.asarray(rng.standard_normal(small) * 3).astype(dtype)
    for value in [x, np.asfortranarray(x)] + ([x[..., ::-1]] if x.ndim else []):
        got, want = fast(value), np.broadcast_to(value, big)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.strides == want.strides and not got.flags.writeable
        assert np.shares_memory(got, value) or value.size <= 1
        np.testing.assert_array_equal(got, want)
    for _ in range(COMPILE_AFTER + 2):
        np.testing.assert_array_equal(g(tf.constant(x)).numpy(), np.broadcast_to(x, big))
