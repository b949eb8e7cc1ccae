"""Sorting and searching in plax.numpy against NumPy: sort/argsort options, searchsorted
(every side and method), digitize, lexsort, partition, unique and the set operations
(with size= under jit), nonzero with size=, bincount, histograms.

Each group computes its cases in one jitted function per dtype (compiling is the
cost), plus a few eager calls; JAX's own choices where they differ from NumPy (int32
indices, fill values) are checked against JAX in tests/test_numpy_vs_jax.py.
"""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.errors import ConcretizationTypeError

F32, I32, U8, C64 = (np.dtype(t) for t in (np.float32, np.int32, np.uint8, np.complex64))


def values(dtype, shape, salt=0, nan=False):
    rng = np.random.default_rng(salt)
    if dtype == np.dtype(bool):
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0 if dtype.kind == "u" else -3, 4, shape).astype(dtype)
    x = rng.integers(-3, 4, shape).astype(np.float64) / 2  # ties on purpose
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.integers(-1, 2, shape)
    x = x.astype(dtype)
    if nan and x.size:
        x.flat[::5] = np.nan
    return x


def assert_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want.astype(got.dtype) if want.dtype != got.dtype and
                                  got.dtype.kind != want.dtype.kind else want)


def check_all(results: dict, expected: dict):
    assert sorted(results) == sorted(expected)
    for key in expected:
        got, want = results[key], expected[key]
        if isinstance(want, tuple):
            assert len(got) == len(want), key
            for g, w in zip(got, want):
                assert_equal(g, w)
        else:
            try:
                assert_equal(got, want)
            except AssertionError as err:
                raise AssertionError(f"{key}: {err}") from None


# --- sort and argsort ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [F32, I32, C64, np.dtype(bool)], ids=str)
def test_sort_and_argsort_match_numpy(dtype):
    x = values(dtype, (3, 5), nan=dtype.kind in "fc")
    flat_desc = np.argsort(x[:, ::-1], axis=1, kind="stable")[:, ::-1]

    def body(x):
        return {"sort": jnp.sort(x), "sort0": jnp.sort(x, axis=0), "flat": jnp.sort(x, None),
                "desc": jnp.sort(x, descending=True), "argsort": jnp.argsort(x, stable=True),
                "argsort_desc": jnp.argsort(x, descending=True),
                "argsort_flat": jnp.argsort(x, axis=None)}

    expected = {"sort": np.sort(x), "sort0": np.sort(x, axis=0), "flat": np.sort(x, None),
                "desc": np.sort(x)[:, ::-1], "argsort": np.argsort(x, kind="stable"),
                "argsort_desc": x.shape[1] - 1 - flat_desc,
                "argsort_flat": np.argsort(x, axis=None, kind="stable")}
    check_all(plax.jit(body)(x), expected)


def test_sort_of_empty_and_0d():
    assert jnp.sort(np.zeros((0, 3), F32)).shape == (0, 3)
    assert_equal(jnp.sort(np.float32(2.0), axis=None), np.array([2.0], F32))
    assert jnp.argsort(np.zeros((2, 0), I32)).shape == (2, 0)
    with pytest.raises(TypeError, match="order"):
        jnp.sort(np.zeros(3), order="x")


# --- searchsorted, digitize ------------------------------------------------------------------

METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


@pytest.mark.parametrize("dtype", [F32, I32, U8, C64], ids=str)
def test_searchsorted_every_side_and_method(dtype):
    a = np.sort(values(dtype, (7,), salt=1, nan=dtype.kind in "fc"))
    v = values(dtype, (2, 4), salt=2, nan=dtype.kind in "fc")
    perm = np.random.default_rng(3).permutation(7)
    unsorted = a[np.argsort(perm)]  # a == unsorted[perm]: a sorter

    def body(a, v, scalar, unsorted, perm):
        out = {}
        for side in ("left", "right"):
            for method in METHODS:
                out[f"{side}-{method}"] = jnp.searchsorted(a, v, side, method=method)
                out[f"{side}-{method}-0d"] = jnp.searchsorted(a, scalar, side, method=method)
                out[f"{side}-{method}-empty"] = jnp.searchsorted(a, v[:0], side, method=method)
            out[f"{side}-sorter"] = jnp.searchsorted(unsorted, v, side, sorter=perm)
        return out

    expected = {}
    for side in ("left", "right"):
        for method in METHODS:
            expected[f"{side}-{method}"] = np.searchsorted(a, v, side).astype(np.int32)
            expected[f"{side}-{method}-0d"] = np.searchsorted(a, v[0, 1], side).astype(np.int32)
            expected[f"{side}-{method}-empty"] = np.zeros((0, 4), np.int32)
        expected[f"{side}-sorter"] = np.searchsorted(unsorted, v, side, sorter=perm)
    results = plax.jit(body)(a, v, v[0, 1], unsorted, perm)
    check_all(results, expected)
    assert {np.asarray(r).dtype for r in results.values()} == {np.dtype(np.int32)}


def test_searchsorted_eagerly_and_errors():
    a = np.array([1.0, 2.0, 2.0, np.nan], F32)
    assert_equal(jnp.searchsorted(a, np.array([2.0, np.nan, -np.inf], F32)), [1, 3, 0])
    assert_equal(jnp.searchsorted(np.zeros(0, F32), np.ones(3, F32)), [0, 0, 0])
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.searchsorted(np.zeros((2, 2)), 1.0)
    with pytest.raises(ValueError, match="side"):
        jnp.searchsorted(a, 1.0, side="middle")
    with pytest.raises(ValueError, match="method"):
        jnp.searchsorted(a, 1.0, method="bisect")


def test_digitize_lexsort_sort_complex():
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 9.0], F32)
    up, down = np.array([0.0, 1.0, 2.0], F32), np.array([2.0, 1.0, 0.0], F32)
    keys = (values(I32, (6,), 4), values(I32, (6,), 5))
    grid = values(I32, (2, 3, 4), 6)

    def body(x, up, down, k0, k1, grid):
        return {"up": jnp.digitize(x, up), "up_right": jnp.digitize(x, up, right=True),
                "down": jnp.digitize(x, down), "down_right": jnp.digitize(x, down, True),
                "empty_bins": jnp.digitize(x, up[:0]), "lexsort": jnp.lexsort((k0, k1)),
                "lexsort_axis0": jnp.lexsort((grid, grid[::-1]), axis=0),
                "lexsort_array": jnp.lexsort(jnp.stack([k0, k1])),
                "sort_complex": jnp.sort_complex(k0)}

    expected = {"up": np.digitize(x, up), "up_right": np.digitize(x, up, right=True),
                "down": np.digitize(x, down), "down_right": np.digitize(x, down, True),
                "empty_bins": np.zeros(6, np.int32), "lexsort": np.lexsort(keys),
                "lexsort_axis0": np.lexsort((grid, grid[::-1]), axis=0),
                "lexsort_array": np.lexsort(np.stack(keys)),
                "sort_complex": np.sort_complex(keys[0]).astype(C64)}
    check_all(plax.jit(body)(x, up, down, *keys, grid), expected)
    assert_equal(jnp.lexsort([np.int32(3)]), 0)
    with pytest.raises(TypeError, match="len > 0"):
        jnp.lexsort([])
    with pytest.raises(ValueError, match="same shape"):
        jnp.lexsort((np.zeros(2), np.zeros(3)))
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.digitize(x, np.zeros((2, 2)))


@pytest.mark.parametrize("dtype", [F32, I32, U8], ids=str)
def test_partition_and_argpartition(dtype):
    x = values(dtype, (3, 6), 7)
    x[0, 1] = np.iinfo(dtype).min if dtype.kind in "iu" else -np.inf
    outs = plax.jit(lambda x: [(jnp.partition(x, k, axis), jnp.argpartition(x, k, axis))
                               for k, axis in ((2, -1), (0, -1), (-1, 1), (1, 0))])(x)
    for (part, arg), (k, axis) in zip(outs, ((2, -1), (0, -1), (-1, 1), (1, 0))):
        arg = np.asarray(arg)
        assert arg.dtype == np.int32
        np.testing.assert_array_equal(np.sort(arg, axis), np.sort(np.argsort(x, axis), axis))
        kth = k % x.shape[axis]
        want = np.take(np.sort(x, axis), [kth], axis)
        for out in (np.asarray(part), np.take_along_axis(x, arg, axis)):
            np.testing.assert_array_equal(np.take(out, [kth], axis), want)
            assert (np.take(out, range(kth), axis) <= want).all()
            assert (np.take(out, range(kth + 1, x.shape[axis]), axis) >= want).all()
            np.testing.assert_array_equal(np.sort(out, axis), np.sort(x, axis))
    with pytest.raises(NotImplementedError, match="complex"):
        jnp.partition(np.zeros(3, C64), 1)
    with pytest.raises(ValueError, match="out of bounds"):
        jnp.partition(np.zeros(3), 3)


# --- unique and set operations -----------------------------------------------------------------

def _padded(x, size, fill):
    x = np.asarray(x)
    return np.concatenate([x[:size], np.full(max(size - len(x), 0), fill, x.dtype)])


@pytest.mark.parametrize("dtype", [F32, I32, C64], ids=str)
def test_unique_matches_numpy(dtype):
    x = values(dtype, (3, 4), 8, nan=dtype != I32)
    rows = values(dtype, (5, 2), 9)
    rows[3] = rows[1]
    got = jnp.unique(x, True, True, True)
    want = np.unique(x, True, True, True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(jnp.unique(rows, True, True, True, axis=0),
                    np.unique(rows, True, True, True, axis=0)):
        np.testing.assert_array_equal(g, w)
    # The array API forms sort (NumPy >= 2.3 leaves them unsorted) and keep NaNs apart.
    everything = np.unique(x, True, True, True, equal_nan=False)
    for g, w in zip(jnp.unique_all(x), everything):
        np.testing.assert_array_equal(g, np.reshape(w, np.shape(g)))
    np.testing.assert_array_equal(jnp.unique_values(x), everything[0])
    np.testing.assert_array_equal(jnp.unique_counts(x).counts, everything[3])
    np.testing.assert_array_equal(jnp.unique_inverse(x).inverse_indices,
                                  everything[2].reshape(x.shape))
    values_, index, inverse, counts = np.unique(x, True, True, True)
    n = len(values_)

    def body(x):
        return {"fill": jnp.unique(x, size=n + 2, fill_value=7),
                "cut": jnp.unique(x, size=max(n - 1, 1)),
                "all": jnp.unique(x, True, True, True, size=n + 1),
                "counts": jnp.unique_counts(x, size=n + 1, fill_value=0)}

    out = plax.jit(body)(x)
    np.testing.assert_array_equal(out["fill"], _padded(values_, n + 2, 7))
    np.testing.assert_array_equal(out["cut"], values_[:max(n - 1, 1)])
    padded = [_padded(values_, n + 1, values_[0]), _padded(index, n + 1, index[0]), inverse,
              _padded(counts, n + 1, 0)]
    for g, w in zip(out["all"], padded):
        np.testing.assert_array_equal(g, w)


def test_unique_edge_cases_and_errors():
    assert_equal(jnp.unique(np.zeros(0, F32)), np.zeros(0, F32))
    assert_equal(jnp.unique(np.float32(3.0)), [3.0])
    assert_equal(jnp.unique(np.zeros((3, 0)), axis=0, return_counts=True)[1], [3])
    assert_equal(jnp.unique(np.zeros(0, F32), size=2, fill_value=1.0), [1.0, 1.0])
    with pytest.raises(ValueError, match="fill_value must be specified"):
        jnp.unique(np.zeros(0, F32), size=2)
    with pytest.raises(ConcretizationTypeError, match="size"):
        plax.jit(jnp.unique)(np.arange(3))
    assert_equal(jnp.unique(np.array([np.nan, np.nan], F32)), [np.nan])
    assert_equal(jnp.unique(np.array([np.nan, np.nan], F32), equal_nan=False), [np.nan, np.nan])


def test_set_operations_match_numpy():
    a = np.array([5, 1, 3, 3, 7, 1, 9], np.int32)
    b = np.array([3, 2, 9, 9, 4], np.int32)
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        assert_equal(getattr(jnp, name)(a, b), getattr(np, name)(a, b))
    for g, w in zip(jnp.intersect1d(a, b, return_indices=True),
                    np.intersect1d(a, b, return_indices=True)):
        assert_equal(g, w)
    ua, ub = np.unique(a), np.unique(b)
    assert_equal(jnp.setdiff1d(a[::-1][:3], ub, assume_unique=True),
                 np.setdiff1d(a[::-1][:3], ub, assume_unique=True))
    assert_equal(jnp.setxor1d(ua, ub, assume_unique=True), np.setxor1d(ua, ub, True))
    assert_equal(jnp.isin(a.reshape(7, 1), b), np.isin(a.reshape(7, 1), b))
    for method in ("compare_all", "binary_search", "sort"):
        assert_equal(jnp.isin(a, b, method=method), np.isin(a, b))
        assert_equal(jnp.isin(a, b, invert=True, method=method), np.isin(a, b, invert=True))

    def body(a, b):
        return {"union": jnp.union1d(a, b, size=9, fill_value=-1),
                "inter": jnp.intersect1d(a, b, size=3, fill_value=-1),
                "inter_idx": jnp.intersect1d(a, b, return_indices=True, size=3),
                "diff": jnp.setdiff1d(a, b, size=5),
                "xor": jnp.setxor1d(a, b, size=8, fill_value=0),
                "isin": jnp.isin(a, b, method="sort")}

    out = plax.jit(body)(a, b)
    assert_equal(out["union"], _padded(np.union1d(a, b), 9, -1))
    assert_equal(out["inter"], _padded(np.intersect1d(a, b), 3, -1))
    values_, ia, ib = np.intersect1d(a, b, return_indices=True)
    for g, w in zip(out["inter_idx"], (_padded(values_, 3, values_.min()), _padded(ia, 3, 7),
                                       _padded(ib, 3, 5))):
        assert_equal(g, w)
    assert_equal(out["diff"], _padded(np.setdiff1d(a, b), 5, 0))
    assert_equal(out["xor"], _padded(np.setxor1d(a, b), 8, 0))
    assert_equal(out["isin"], np.isin(a, b))
    assert_equal(jnp.isin(np.zeros(0, I32), b), np.zeros(0, bool))
    assert_equal(jnp.setdiff1d(np.zeros(0, I32), b, size=2, fill_value=4), [4, 4])
    with pytest.raises(ValueError, match="method"):
        jnp.isin(a, b, method="hash")


# --- nonzero with size, bincount, histograms ----------------------------------------------------

def test_nonzero_family_with_size_under_jit():
    x = np.array([[0, 3, 0], [5, 0, 6]], np.int32)
    out = plax.jit(lambda x: (jnp.nonzero(x, size=4, fill_value=-1),
                              jnp.argwhere(x, size=2), jnp.flatnonzero(x, size=5),
                              jnp.where(x > 3, size=1)))(x)
    rows, cols = np.nonzero(x)
    assert_equal(out[0][0], _padded(rows, 4, -1))
    assert_equal(out[0][1], _padded(cols, 4, -1))
    assert_equal(out[1], np.argwhere(x)[:2])
    assert_equal(out[2], _padded(np.flatnonzero(x), 5, 0))
    assert_equal(out[3][1], [0])


def test_bincount():
    x = np.array([0, 1, 1, 3, 7], np.int32)
    w = np.array([0.5, 1.0, 2.0, 3.0, 4.0], F32)
    assert_equal(jnp.bincount(x), np.bincount(x))
    assert_equal(jnp.bincount(x, w, minlength=10), np.bincount(x, w, minlength=10))
    out = plax.jit(lambda x, w: (jnp.bincount(x, length=4), jnp.bincount(x, w, length=9)))(x, w)
    assert_equal(out[0], np.bincount(x)[:4])  # values past the length are dropped
    assert_equal(out[1], np.bincount(x, w, minlength=9))
    assert_equal(jnp.bincount(np.array([-2, 0, 1], np.int32)), [2, 1])  # as JAX: clipped to 0
    assert_equal(jnp.bincount(np.array([True, True, False])), [1, 2])
    assert_equal(jnp.bincount(np.zeros(0, np.int32)), np.zeros(0, np.int32))
    with pytest.raises(TypeError, match="integer"):
        jnp.bincount(np.ones(3, F32))
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.bincount(np.ones((2, 2), np.int32))
    with pytest.raises(ConcretizationTypeError, match="length"):
        plax.jit(jnp.bincount)(x)


def test_histograms_match_numpy():
    a = np.array([0.5, 1.0, 1.5, 2.0, 2.0, 4.0, -1.0], F32)
    b = np.array([1.0, 2.0, 3.0, 1.0, 0.0, 2.0, 5.0], F32)
    w = np.linspace(0.5, 2.0, 7).astype(F32)
    edges = np.array([0.0, 1.0, 2.5, 4.0], F32)

    def body(a, b, w, edges):
        return {"h": jnp.histogram(a, 3), "density": jnp.histogram(a, edges, density=True),
                "weights": jnp.histogram(a, 4, range=(0, 4), weights=w),
                "edges": jnp.histogram_bin_edges(a, 5, range=(1.0, 1.0)),
                "2d": jnp.histogram2d(a, b, bins=(2, 3), weights=w),
                "dd": jnp.histogramdd(jnp.stack([a, b], 1), bins=[edges, 2], density=True)}

    out = plax.jit(body)(a, b, w, edges)
    close = lambda g, w_: np.testing.assert_allclose(np.asarray(g), w_, rtol=1e-5, atol=1e-6)  # noqa: E731
    for key, want in (("h", np.histogram(a, 3)), ("density", np.histogram(a, edges, density=True)),
                      ("weights", np.histogram(a, 4, range=(0, 4), weights=w)),
                      ("2d", np.histogram2d(a, b, bins=(2, 3), weights=w))):
        for g, w_ in zip(out[key], want):
            close(g, w_)
    close(out["edges"], np.histogram_bin_edges(a, 5, range=(1.0, 1.0)))
    hist, dd_edges = np.histogramdd(np.stack([a, b], 1), bins=[edges, 2], density=True)
    close(out["dd"][0], hist)
    for g, w_ in zip(out["dd"][1], dd_edges):
        close(g, w_)
    with pytest.raises(ValueError, match="weights"):
        jnp.histogram(a, weights=w[:3])
    with pytest.raises(NotImplementedError, match="string"):
        jnp.histogram(a, bins="auto")
