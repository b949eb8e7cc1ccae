"""The rest of plax.numpy's vocabulary against NumPy: statistics and nan reductions,
pad in every mode, index tricks, array edits, differences and interpolation,
polynomials, windows, floating-point and bit functions, comparisons, vectorize and
ufuncs, creation from other sources; derivatives where they are meaningful.

Cases are batched: each group runs its functions in one jitted call (and the same
body eagerly once), so a group costs about one compilation per dtype.
"""
import functools
import warnings

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.errors import ConcretizationTypeError
from plax.test_util import check_grads

F32, F16, I32, U8, C64 = (np.dtype(t) for t in (np.float32, np.float16, np.int32, np.uint8,
                                                 np.complex64))


def sample(dtype, shape, salt=0, lo=-3, hi=3):
    rng = np.random.default_rng(salt)
    if dtype == np.dtype(bool):
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0 if dtype.kind == "u" else lo, hi + 1, shape).astype(dtype)
    x = rng.uniform(lo, hi, shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.uniform(lo, hi, shape)
    return x.astype(dtype)


def compare(results, expected, rtol=1e-5, atol=1e-5, check_dtype=True):
    """Every result (a pytree of arrays) against its NumPy reference."""
    assert sorted(results) == sorted(expected)
    for key in expected:
        got = plax.tree_util.tree_leaves(results[key])
        want = plax.tree_util.tree_leaves(expected[key])
        assert len(got) == len(want), key
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape, (key, g.shape, w.shape)
            if check_dtype and w.dtype != object:
                assert g.dtype == w.dtype, (key, g.dtype, w.dtype)
            np.testing.assert_allclose(g.astype(np.complex128 if g.dtype.kind == "c" else
                                                np.float64 if g.dtype.kind in "fiub" else g.dtype),
                                       w, rtol=rtol, atol=atol, err_msg=key, equal_nan=True)


def run_both(body, *args):
    """The body's results under jit and eagerly (they must agree)."""
    jitted = plax.jit(body)(*args)
    eager = body(*args)
    for a, b in zip(plax.tree_util.tree_leaves(jitted), plax.tree_util.tree_leaves(eager)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    return jitted


# --- statistics and nan reductions ---------------------------------------------------------

def test_quantiles_medians_and_moments():
    a = sample(F32, (3, 5), 1)
    n = a.copy()
    n[0, 1] = n[2, :] = np.nan
    q = np.array([0.0, 0.3, 1.0], F32)
    w = np.array([1.0, 2.0, 0.5, 1.0, 3.0], F32)

    def body(a, n, q, w):
        out = {f"quantile-{m}": jnp.quantile(a, q, axis=1, method=m)
               for m in ("linear", "lower", "higher", "midpoint", "inverted_cdf")}
        out.update({
            "percentile": jnp.percentile(a, 40, axis=(0, 1), keepdims=True),
            "median": jnp.median(a, axis=0), "median_all": jnp.median(a),
            "nanquantile": jnp.nanquantile(n, q, axis=1), "nanmedian": jnp.nanmedian(n, 1),
            "nanpercentile": jnp.nanpercentile(n, 75), "median_nan": jnp.median(n, axis=1),
            "weighted": jnp.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=w),
            "average": jnp.average(a, 1, w, returned=True), "ptp": jnp.ptp(a, 0),
            "cov": jnp.cov(a), "cov_weights": jnp.cov(a, rowvar=False, bias=True, aweights=q),
            "corrcoef": jnp.corrcoef(a, a[::-1]),
        })
        return out

    expected = {f"quantile-{m}": np.quantile(a, q, axis=1, method=m).astype(F32)
                for m in ("linear", "lower", "higher", "midpoint", "inverted_cdf")}
    expected.update({
        "percentile": np.percentile(a, 40, axis=(0, 1), keepdims=True).astype(F32),
        "median": np.median(a, 0).astype(F32), "median_all": np.float32(np.median(a)),
        "nanquantile": np.nanquantile(n, q, axis=1).astype(F32),
        "nanmedian": np.nanmedian(n, 1).astype(F32),
        "nanpercentile": np.float32(np.nanpercentile(n, 75)),
        "median_nan": np.median(n, axis=1).astype(F32),
        "weighted": np.quantile(a, 0.5, axis=1, method="inverted_cdf", weights=w).astype(F32),
        "average": tuple(x.astype(F32) for x in np.average(a, 1, w, returned=True)),
        "ptp": np.ptp(a, 0), "cov": np.cov(a).astype(F32),
        "cov_weights": np.cov(a, rowvar=False, bias=True, aweights=q).astype(F32),
        "corrcoef": np.corrcoef(a, a[::-1]).astype(F32),
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the all-NaN row of nanmedian
        compare(run_both(body, a, n, q, w), expected, rtol=2e-5, atol=2e-5)
    assert jnp.quantile(np.arange(5), 0.5).dtype == F32  # integers give the default float
    assert jnp.median(np.ones(3, F16)).dtype == F16
    with pytest.raises(ValueError, match="method"):
        jnp.quantile(a, 0.5, method="cubic")
    with pytest.raises(NotImplementedError, match="weights"):
        jnp.quantile(a, 0.5, weights=a)


def test_nan_reductions():
    x = sample(F32, (3, 4), 2)
    x[0, 1] = x[1, :] = np.nan

    def body(x):
        return {"nansum": jnp.nansum(x, 1), "nanprod": jnp.nanprod(x, 0),
                "nanmax": jnp.nanmax(x, 0), "nanmin": jnp.nanmin(x, 1, keepdims=True),
                "nanmean": jnp.nanmean(x, 0), "nanvar": jnp.nanvar(x, 0, ddof=1),
                "nanstd": jnp.nanstd(x), "nanargmax": jnp.nanargmax(x, 0),
                "nanargmin": jnp.nanargmin(x, 1), "nancumsum": jnp.nancumsum(x, 1),
                "nancumprod": jnp.nancumprod(x)}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = {"nansum": np.nansum(x, 1), "nanprod": np.nanprod(x, 0),
                    "nanmax": np.nanmax(x, 0), "nanmin": np.nanmin(x, 1, keepdims=True),
                    "nanmean": np.nanmean(x, 0), "nanvar": np.nanvar(x, 0, ddof=1),
                    "nanstd": np.float32(np.nanstd(x)),
                    "nanargmax": np.nanargmax(x, 0).astype(np.int32),
                    # JAX gives -1 for an all-NaN slice where NumPy raises
                    "nanargmin": np.array([np.nanargmin(x[0]), -1, np.nanargmin(x[2])],
                                          np.int32),
                    "nancumsum": np.nancumsum(x, 1), "nancumprod": np.nancumprod(x)}
    compare(run_both(body, x), expected)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(jnp.nansum(ints, 0), ints.sum(0))
    assert jnp.nanmean(ints).dtype == F32
    check_grads(lambda v: jnp.nanmean(v, 0) + jnp.nanvar(v, 1)[0], (np.where(np.isnan(x), 0.5, x),),
                order=1)


# --- pad -----------------------------------------------------------------------------------

PAD_MODES = [("constant", {"constant_values": ((1, 2), (3, 4))}), ("edge", {}), ("wrap", {}),
             ("reflect", {}), ("symmetric", {}), ("reflect", {"reflect_type": "odd"}),
             ("symmetric", {"reflect_type": "odd"}), ("linear_ramp", {"end_values": (9, -3)}),
             ("maximum", {}), ("minimum", {"stat_length": 1}), ("mean", {"stat_length": 2}),
             ("median", {}), ("empty", {})]
WIDTHS = [((1, 2), (3, 5)), 2, ((0, 7), (4, 0))]


@pytest.mark.parametrize("dtype", [I32, F32], ids=str)
def test_pad_every_mode(dtype):
    x = sample(dtype, (2, 3), 3)

    def body(x):
        return {f"{m}{kw}{w}": jnp.pad(x, w, m, **kw) for m, kw in PAD_MODES for w in WIDTHS}

    expected = {f"{m}{kw}{w}": np.pad(x, w, m, **kw) for m, kw in PAD_MODES for w in WIDTHS}
    for w in WIDTHS:  # 'empty' leaves values unspecified: plax gives zeros
        expected[f"empty{{}}{w}"] = np.pad(x, w, "constant")
    compare(plax.jit(body)(x), expected)
    if dtype == F32:  # eagerly, one width per mode
        for m, kw in PAD_MODES[:-1]:
            np.testing.assert_allclose(jnp.pad(x, WIDTHS[0], m, **kw),
                                       np.pad(x, WIDTHS[0], m, **kw), rtol=1e-5, atol=1e-6)


def test_pad_traced_values_function_mode_and_errors():
    x = np.arange(6, dtype=F32).reshape(2, 3)
    out = plax.jit(lambda x, c: jnp.pad(x, 1, constant_values=c))(x, np.float32(7))
    np.testing.assert_array_equal(out, np.pad(x, 1, constant_values=7))

    def ends(vector, width, axis, kwargs):
        return vector.at[:width[0]].set(-1.0).at[vector.shape[0] - width[1]:].set(kwargs["v"])

    def ends_np(vector, width, axis, kwargs):
        vector[:width[0]] = -1.0
        vector[vector.shape[0] - width[1]:] = kwargs["v"]

    np.testing.assert_array_equal(jnp.pad(x, (1, 2), ends, v=5.0),
                                  np.pad(x, (1, 2), ends_np, v=5.0))
    check_grads(lambda v: jnp.pad(v, ((1, 2), (2, 0)), "reflect"), (x,), order=2)
    with pytest.raises(NotImplementedError, match="mode"):
        jnp.pad(x, 1, "circular")
    with pytest.raises(ValueError, match="unsupported keyword"):
        jnp.pad(x, 1, "edge", constant_values=2)
    with pytest.raises(ValueError, match="negative"):
        jnp.pad(x, -1)
    with pytest.raises(ValueError, match="empty axis"):
        jnp.pad(np.zeros((0, 2)), 1, "wrap")


# --- index tricks ----------------------------------------------------------------------------

def test_grids_and_concatenators():
    cases = {
        "mgrid": (jnp.mgrid[0:3, 0:4:2], np.mgrid[0:3, 0:4:2].astype(np.int32)),
        "mgrid_linspace": (jnp.mgrid[-1:1:5j], np.mgrid[-1:1:5j].astype(F32)),
        "ogrid": (jnp.ogrid[0:3, 0:2], [g.astype(np.int32) for g in np.ogrid[0:3, 0:2]]),
        "r_": (jnp.r_[1:4, 0, np.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])].astype(np.int32)),
        "r_directive": (jnp.r_["0,2", np.array([1, 2]), np.array([3, 4])],
                        np.r_["0,2", [1, 2], [3, 4]].astype(np.int32)),
        "r_row": (jnp.r_["r", np.array([1, 2])], np.r_["r", [1, 2]].astype(np.int32)),
        "c_": (jnp.c_[np.array([1, 2]), np.array([3, 4])],
               np.c_[np.array([1, 2]), np.array([3, 4])].astype(np.int32)),
        "ix_": (jnp.ix_(np.array([0, 1]), np.array([True, False, True])),
                np.ix_(np.array([0, 1]), np.array([True, False, True]))),
        "meshgrid": (jnp.meshgrid(np.arange(3), np.arange(2.0)),
                     [g.astype(dt) for g, dt in zip(np.meshgrid(np.arange(3), np.arange(2.0)),
                                                    (np.int32, F32))]),
        "meshgrid_ij_sparse": (jnp.meshgrid(np.arange(3), np.arange(2), indexing="ij",
                                            sparse=True),
                               np.meshgrid(np.arange(3), np.arange(2), indexing="ij",
                                           sparse=True)),
        "indices": (jnp.indices((2, 3)), np.indices((2, 3))),
        "indices_sparse": (jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)),
        "tril": (jnp.tril_indices(3, -1), np.tril_indices(3, -1)),
        "triu_from": (jnp.triu_indices_from(np.ones((3, 4)), 1),
                      np.triu_indices_from(np.ones((3, 4)), 1)),
        "diag": (jnp.diag_indices(3, 3), np.diag_indices(3, 3)),
        "diag_from": (jnp.diag_indices_from(np.ones((2, 2))),
                      np.diag_indices_from(np.ones((2, 2)))),
        "mask": (jnp.mask_indices(3, jnp.triu, 1), np.mask_indices(3, np.triu, 1)),
    }
    compare({k: v[0] for k, v in cases.items()}, {k: v[1] for k, v in cases.items()},
            check_dtype=False)
    assert jnp.mgrid[0:3, 0:1:3j].dtype == F32 and jnp.indices((2,)).dtype == np.int32
    assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[0] == (0,)
    with pytest.raises(ValueError, match="1D"):
        jnp.meshgrid(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="directive"):
        jnp.r_["x", 1]


def test_flat_and_multi_indices():
    rows, cols = np.array([1, 2, 0]), np.array([0, 3, 5])
    np.testing.assert_array_equal(jnp.ravel_multi_index((rows, cols), (3, 6)),
                                  np.ravel_multi_index((rows, cols), (3, 6)))
    for mode in ("wrap", "clip"):
        for order in ("C", "F"):
            got = plax.jit(lambda r, c, m=mode, o=order: jnp.ravel_multi_index(
                (r, c), (3, 4), mode=m, order=o))(rows, cols)
            np.testing.assert_array_equal(got, np.ravel_multi_index((rows, cols), (3, 4),
                                                                    mode=mode, order=order))
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.ravel_multi_index((rows, cols), (3, 4))
    with pytest.raises(ConcretizationTypeError):
        plax.jit(lambda r: jnp.ravel_multi_index((r, r), (3, 4)))(rows)
    flat = np.array([0, 5, 11, 13, -1, -20])
    got = jnp.unravel_index(flat, (3, 4))
    # In range, NumPy's answer; out of range, clamped to the first/last element (as JAX).
    want = [np.where(flat > 11, 2, np.where(flat < -1, 0, u))
            for u in np.unravel_index(np.clip(flat % 12, 0, 11), (3, 4))]
    want = [np.where(flat > 11, s - 1, w) for w, s in zip(want, (3, 4))]
    want = [np.where(flat < -1, 0, w) for w in want]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


# --- array edits ---------------------------------------------------------------------------------

def _inplace(fn, x, *args, **kwargs):
    y = x.copy()
    fn(y, *args, **kwargs)
    return y


def test_array_edits_match_numpy():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    f = np.linspace(-2, 2, 7).astype(F32)
    i = np.array([[1], [0], [3]])

    def body(x, f):
        return {
            "append": jnp.append(x, x[:1], axis=0), "append_flat": jnp.append(x, 5),
            "delete_int": jnp.delete(x, 1, axis=1),
            "delete_slice": jnp.delete(x, slice(0, 3, 2), 1),
            "delete_array": jnp.delete(x, np.array([0, 2, 2]), axis=1),
            "delete_mask": jnp.delete(x, np.array([True, False, True]), axis=0),
            "delete_traced": jnp.delete(x, x[0, :2] + 1, axis=1, assume_unique_indices=True),
            "insert_scalar": jnp.insert(x, 1, 9), "insert_block": jnp.insert(x, 1, x[0, :3], 1),
            "insert_many": jnp.insert(x, np.array([0, 2, 2]), np.array([7, 8, 9]), 1),
            "insert_slice": jnp.insert(x, slice(None), 5, 0),
            "insert_row": jnp.insert(x, np.array([1]), x[:1], 0),
            "resize": jnp.resize(x[0], (2, 5)),
            "place": jnp.place(x, x > 5, x[0, :2], inplace=False),
            "put": jnp.put(x, np.array([0, 13]), np.array([-1, -5]), mode="clip", inplace=False),
            "put_along": jnp.put_along_axis(x, i, 99, axis=1, inplace=False),
            "fill_diagonal": jnp.fill_diagonal(x, x[0, :2], inplace=False),
            "compress": jnp.compress(np.array([True, False, True]), x, axis=0),
            "extract": jnp.extract(x % 3 == 0, x),
            "choose": jnp.choose(np.array([0, 1, 1, 0]), [x[0], x[1]]),
            "choose_clip": jnp.choose(np.array([0, 5, -1, 1]), [x[0], x[1]], mode="clip"),
            "select": jnp.select([x < 3, x > 8], [x, -x], 42),
            "piecewise": jnp.piecewise(f, [f < 0, f >= 1], [lambda v: -v, lambda v: v * 10, 0.5]),
        }

    expected = {
        "append": np.append(x, x[:1], axis=0), "append_flat": np.append(x, 5),
        "delete_int": np.delete(x, 1, 1), "delete_slice": np.delete(x, slice(0, 3, 2), 1),
        "delete_array": np.delete(x, [0, 2, 2], 1), "delete_mask": np.delete(x, [0, 2], 0),
        "delete_traced": np.delete(x, x[0, :2] + 1, 1), "insert_scalar": np.insert(x, 1, 9),
        "insert_block": np.insert(x, 1, x[0, :3], 1),
        "insert_many": np.insert(x, [0, 2, 2], [7, 8, 9], 1),
        "insert_slice": np.insert(x, slice(None), 5, 0),
        "insert_row": np.insert(x, [1], x[:1], 0), "resize": np.resize(x[0], (2, 5)),
        "place": _inplace(np.place, x, x > 5, x[0, :2]),
        "put": _inplace(np.put, x, [0, 13], [-1, -5], mode="clip"),
        "put_along": _inplace(np.put_along_axis, x, i, 99, axis=1),
        "fill_diagonal": _inplace(np.fill_diagonal, x, x[0, :2]),
        "compress": np.compress([True, False, True], x, axis=0),
        "extract": np.extract(x % 3 == 0, x), "choose": np.choose([0, 1, 1, 0], [x[0], x[1]]),
        "choose_clip": np.choose([0, 5, -1, 1], [x[0], x[1]], mode="clip"),
        "select": np.select([x < 3, x > 8], [x, -x], 42),
        "piecewise": np.piecewise(f, [f < 0, f >= 1], [lambda v: -v, lambda v: v * 10, 0.5]),
    }
    compare(body(x, f), expected, check_dtype=False)
    traced = plax.jit(lambda x, c: (jnp.compress(c, x, axis=1, size=2, fill_value=-1),
                                    jnp.extract(c, x[0], size=3),
                                    jnp.insert(x, c.astype(np.int32)[:2], -7, axis=1)))(
        x, np.array([False, True, False, True]))
    np.testing.assert_array_equal(traced[0], [[1, 3], [5, 7], [9, 11]])
    np.testing.assert_array_equal(traced[1], [1, 3, 0])
    np.testing.assert_array_equal(traced[2], np.insert(x, [0, 1], -7, axis=1))
    np.testing.assert_array_equal(jnp.trim_zeros(np.array([0, 0, 1, 2, 0])), [1, 2])
    np.testing.assert_array_equal(jnp.trim_zeros(np.array([0, 1, 0]), "b"), [0, 1])
    for fn in (jnp.place, jnp.put):
        with pytest.raises(ValueError, match="inplace=False"):
            fn(x, x > 1, 1)
    with pytest.raises(ValueError, match="invalid entry"):
        jnp.choose(np.array([2]), [x[0], x[1]])
    with pytest.raises(ConcretizationTypeError):
        plax.jit(lambda x, o: jnp.delete(x, o))(x, np.array([1]))
    with pytest.raises(ValueError, match="select"):
        jnp.select([x > 1], [x, x])


def test_piecewise_reads_conditions_and_maps_elements_as_jax():
    x = np.array([-2.0, 0.5, 3.0], F32)
    # an array of conditions lists them along its first axis: here three scalar ones,
    # each choosing for all of x, the last that holds winning (NumPy would read one)
    np.testing.assert_array_equal(
        jnp.piecewise(x, np.array([False, True, True]), [lambda v: v, lambda v: v * 10,
                                                         lambda v: v * 100]), x * 100)
    # the functions see single elements (so a mean is the element itself)
    np.testing.assert_array_equal(jnp.piecewise(x, [x < 0], [lambda v: v - v.mean(), 1.0]),
                                  [0.0, 1.0, 1.0])
    out = jnp.piecewise(np.arange(3), [np.arange(3) > 0], [lambda v: v * 1.5, 0.5])
    assert out.dtype == np.int32 and out.tolist() == [0, 1, 3]  # x's dtype
    np.testing.assert_allclose(
        plax.grad(lambda v: jnp.piecewise(v, [v < 0], [lambda u: u ** 2, jnp.sin]).sum())(x),
        [-4.0, np.cos(0.5), np.cos(3.0)], rtol=1e-6)
    with pytest.raises(ValueError, match="with 1 condition"):
        jnp.piecewise(x, [x < 0], [1, 2, 3])


# --- shapes, products, differences ---------------------------------------------------------------

def test_arrangement_matrices_and_differences():
    x = sample(F32, (3, 4), 4)
    v = np.array([1.0, 4.0, 9.0, 16.0, 25.0], F32)
    xs = np.array([0.0, 1.0, 3.0, 4.0, 7.0], F32)
    a3, b3 = sample(F32, (2, 3), 5), sample(F32, (2, 3), 6)

    def body(x, v, xs, a3, b3):
        return {
            "block": jnp.block([[x[:2, :2], x[:2, 2:]], [x[2:, :3], x[2:, 3:]]]),
            "column_stack": jnp.column_stack([v, xs]), "hsplit": jnp.hsplit(x, 2),
            "vsplit": jnp.vsplit(x, [1]), "dsplit": jnp.dsplit(x.reshape(3, 2, 2), 2),
            "unstack": jnp.unstack(x, axis=1), "rollaxis": jnp.rollaxis(x.reshape(3, 2, 2), 2),
            "rot90": [jnp.rot90(x, k) for k in range(-1, 3)], "rot90_axes": jnp.rot90(x, 1, (1, 0)),
            "diag": jnp.diag(v, 1), "diag_of": jnp.diag(x, -1),
            "diagflat": jnp.diagflat(x[:1, :2], -2),
            "tri": jnp.tri(3, 4, 1), "vander": jnp.vander(v, 3, increasing=True),
            "kron": jnp.kron(x[:2, :2], a3), "cross": jnp.cross(a3, b3),
            "cross2": jnp.cross(a3[:, :2], b3[:, :2]),
            "cross_axis": jnp.cross(x[:3, :3], x[:3, :3] * 2, axis=0),
            "vecdot": jnp.vecdot(x, x[:1]), "matvec": jnp.matvec(x, v[:4]),
            "vecmat": jnp.vecmat(v[:3], x),
            "diff": jnp.diff(x, 2, axis=0), "diff_edges": jnp.diff(v, prepend=0.0, append=v[-1:]),
            "diff_bool": jnp.diff(x > 0),
            "ediff1d": jnp.ediff1d(x, to_end=np.array([9.0]), to_begin=-1.0),
            "gradient": jnp.gradient(x), "gradient_x": jnp.gradient(v, xs),
            "gradient_2": jnp.gradient(v, xs, edge_order=2),
            "gradient_h": jnp.gradient(x, 2.0, axis=1),
            "trapezoid": jnp.trapezoid(x), "trapezoid_x": jnp.trapezoid(v, xs),
            "trapezoid_dx": jnp.trapezoid(x, dx=0.5, axis=0), "unwrap": jnp.unwrap(x * 3),
            "unwrap_period": jnp.unwrap(v, period=6.0),
            "interp": jnp.interp(np.array([-1.0, 0.5, 2.0, 9.0], F32), xs, v),
            "interp_lr": jnp.interp(np.array([-1.0, 0.5, 9.0], F32), xs, v, left=-5.0, right=5.0),
            "interp_period": jnp.interp(np.array([-1.0, 0.5, 9.0], F32), xs, v, period=5.0),
            "cumulative_sum": jnp.cumulative_sum(x, axis=1, include_initial=True),
            "cumulative_prod": jnp.cumulative_prod(v),
        }

    expected = {
        "block": np.block([[x[:2, :2], x[:2, 2:]], [x[2:, :3], x[2:, 3:]]]),
        "column_stack": np.column_stack([v, xs]), "hsplit": np.hsplit(x, 2),
        "vsplit": np.vsplit(x, [1]),
        "dsplit": np.dsplit(x.reshape(3, 2, 2), 2), "unstack": list(np.moveaxis(x, 1, 0)),
        "rollaxis": np.rollaxis(x.reshape(3, 2, 2), 2),
        "rot90": [np.rot90(x, k) for k in range(-1, 3)],
        "rot90_axes": np.rot90(x, 1, (1, 0)), "diag": np.diag(v, 1), "diag_of": np.diag(x, -1),
        "diagflat": np.diagflat(x[:1, :2], -2), "tri": np.tri(3, 4, 1, F32),
        "vander": np.vander(v, 3, increasing=True), "kron": np.kron(x[:2, :2], a3),
        "cross": np.cross(a3, b3), "cross2": a3[:, 0] * b3[:, 1] - a3[:, 1] * b3[:, 0],
        "cross_axis": np.cross(x[:3, :3], x[:3, :3] * 2, axis=0), "vecdot": (x * x[:1]).sum(-1),
        "matvec": x @ v[:4], "vecmat": v[:3] @ x, "diff": np.diff(x, 2, axis=0),
        "diff_edges": np.diff(v, prepend=0.0, append=v[-1:]), "diff_bool": np.diff(x > 0),
        "ediff1d": np.ediff1d(x, to_end=[9.0], to_begin=-1.0), "gradient": np.gradient(x),
        "gradient_x": np.gradient(v, xs), "gradient_2": np.gradient(v, xs, edge_order=2),
        "gradient_h": np.gradient(x, 2.0, axis=1), "trapezoid": np.trapezoid(x),
        "trapezoid_x": np.trapezoid(v, xs), "trapezoid_dx": np.trapezoid(x, dx=0.5, axis=0),
        "unwrap": np.unwrap(x * 3), "unwrap_period": np.unwrap(v, period=6.0),
        "interp": np.interp([-1.0, 0.5, 2.0, 9.0], xs, v),
        "interp_lr": np.interp([-1.0, 0.5, 9.0], xs, v, left=-5.0, right=5.0),
        "interp_period": np.interp([-1.0, 0.5, 9.0], xs, v, period=5.0),
        "cumulative_sum": np.cumulative_sum(x, axis=1, include_initial=True),
        "cumulative_prod": np.cumulative_prod(v),
    }
    compare(run_both(body, x, v, xs, a3, b3), expected, rtol=1e-4, atol=1e-4, check_dtype=False)
    check_grads(lambda q, p: jnp.interp(q, xs, p), (np.array([0.5, 2.0, 5.5], F32), v), order=1)
    check_grads(lambda p: (jnp.gradient(p, xs, edge_order=2), jnp.trapezoid(p, xs)), (v,), order=2)


# --- polynomials and windows ------------------------------------------------------------------

def test_polynomials_and_windows():
    p, q = np.array([1.0, -3.0, 2.0], F32), np.array([2.0, 1.0], F32)
    t = np.linspace(-1, 2, 4).astype(F32)

    def body(p, q, t):
        return {"polyval": jnp.polyval(p, t), "polyadd": jnp.polyadd(p, q),
                "polysub": jnp.polysub(q, p), "polymul": jnp.polymul(p, q),
                "polydiv": jnp.polydiv(p, q), "polyder": jnp.polyder(p),
                "polyder2": jnp.polyder(p, 2), "polyint": jnp.polyint(p),
                "polyint2": jnp.polyint(p, 2, np.array([1.0, 2.0], F32)), "poly": jnp.poly(q),
                **{w: getattr(jnp, w)(5) for w in ("bartlett", "blackman", "hamming", "hanning")}}

    quotient, _ = np.polydiv(p, q)
    expected = {"polyval": np.polyval(p, t), "polyadd": np.polyadd(p, q),
    "polysub": np.polysub(q, p),
                "polymul": np.polymul(p, q), "polyder": np.polyder(p), "polyder2": np.polyder(p, 2),
                # As JAX: the remainder keeps u's length (NumPy trims its leading zeros).
                "polydiv": (quotient, np.array([0.0, 0.0, np.polydiv(p, q)[1][-1]], F32)),
                "polyint": np.polyint(p), "polyint2": np.polyint(p, 2, [1.0, 2.0]),
                "poly": np.poly(q), **{w: getattr(np, w)(5).astype(F32) for w in
                                      ("bartlett", "blackman", "hamming", "hanning")}}
    compare(run_both(body, p, q, t), expected, rtol=1e-5, atol=1e-6, check_dtype=False)
    for w in ("bartlett", "blackman", "hamming", "hanning"):
        assert getattr(jnp, w)(0).shape == (0,) and getattr(jnp, w)(1).tolist() == [1.0]
    check_grads(lambda c, x: jnp.polyval(c, x), (p, t), order=2)


def test_polyadd_and_polysub_of_coefficient_arrays_with_more_axes():
    # JAX's rule: the first axis holds the coefficients; the shorter array is added
    # into the end of the longer, broadcast to that part (a2 is "shorter" on a tie)
    rows = np.array([[5, 7, 3], [8, 2, 6]])
    np.testing.assert_array_equal(jnp.polyadd(np.array([[2, 3, 1]]), rows),
                                  [[5, 7, 3], [10, 5, 7]])
    np.testing.assert_array_equal(jnp.polysub(rows, np.array([2])), [[5, 7, 9 - 6], [6, 0, 4]])
    np.testing.assert_array_equal(jnp.polyadd(rows, rows[:, :1]), [[10, 12, 8], [16, 10, 14]])
    with pytest.raises(ValueError, match=r"polyadd: coefficients of shape \(2, 3\) cannot be "
                                         r"broadcast to the part \(2,\) of the longer "
                                         r"coefficients' shape \(3,\)"):
        jnp.polyadd(np.array([1, 3, 5]), rows)
    with pytest.raises(IndexError, match="must have at least one dimension"):
        jnp.polysub(np.ones(3), 2.0)
    with pytest.raises(TypeError):  # booleans cannot be negated (JAX's class)
        jnp.polysub(np.array([True]), np.array([False]))


# --- floating point, integers, bits, comparisons ----------------------------------------------

@pytest.mark.parametrize("dtype", [F32, F16], ids=str)
def test_floating_point_functions(dtype):
    # Subnormals are left out: XLA's CPU arithmetic flushes them to zero.
    x = np.array([0.0, -0.0, 1.0, -3.5, 6.5, 1e-3, -2e2, np.inf, -np.inf, np.nan], dtype)
    k = np.array([1, 2, 20, -6, 4, 10, 3, -1, 0, 1], np.int32)

    def body(x, k):
        return {"frexp": jnp.frexp(x), "ldexp": jnp.ldexp(x, k), "modf": jnp.modf(x[:7]),
                "nextafter": jnp.nextafter(x, np.asarray(0, dtype)), "spacing": jnp.spacing(x[2:7]),
                "nan_to_num": jnp.nan_to_num(x, posinf=9.0), "fabs": jnp.fabs(x),
                "logaddexp2": jnp.logaddexp2(x, x[::-1]), "isposinf": jnp.isposinf(x),
                "isneginf": jnp.isneginf(x)}

    with np.errstate(all="ignore"):
        expected = {"frexp": np.frexp(x), "ldexp": np.ldexp(x, k), "modf": np.modf(x[:7]),
                    "nextafter": np.nextafter(x, dtype.type(0)), "spacing": np.spacing(x[2:7]),
                    "nan_to_num": np.nan_to_num(x, posinf=9.0), "fabs": np.fabs(x),
                    "logaddexp2": np.logaddexp2(x, x[::-1]), "isposinf": np.isposinf(x),
                    "isneginf": np.isneginf(x)}
    compare(run_both(body, x, k), expected, rtol=2e-3 if dtype == F16 else 1e-6, atol=0)
    fraction, whole = jnp.modf(4.75)  # a Python scalar stays weakly typed (JAX's)
    assert (fraction.tolist(), whole.tolist(), fraction.weak_type) == (0.75, 4.0, True)
    # The mantissa of frexp and ldexp differentiate as multiplications by powers of two.
    check_grads(lambda v: (jnp.frexp(v)[0], jnp.ldexp(v, 3)), (np.array([0.7, -5.0, 40.0], F32),),
                order=2)


def test_complex_classification_and_integer_functions():
    z = np.array([1 + 0j, 1j, np.nan + 0j, 2 - 3j], C64)
    np.testing.assert_array_equal(jnp.iscomplex(z), np.iscomplex(z))
    np.testing.assert_array_equal(jnp.isreal(z), np.isreal(z))
    np.testing.assert_array_equal(jnp.iscomplex(np.ones(2)), [False, False])
    assert jnp.iscomplexobj(z) and jnp.isrealobj(np.ones(2)) and not jnp.iscomplexobj(3)
    np.testing.assert_array_equal(jnp.nan_to_num(z, nan=-1.0), np.nan_to_num(z, nan=-1.0))
    a = np.array([12, -18, 0, 7, 0], np.int32)
    b = np.array([8, 12, 5, 0, 0], np.int32)
    out = plax.jit(lambda a, b: (jnp.gcd(a, b), jnp.lcm(a, b), jnp.gcd(a, 4)))(a, b)
    for g, w in zip(out, (np.gcd(a, b), np.lcm(a, b), np.gcd(a, 4))):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(plax.vmap(jnp.gcd)(a, b), np.gcd(a, b))
    with pytest.raises(ValueError, match="integers"):
        jnp.gcd(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="complex"):
        jnp.isposinf(z)
    with pytest.raises(TypeError, match="complex"):
        jnp.frexp(z)


def test_bits_and_comparisons():
    b = np.array([[1, 0, 1, 1, 0, 0, 0, 1, 1], [0, 1, 0, 0, 0, 0, 0, 0, 1]], bool)
    packed = np.packbits(b, 1)

    def body(b, packed):
        return {"pack": [jnp.packbits(b, axis, order) for axis in (None, 0, 1)
                         for order in ("big", "little")],
                "unpack": [jnp.unpackbits(packed, 1, count) for count in (None, 3, -5, 20)],
                "unpack_little": jnp.unpackbits(packed, bitorder="little"),
                "count": jnp.bitwise_count(np.array([-3, 7, 255], np.int32))}

    expected = {"pack": [np.packbits(b, axis, bitorder=order) for axis in (None, 0, 1)
                         for order in ("big", "little")],
                "unpack": [np.unpackbits(packed, 1, count) for count in (None, 3, -5, 20)],
                "unpack_little": np.unpackbits(packed, bitorder="little"),
                "count": np.bitwise_count(np.array([-3, 7, 255])).astype(U8)}
    compare(run_both(body, b, packed), expected)
    with pytest.raises(TypeError, match="unsigned byte"):
        jnp.unpackbits(np.ones(2, np.int32))
    x, y = np.array([1.0, np.nan, np.inf, 2.0], F32), np.array([1.000001, np.nan, np.inf, 2.1], F32)
    np.testing.assert_array_equal(jnp.isclose(x, y), np.isclose(x, y))
    np.testing.assert_array_equal(jnp.isclose(x, y, equal_nan=True, rtol=0.1),
                                  np.isclose(x, y, equal_nan=True, rtol=0.1))
    assert bool(jnp.allclose(x[[0, 2]], y[[0, 2]])) and not bool(jnp.allclose(x, y))
    assert bool(jnp.array_equal(x, x, equal_nan=True)) and not bool(jnp.array_equal(x, x))
    assert not bool(jnp.array_equal(x, x[:2])) and bool(jnp.array_equiv(x[:1], np.ones((3, 1))))
    assert not bool(jnp.array_equiv(x, np.ones(3)))
    assert jnp.isclose(np.int32(3), 3).dtype == np.dtype(bool)


# --- functional: vectorize, apply_along_axis, ufunc -------------------------------------------

def test_vectorize_and_apply_along_axis():
    x = np.arange(12.0, dtype=F32).reshape(3, 4)
    add1 = jnp.vectorize(lambda a, b: a * b + 1)
    np.testing.assert_array_equal(add1(x[0], x), x[0] * x + 1)
    dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
    np.testing.assert_allclose(dot(x, x[0]), x @ x[0])
    outer = jnp.vectorize(lambda u: (u.sum(), jnp.outer(u, u)), signature="(n)->(),(n,n)")
    sums, squares = plax.jit(outer)(x)
    np.testing.assert_allclose(sums, x.sum(1))
    np.testing.assert_allclose(squares, np.einsum("bi,bj->bij", x, x))
    powered = jnp.vectorize(lambda a, n, *, scale: a ** n * scale, excluded={1, "scale"})
    np.testing.assert_allclose(powered(x, 2, scale=3.0), x ** 2 * 3)
    np.testing.assert_allclose(jnp.apply_along_axis(lambda v: v[::-1] * 2, 0, x),
                               np.apply_along_axis(lambda v: v[::-1] * 2, 0, x))
    np.testing.assert_allclose(jnp.apply_along_axis(lambda v: jnp.stack([v.sum(), v.max()]), 1, x),
                               np.apply_along_axis(lambda v: np.stack([v.sum(), v.max()]), 1, x))
    np.testing.assert_allclose(jnp.apply_over_axes(jnp.sum, x, [0, 1]),
                               np.apply_over_axes(np.sum, x, [0, 1]))
    with pytest.raises(ValueError, match="signature"):
        jnp.vectorize(jnp.dot, signature="(n)->(")
    with pytest.raises(ValueError, match="inconsistent size"):
        dot(x, x[0, :3])
    matvec = jnp.vectorize(lambda m, v: m @ v, signature="(n,m),(m)->(n)")
    with pytest.raises(ValueError, match=r"input with shape \(4,\) does not have enough "
                                         r"dimensions for all core dimensions \('n', 'm'\) on "
                                         r"vectorized function with excluded=frozenset\(\) and "
                                         r"signature='\(n,m\),\(m\)->\(n\)'"):
        matvec(x[0], x[0])


def folded(v):
    """NumPy's fold of `a * 2 + b` over the leading axis of `v`, from the identity 0."""
    return functools.reduce(lambda acc, e: acc * 2 + e, list(v), np.zeros_like(v[0]))


def test_frompyfunc_ufunc_methods():
    f = jnp.frompyfunc(lambda a, b: a * 2 + b, 2, 1, identity=0)
    x = np.arange(1.0, 7.0, dtype=F32).reshape(2, 3)
    assert (f.nin, f.nout, f.identity) == (2, 1, 0) and repr(f) == "<jnp.ufunc '<lambda>'>"
    np.testing.assert_allclose(f(x, 1.0), x * 2 + 1)
    np.testing.assert_allclose(f.reduce(x, axis=1), [folded(r) for r in x])
    np.testing.assert_allclose(f.reduce(x, axis=0), folded(x))
    np.testing.assert_allclose(f.reduce(x, axis=None, keepdims=True),
                               [[folded(x.ravel())]])
    np.testing.assert_allclose(f.reduce(x, axis=1, where=np.array([True, False, True])),
                               [x[0, 0] * 2 + x[0, 2], x[1, 0] * 2 + x[1, 2]])
    running = f.accumulate(x[0])
    np.testing.assert_allclose(running, [1.0, 4.0, 11.0])
    np.testing.assert_allclose(f.outer(x[0], x[1, :2]), x[0][:, None] * 2 + x[1, :2])
    at = f.at(np.zeros(4, F32), np.array([0, 0, 2]), np.array([1.0, 1.0, 5.0]), inplace=False)
    np.testing.assert_allclose(at, [3.0, 0.0, 5.0, 0.0])
    seq = np.arange(8.0, dtype=F32)
    np.testing.assert_allclose(f.reduceat(seq, np.array([0, 4, 1, 5])), [11.0, 4.0, 26.0, 39.0])
    np.testing.assert_allclose(plax.jit(lambda v: f.reduce(v))(seq), folded(seq))
    g = jnp.frompyfunc(lambda a, b: a + b, 2, 1)  # no identity
    with pytest.raises(ValueError, match="zero-size"):
        g.reduce(np.zeros(0, F32))
    with pytest.raises(ValueError, match="initial"):
        g.reduce(seq, where=seq > 2)
    with pytest.raises(NotImplementedError, match="inplace"):
        f.at(seq, 0, 1.0)
    split = jnp.frompyfunc(lambda a: (a, -a), 1, 2)
    with pytest.raises(ValueError, match="binary"):
        split.reduce(seq)
    np.testing.assert_allclose(split(seq)[1], -seq)


# --- creation from other sources, dtypes, at[] methods ----------------------------------------

def test_creation_from_other_sources(tmp_path):
    np.testing.assert_array_equal(jnp.frombuffer(b"\x01\x02\x03", dtype=np.uint8, offset=1), [2, 3])
    np.testing.assert_array_equal(jnp.fromstring("1 2 3", dtype=np.int32, sep=" "), [1, 2, 3])
    grid = jnp.fromfunction(lambda i, j: i + 10 * j, (2, 3), dtype=np.int32)
    np.testing.assert_array_equal(grid, np.fromfunction(lambda i, j: i + 10 * j, (2, 3)))
    assert grid.dtype == np.int32
    np.testing.assert_array_equal(jnp.from_dlpack(np.arange(3.0, dtype=F32)), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(jnp.from_dlpack(jnp.arange(3)), [0, 1, 2])
    path = tmp_path / "a.npy"
    jnp.save(path, np.arange(4, dtype=np.int16))
    loaded = jnp.load(path)
    assert isinstance(loaded, plax.Array) and loaded.dtype == np.int16
    for fn in (jnp.fromfile, jnp.fromiter):
        with pytest.raises(NotImplementedError, match="not implemented"):
            fn(path)
    np.testing.assert_allclose(jnp.logspace(0, 2, 3), np.logspace(0, 2, 3))
    np.testing.assert_allclose(jnp.logspace(0, 3, 4, base=2.0, endpoint=False),
                               np.logspace(0, 3, 4, base=2.0, endpoint=False))
    np.testing.assert_allclose(jnp.geomspace(1, 1000, 4), np.geomspace(1, 1000, 4), rtol=1e-5)
    np.testing.assert_allclose(jnp.geomspace(-1, -100, 3), np.geomspace(-1, -100, 3), rtol=1e-5)
    # the ends are the arguments exactly (an integer dtype must not truncate them)
    np.testing.assert_array_equal(jnp.geomspace(2, 1, 1, dtype=jnp.int8, endpoint=False), [2])
    np.testing.assert_array_equal(jnp.geomspace(3, 81, 4, dtype=jnp.int32)[np.array([0, -1])],
                                  [3, 81])
    np.testing.assert_allclose(jnp.geomspace(jnp.array([1., 2.]), jnp.array([100., 32.]), 3,
                                             axis=1),
                               np.geomspace([1., 2.], [100., 32.], 3, axis=1), rtol=1e-5)


def test_dtype_helpers():
    assert jnp.isdtype(jnp.bfloat16, "real floating") and jnp.isdtype(np.int8, ("bool", "integral"))
    assert not jnp.isdtype(np.float32, "complex floating")
    assert jnp.isdtype(np.float32, np.float32) and not jnp.isdtype(np.uint8, "signed integer")
    assert jnp.can_cast(np.int8, jnp.int32) and not jnp.can_cast(jnp.arange(3.0), np.int32)
    assert jnp.can_cast(np.float32, np.int32, casting="unsafe")
    with pytest.raises(ValueError, match="kind"):
        jnp.isdtype(np.float32, "decimal")
    assert jnp.array_str(jnp.arange(3)) == "[0 1 2]" and "array" in jnp.array_repr(jnp.ones(2))
    assert jnp.iterable([1]) and not jnp.iterable(1)
    assert issubclass(jnp.ComplexWarning, Warning) and jnp.object_ is np.object_
    for name in ("float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn", "int2", "uint2"):
        assert jnp.zeros(2, getattr(jnp, name)).dtype == np.dtype(getattr(jnp, name).dtype)
    assert "ndarray" in dir(jnp) and jnp.ndarray is plax.Array


def test_at_methods():
    x = np.arange(1.0, 6.0, dtype=F32)
    idx = np.array([0, 0, 2])
    np.testing.assert_allclose(jnp.asarray(x).at[idx].subtract(1.0), [-1.0, 2.0, 2.0, 4.0, 5.0])
    np.testing.assert_allclose(jnp.asarray(x).at[idx].divide(2.0), [0.25, 2.0, 1.5, 4.0, 5.0])
    np.testing.assert_allclose(jnp.asarray(x).at[np.array([1, 1])].power(2.0),
                               [1.0, 16.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(jnp.asarray(x).at[idx].apply(lambda v: v * 10),
                               [100.0, 2.0, 30.0, 4.0, 5.0])
    np.testing.assert_allclose(jnp.asarray(x).at[np.array([7, 1])].apply(jnp.negative, mode="drop"),
                               [1.0, -2.0, 3.0, 4.0, 5.0])
    out = plax.jit(lambda x: (x.at[2:].apply(jnp.negative), x.at[1].subtract(x[0],
                                                                            unique_indices=True),
                              x.at[::2].divide(x[0], indices_are_sorted=True)))(x)
    np.testing.assert_allclose(out[0], [1.0, 2.0, -3.0, -4.0, -5.0])
    np.testing.assert_allclose(out[1], [1.0, 1.0, 3.0, 4.0, 5.0])
    np.testing.assert_allclose(out[2], [1.0, 2.0, 3.0, 4.0, 5.0])
    check_grads(lambda v: jnp.asarray(v).at[idx].divide(3.0).at[1].power(2.0), (x,), order=2)


def test_can_cast_refuses_python_scalars_and_non_dtype_targets_as_jax():
    # JAX's can_cast is NumPy's: Python scalars are a TypeError (NEP 50), and so is a
    # number where the target dtype goes; plax arrays count by their dtype.
    for from_, to in [(1, jnp.float32), (True, jnp.bfloat16), (2.5, np.int8),
                      (jnp.float32, 1.0), (np.int8, 1)]:
        with pytest.raises(TypeError):
            jnp.can_cast(from_, to)
    assert jnp.can_cast(jnp.zeros(2, jnp.bfloat16), jnp.float32)
    assert plax.jit(lambda x: x + jnp.can_cast(x, jnp.float16))(jnp.int8(1)) == 2


def test_pad_checks_the_mode_before_negative_widths_as_jax():
    with pytest.raises(NotImplementedError, match="bogus"):
        jnp.pad(jnp.zeros((4, 1, 1)), ((1, 2), (2, -1), (-1, 2)), mode="bogus")
    with pytest.raises(ValueError, match="negative"):
        jnp.pad(jnp.zeros((4, 1)), ((1, 2), (2, -1)), mode="edge")
    with pytest.raises(ValueError, match="negative"):
        jnp.pad(jnp.zeros(3), (-1, 0), mode=lambda v, w, i, k: v)


def test_i0_and_the_kaiser_window_match_numpy():
    import scipy.special
    x = np.array([-30.0, -3.0, -1.0, 0.0, 0.5, 2.0, 10.0, 50.0], F32)
    np.testing.assert_allclose(jnp.i0(x), np.i0(x), rtol=2e-6)
    assert jnp.i0(np.arange(-2, 3)).dtype == F32  # integers promote, as in NumPy
    grads = plax.vmap(plax.grad(jnp.i0))(x)
    np.testing.assert_allclose(grads, scipy.special.i1(x), rtol=2e-6)  # I0' = I1
    assert float(plax.grad(jnp.i0)(0.0)) == 0.0
    with pytest.raises(ValueError, match="Unsupported input type to plax.numpy.i0: complex64"):
        jnp.i0(np.complex64(1j))
    for m, beta in [(4, 1.5), (7, 0.0), (10, 8.6), (5, np.float32(2.5))]:
        np.testing.assert_allclose(jnp.kaiser(m, beta), np.kaiser(m, beta), rtol=1e-6,
                                   atol=2e-7)
    assert jnp.kaiser(0, 2.0).shape == (0,) and jnp.kaiser(1, 2.0).tolist() == [1.0]
    np.testing.assert_allclose(plax.jit(jnp.kaiser, static_argnums=0)(6, 2.0),
                               np.kaiser(6, 2.0), rtol=1e-6, atol=2e-7)
    with pytest.raises(ConcretizationTypeError):
        plax.jit(jnp.kaiser)(4, 1.0)
