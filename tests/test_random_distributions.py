"""Every plax.random distribution against its definition: a Kolmogorov–Smirnov test
against SciPy's CDF where SciPy has the distribution, moments otherwise (and for
the discrete ones), with fixed keys so the tests are deterministic. The
reparameterised gradient of `gamma` is checked against SciPy's inverse incomplete
gamma function.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import plax
import plax.numpy as jnp
import plax.random as r

stats = pytest.importorskip("scipy.stats")
special = pytest.importorskip("scipy.special")

N = 8000
KEY = r.key(1234)
# A fixed key and sample size: the p-values below are deterministic, not flaky.
P_MIN = 1e-3


def sample(f, *args, **kwargs) -> np.ndarray:
    return np.asarray(f(KEY, *args, **kwargs), np.float64)


CONTINUOUS = {
    "uniform": (lambda: sample(r.uniform, (N,), minval=-2.0, maxval=3.0),
                stats.uniform(loc=-2.0, scale=5.0)),
    "normal": (lambda: sample(r.normal, (N,)), stats.norm()),
    "normal_bfloat16": (lambda: sample(r.normal, (N,), jnp.bfloat16), None),
    "truncated_normal": (lambda: sample(r.truncated_normal, -0.5, 1.5, (N,)),
                         stats.truncnorm(-0.5, 1.5)),
    "exponential": (lambda: sample(r.exponential, (N,)), stats.expon()),
    "cauchy": (lambda: sample(r.cauchy, (N,)), stats.cauchy()),
    "laplace": (lambda: sample(r.laplace, (N,)), stats.laplace()),
    "logistic": (lambda: sample(r.logistic, (N,)), stats.logistic()),
    "gumbel": (lambda: sample(r.gumbel, (N,)), stats.gumbel_r()),
    "gumbel_high": (lambda: sample(r.gumbel, (N,), mode="high"), stats.gumbel_r()),
    "pareto": (lambda: sample(r.pareto, 3.0, (N,)), stats.pareto(3.0)),
    "rayleigh": (lambda: sample(r.rayleigh, 2.0, (N,)), stats.rayleigh(scale=2.0)),
    "weibull_min": (lambda: sample(r.weibull_min, 2.0, 1.5, (N,)),
                    stats.weibull_min(1.5, scale=2.0)),
    "lognormal": (lambda: sample(r.lognormal, 0.5, (N,)), stats.lognorm(0.5)),
    "triangular": (lambda: sample(r.triangular, -1.0, 0.5, 2.0, (N,)),
                   stats.triang(0.5, loc=-1.0, scale=3.0)),
    "wald": (lambda: sample(r.wald, 1.5, (N,)), stats.invgauss(1.5)),
    "gamma": (lambda: sample(r.gamma, 2.5, (N,)), stats.gamma(2.5)),
    "gamma_small_a": (lambda: sample(r.gamma, 0.3, (N,)), stats.gamma(0.3)),
    "loggamma": (lambda: np.exp(sample(r.loggamma, 0.3, (N,))), stats.gamma(0.3)),
    "beta": (lambda: sample(r.beta, 2.0, 5.0, (N,)), stats.beta(2.0, 5.0)),
    "chisquare": (lambda: sample(r.chisquare, 3.0, (N,)), stats.chi2(3.0)),
    "t": (lambda: sample(r.t, 4.0, (N,)), stats.t(4.0)),
    "f": (lambda: sample(r.f, 5.0, 8.0, (N,)), stats.f(5.0, 8.0)),
    "generalized_normal": (lambda: sample(r.generalized_normal, 1.5, (N,)),
                           stats.gennorm(1.5)),
    "maxwell": (lambda: sample(r.maxwell, (N,)), stats.maxwell()),
    "double_sided_maxwell": (lambda: np.abs(sample(r.double_sided_maxwell, 1.0, 2.0, (N,))
                                            - 1.0) / 2.0, stats.maxwell()),
    "dirichlet_marginal": (lambda: sample(r.dirichlet, jnp.array([1.0, 2.0, 3.0]), (N,))[:, 1],
                           stats.beta(2.0, 4.0)),
    "rbg_normal": (lambda: np.asarray(r.normal(r.key(5, impl="rbg"), (N,)), np.float64),
                   stats.norm()),
    "unsafe_rbg_uniform": (lambda: np.asarray(r.uniform(r.key(5, impl="unsafe_rbg"), (N,)),
                                              np.float64), stats.uniform()),
}


@pytest.mark.parametrize("name", CONTINUOUS)
def test_continuous_distribution_matches_scipy(name):
    draw, dist = CONTINUOUS[name]
    x = draw()
    assert x.shape == (N,) and np.isfinite(x).all()
    if dist is None:  # low-precision normal: its moments
        assert abs(x.mean()) < 0.05 and abs(x.std() - 1) < 0.05
        return
    assert stats.kstest(x, dist.cdf).pvalue > P_MIN
    if np.isfinite(dist.var()):
        assert abs(x.mean() - dist.mean()) < 6 * math.sqrt(dist.var() / N)


def test_dirichlet_samples_lie_on_the_simplex():
    x = np.asarray(r.dirichlet(KEY, jnp.array([0.5, 1.0, 4.0]), (1000,)))
    assert x.shape == (1000, 3) and (x >= 0).all()
    np.testing.assert_allclose(x.sum(-1), 1, rtol=1e-5)
    np.testing.assert_allclose(x.mean(0), np.array([0.5, 1.0, 4.0]) / 5.5, atol=0.02)


def test_ball_samples_are_uniform_in_the_p_ball():
    for p in (1.0, 2.0):
        x = np.asarray(r.ball(KEY, 3, p, (4000,)), np.float64)
        norms = (np.abs(x) ** p).sum(-1) ** (1 / p)
        assert (norms <= 1 + 1e-6).all()
        assert stats.kstest(norms ** 3, stats.uniform().cdf).pvalue > P_MIN  # P(|x| < t) = t^d


def test_bits_are_uniform_over_their_range():
    for dtype, bits in ((jnp.uint8, 8), (jnp.uint16, 16), (jnp.uint32, 32)):
        x = np.asarray(r.bits(KEY, (N,), dtype), np.float64) / 2 ** bits
        assert stats.kstest(x, stats.uniform(scale=1.0).cdf).pvalue > P_MIN


# --- discrete ---------------------------------------------------------------------------------

def _chi_square_p(counts: np.ndarray, probabilities: np.ndarray) -> float:
    expected = probabilities * counts.sum()
    return stats.chisquare(counts, expected).pvalue


def test_randint_is_uniform_over_its_range():
    x = np.asarray(r.randint(KEY, (N,), -3, 7))
    assert x.min() == -3 and x.max() == 6
    assert _chi_square_p(np.bincount(x + 3, minlength=10), np.full(10, 0.1)) > P_MIN
    wide = np.asarray(r.randint(KEY, (N,), 0, 256, jnp.uint8))
    assert wide.dtype == np.uint8 and wide.max() > 250


def test_bernoulli_and_rademacher():
    for mode in ("low", "high"):
        x = np.asarray(r.bernoulli(KEY, 0.3, (N,), mode=mode))
        assert x.dtype == bool and abs(x.mean() - 0.3) < 6 * math.sqrt(0.21 / N)
    x = np.asarray(r.rademacher(KEY, (N,)))
    assert set(np.unique(x)) == {-1, 1} and abs(x.mean()) < 6 / math.sqrt(N)


@pytest.mark.parametrize("mode", ["low", "high"])
def test_categorical_frequencies_follow_softmax(mode):
    probabilities = np.array([0.1, 0.2, 0.3, 0.4])
    x = np.asarray(r.categorical(KEY, jnp.log(probabilities), shape=(N,), mode=mode))
    assert _chi_square_p(np.bincount(x, minlength=4), probabilities) > P_MIN
    rows = np.asarray(r.categorical(KEY, jnp.log(jnp.array([[0.5, 0.5], [0.9, 0.1]])), axis=1,
                                    shape=(N, 2)))
    assert abs(rows[:, 1].mean() - 0.1) < 0.02 and abs(rows[:, 0].mean() - 0.5) < 0.03


def test_categorical_and_choice_without_replacement_draw_distinct_indices():
    x = np.asarray(r.categorical(KEY, jnp.zeros(6), shape=(6,), replace=False))
    assert sorted(x) == list(range(6))
    picks = np.asarray(r.choice(KEY, 10, (4,), replace=False, p=jnp.arange(1.0, 11.0) / 55))
    assert len(set(picks)) == 4
    firsts = np.asarray(plax.vmap(lambda k: r.choice(k, 3, (1,), replace=False,
                                                     p=jnp.array([0.2, 0.3, 0.5])))(
        r.split(KEY, 4000)))[:, 0]
    assert _chi_square_p(np.bincount(firsts, minlength=3), np.array([0.2, 0.3, 0.5])) > P_MIN


def test_choice_with_replacement_and_probabilities():
    x = np.asarray(r.choice(KEY, 4, (N,), p=jnp.array([0.1, 0.2, 0.3, 0.4])))
    assert _chi_square_p(np.bincount(x, minlength=4), np.array([0.1, 0.2, 0.3, 0.4])) > P_MIN
    rows = np.asarray(r.choice(KEY, jnp.arange(12).reshape(3, 4), (5,), axis=1))
    assert rows.shape == (3, 5) and ((rows - rows[:1]) == np.array([[0], [4], [8]])).all()
    x = np.asarray(r.choice(KEY, 5, (N,)))
    assert _chi_square_p(np.bincount(x, minlength=5), np.full(5, 0.2)) > P_MIN


def test_permutations_are_permutations_with_uniform_positions():
    assert sorted(np.asarray(r.permutation(KEY, 1000))) == list(range(1000))
    x = np.arange(12).reshape(3, 4)
    rows = np.asarray(r.permutation(KEY, x, axis=1))
    assert (np.sort(rows, 1) == x).all() and (rows - rows[:, :1] == rows[0] - rows[0, 0]).all()
    independent = np.asarray(r.permutation(KEY, np.tile(np.arange(8), (50, 1)), axis=1,
                                           independent=True))
    assert (np.sort(independent, 1) == np.arange(8)).all()
    assert len({tuple(row) for row in independent}) > 45
    firsts = np.asarray(plax.vmap(lambda k: r.permutation(k, 5))(r.split(KEY, 5000)))[:, 0]
    assert _chi_square_p(np.bincount(firsts, minlength=5), np.full(5, 0.2)) > P_MIN


@pytest.mark.parametrize("lam", [0.7, 4.0, 35.0])
def test_poisson_matches_scipy(lam):
    x = np.asarray(r.poisson(KEY, lam, (N,)))
    support = np.arange(x.max() + 1)
    probabilities = stats.poisson(lam).pmf(support)
    probabilities[-1] += stats.poisson(lam).sf(support[-1])
    counts = np.bincount(x, minlength=len(support))
    keep = probabilities * N >= 5  # pool the sparse tail into one bin
    pooled_counts, pooled_p = counts[keep], probabilities[keep]
    if not keep.all():
        pooled_counts = np.append(pooled_counts, counts[~keep].sum())
        pooled_p = np.append(pooled_p, probabilities[~keep].sum())
    assert _chi_square_p(pooled_counts, pooled_p) > P_MIN


@pytest.mark.parametrize("n,p", [(8.0, 0.3), (60.0, 0.45), (200.0, 0.9)])
def test_binomial_matches_its_moments(n, p):
    x = np.asarray(r.binomial(KEY, n, p, (N,)))
    assert (x >= 0).all() and (x <= n).all() and (x == np.floor(x)).all()
    assert abs(x.mean() - n * p) < 6 * math.sqrt(n * p * (1 - p) / N)
    assert abs(x.var() / (n * p * (1 - p)) - 1) < 0.1


def test_geometric_matches_scipy():
    x = np.asarray(r.geometric(KEY, 0.3, (N,)))
    assert x.min() >= 1
    assert abs(x.mean() - 1 / 0.3) < 6 * math.sqrt(0.7 / 0.09 / N)
    assert abs((x == 1).mean() - 0.3) < 0.02


def test_multinomial_counts_sum_to_n_with_the_right_means():
    p = jnp.array([0.2, 0.3, 0.5])
    counts = np.asarray(r.multinomial(KEY, 20.0, p, shape=(2000, 3)))
    assert counts.shape == (2000, 3) and (counts.sum(-1) == 20).all()
    np.testing.assert_allclose(counts.mean(0), 20 * np.asarray(p), atol=0.2)


# --- factoring matrices ----------------------------------------------------------------------

@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_has_the_requested_covariance(method):
    cov = np.array([[2.0, 0.6], [0.6, 1.0]])
    x = np.asarray(r.multivariate_normal(KEY, jnp.array([1.0, -1.0]), cov, (N,), method=method))
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0], atol=0.07)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.1)


def test_orthogonal_matrices_are_orthogonal():
    q = np.asarray(r.orthogonal(KEY, 4, (3,)))
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), (3, 4, 4)),
                               atol=1e-5)


# --- the gradient of gamma ------------------------------------------------------------------------

@pytest.mark.parametrize("a", [0.4, 1.0, 3.5])
def test_gamma_reparameterised_gradient_matches_scipy(a):
    """d sample / d a is that of x = P^-1(a, u) for the u the sample was drawn at."""
    x, dx_da = plax.jvp(lambda a: r.gamma(KEY, a, (64,)), (np.float32(a),), (np.float32(1),))
    x, dx_da = np.asarray(x, np.float64), np.asarray(dx_da, np.float64)
    u = special.gammainc(a, x)
    h = 1e-4
    numeric = (special.gammaincinv(a + h, u) - special.gammaincinv(a - h, u)) / (2 * h)
    np.testing.assert_allclose(dx_da, numeric, rtol=2e-3, atol=1e-5)
    log_x, dlogx_da = plax.jvp(lambda a: r.loggamma(KEY, a, (64,)), (np.float32(a),),
                               (np.float32(1),))
    np.testing.assert_allclose(np.asarray(dlogx_da, np.float64),
                               numeric / np.exp(np.asarray(log_x, np.float64)), rtol=5e-3,
                               atol=1e-4)


def test_grad_flows_through_gamma_built_samplers():
    g = plax.grad(lambda df: r.chisquare(KEY, df, (16,)).mean())(np.float32(3.0))
    assert 0.5 < float(g) < 2.0  # d E[chi2(df)] / d df = 1
