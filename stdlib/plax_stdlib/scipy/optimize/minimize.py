"""`minimize` with BFGS: quasi-Newton steps -H g along which a strong Wolfe line
search moves, H the inverse Hessian estimate from the gradients' changes (an update
is skipped when the curvature y·s it needs is not positive)."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

import plax
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.optimize.line_search import Point, line_search

# status codes (SciPy's where they exist)
CONVERGED, MAX_ITERATIONS, NOT_FINITE, LINE_SEARCH_FAILED = 0, 1, 2, 3


class OptimizeResults(NamedTuple):
    """x: the solution; success: whether the gradient norm fell to gtol; status: 0
    converged, 1 too many iterations, 2 a non-finite value, 3 the line search found no
    step; fun, jac: the value and gradient at x; hess_inv: the inverse Hessian
    estimate; nfev, njev: evaluations of fun and of its gradient; nit: iterations."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


_OPTIONS = ("maxiter", "norm", "gtol", "line_search_maxiter")


def _bfgs_update(h, s, y):
    """H⁺ = (I - ρ s yᵀ) H (I - ρ y sᵀ) + ρ s sᵀ, ρ = 1/(y·s); H unchanged when y·s ≤ 0."""
    ys = jnp.vdot(y, s).real
    rho = jnp.where(ys > 0, 1 / jnp.where(ys > 0, ys, 1), 0)
    hy = h @ y
    updated = (h - rho * (jnp.outer(s, hy) + jnp.outer(hy, s))
               + (rho * rho * jnp.vdot(y, hy).real + rho) * jnp.outer(s, s))
    return jnp.where(ys > 0, updated, h)


def _call(fun, args, x):
    return fun(x, *args)


def _norm(g, order):
    return jnp.linalg.norm(g, ord=order)


def minimize(fun, x0, args=(), *, method, tol=None, options=None) -> OptimizeResults:
    """Minimize fun(x, *args) over a 1-D x from x0. method must be 'BFGS'; options:
    maxiter (default 200 per variable), gtol (default 1e-5, or tol), norm (default inf,
    of the gradient, for the convergence test), line_search_maxiter (default 20)."""
    if not isinstance(method, str) or method.lower() != "bfgs":
        raise ValueError(f"minimize: method {method!r} is not supported (only 'BFGS')")
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise TypeError(f"minimize: unknown options {unknown}; expected some of {_OPTIONS}")
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be one-dimensional; got x0.shape={x0.shape}")
    if not jnp.issubdtype(x0.dtype, np.floating):
        x0 = x0.astype(jnp.result_type(float))
    if tol is not None:
        options.setdefault("gtol", tol)
    maxiter = options.get("maxiter")
    maxiter = 200 * x0.size if maxiter is None else maxiter
    gtol, order = options.get("gtol", 1e-5), options.get("norm", np.inf)
    ls_maxiter = options.get("line_search_maxiter", 20)
    objective = functools.partial(_call, fun, args)
    out = plax.eval_shape(objective, x0)
    if getattr(out, "shape", None) != ():
        raise TypeError("minimize: fun must return a scalar; got shape "
                        f"{getattr(out, 'shape', type(out))}")
    value_and_grad = plax.value_and_grad(objective)
    f0, g0 = value_and_grad(x0)

    def body(carry):
        k, nfev, x, f, g, h, _ = carry
        direction = -(h @ g)
        start = Point(jnp.zeros_like(f), f, jnp.vdot(g, direction).real, g)
        found = line_search(value_and_grad, x, direction, start, ls_maxiter)
        step = found.step
        s, y = step.a * direction, step.grad - g
        # Before the first update, the identity is rescaled to the curvature seen along
        # the first step (Nocedal & Wright, eq. 6.20), so later steps start near length 1.
        ys, yy = jnp.vdot(y, s).real, jnp.vdot(y, y).real
        first = (k == 0) & (ys > 0) & (yy > 0)
        h = jnp.where(first, h * (ys / jnp.where(first, yy, 1)), h)
        h = _bfgs_update(h, s, y)
        finite = jnp.isfinite(step.phi) & jnp.all(jnp.isfinite(step.grad))
        status = jnp.where(found.failed, LINE_SEARCH_FAILED,
                           jnp.where(finite, CONVERGED, NOT_FINITE))
        return (k + 1, nfev + found.evaluations, x + s, step.phi, step.grad, h, status)

    def cond(carry):
        k, _, _, _, g, _, status = carry
        return (k < maxiter) & (status == CONVERGED) & (_norm(g, order) > gtol)

    init = (0, 1, x0, f0, g0, jnp.eye(x0.size, dtype=x0.dtype), CONVERGED)
    k, nfev, x, f, g, h, status = lax.while_loop(cond, body, init)
    converged = _norm(g, order) <= gtol
    status = jnp.where(converged, CONVERGED,
                       jnp.where(status == CONVERGED, MAX_ITERATIONS, status))
    return OptimizeResults(x=x, success=converged & (status == CONVERGED), status=status,
                           fun=f, jac=g, hess_inv=h, nfev=nfev, njev=nfev, nit=k)
