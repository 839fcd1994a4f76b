"""NOTE(blas-threads) in tapeflow/blas.py: products small enough to stall on a busy machine
run on one OpenBLAS thread, larger ones as OpenBLAS chooses; the thread count is always
restored, and each result is NumPy's at the thread count the product ran on."""

from __future__ import annotations

import numpy as np
import pytest

from tapeflow import blas

CONTROLS = blas._thread_controls()
needs_openblas = pytest.mark.skipif(not CONTROLS or CONTROLS[0]() < 2,
                                    reason="no multithreaded OpenBLAS to drive here")


def _threads_during(monkeypatch, a, b):
    """The OpenBLAS thread count while blas.matmul(a, b) runs its product."""
    get = CONTROLS[0]
    seen = []
    real = np.matmul

    def spy(x, y):
        seen.append(get())
        return real(x, y)

    monkeypatch.setattr(blas.np, "matmul", spy)
    blas.matmul(a, b)
    return seen[0]


@needs_openblas
def test_a_mid_sized_product_runs_on_one_thread_and_the_count_is_restored(monkeypatch):
    before = CONTROLS[0]()
    a, b = np.ones((128, 128), np.float32), np.ones((128, 128), np.float32)  # 2^21
    assert _threads_during(monkeypatch, a, b) == 1
    assert CONTROLS[0]() == before


@needs_openblas
@pytest.mark.parametrize("n", [16, 1024], ids=["small", "large"])
def test_small_and_large_products_are_left_to_openblas(monkeypatch, n):
    before = CONTROLS[0]()
    a = np.ones((n, n), np.float32)
    assert _threads_during(monkeypatch, a, a) == before


@needs_openblas
def test_the_count_is_restored_when_the_product_fails():
    before = CONTROLS[0]()
    with pytest.raises(ValueError):
        blas.matmul(np.ones((128, 128)), np.ones((129, 128)))
    assert CONTROLS[0]() == before


@pytest.mark.parametrize("shapes", [((128, 128), (128, 128)), ((3, 200, 64), (64, 96)),
                                    ((300,), (300, 900)), ((64, 4096), (4096,)),
                                    ((2, 3), (3, 4))], ids=str)
def test_results_equal_numpys_bit_for_bit(shapes):
    """Bit for bit NumPy's product on the thread count blas.matmul chose, and within
    float32 rounding of NumPy's on the machine's count: some CPUs' OpenBLAS kernels round
    differently on two threads (NOTE(blas-threads))."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    ours = blas.matmul(a, b)
    np.testing.assert_allclose(ours, np.matmul(a, b), rtol=1e-4, atol=1e-4)
    if CONTROLS:
        get, put = CONTROLS
        before = get()
        work = (a.shape[-2] if a.ndim > 1 else 1) * (b.shape[-1] if b.ndim > 1 else 1) * a.shape[-1]
        put(1 if blas._OPENBLAS_ALONE < work <= blas.ONE_THREAD_UP_TO else before)
        try:
            theirs = np.matmul(a, b)
        finally:
            put(before)
    else:
        theirs = np.matmul(a, b)
    np.testing.assert_array_equal(ours, theirs)


def test_without_openblas_or_switched_off_it_is_numpys_matmul(monkeypatch):
    a = np.ones((128, 128))
    monkeypatch.setattr(blas, "_controls", False)
    np.testing.assert_array_equal(blas.matmul(a, a), np.matmul(a, a))
    monkeypatch.setattr(blas, "_controls", None)
    monkeypatch.setattr(blas, "ONE_THREAD_UP_TO", 0)
    np.testing.assert_array_equal(blas.matmul(a, a), np.matmul(a, a))


@pytest.mark.parametrize("shapes", [((5, 1), (1, 4)), ((3, 5, 1), (3, 1, 4)), ((2, 1, 5, 1), (3, 1, 4)),
                                    ((1, 1), (1, 1))], ids=str)
def test_outer_products_equal_numpys_matmul(shapes):
    """One-column times one-row: a broadcast multiply, the same values and shape."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s) for s in shapes)
    np.testing.assert_array_equal(blas.matmul(a, b), np.matmul(a, b))


def test_a_mismatched_product_still_raises():
    """[5,1] @ [5,4] is not an outer product: matmul's error, not a broadcast; a narrow
    product with mismatched inner sizes is NumPy's error for the whole product."""
    with pytest.raises(ValueError):
        blas.matmul(np.ones((5, 1)), np.ones((5, 4)))
    with pytest.raises(ValueError, match="300 is different from 256"):
        blas.matmul(np.ones((4096, 256), np.float32), np.ones((300, 8), np.float32))


@needs_openblas
@pytest.mark.parametrize("n,one_thread", [(128, True), (1024, False)], ids=["mid", "large"])
def test_einsum_contractions_are_sized_like_products(monkeypatch, n, one_thread):
    """einsum's impl bounds each BLAS product by the naive contraction's size: a
    128-cubed contraction runs on one thread, a 1024-cubed one as OpenBLAS chooses."""
    from tapeflow.ops.einsum import einsum_p

    get, before, seen = CONTROLS[0], CONTROLS[0](), []
    real = np.einsum

    def spy(*args, **kwargs):
        seen.append(get())
        return real(*args, **kwargs)

    monkeypatch.setattr(blas.np, "einsum", spy)
    a = np.ones((n, n), np.float32)
    out = einsum_p.impl(a, a, spec="ij,jk->ik")
    assert seen == [1 if one_thread else before] and CONTROLS[0]() == before
    assert out.shape == (n, n) and out[0, 0] == n


@pytest.mark.parametrize("shapes", [((25, 73728), (73728, 6)), ((3, 16, 20000), (20000, 8)),
                                    ((2, 1, 16, 8193), (5, 8193, 8)), ((64, 8192), (8192, 64))])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
def test_long_inner_products_sum_chunks_to_numpys_value(monkeypatch, shapes, dtype):
    # NOTE(long-k): the product is taken as a sum over inner chunks (spied on), and
    # equals NumPy's single product to the rounding of a blocked sum.
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    if np.dtype(dtype).kind == "c":
        a, b = a + 1j * a[..., ::-1], b - 1j * b
    calls = []
    real = np.matmul
    monkeypatch.setattr(blas.np, "matmul", lambda x, y: calls.append(x.shape[-1]) or real(x, y))
    got = blas.matmul(a, b)
    want = real(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert len(calls) == -(-shapes[0][-1] // blas._K_CHUNK) and max(calls) == blas._K_CHUNK
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(shapes[0][-1]))


def test_long_inner_products_with_a_large_result_or_integers_are_one_product(monkeypatch):
    calls = []
    real = np.matmul
    monkeypatch.setattr(blas.np, "matmul", lambda x, y: calls.append(1) or real(x, y))
    blas.matmul(np.ones((65, 8192)), np.ones((8192, 64)))      # a result of 65*64
    blas.matmul(np.ones((8, 8191)), np.ones((8191, 8)))        # inner dim under 4 chunks
    blas.matmul(np.ones((8, 9000), np.int64), np.ones((9000, 8), np.int64))
    blas.matmul(np.ones((8, 9000)), np.ones(9000))              # a matrix-vector product
    blas.matmul(np.ones((9, 10816)), np.ones((10816, 8)))       # a result of 72: too small
    assert len(calls) == 5


needs_any_openblas = pytest.mark.skipif(not CONTROLS, reason="NumPy's BLAS is not OpenBLAS")


def _spy_products(monkeypatch):
    calls = []
    real = np.matmul

    def spy(x, y, **kwargs):
        calls.append((x.shape, y.shape))
        return real(x, y, **kwargs)

    monkeypatch.setattr(blas.np, "matmul", spy)
    return calls


@needs_any_openblas
@pytest.mark.parametrize("shapes", [((4096, 256), (256, 8)), ((1001, 250), (250, 4)),
                                    ((4097, 64), (64, 12)), ((3000, 700), (700, 2))], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b_order", ["C", "F"])
def test_narrow_products_run_as_row_blocks_under_the_small_kernel_limit(monkeypatch, shapes,
                                                                        dtype, b_order):
    """NOTE(row-blocks): a product with 2..12 columns above OpenBLAS's small-kernel limit
    runs as blocks of rows, each at most 10^6 multiply-adds, each block NumPy's product of
    those rows into a C-ordered buffer bit for bit (NumPy may call BLAS in another form
    for an array of its own: an F-ordered `b` rounds differently then); the whole within
    rounding of a float64 product."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = np.asarray(rng.standard_normal(shapes[1]).astype(dtype), order=b_order)
    calls = _spy_products(monkeypatch)
    got = blas.matmul(a, b)
    monkeypatch.undo()
    (m, k), n = a.shape, b.shape[1]
    assert got.shape == (m, n) and got.dtype == dtype
    assert len(calls) >= -(-m * n * k // blas._SMALL_KERNEL) > 1
    assert sum(x[0] for x, _ in calls) == m
    assert all(x[0] * x[1] * n <= blas._SMALL_KERNEL for x, _ in calls)
    get, put = CONTROLS
    before, start = get(), 0
    put(1)  # the blocks ran on one thread, as the whole product would (NOTE(blas-threads))
    try:
        for x, _ in calls:
            block = np.matmul(a[start:start + x[0]], b, out=np.empty((x[0], n), dtype))
            np.testing.assert_array_equal(got[start:start + x[0]], block)
            start += x[0]
    finally:
        put(before)
    want = a.astype(np.float64) @ b.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(k))


@needs_any_openblas
def test_other_products_are_one_product(monkeypatch):
    """One column (a matrix-vector product), more than 12, a product under the limit or
    above the one-thread bound, a transposed `a`, mixed or integer dtypes, an inner size
    so long that 16 rows pass the limit: one call."""
    calls = _spy_products(monkeypatch)
    f32 = np.float32
    blas.matmul(np.ones((4096, 256), f32), np.ones((256, 1), f32))
    blas.matmul(np.ones((4096, 256), f32), np.ones((256, 13), f32))
    blas.matmul(np.ones((1000, 250), f32), np.ones((250, 4), f32))      # 10^6 exactly
    blas.matmul(np.ones((1 << 16, 256), f32), np.ones((256, 2), f32))   # over 2^24
    blas.matmul(np.ones((256, 4096), f32).T, np.ones((256, 8), f32))
    blas.matmul(np.ones((4096, 256), f32), np.ones((256, 8)))
    blas.matmul(np.ones((4096, 256), np.int64), np.ones((256, 8), np.int64))
    blas.matmul(np.ones((2, 4096, 256), f32), np.ones((256, 8), f32))
    blas.matmul(np.ones((50, 40000), f32), np.ones((40000, 2), f32))  # 16 rows over 10^6
    assert len(calls) == 9
    monkeypatch.setattr(blas, "_controls", False)  # another BLAS: left alone
    blas.matmul(np.ones((4096, 256), f32), np.ones((256, 8), f32))
    assert len(calls) == 10


@pytest.mark.parametrize("shapes", [((64, 1), (1, 48)),            # an outer product
                                    ((64, 8192), (8192, 64)),      # long inner dimension
                                    ((4096, 256), (256, 8)),       # row blocks
                                    ((300, 70), (70, 50))],        # one product
                         ids=["outer", "long k", "row blocks", "plain"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_a_product_into_out_has_the_bits_of_the_returned_one(shapes, dtype):
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    want = blas.matmul(a, b)
    out = np.full(want.shape, np.nan, dtype)
    got = blas.matmul(a, b, out=out)
    assert got is out
    assert out.tobytes() == want.tobytes()
