"""plax.scipy.stats.gaussian_kde against SciPy's (densities, bandwidths, weights,
integrals), its resampling statistics, its pytree behaviour under jit and vmap, bad
input, and JAX (one subprocess)."""
import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
from plax.scipy.stats import gaussian_kde

st = pytest.importorskip("scipy.stats")

RNG = np.random.default_rng(3)
X1 = RNG.normal(size=30)
X2 = RNG.normal(size=(2, 40)) * np.array([[1.0], [0.5]])
W = RNG.uniform(0.1, 1.0, 40)
CASES = {
    "1d": (X1, {}),
    "2d": (X2, {}),
    "weighted": (X2, {"weights": W}),
    "silverman": (X2, {"bw_method": "silverman"}),
    "scalar": (X1, {"bw_method": 0.3}),
    "callable": (X2, {"bw_method": lambda kde: 0.5 * kde.neff ** (-1 / 6)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_scipy(name):
    data, kwargs = CASES[name]
    with plax.enable_x64(True):
        mine, theirs = gaussian_kde(data, **kwargs), st.gaussian_kde(data, **kwargs)
        points = RNG.normal(size=(mine.d, 7)) * 2
        np.testing.assert_allclose(mine(points), theirs(points), rtol=1e-12)
        np.testing.assert_allclose(mine.pdf(points), theirs.pdf(points), rtol=1e-12)
        np.testing.assert_allclose(mine.logpdf(points), theirs.logpdf(points), rtol=1e-12)
        np.testing.assert_allclose(mine.covariance, theirs.covariance, rtol=1e-12)
        np.testing.assert_allclose(mine.inv_cov, theirs.inv_cov, rtol=1e-12)
        np.testing.assert_allclose(mine.neff, theirs.neff, rtol=1e-12)
        assert (mine.d, mine.n) == (theirs.d, theirs.n)
        mean, cov = np.full(mine.d, 0.2), np.eye(mine.d) * 0.7
        np.testing.assert_allclose(mine.integrate_gaussian(mean, cov),
                                   theirs.integrate_gaussian(mean, cov), rtol=1e-12)
        other = data[..., :9]
        np.testing.assert_allclose(mine.integrate_kde(gaussian_kde(other)),
                                   theirs.integrate_kde(st.gaussian_kde(other)), rtol=1e-12)
        if mine.d == 1:
            np.testing.assert_allclose(mine.integrate_box_1d(-0.5, 1.0),
                                       theirs.integrate_box_1d(-0.5, 1.0), rtol=1e-12)


def test_far_from_the_data_logpdf_does_not_underflow():
    with plax.enable_x64(True):
        far = np.array([[40.0], [40.0]])
        kde = gaussian_kde(X2, weights=W)
        np.testing.assert_allclose(kde.logpdf(far), st.gaussian_kde(X2, weights=W).logpdf(far),
                                   rtol=1e-12)
        assert kde.pdf(far)[0] == 0


def test_resample_statistics_and_pytree():
    kde = gaussian_kde(X2.astype(np.float32), weights=W.astype(np.float32))
    draws = np.asarray(kde.resample(plax.random.key(0), (20000,)), np.float64)
    assert draws.shape == (2, 20000) and draws.dtype == np.float64
    mean = np.average(X2, axis=1, weights=W)
    spread = np.cov(X2, aweights=W, bias=True) + np.asarray(kde.covariance, np.float64)
    np.testing.assert_allclose(draws.mean(1), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(draws), spread, atol=0.05)
    assert kde.resample(plax.random.key(1)).shape == (2,)
    # a pytree: through jit, and vmapped over a batch of estimates
    assert len(plax.tree_util.tree_leaves(kde)) == 5
    points = X2[:, :3].astype(np.float32)
    np.testing.assert_allclose(plax.jit(lambda k, p: k.pdf(p))(kde, points), kde.pdf(points),
                               rtol=1e-6)
    batch = plax.vmap(lambda data: gaussian_kde(data).logpdf(points))(
        np.stack([X2, X2 * 2]).astype(np.float32))
    np.testing.assert_allclose(batch[1], gaussian_kde(X2 * 2).logpdf(points), rtol=1e-5)
    grad = plax.grad(lambda p: gaussian_kde(X1.astype(np.float32)).logpdf(p)[0])(np.float32(0.3))
    h = 1e-3
    want = (st.gaussian_kde(X1).logpdf(0.3 + h) - st.gaussian_kde(X1).logpdf(0.3 - h)) / (2 * h)
    np.testing.assert_allclose(grad, want[0], rtol=1e-3)


def test_bad_input():
    kde = gaussian_kde(X2)
    with pytest.raises(ValueError, match="multiple elements"):
        gaussian_kde(np.array([1.0]))
    with pytest.raises(ValueError, match="should be of length n"):
        gaussian_kde(X2, weights=np.ones(3))
    with pytest.raises(ValueError, match="one-dimensional"):
        gaussian_kde(X2, weights=np.ones((2, 20)))
    with pytest.raises(ValueError, match="`bw_method` should be"):
        gaussian_kde(X2, bw_method="wide")
    with pytest.raises(NotImplementedError, match="complex data"):
        gaussian_kde(X2 + 1j)
    with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
        gaussian_kde([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="points have dimension 3, dataset has dimension 2"):
        kde.evaluate(np.ones((3, 4)))
    with pytest.raises(NotImplementedError, match="complex coordinates"):
        kde.logpdf(np.ones((2, 4)) * 1j)
    with pytest.raises(ValueError, match="only handles 1D"):
        kde.integrate_box_1d(0.0, 1.0)
    with pytest.raises(ValueError, match="must be scalars"):
        gaussian_kde(X1).integrate_box_1d(np.zeros(2), 1.0)
    with pytest.raises(ValueError, match="mean does not have dimension 2"):
        kde.integrate_gaussian(np.zeros(3), np.eye(2))
    with pytest.raises(ValueError, match="covariance does not have dimension 2"):
        kde.integrate_gaussian(np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="not the same dimensionality"):
        kde.integrate_kde(gaussian_kde(X1))
    with pytest.raises(NotImplementedError, match="integrate_box_1d"):
        kde.integrate_box(np.zeros(2), np.ones(2))
    with pytest.raises(NotImplementedError, match="bandwidth"):
        kde.set_bandwidth("scott")
    with pytest.raises(AttributeError, match="immutable"):
        kde.neff = 3.0


_JAX_BODY = """
stats = lib.scipy.stats
data, weights, points = inputs["data"], inputs["weights"], inputs["points"]
kde = stats.gaussian_kde(data, weights=weights)
results["pdf"] = kde(points)
results["logpdf"] = kde.logpdf(points)
results["covariance"], results["inv_cov"], results["neff"] = kde.covariance, kde.inv_cov, kde.neff
results["gaussian"] = kde.integrate_gaussian(np.zeros(2, np.float32), np.eye(2, dtype=np.float32))
one = stats.gaussian_kde(data[0])
results["box"] = one.integrate_box_1d(-0.5, 1.0)
results["one_point"] = one(np.float32(0.2))
results["ints"] = stats.gaussian_kde(np.arange(6)).covariance
results["sample"] = kde.resample(lib.random.key(0), (5,))
"""


@requires_jax
def test_matches_jax():
    inputs = {"data": X2.astype(np.float32), "weights": W.astype(np.float32),
              "points": RNG.normal(size=(2, 5)).astype(np.float32)}
    assert_same_as_jax(_JAX_BODY, inputs, rtol=2e-5, atol=1e-6)  # resample: the same draws
