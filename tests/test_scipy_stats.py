"""plax.scipy.stats against SciPy: every distribution function on points across its
support, at its edges and outside it (float32 and float64, each dtype in one jit),
derivatives against finite differences, the sample summaries, bad input, and JAX's
dtypes and conventions in a subprocess."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy import stats as ps
from plax.test_util import check_grads

st = pytest.importorskip("scipy.stats")
ss = pytest.importorskip("scipy.special")

F32, F64 = np.float32, np.float64
RNG = np.random.default_rng(1)
EDGES = [np.inf, -np.inf, np.nan]
X = np.concatenate([np.linspace(-6, 6, 25), [-40.0, 40.0, 0.0], EDGES])
XPOS = np.concatenate([np.linspace(0.0, 12, 25), [1e-4, 60.0, -1.0], EDGES])
XUNIT = np.concatenate([np.linspace(0.0, 1.0, 21), [1e-4, 0.9999, -0.5, 1.5], EDGES])
Q = np.concatenate([np.linspace(0.0, 1.0, 21), [1e-6, 1 - 1e-6, -0.1, 1.1, np.nan]])
K = np.concatenate([np.arange(-2.0, 16.0), [2.5, 40.0, np.nan]])


LOC_SCALE = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")
# distribution → (points, the values of each parameter in SciPy's order, cycled along the
# points, and the functions; the inverse functions take the probabilities Q instead).
DISTRIBUTIONS = {
    "norm": (X, ([0.0, 1.5], [1.0, 0.5, 3.0]), LOC_SCALE + ("ppf", "isf")),
    "cauchy": (X, ([0.0, -1.0], [1.0, 2.0]), LOC_SCALE + ("ppf", "isf")),
    "laplace": (X, ([0.0, 1.0], [1.0, 0.7]), LOC_SCALE + ("ppf",)),
    "logistic": (X, ([0.0, 2.0], [1.0, 0.6]), LOC_SCALE + ("ppf", "isf")),
    "gumbel_r": (X, ([0.0, 1.0], [1.0, 2.0]), LOC_SCALE + ("ppf",)),
    "gumbel_l": (X, ([0.0, 1.0], [1.0, 2.0]), LOC_SCALE + ("ppf",)),
    "uniform": (X, ([-1.0, 0.0], [2.0, 5.0]), LOC_SCALE + ("ppf",)),
    "expon": (XPOS, ([0.0, 0.5], [1.0, 3.0]),
              LOC_SCALE + ("ppf", "isf")),
    "t": (X, ([1.0, 2.5, 30.0], [0.0, 0.5], [1.0, 2.0]), LOC_SCALE),
    "gamma": (XPOS, ([0.5, 1.0, 3.5, 20.0], [0.0, 0.5],
                     [1.0, 2.0]), LOC_SCALE),
    "chi2": (XPOS, ([1.0, 3.0, 7.5], [0.0, 0.5], [1.0, 2.0]),
             LOC_SCALE),
    "beta": (XUNIT, ([0.5, 2.0, 5.0], [1.5, 0.7, 3.0, 9.0],
                     [0.0, -0.1], [1.0, 1.2]), LOC_SCALE),
    "pareto": (XPOS, ([0.5, 2.0, 4.0], [0.0, 0.5], [1.0, 2.0]),
               LOC_SCALE + ("ppf",)),
    "truncnorm": (X, ([-1.0, 2.0, -8.0, -30.0], [1.5, 6.0, -6.0, -20.0],
                      [0.0, 0.5], [1.0, 2.0]), LOC_SCALE),
    "gennorm": (X, ([0.5, 1.0, 2.0, 4.0],), ("logpdf", "pdf", "cdf")),
    "vonmises": (X, ([0.5, 2.0, 40.0],), ("logpdf", "pdf")),
    "wrapcauchy": (XPOS, ([0.1, 0.5, 0.9],), ("logpdf", "pdf")),
    "poisson": (K, ([0.5, 3.0, 11.0], [0.0, 1.0]),
                ("logpmf", "pmf", "cdf", "sf", "logcdf", "logsf")),
    "binom": (K, ([5.0, 12.0], [0.3, 0.8], [0.0, 1.0]),
              ("logpmf", "pmf", "cdf", "sf")),
    "nbinom": (K, ([1.0, 3.5], [0.3, 0.8], [0.0, 1.0]),
               ("logpmf", "pmf")),
    "geom": (K, ([0.2, 0.7], [0.0, 1.0]), ("logpmf", "pmf")),
    "betabinom": (K, ([5.0, 12.0], [0.5, 2.0, 3.0], [1.5, 0.8],
                      [0.0, 1.0]), ("logpmf", "pmf")),
    "bernoulli": (K, ([0.0, 0.3, 1.0, 0.8],), ("logpmf", "pmf", "cdf", "ppf")),
}

# SciPy's bernoulli.logpmf at p = 0 or 1 and k outside {0, 1} follows from its pmf;
# float32 tolerances are wider where a shape parameter enters exp(a log x) (gamma,
# beta, t's incomplete beta), and in the far tails of truncnorm.
# In float64, beta and betabinom keep the digits of JAX's betaln (the specification),
# whose series from 8 up (cdflib's algdiv) is good to about 1e-6.
RTOL = {"t": (2e-4, 1e-10), "beta": (2e-4, 1e-6), "gamma": (2e-4, 1e-10),
        "chi2": (2e-4, 1e-10), "truncnorm": (2e-3, 1e-9), "binom": (2e-4, 1e-10),
        "betabinom": (1e-4, 1e-6), "nbinom": (1e-4, 1e-11), "poisson": (1e-4, 1e-10)}
ATOL = {"truncnorm": (1e-5, 1e-12), "vonmises": (1e-6, 1e-13), "beta": (1e-7, 1e-6)}
# norm.isf is JAX's ppf(1 - q) (bit for bit): in float32, 1 - q drops a small q's digits.
FN_RTOL = {("norm", "isf"): (1e-3, 1e-12)}
INVERSE = ("ppf", "isf")
CASES = [(d, f) for d, (_, _, fns) in DISTRIBUTIONS.items() for f in fns]


def _arguments(dist, fn, dtype):
    points, params, _ = DISTRIBUTIONS[dist]
    points = Q if fn in INVERSE else points
    return tuple(np.resize(np.asarray(a, dtype), points.shape) for a in (points, *params))


@pytest.fixture(scope="module")
def computed():
    """Every case of both dtypes, each dtype in one compiled function."""
    out = {}
    for dtype in (F32, F64):
        with plax.enable_x64(dtype == F64):
            args = {f"{d}.{f}": _arguments(d, f, dtype) for d, f in CASES}
            fn = plax.jit(lambda args: {
                k: getattr(getattr(ps, k.split(".")[0]), k.split(".")[1])(*a)
                for k, a in args.items()})
            out[dtype] = (args, fn(args))
    return out


@pytest.mark.parametrize("dist,fn", CASES, ids=[f"{d}.{f}" for d, f in CASES])
@pytest.mark.parametrize("dtype", [F32, F64], ids=["f32", "f64"])
def test_against_scipy(dist, fn, dtype, computed):
    args, outs = computed[dtype]
    got = np.asarray(outs[f"{dist}.{fn}"])
    assert got.dtype == dtype
    points = np.asarray(args[f"{dist}.{fn}"][0], F64)
    with np.errstate(all="ignore"):
        want = getattr(getattr(st, dist), fn)(points, *(np.asarray(a, F64)
                                                         for a in args[f"{dist}.{fn}"][1:]))
    if dist.startswith("gumbel") and fn in ("logpdf", "pdf"):
        # the density's limit in the long tail, where SciPy's formula gives inf - inf
        tail = points == (-np.inf if dist == "gumbel_r" else np.inf)
        want = np.where(tail, -np.inf if fn == "logpdf" else 0.0, want)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg="NaNs")
    infinite = np.isinf(want)
    np.testing.assert_array_equal(got[infinite], want[infinite], err_msg="infinities")
    normal = np.isfinite(want) & ((np.abs(want) >= np.finfo(dtype).tiny) | (want == 0))
    rtol = FN_RTOL.get((dist, fn), RTOL.get(dist, (2e-5, 1e-12)))[dtype == F64]
    atol = ATOL.get(dist, (1e-7, 1e-15))[dtype == F64]
    np.testing.assert_allclose(got[normal], want[normal], rtol=rtol, atol=atol)


def test_multivariate_distributions_against_scipy():
    with plax.enable_x64(True):
        a = RNG.normal(size=(3, 3))
        cov, mean = a @ a.T + np.eye(3), np.array([0.5, -1.0, 2.0])
        x = RNG.normal(size=(4, 3))
        want = st.multivariate_normal.logpdf(x, mean, cov)
        np.testing.assert_allclose(ps.multivariate_normal.logpdf(x, mean, cov), want,
                                   rtol=1e-12)
        np.testing.assert_allclose(ps.multivariate_normal.pdf(x, mean, cov), np.exp(want),
                                   rtol=1e-12)
        # a batch of covariances, and a scalar variance shared by the coordinates
        covs = np.stack([cov, 2 * np.eye(3)])
        got = ps.multivariate_normal.logpdf(x[:2], mean, covs)
        np.testing.assert_allclose(got, [st.multivariate_normal.logpdf(x[i], mean, covs[i])
                                         for i in range(2)], rtol=1e-12)
        np.testing.assert_allclose(ps.multivariate_normal.logpdf(x, mean, 2.0),
                                   st.multivariate_normal.logpdf(x, mean, 2.0), rtol=1e-12)
        alpha = np.array([0.7, 2.0, 3.5])
        points = RNG.dirichlet(alpha, size=5).T
        np.testing.assert_allclose(ps.dirichlet.logpdf(points, alpha),
                                   st.dirichlet.logpdf(points, alpha), rtol=1e-12)
        np.testing.assert_allclose(ps.dirichlet.pdf(points[:2], alpha),
                                   st.dirichlet.pdf(points, alpha), rtol=1e-10)
        assert ps.dirichlet.logpdf(np.array([0.5, 0.6, 0.1]), alpha) == -np.inf
        counts = np.array([[2, 3, 0], [1, 1, 3], [4, 0, 0]])
        p = np.array([0.2, 0.5, 0.3])
        np.testing.assert_allclose(ps.multinomial.logpmf(counts, 5, p),
                                   st.multinomial.logpmf(counts, 5, p), rtol=1e-12)
        np.testing.assert_allclose(ps.multinomial.pmf(counts[:1], 4, p), [0.0])


def test_poisson_entropy_against_scipy():
    """JAX's formula (test_bits_vs_jax.py checks its bits), which JAX documents as within
    1e-5 of SciPy: sums truncated at mu + 20 terms (below 10) or mu + 10 √mu + 20 (below
    100), a two-term asymptotic series beyond; 0 at mu = 0."""
    with plax.enable_x64(True):
        mu = np.array([1e-3, 0.5, 3.0, 9.9, 10.0, 20.0, 99.0, 100.0, 150.0, 1e3])
        np.testing.assert_allclose(ps.poisson.entropy(mu), st.poisson.entropy(mu), rtol=1e-5)
        k = np.arange(15000)  # (SciPy's own sum does not converge at 1e4; this one does)
        log_p = k * np.log(1e4) - ss.gammaln(k + 1) - 1e4
        np.testing.assert_allclose(ps.poisson.entropy(1e4), -np.sum(np.exp(log_p) * log_p),
                                   rtol=1e-5)
        assert ps.poisson.entropy(0.0) == 0
        assert ps.poisson.entropy(np.ones((2, 1)), np.zeros(3)).shape == (2, 3)
    assert ps.poisson.entropy(3).dtype == np.float32


def test_sample_summaries_against_scipy():
    with plax.enable_x64(True):
        x = RNG.integers(0, 4, size=(5, 6)).astype(F64)
        x[1, 2] = np.nan
        for axis in (0, 1, -1, None):
            for method in ("average", "min", "max", "dense", "ordinal"):
                np.testing.assert_array_equal(ps.rankdata(x, method, axis=axis),
                                              st.rankdata(x, method, axis=axis))
            got, want = ps.mode(x, axis=axis), st.mode(x, axis=axis)
            np.testing.assert_array_equal(got.mode, want.mode)
            np.testing.assert_array_equal(got.count, want.count)
            np.testing.assert_allclose(ps.sem(x, axis=axis, ddof=0),
                                       st.sem(x, axis=axis, ddof=0), rtol=1e-12)
            np.testing.assert_allclose(ps.sem(x, axis=axis, nan_policy="omit"),
                                       st.sem(x, axis=axis, nan_policy="omit"), rtol=1e-12)
        assert ps.mode(x, axis=1, keepdims=True).mode.shape == (5, 1)
        assert ps.rankdata(3.0) == 1.0
        empty = ps.mode(np.zeros((0, 2)))
        assert np.isnan(empty.mode).all() and (empty.count == 0).all()


def test_derivatives_against_finite_differences():
    with plax.enable_x64(True):
        x = np.array([-1.3, 0.2, 2.5])
        for fn in (lambda x: ps.norm.logcdf(x, 0.5, 2.0), lambda s: ps.t.logpdf(1.2, 3.0, 0.0, s),
                   lambda x: ps.logistic.logsf(x), lambda x: ps.truncnorm.logpdf(x, -2.0, 3.0),
                   lambda x: ps.gumbel_r.logsf(x), lambda x: ps.cauchy.cdf(x, 0.3, 1.5)):
            check_grads(fn, (np.abs(x) + 0.1,), order=2, modes=("fwd", "rev"))
        check_grads(lambda x: ps.gamma.logcdf(x, 2.5), (np.array([0.4, 3.0]),), order=1)
        check_grads(lambda m: ps.multivariate_normal.logpdf(np.array([0.3, -0.2]), m,
                                                            np.array([[2.0, 0.3], [0.3, 1.0]])),
                    (np.array([0.1, 0.4]),), order=2)


def test_vmap_and_empty_inputs():
    loc = np.array([0.0, 1.0, -2.0], F32)
    x = np.linspace(-1, 1, 4).astype(F32)
    mapped = plax.vmap(lambda m: ps.norm.logpdf(x, m))(loc)
    np.testing.assert_allclose(mapped, np.stack([ps.norm.logpdf(x, m) for m in loc]),
                               rtol=1e-6)
    assert ps.gamma.cdf(np.zeros((0, 3), F32), 2.0).shape == (0, 3)
    assert ps.norm.logpdf(1).dtype == F32


def test_bad_input():
    with pytest.raises(TypeError, match="multinomial.logpmf: x and n must be of integer"):
        ps.multinomial.logpmf(np.array([1.5, 0.5]), 2, np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match=r"incompatible shapes: mean \(3,\) and cov \(2, 2\)"):
        ps.multivariate_normal.logpdf(np.zeros(3), np.zeros(3), np.eye(2))
    with pytest.raises(ValueError, match="alpha` must be one-dimensional"):
        ps.dirichlet.logpdf(np.ones(2) / 2, np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"x.shape=\(5,\), alpha.shape=\(3,\)"):
        ps.dirichlet.logpdf(np.ones(5) / 5, np.ones(3))
    with pytest.raises(ValueError, match="unknown method 'mean'"):
        ps.rankdata(np.ones(3), "mean")
    with pytest.raises(ValueError, match="illegal nan_policy value 'skip'"):
        ps.mode(np.ones(3), nan_policy="skip")
    with pytest.raises(NotImplementedError, match="nan_policy='omit' is not supported"):
        ps.rankdata(np.ones(3), nan_policy="omit")
    with pytest.raises(TypeError, match="norm.logpdf requires ndarray or scalar arguments"):
        ps.norm.logpdf([1.0, 2.0])


_JAX_BODY = """
stats = lib.scipy.stats
x = np.array([-2.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, np.inf], np.float32)
k = np.array([-1, 0, 1, 2, 5, 9], np.int32)
half = np.array([0.25, 0.5, 1.0], np.float16)
for name in ("norm", "cauchy", "logistic", "laplace", "uniform", "expon", "gumbel_r",
             "gumbel_l"):
    # (gumbel_l's density at inf is its limit 0 in plax, NaN in JAX: compared on finite x)
    results[name] = getattr(stats, name).logpdf(x[:-1] if name == "gumbel_l" else x, 0.5, 2.0)
    results[name + "_cdf"] = getattr(stats, name).cdf(x)
    results[name + "_f16"] = getattr(stats, name).pdf(half)
    results[name + "_int"] = getattr(stats, name).logpdf(k)
    if name != "laplace":  # JAX has no laplace.ppf
        results[name + "_ppf"] = getattr(stats, name).ppf(np.float32(0.3))
results["t"] = stats.t.logpdf(x, 3.0)
results["gamma"] = stats.gamma.logpdf(x, 2.5), stats.gamma.cdf(x, 2.5)
results["chi2"] = stats.chi2.logpdf(x, 3), stats.chi2.sf(x, 3)
results["beta"] = stats.beta.logpdf(x / 8, 2.0, 3.0), stats.beta.cdf(x / 8, 2.0, 3.0)
results["pareto"] = stats.pareto.logpdf(x, 2.0), stats.pareto.cdf(x, 2.0)
results["truncnorm"] = stats.truncnorm.logpdf(x, -1.0, 2.0), stats.truncnorm.cdf(x, -1.0, 2.0)
results["gennorm"] = stats.gennorm.logpdf(x, 1.5), stats.gennorm.cdf(x, 1.5)
results["vonmises"] = stats.vonmises.logpdf(x, 2.0)
results["wrapcauchy"] = stats.wrapcauchy.logpdf(x, 0.4)
results["poisson"] = stats.poisson.logpmf(k, 3.0), stats.poisson.cdf(k, 3.0)
results["poisson_entropy"] = stats.poisson.entropy(np.array([0.5, 3.0, 40.0, 300.0], np.float32))
results["binom"] = stats.binom.logpmf(k, 6, 0.4)
results["nbinom"] = stats.nbinom.logpmf(k, 3, 0.4)
results["geom"] = stats.geom.logpmf(k, 0.3)
results["betabinom"] = stats.betabinom.logpmf(k, 6, 2.0, 3.0)
results["bernoulli"] = stats.bernoulli.logpmf(k, 0.3), stats.bernoulli.ppf(x[3:6] / 8, 0.3)
results["multinomial"] = stats.multinomial.logpmf(np.array([1, 2, 0]), 3,
                                                  np.array([0.2, 0.5, 0.3], np.float32))
results["mvn"] = stats.multivariate_normal.logpdf(np.ones((2, 3), np.float32),
                                                  np.zeros(3, np.float32), np.eye(3))
results["dirichlet"] = stats.dirichlet.logpdf(np.array([0.2, 0.5, 0.3], np.float32),
                                              np.array([1.5, 2.0, 3.0], np.float32))
results["rankdata"] = stats.rankdata(np.array([3, 1, 1, 2]), "min")
results["mode"] = stats.mode(np.array([[1, 2], [1, 3], [2, 3]]))
results["sem"] = stats.sem(x[:6])
results["grads"] = (lib.grad(stats.norm.logcdf)(-3.0), lib.grad(stats.t.logpdf, 1)(0.5, 4.0),
                    lib.grad(stats.gamma.logpdf, 1)(2.0, 3.0))
for key in list(results):
    if isinstance(results[key], tuple):
        for i, v in enumerate(results.pop(key)):
            results[f"{key}#{i}"] = v
"""


@requires_jax
def test_matches_jax():
    assert_same_as_jax(_JAX_BODY, {}, rtol=2e-5, atol=1e-6,
                       tolerances={f"{n}_f16": (3e-3, 3e-3) for n in (
                           "norm", "cauchy", "logistic", "laplace", "uniform", "expon",
                           "gumbel_r", "gumbel_l")})
