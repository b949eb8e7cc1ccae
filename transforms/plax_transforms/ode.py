"""`plax.experimental.ode.odeint`: adaptive Runge-Kutta integration of an ODE system,
differentiated by the adjoint method.

The solver is Dormand-Prince 5(4) with step-size control: each step's embedded
4th-order solution estimates its error, steps whose RMS error (relative to
`atol + rtol * |y|`) exceeds 1 are retried smaller, and the solution at the
requested times is read from the quartic that interpolates each accepted step
(Dormand-Prince's dense output). Gradients do not differentiate through the steps:
the adjoint state is integrated backward in time with the same solver (Chen et al.,
"Neural ordinary differential equations", 2018), which gives the cotangents of
`y0`, the times and the extra arguments in memory independent of the step count.
Values `func` closes over are made explicit arguments first, so gradients reach
them too.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.core import eval_jaxpr, get_aval, trace_to_jaxpr
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_transforms.autodiff_api import vjp
from plax_transforms.custom_derivatives import custom_vjp

# Dormand-Prince 5(4): stage times, stage weights, the 5th-order solution and its
# difference from the embedded 4th-order one.
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = ((), (1 / 5,), (3 / 40, 9 / 40), (44 / 45, -56 / 15, 32 / 9),
      (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
      (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
      (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B_ERR = tuple(b - e for b, e in zip(_B, (5179 / 57600, 0.0, 7571 / 16695, 393 / 640,
                                          -92097 / 339200, 187 / 2100, 1 / 40)))
# The dense output's weights for the solution at the middle of a step.
_B_MID = tuple(w / 2 for w in (6025192743 / 30085553152, 0.0, 51252292925 / 65400821598,
                               -2691868925 / 45128329728, 187940372067 / 1594534317056,
                               -1776094331 / 19743644256, 11237099 / 235043384))
# The quartic p(s) = a s^4 + b s^3 + c s^2 + h f0 s + y0 on a step (s in [0, 1]) with
# p(1) = y1, p'(1) = h f1 and p(1/2) = y_mid: (a, b, c) = _QUARTIC @ those residuals.
_QUARTIC = np.linalg.inv(np.array([[1.0, 1.0, 1.0], [4.0, 3.0, 2.0], [1 / 16, 1 / 8, 1 / 4]]))
_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


# --- pytrees of leaves, as lists -------------------------------------------------------

def _axpy(y: list, terms: Sequence[tuple[Any, list]]) -> list:
    """y + sum of coefficient * leaves, leaf by leaf (zero coefficients skipped)."""
    out = list(y)
    for coef, leaves in terms:
        if isinstance(coef, float) and coef == 0.0:
            continue
        out = [o + coef * leaf for o, leaf in zip(out, leaves)]
    return out


def _rms(leaves: list):
    total = sum(jnp.sum(jnp.square(x)) for x in leaves)
    return jnp.sqrt(total / max(sum(int(np.prod(jnp.shape(x))) for x in leaves), 1))


def _where(pred, a: list, b: list) -> list:
    return [jnp.where(pred, x, y) for x, y in zip(a, b)]


# --- one solve -----------------------------------------------------------------------------

def _initial_step(f, t0, y0, f0, rtol, atol):
    """A first step size from the scale of y and of its derivative (Hairer & Wanner)."""
    scale = [atol + jnp.abs(y) * rtol for y in y0]
    d0 = _rms([y / s for y, s in zip(y0, scale)])
    d1 = _rms([d / s for d, s in zip(f0, scale)])
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = f(_axpy(y0, [(h0, f0)]), t0 + h0)
    d2 = _rms([(a - b) / s for a, b, s in zip(f1, f0, scale)]) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1.0 / 5.0))
    return jnp.minimum(100.0 * h0, h1)


def _step(f, y, fy, t, h):
    """One Dormand-Prince step: (y1, f(y1), error estimate, interpolating quartic)."""
    ks = [fy]
    for c, row in zip(_C[1:], _A[1:]):
        ks.append(f(_axpy(y, [(h * a, k) for a, k in zip(row, ks)]), t + c * h))
    y1 = _axpy(y, [(h * b, k) for b, k in zip(_B, ks)])
    error = [h * sum(e * k for e, k in zip(_B_ERR, ks_leaf) if e) for ks_leaf in zip(*ks)]
    y_mid = _axpy(y, [(h * b, k) for b, k in zip(_B_MID, ks)])
    f1 = ks[-1]  # the last stage is f(y1): first same as last
    quartic = []
    for y0_, y1_, mid, df0, df1 in zip(y, y1, y_mid, fy, f1):
        r = (y1_ - y0_ - h * df0, h * df1 - h * df0, mid - y0_ - 0.5 * h * df0)
        a, b, c = (sum(float(_QUARTIC[i, j]) * r[j] for j in range(3)) for i in range(3))
        quartic.append((a, b, c, h * df0, y0_))
    return y1, f1, error, quartic


def _interpolate(quartic: list, t0, t1, t) -> list:
    s = (t - t0) / jnp.where(t1 > t0, t1 - t0, 1.0)
    return [(((a * s + b) * s + c) * s + d) * s + e for a, b, c, d, e in quartic]


def _solve(f, y0: list, ts, rtol, atol, mxstep, hmax) -> list:
    """The solution at each time of `ts` (increasing), one stacked array per leaf."""
    t0 = ts[0]
    f0 = f(y0, t0)
    h = jnp.minimum(_initial_step(f, t0, y0, f0, rtol, atol), hmax)
    zero_quartic = [(0 * y,) * 4 + (y,) for y in y0]

    def to_next_time(carry, target):
        def unfinished(state):
            _, _, t, _, _, _, steps = state
            return (t < target) & (steps < mxstep)

        def attempt(state):
            y, fy, t, h, t_prev, quartic, steps = state
            y1, f1, error, new_quartic = _step(f, y, fy, t, h)
            tolerance = [atol + rtol * jnp.maximum(jnp.abs(a), jnp.abs(b))
                         for a, b in zip(y, y1)]
            ratio = _rms([e / tol for e, tol in zip(error, tolerance)])
            accept = ratio <= 1.0
            factor = jnp.clip(_SAFETY * jnp.where(ratio > 0, ratio, 1e-10) ** -0.2,
                              jnp.where(accept, 1.0, _MIN_FACTOR), _MAX_FACTOR)
            new_h = jnp.minimum(h * factor, hmax)
            return (_where(accept, y1, y), _where(accept, f1, fy), jnp.where(accept, t + h, t),
                    new_h, jnp.where(accept, t, t_prev),
                    [tuple(jnp.where(accept, n, o) for n, o in zip(nq, oq))
                     for nq, oq in zip(new_quartic, quartic)], steps + 1)

        carry = lax.while_loop(unfinished, attempt, (*carry[:6], 0))[:6]
        _, _, t, _, t_prev, quartic = carry
        reached = t >= target  # else mxstep ran out: the value is unknown
        values = [jnp.where(reached, v, jnp.nan)
                  for v in _interpolate(quartic, t_prev, t, target)]
        return carry, values

    init = (list(y0), list(f0), t0, h, t0, zero_quartic)
    _, ys = lax.scan(to_next_time, init, ts[1:])
    return [jnp.concatenate([y[None], y_rest]) for y, y_rest in zip(y0, ys)]


# --- the differentiable solve --------------------------------------------------------------

def _is_inexact(x) -> bool:
    return dtypes.issubdtype(get_aval(x).dtype, np.inexact)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(f, rtol, atol, mxstep, hmax, y0, ts, args):
    return _solve(lambda y, t: f(y, t, args), y0, ts, rtol, atol, mxstep, hmax)


def _odeint_fwd(f, rtol, atol, mxstep, hmax, y0, ts, args):
    ys = _odeint(f, rtol, atol, mxstep, hmax, y0, ts, args)
    return ys, (ys, ts, args)


def _odeint_bwd(f, rtol, atol, mxstep, hmax, residuals, g):
    """Integrates (y, adjoint of y, adjoint of the float args) backward between output
    times, adding each time's output cotangent to the adjoint of y."""
    ys, ts, args = residuals
    n = len(ys)
    floats = [i for i, a in enumerate(args) if _is_inexact(a)]

    def with_floats(values):
        full = list(args)
        for i, v in zip(floats, values):
            full[i] = v
        return full

    def augmented(leaves, s):  # in reversed time s = -t
        y, adjoint, _ = leaves[:n], leaves[n:2 * n], leaves[2 * n:]
        fy, pullback = vjp(lambda y_, a_: f(y_, -s, with_floats(a_)), y,
                           [args[i] for i in floats])
        adjoint_y, adjoint_args = pullback(adjoint)
        return [*(-v for v in fy), *adjoint_y, *adjoint_args]

    def dot(a: list, b: list):
        return sum(jnp.sum(x * y) for x, y in zip(a, b))

    def interval(carry, i):  # from ts[i] back to ts[i - 1]
        adjoint, args_bar = carry
        y_i = [y[i] for y in ys]
        t_bar = dot([c[i] for c in g], f(y_i, ts[i], args))
        adjoint = [a + c[i] for a, c in zip(adjoint, g)]
        end = [v[-1] for v in _solve(augmented, [*y_i, *adjoint, *args_bar],
                                     jnp.stack([-ts[i], -ts[i - 1]]), rtol, atol, mxstep, hmax)]
        return (end[n:2 * n], end[2 * n:]), t_bar

    zeros = ([jnp.zeros_like(y[0]) for y in ys], [jnp.zeros_like(args[i]) for i in floats])
    (adjoint, args_bar), t_bars = lax.scan(interval, zeros, jnp.arange(len(ts) - 1, 0, -1))
    t0_bar = -dot(adjoint, f([y[0] for y in ys], ts[0], args))
    y0_bar = [a + c[0] for a, c in zip(adjoint, g)]
    ts_bar = jnp.concatenate([t0_bar[None], t_bars[::-1]])
    bars = dict(zip(floats, args_bar))
    return y0_bar, ts_bar, [bars.get(i) for i in range(len(args))]


_odeint.defvjp(_odeint_fwd, _odeint_bwd)


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = math.inf, hmax: float = math.inf) -> Any:
    """The solution of dy/dt = func(y, t, *args) with y(t[0]) = y0, at each time of the
    increasing 1-D array `t` (stacked along a new first axis of every leaf of `y0`).

    `rtol`/`atol` bound each step's error, `mxstep` the number of steps between two
    output times (past it, outputs are NaN), `hmax` the step size."""
    for name, value in (("rtol", rtol), ("atol", atol), ("mxstep", mxstep), ("hmax", hmax)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
            raise TypeError(f"odeint: {name} must be a positive Python number, got {value!r}")
    arg_leaves, arg_tree = tree_util.tree_flatten(args)
    for arg in arg_leaves:
        try:
            get_aval(arg)
        except TypeError:
            raise TypeError(f"The contents of odeint *args must be arrays or scalars, but "
                            f"got {arg!r}.") from None
    t = jnp.asarray(t)
    if t.ndim != 1 or not dtypes.issubdtype(t.dtype, np.floating):
        raise TypeError(f"odeint: t must be a 1-D array of floating-point times, got "
                        f"{t.dtype}{list(t.shape)}")
    y_leaves, y_tree = tree_util.tree_flatten(y0)
    y_leaves = [jnp.asarray(y) for y in y_leaves]
    for y in y_leaves:
        if not dtypes.issubdtype(y.dtype, np.inexact):
            raise TypeError(f"odeint: y0 must hold floating-point arrays, got {y.dtype}")

    def flat_func(y, t_, a):
        out = func(tree_util.tree_unflatten(y_tree, list(y)), t_,
                   *tree_util.tree_unflatten(arg_tree, list(a)))
        return tree_util.tree_leaves(out)

    # Values func closes over become arguments: gradients reach them through the rule.
    flat, in_tree = tree_util.tree_flatten(((y_leaves, t[0], arg_leaves), {}))
    closed, _ = trace_to_jaxpr(flat_func, in_tree, [get_aval(x) for x in flat], None)
    if [(a.shape, a.dtype) for a in closed.out_avals] != [(y.shape, y.dtype) for y in y_leaves]:
        raise TypeError(f"odeint: func must return values shaped like y0 "
                        f"{[get_aval(y).str_short() for y in y_leaves]}, got "
                        f"{[a.str_short() for a in closed.out_avals]}")
    n_args = len(arg_leaves)

    def f(y, t_, extra):
        return eval_jaxpr(closed.jaxpr, list(extra[n_args:]), *y, t_, *extra[:n_args])

    ys = _odeint(f, float(rtol), float(atol), float(mxstep), float(hmax), y_leaves, t,
                 [*arg_leaves, *closed.consts])
    return tree_util.tree_unflatten(y_tree, list(ys))


__all__ = ["odeint"]
