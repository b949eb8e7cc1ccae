"""plax.scipy.interpolate.RegularGridInterpolator and plax.scipy.cluster.vq.vq against
SciPy (points outside the grid, extrapolation, trailing value axes, descending axes),
their derivatives against finite differences, jit/vmap of the interpolator as a
pytree, bad input, and JAX (dtypes, fill values, ties)."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy.cluster.vq import vq
from plax.scipy.interpolate import RegularGridInterpolator
from plax.test_util import check_grads

si = pytest.importorskip("scipy.interpolate")
scv = pytest.importorskip("scipy.cluster.vq")

RNG = np.random.default_rng(11)


def _grid(sizes):
    """Unevenly spaced ascending axes."""
    return tuple(np.cumsum(RNG.uniform(0.3, 1.5, size=n)) for n in sizes)


@pytest.mark.parametrize("sizes, trailing", [((5,), ()), ((4, 3), ()), ((3, 4, 2), ()),
                                             ((4, 3), (2,)), ((2, 1), ())], ids=str)
def test_interpolator_against_scipy(sizes, trailing):
    grid = _grid(sizes)
    values = RNG.normal(size=sizes + trailing)
    lo, hi = [g[0] - 1 for g in grid], [g[-1] + 1 for g in grid]
    xi = RNG.uniform(lo, hi, size=(2, 5, len(sizes)))
    xi[0, 0] = [g[0] for g in grid]     # grid corners belong to the grid
    xi[0, 1] = [g[-1] for g in grid]
    with plax.enable_x64(True):
        for method in ("linear", "nearest"):
            for fill in (np.nan, -2.0, None):
                got = RegularGridInterpolator(grid, values, method, fill_value=fill)(xi)
                want = si.RegularGridInterpolator(grid, values, method, bounds_error=False,
                                                  fill_value=fill)(xi)
                assert got.shape == want.shape == (2, 5) + trailing
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12,
                                           err_msg=f"{method} {fill}")


def test_descending_axis_and_coordinate_tuples_as_scipy():
    grid = (np.array([3.0, 2.0, 0.5]), np.array([0.0, 1.0, 1.5, 4.0]))
    values = RNG.normal(size=(3, 4))
    rows, cols = RNG.uniform(0, 3.5, size=6), RNG.uniform(-0.5, 4, size=6)
    with plax.enable_x64(True):
        ours = RegularGridInterpolator(grid, values)
        theirs = si.RegularGridInterpolator(grid, values, bounds_error=False)
        np.testing.assert_allclose(ours((rows, cols)), theirs((rows, cols)), rtol=1e-12)
        np.testing.assert_allclose(ours(np.stack([rows, cols], -1)), theirs((rows, cols)),
                                   rtol=1e-12)


def test_interpolator_is_a_pytree_under_jit_vmap_and_grad():
    grid = _grid((4, 3))
    values = RNG.normal(size=(4, 3)).astype(np.float32)
    interpolator = RegularGridInterpolator(grid, values)
    xi = np.stack([RNG.uniform(grid[0][0], grid[0][-1], 3),
                   RNG.uniform(grid[1][0], grid[1][-1], 3)], -1).astype(np.float32)
    leaves, tree = plax.tree_util.tree_flatten(interpolator)
    assert len(leaves) == 4
    evaluate = plax.jit(lambda interp, x: interp(x))
    np.testing.assert_allclose(evaluate(interpolator, xi), interpolator(xi), rtol=1e-6)
    stacked = plax.tree_util.tree_map(lambda a, b: np.stack([a, b]), interpolator,
                                      RegularGridInterpolator(grid, 2 * values))
    batched = plax.vmap(evaluate, in_axes=(0, None))(stacked, xi)
    np.testing.assert_allclose(batched, np.stack([interpolator(xi), 2 * interpolator(xi)]),
                               rtol=1e-5)
    with plax.enable_x64(True):
        grid64, xi64 = tuple(g.astype(np.float64) for g in grid), xi.astype(np.float64)
        check_grads(lambda v, x: RegularGridInterpolator(grid64, v)(x),
                    (values.astype(np.float64), xi64), order=1)


def test_interpolator_bad_input():
    grid = (np.arange(3.0), np.arange(4.0))
    with pytest.raises(ValueError, match="method 'cubic' is not defined"):
        RegularGridInterpolator(grid, np.ones((3, 4)), method="cubic")
    with pytest.raises(ValueError, match="method 'spline' is not defined"):
        RegularGridInterpolator(grid, np.ones((3, 4)))(np.zeros((1, 2)), method="spline")
    with pytest.raises(NotImplementedError, match="bounds_error"):
        RegularGridInterpolator(grid, np.ones((3, 4)), bounds_error=True)
    with pytest.raises(ValueError, match="2 point arrays, but values has 1 dimensions"):
        RegularGridInterpolator(grid, np.ones(3))
    with pytest.raises(ValueError, match="There are 3 points and 4 values in dimension 0"):
        RegularGridInterpolator(grid, np.ones((4, 3)))
    with pytest.raises(ValueError, match="dimension 1 must be 1-dimensional"):
        RegularGridInterpolator((np.arange(3.0), np.ones((2, 2))), np.ones((3, 2)))
    with pytest.raises(ValueError, match="dimension 0 must be strictly ascending"):
        RegularGridInterpolator((np.array([0.0, 2.0, 1.0]),), np.ones(3))
    with pytest.raises(ValueError, match="complex64 does not cast to float32"):
        RegularGridInterpolator(grid, np.ones((3, 4), np.float32), fill_value=1j)
    with pytest.raises(TypeError, match="got list"):
        RegularGridInterpolator(grid, [[1.0, 2.0]])
    with pytest.raises(ValueError, match="sample points xi have dimension 3, but this "
                                         "RegularGridInterpolator has dimension 2"):
        RegularGridInterpolator(grid, np.ones((3, 4)))(np.zeros((5, 3)))


def test_vq_against_scipy():
    with plax.enable_x64(True):
        for obs_shape, book_shape in [((7, 3), (4, 3)), ((6,), (3,)), ((0, 2), (3, 2))]:
            obs, book = RNG.normal(size=obs_shape), RNG.normal(size=book_shape)
            code, dist = vq(obs, book)
            want_code, want_dist = scv.vq(obs, book)
            np.testing.assert_array_equal(code, want_code)
            np.testing.assert_allclose(dist, want_dist, rtol=1e-12)
        # ties go to the first code; integer input is promoted
        code, dist = vq(np.array([[1, 1], [0, 2]]), np.array([[0, 1], [1, 0], [1, 2]]))
        np.testing.assert_array_equal(code, [0, 0])
        np.testing.assert_allclose(dist, [1.0, 1.0])
        assert dist.dtype == np.float64
    codes = plax.jit(lambda o, b: vq(o, b)[0])(np.ones((2, 2), np.float32),
                                              np.eye(2, dtype=np.float32))
    np.testing.assert_array_equal(codes, [0, 0])


def test_vq_bad_input():
    with pytest.raises(ValueError, match="should have the same rank"):
        vq(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="ndim different than 1 or 2"):
        vq(np.ones((1, 2, 2)), np.ones((1, 2, 2)))
    with pytest.raises(TypeError, match="2 features cannot be matched to codes of 3"):
        vq(np.ones((1, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="code book is empty"):
        vq(np.ones((2, 2)), np.ones((0, 2)))
    with pytest.raises(TypeError, match="got list"):
        vq([[1.0, 2.0]], np.ones((3, 2)))


_JAX_BODY = """
RGI = lib.scipy.interpolate.RegularGridInterpolator
vq = lib.scipy.cluster.vq.vq
grid = (np.array([0.0, 1.0, 3.0]), np.array([-1.0, 0.0, 0.5, 2.0]))
xi = np.array([[0.5, 0.25], [1.0, 0.0], [2.0, 0.5], [-0.5, 1.0], [3.0, 2.0], [3.5, -2.0],
               [0.5, -0.5], [2.0, 1.25]], np.float32)
values = np.arange(12.0, dtype=np.float32).reshape(3, 4) ** 1.5


def compute(xi, values):
    out = {}
    for method in ("linear", "nearest"):
        out[method] = RGI(grid, values, method)(xi)
        out[method + "_none"] = RGI(grid, values, method, fill_value=None)(xi)
        ints = np.arange(12).reshape(3, 4)
        out[method + "_int"] = RGI(grid, ints, method, fill_value=-1)(xi)
        out[method + "_f16"] = RGI(grid, values.astype(np.float16), method)(xi)
        out[method + "_c64"] = RGI(grid, values.astype(np.complex64), method)(xi)
    out["tuple"] = RGI(grid, values)((xi[:, 0], xi[:, 1]))
    out["one_axis"] = RGI(grid[:1], values)(np.array([0.25, 2.5, 4.0]))
    out["grad_xi"] = lib.grad(lambda x: RGI(grid, values)(x).sum())(xi[:3])
    out["grad_values"] = lib.grad(lambda v: RGI(grid, v)(xi).sum())(values)
    return out


results.update(lib.jit(compute)(xi, values))
results["eager"] = RGI(grid, values)(xi)
obs = np.array([[1.1, 2.1], [5.9, 4.8], [np.nan, 0.0], [2.5, 3.5]], np.float32)
book = np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 4.0], [6.0, 5.0]], np.float32)
results["vq_code"], results["vq_dist"] = vq(obs, book)
results["vq1_code"], results["vq1_dist"] = vq(np.array([1, 5, 2]), np.array([0, 3, 6]))
"""


@requires_jax
def test_matches_jax():
    assert_same_as_jax(_JAX_BODY, {}, rtol=1e-5, atol=1e-5,
                       tolerances={"linear_f16": (1e-3, 1e-2), "nearest_f16": (1e-3, 1e-2)})
