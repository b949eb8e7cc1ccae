"""plax.scipy.special's hyp1f1, hyp2f1, owens_t, wofz and sph_harm_y against SciPy
(grids across the domain and its edges, float32 and float64, one jit per dtype), finite
differences, and JAX (dtypes, conventions, derivatives; one subprocess)."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy import special as ps
from plax.test_util import check_grads

ss = pytest.importorskip("scipy.special")

F32, F64 = np.float32, np.float64
RNG = np.random.default_rng(7)


def _cat(*parts):
    return np.concatenate([np.asarray(p, F64).ravel() for p in parts])


# hyp1f1: random parameters of both signs over |x| ≤ 200 (series, Kummer's
# transformation, the asymptotic expansion), terminating and polar parameters, edges.
# (1, 1, x) is e^x, (-2, 1, x) a Laguerre polynomial, (0, 0, x) is 1 (JAX's convention).
H1 = (_cat(RNG.uniform(-10, 10, 120), RNG.integers(-6, 1, 20),
           [1, 0.5, 2, 1, 3, 1, 1, 50, -1, np.nan, 0, -2, 0]),
      _cat(RNG.uniform(-10, 10, 120), RNG.uniform(0.1, 5, 20),
           [1, 2, 0, -2, 2, 2, 2, 60, -2, 1, 0, 1, 3]),
      _cat(RNG.uniform(-60, 60, 60), RNG.uniform(-200, 200, 60), RNG.uniform(-30, 30, 20),
           [3, 1.5, 1, 1, 0, np.inf, -np.inf, 30, 3, 1, 3, 3, -2]))
# hyp2f1: x < 1 through the series, Pfaff's and the connection formulas; c - a - b
# integral (the logarithmic case); terminating series beyond x = 1; poles of (c)_k.
_A2, _B2 = RNG.uniform(0, 3, 20), RNG.uniform(0, 3, 20)
H2 = (_cat(RNG.uniform(-5, 5, 120), RNG.integers(-4, 1, 15), _A2,
           [1, 1, 1, -2, 1, 1, 0.5, 1, 1, 0, -3, 0.2, 2, 1, np.nan, 1, 1, 0.5, -2]),
      _cat(RNG.uniform(-5, 5, 120), RNG.uniform(-3, 3, 15), _B2,
           [2, 2, 2, 2, 2, 2, 0.5, 1, 1, 1, 1, 0.3, 3, 2, 1, 2, 1, 1, 2]),
      _cat(RNG.uniform(-5, 8, 120), RNG.uniform(0.5, 4, 15), _A2 + _B2 + RNG.integers(-3, 4, 20),
           [3, 3, 4, 3, 3, -2, 1, 2, 0, 2, -5, 0.5, 5, 3, 2, 3, 2, 1.5, 3]),
      _cat(RNG.uniform(-10, 1, 120), RNG.uniform(-3, 3, 15), RNG.uniform(-3, 0.999, 20),
           [0.5, 1.0, 1.0, 1.5, 1.5, 0.5, 0.99, 0.9999, 0.5, 3, 0.5, -20, 0.7, 0, 0.5, -1e6,
            -0.5, 0.81, 5]))
OWENS = (_cat(RNG.uniform(-12, 12, 100),
              [0, 0, 1, -1, 2, 10, 40, np.inf, -np.inf, np.nan, 1, 3, 1e-20]),
         _cat(RNG.uniform(-5, 5, 50), 10 ** RNG.uniform(-5, 5, 50),
              [0, 1, 0.5, 0.5, -3, 0.2, 1, 1, 1, 1, np.inf, -np.inf, 1e-30]))
_RE = _cat(-np.logspace(-3, 3, 25)[::-1], [0], np.logspace(-3, 3, 25))
_IM = _cat(-np.logspace(-3, 1.2, 15)[::-1], [0], np.logspace(-3, 3, 25))
WOFZ_Z = _cat(np.add.outer(_RE, np.zeros_like(_IM))), _cat(np.add.outer(np.zeros_like(_RE), _IM))
SPH = (RNG.integers(0, 20, 80), RNG.integers(-20, 21, 80), RNG.uniform(0, np.pi, 80),
       RNG.uniform(0, 2 * np.pi, 80))


def _all(h1, h2, owens, wofz_z, sph):
    return {"hyp1f1": ps.hyp1f1(*h1), "hyp2f1": ps.hyp2f1(*h2), "owens_t": ps.owens_t(*owens),
            "wofz": ps.wofz(plax.lax.complex(*wofz_z)),
            "sph_harm_y": ps.sph_harm_y(*sph, n_max=19)}


@pytest.fixture(scope="module")
def computed():
    out = {}
    for dtype in (F32, F64):
        with plax.enable_x64(dtype == F64):
            args = [tuple(a.astype(dtype) for a in group) for group in (H1, H2, OWENS, WOFZ_Z)]
            args.append(SPH[:2] + tuple(a.astype(dtype) for a in SPH[2:]))
            out[dtype] = args, plax.jit(_all)(*args)
    return out


def _reference(name, args):
    a64 = [np.asarray(a, F64) if np.asarray(a).dtype.kind == "f" else a for a in args]
    with np.errstate(all="ignore"):
        if name == "wofz":
            return ss.wofz(a64[0] + 1j * a64[1])
        return getattr(ss, name)(*a64)


def _cancellation_scale(a, b, x):
    """Σ_k |(a)_k / (b)_k x^k / k!|, the smaller of it and its Kummer twin e^x Σ for
    (b - a, b, -x): how large the terms 1F1's sum cancels are."""
    def absolute_sum(a, b, x):
        term, total = np.ones_like(x), np.zeros_like(x)
        for k in range(800):
            total = total + np.abs(term)
            term = term * (a + k) / (b + k) * x / (k + 1)
        return total
    with np.errstate(all="ignore"):
        return np.fmin(absolute_sum(a, b, x), np.exp(x) * absolute_sum(b - a, b, -x))


# Relative tolerances (float32, float64): hyp1f1 and hyp2f1 lose digits to cancelling
# terms (negative parameters, the connection formulas), most of all in float32, where
# hyp1f1 is held to 1e-6 of the size of the terms it cancels (and exp(x) of large x
# loses x ulps).
TOL = {"hyp1f1": (5e-5, 5e-10), "hyp2f1": (2e-3, 1e-11), "owens_t": (2e-5, 2e-12),
       "wofz": (1e-5, 5e-14), "sph_harm_y": (5e-5, 5e-13)}
NAMES = ["hyp1f1", "hyp2f1", "owens_t", "wofz", "sph_harm_y"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_against_scipy(name, dtype, computed):
    args, outs = computed[dtype]
    got = np.asarray(outs[name])
    want = _reference(name, args[NAMES.index(name)])
    if name == "hyp1f1":  # a = b = 0 is 1 (JAX's convention), inf in SciPy
        want = np.where((args[0][0] == 0) & (args[0][1] == 0), 1.0, want)
    if name == "hyp2f1":  # SciPy is NaN at x = -inf, and so is plax
        want = np.where(args[1][3] == -np.inf, np.nan, want)
    assert got.dtype == (dtype if name in ("hyp1f1", "hyp2f1", "owens_t") else
                         np.result_type(dtype, np.complex64))
    big = np.finfo(dtype).max / 10
    scale = np.abs(want)
    normal = np.isfinite(want) & (scale < big) & (
        (scale > np.finfo(dtype).tiny * 1e6) | (want == 0))
    if name in ("wofz", "sph_harm_y"):  # complex: relative to the modulus
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
    else:
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)], err_msg=name)
        # beyond the dtype's range the result overflows to inf with the right sign
        over = np.isfinite(want) & (scale >= big)
        assert np.all((np.abs(got[over]) >= big) | (dtype == F64)), name
    rtol = TOL[name][dtype == F64]
    err = np.abs(got[normal] - want[normal]) / np.maximum(scale[normal], 1e-300)
    if name == "sph_harm_y":
        err = np.abs(got[normal] - want[normal])  # values of order 1, zeros where |m| > n
    if name == "hyp1f1" and dtype == F32:
        a, b, x = (np.asarray(v, F64) for v in args[0])
        terms = np.nan_to_num(_cancellation_scale(a, b, x), nan=np.inf)[normal]
        with np.errstate(over="ignore"):
            cancelled = 1e-6 * terms / np.maximum(scale[normal], 1e-300)
        err = np.maximum(err - cancelled, 0)
    assert err.max() <= rtol, (name, err.max(), np.argmax(err))


def test_exact_values():
    with plax.enable_x64(True):
        np.testing.assert_allclose(ps.owens_t(0.0, 0.7), np.arctan(0.7) / (2 * np.pi), rtol=1e-15)
        np.testing.assert_allclose(ps.owens_t(1.3, 1.0), 0.5 * ss.ndtr(1.3) * ss.ndtr(-1.3),
                                   rtol=1e-14)
        np.testing.assert_allclose(ps.wofz(np.array([0.0, 2.0])).real, [1.0, np.exp(-4.0)],
                                   rtol=1e-12)


def test_dtypes_broadcasting_and_bad_input():
    assert ps.hyp1f1(1, 2, 3).dtype == F32 and ps.owens_t(1, 2).dtype == F32
    assert ps.hyp1f1(np.ones((2, 1), F32), 1.0, np.zeros(3)).shape == (2, 3)
    assert ps.wofz(1).dtype == np.complex64 and ps.wofz(np.float16(1)).dtype == np.complex64
    assert ps.owens_t(np.float16(1), np.float16(0.5)).dtype == np.float16
    assert ps.sph_harm_y(np.array([2, 3]), np.array([1, -2]), 0.5, 0.2).shape == (2,)
    np.testing.assert_allclose(ps.sph_harm_y(np.array([10]), np.array([2]), 0.5, 0.2, n_max=6),
                               [ss.sph_harm_y(6, 2, 0.5, 0.2)], rtol=1e-5)  # n clipped to n_max
    with pytest.raises(ValueError, match="hyp1f1 does not support complex"):
        ps.hyp1f1(1.0, 2.0, 1j)
    with pytest.raises(TypeError, match="hyp2f1 does not support complex"):
        ps.hyp2f1(1.0, 2.0, 3.0, 0.5j)
    with pytest.raises(TypeError, match="owens_t does not support complex"):
        ps.owens_t(1j, 2.0)
    with pytest.raises(TypeError, match="hyp1f1 requires ndarray or scalar arguments"):
        ps.hyp1f1([1.0], 2.0, 3.0)
    with pytest.raises(NotImplementedError, match="'diff_n' argument"):
        ps.sph_harm_y(np.array([1]), np.array([0]), 0.5, 0.2, diff_n=1)
    with pytest.raises(TypeError, match="m must be an integer array"):
        ps.sph_harm_y(np.array([1]), np.array([0.5]), 0.5, 0.2)
    with pytest.raises(plax.errors.ConcretizationTypeError, match="n_max"):
        plax.jit(ps.sph_harm_y)(np.array([1]), np.array([0]), 0.5, 0.2)
    out = plax.jit(ps.sph_harm_y, static_argnames="n_max")(np.array([3]), np.array([-2]),
                                                            0.5, 0.2, n_max=3)
    np.testing.assert_allclose(out, [ss.sph_harm_y(3, -2, 0.5, 0.2)], rtol=1e-5)


def _f64(*values):
    return tuple(np.asarray(v, F64) for v in values)


GRADS = {
    "owens_t": (ps.owens_t, _f64([0.7, -1.5, 3.0], [1.3, 0.4, -2.5]), 2),
    "wofz": (ps.wofz, (np.array([0.5 + 1j, -1.0 - 0.5j, 2.0 + 0.1j]),), 2),
    "sph_harm_y": (lambda t, p: ps.sph_harm_y(np.array([2, 3, 5]), np.array([1, -2, 0]), t, p),
                   _f64([0.3, 1.2, 2.5], [0.1, 2.0, 4.0]), 1),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_derivatives_match_differences(name):
    fn, args, order = GRADS[name]
    with plax.enable_x64(True):
        check_grads(fn, args, order=order, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


PARAMETER_POINTS = {
    "hyp1f1": _f64([0.5, 1.5, -1.3, 2.0], [2.5, 0.7, 3.2, 1.5], [0.3, -2.0, 4.0, -30.0]),
    # the series, Pfaff, and the connection formulas at 1 - x (the logarithmic case, an
    # integral c - a - b, is left out: there the derivative in a or b also moves c)
    "hyp2f1": _f64([0.5, 1.5, 0.3, 1.2], [0.7, -0.4, 0.6, 0.8], [1.9, 3.3, 2.4, 2.05],
                   [0.3, -2.0, 0.8, 0.9]),
}


@pytest.mark.parametrize("name", sorted(PARAMETER_POINTS))
def test_parameter_derivatives_match_scipy_differences(name):
    """Every partial derivative (the parameters' from the summation's forward derivative,
    x's from the contiguous function) against central differences of SciPy's values."""
    points = PARAMETER_POINTS[name]
    argnums = tuple(range(len(points)))
    with plax.enable_x64(True):
        got = plax.jit(plax.vmap(plax.grad(getattr(ps, name), argnums)))(*points)
    h = 1e-6
    for i in argnums:
        up = [p + h * (j == i) for j, p in enumerate(points)]
        down = [p - h * (j == i) for j, p in enumerate(points)]
        want = (getattr(ss, name)(*up) - getattr(ss, name)(*down)) / (2 * h)
        np.testing.assert_allclose(got[i], want, rtol=2e-6, atol=1e-8, err_msg=f"{name} arg {i}")


def test_vmap_matches_a_loop():
    a = np.array([[0.5, 2.0], [1.5, 3.0]], F32)
    x = np.array([0.3, -0.7], F32)
    for fn in (lambda a, x: ps.hyp1f1(a, a + 1, x), ps.owens_t):
        mapped = plax.vmap(fn, in_axes=(0, None))(a, x)
        np.testing.assert_allclose(mapped, np.stack([fn(row, x) for row in a]), rtol=1e-6)


# Where JAX 0.10.2's answers are wrong rather than a convention, plax follows SciPy and
# the grids above check it: hyp1f1 and hyp2f1 are NaN for a NaN argument (JAX: 1);
# hyp1f1(a, b, inf) is ±inf (JAX: NaN); hyp2f1 for x < -1 (JAX: 1.3e116 at (1, 2, 3, -3),
# not 0.3586), a series that terminates beyond x = 1 or before a pole of (c)_k (JAX: inf),
# and x = -inf (NaN, JAX: -inf); wofz tends to 0 at infinity in the upper half plane and
# overflows to inf below it (JAX: NaN). hyp2f1 is left out of the body (JAX's compiles
# slowly; its conventions at x >= 1 and at poles are SciPy's, checked above).
_JAX_BODY = """
special = lib.scipy.special
f = np.float32
a = np.array([0.5, 1.0, 2.0, 3.5, 0.0, 1.0], f)
b = np.array([1.5, 2.0, 0.7, 4.0, 0.0, 0.0], f)
x = np.array([0.3, -1.5, 2.0, 0.7, 0.7, 0.5], f)
results["hyp1f1"] = special.hyp1f1(a, b, 3 * x)  # a = b = 0 is 1; b = 0 is inf
results["owens_t"] = special.owens_t(np.array([0, 1, -1, 2, 10, np.inf, np.nan], f),
                                     np.array([0, 1, 0.5, -3, 0.2, 1, 1], f))
results["wofz"] = special.wofz(np.array([0, 1 + 1j, -2 + 0.5j, 3 - 0.2j, 0.5j], np.complex64))
results["wofz_real"] = special.wofz(np.array([0.5, 2.0], np.float16))
results["sph"] = special.sph_harm_y(np.array([0, 1, 2, 3, 4]), np.array([0, -1, 2, -3, 1]),
                                    np.array([0.3, 1, 2, 0.1, 3], f),
                                    np.array([0.1, 2, 4, 1, 0.5], f))
results["grads"] = np.array(lib.grad(special.hyp1f1, (0, 1, 2))(f(1.5), f(2.5), f(0.7)))
results["wofz_jvp"] = lib.jvp(special.wofz, (np.complex64(1 + 1j),), (np.complex64(1),))[1]
"""


@requires_jax
def test_matches_jax():
    assert_same_as_jax(_JAX_BODY, {}, rtol=2e-5, atol=1e-6,
                       tolerances={"grads": (1e-4, 1e-5)})
