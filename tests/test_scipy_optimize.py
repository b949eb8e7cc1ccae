"""plax.scipy.optimize.minimize (BFGS) against SciPy's minima, under jit and vmap,
its results and statuses, and bad input."""
import numpy as np
import pytest

import plax
from plax import numpy as jnp
from plax.scipy.optimize import minimize

so = pytest.importorskip("scipy.optimize")


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quadratic(x, centre):
    return jnp.sum(jnp.arange(1.0, 1.0 + x.size) * (x - centre) ** 2)


@pytest.mark.parametrize("x0", [[-1.2, 1.0], [0.0] * 4, [1.3, 0.7, 0.8, 1.9]], ids=str)
def test_rosenbrock_reaches_scipys_minimum(x0):
    with plax.enable_x64(True):
        x0 = np.asarray(x0)
        got = minimize(rosenbrock, x0, method="BFGS")
        want = so.minimize(so.rosen, x0, jac=so.rosen_der, method="BFGS")
        assert bool(got.success) and int(got.status) == 0
        np.testing.assert_allclose(got.x, want.x, atol=1e-5)
        np.testing.assert_allclose(got.fun, rosenbrock(got.x))
        np.testing.assert_allclose(got.jac, so.rosen_der(np.asarray(got.x)), atol=1e-12)
        assert np.max(np.abs(got.jac)) <= 1e-5
        assert 0 < int(got.nit) <= 3 * want.nit and int(got.nfev) >= int(got.nit)


def test_quadratic_arguments_and_inverse_hessian():
    with plax.enable_x64(True):
        centre = np.array([1.0, -2.0, 3.0])
        got = minimize(quadratic, np.zeros(3), (centre,), method="BFGS", tol=1e-9)
        np.testing.assert_allclose(got.x, centre, atol=1e-9)
        # near the true inverse Hessian (exact after n steps only with exact line searches)
        np.testing.assert_allclose(got.hess_inv, np.diag(1 / (2 * np.arange(1.0, 4.0))),
                                   atol=5e-3)
        np.testing.assert_allclose(got.hess_inv, got.hess_inv.T, atol=1e-12)


def test_under_jit_and_vmap_float32():
    x0 = np.array([-1.2, 1.0], np.float32)
    got = plax.jit(lambda x0: minimize(rosenbrock, x0, method="BFGS"))(x0)
    assert got.x.dtype == np.float32
    np.testing.assert_allclose(got.x, [1.0, 1.0], atol=2e-3)
    centres = np.array([[1.0, 2.0], [-3.0, 0.5]], np.float32)
    solved = plax.vmap(lambda c: minimize(quadratic, np.zeros(2, np.float32), (c,),
                                          method="BFGS").x)(centres)
    np.testing.assert_allclose(solved, centres, atol=1e-4)


def test_statuses():
    with plax.enable_x64(True):
        few = minimize(rosenbrock, np.array([-1.2, 1.0]), method="BFGS",
                       options={"maxiter": 3})
        assert not bool(few.success) and int(few.status) == 1 and int(few.nit) == 3
        unbounded = minimize(lambda x: jnp.sum(x), np.zeros(2), method="BFGS",
                             options={"maxiter": 50})
        assert not bool(unbounded.success) and int(unbounded.status) != 0
        nan = minimize(lambda x: jnp.sum(jnp.sqrt(x - 1.0) + x ** 2), np.zeros(2),
                       method="BFGS")
        assert not bool(nan.success)


def test_bad_input():
    with pytest.raises(ValueError, match="method 'Nelder-Mead' is not supported"):
        minimize(rosenbrock, np.zeros(2), method="Nelder-Mead")
    with pytest.raises(ValueError, match=r"x0 must be one-dimensional; got x0.shape=\(2, 2\)"):
        minimize(rosenbrock, np.zeros((2, 2)), method="BFGS")
    with pytest.raises(TypeError, match="unknown options \\['disp'\\]"):
        minimize(rosenbrock, np.zeros(2), method="BFGS", options={"disp": True})
    with pytest.raises(TypeError, match=r"fun must return a scalar; got shape \(2,\)"):
        minimize(lambda x: x ** 2, np.zeros(2), method="BFGS")
