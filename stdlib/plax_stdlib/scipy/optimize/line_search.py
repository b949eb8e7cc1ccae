"""A line search for the strong Wolfe conditions (Nocedal & Wright, algorithms 3.5
and 3.6) as one `while_loop`: steps double until they bracket an acceptable one, then
the bracket shrinks by safeguarded cubic interpolation."""
from __future__ import annotations

from typing import NamedTuple

from plax_stdlib import lax
from plax_stdlib import numpy as jnp

# Sufficient decrease and curvature constants (SciPy's and N&W's for quasi-Newton).
C1, C2 = 1e-4, 0.9


class Point(NamedTuple):
    """A step length with the value, slope and gradient there."""
    a: jnp.ndarray
    phi: jnp.ndarray
    slope: jnp.ndarray
    grad: jnp.ndarray


class LineSearchResult(NamedTuple):
    step: Point
    failed: jnp.ndarray
    evaluations: jnp.ndarray


def _cubic_minimizer(lo: Point, hi: Point):
    """The minimizer of the cubic through both ends' values and slopes, or the
    midpoint where that lies near an end, outside the bracket or is not finite."""
    d1 = lo.slope + hi.slope - 3 * (lo.phi - hi.phi) / (lo.a - hi.a)
    d2 = jnp.sign(hi.a - lo.a) * jnp.sqrt(jnp.maximum(d1 * d1 - lo.slope * hi.slope, 0))
    a = hi.a - (hi.a - lo.a) * (hi.slope + d2 - d1) / (hi.slope - lo.slope + 2 * d2)
    left, right = jnp.minimum(lo.a, hi.a), jnp.maximum(lo.a, hi.a)
    margin = 0.1 * (right - left)
    fine = jnp.isfinite(a) & (a > left + margin) & (a < right - margin)
    return jnp.where(fine, a, 0.5 * (lo.a + hi.a))


def _select(which, a: Point, b: Point) -> Point:
    return Point(*(jnp.where(which, u, v) for u, v in zip(a, b)))


def line_search(value_and_grad, x, direction, start: Point, maxiter: int) -> LineSearchResult:
    """A step along `direction` from x meeting the strong Wolfe conditions; `start` is
    the point at step 0. Failed (and no step taken) when `direction` does not descend
    or no acceptable step is found in `maxiter` evaluations; a step with sufficient
    decrease found by then is taken anyway."""
    f0, slope0 = start.phi, start.slope

    def evaluate(a):
        phi, grad = value_and_grad(x + a * direction)
        return Point(a, phi, jnp.vdot(grad, direction).real, grad)

    def armijo(p):
        return p.phi <= f0 + C1 * p.a * slope0

    def curvature(p):
        return jnp.abs(p.slope) <= -C2 * slope0

    def body(carry):
        i, _, zooming, trial, lo, hi, best = carry
        here = evaluate(trial)
        too_high = ~armijo(here) | (here.phi >= lo.phi) & ((i > 0) | zooming)
        accepted = ~too_high & curvature(here)
        # Bracketing: a step too high closes the bracket [lo, here]; one that slopes
        # up closes [here, lo]; otherwise it becomes lo and the step doubles.
        # Zooming: a step too high replaces hi, another replaces lo (and hi becomes
        # the old lo when the slope points the bracket's way).
        flips = ~too_high & (here.slope * (hi.a - lo.a) >= 0)
        bracket_up = ~zooming & ~too_high & (here.slope >= 0)
        new_hi = _select(too_high, here, _select(
            zooming & flips, lo, _select(bracket_up, lo, hi)))
        new_lo = _select(too_high, lo, here)
        now_zooming = zooming | too_high | bracket_up
        next_trial = jnp.where(now_zooming, _cubic_minimizer(new_lo, new_hi), 2 * trial)
        best = _select(accepted, here, best)
        return i + 1, accepted, now_zooming, next_trial, new_lo, new_hi, best

    def cond(carry):
        i, done, *_ = carry
        return ~done & (i < maxiter)

    one = jnp.ones_like(f0)
    init = (0, slope0 >= 0, False, one, start, start, start)
    i, done, _, _, lo, _, best = lax.while_loop(cond, body, init)
    descends = slope0 < 0
    fallback = descends & ~done & (lo.a > 0)
    step = _select(done & descends, best, _select(fallback, lo, start))
    return LineSearchResult(step, ~descends | ~(done | fallback), i)
