"""The summation machinery of the hypergeometric functions: power series summed until
every element has converged (one while loop over the whole array), and ratios of
gamma functions that vanish at the poles of the denominator."""
from __future__ import annotations

import numpy as np

import plax

from plax_stdlib import lax
from plax_stdlib import numpy as jnp


def epsilon(x) -> float:
    return float(np.finfo(np.dtype(x.dtype)).eps)


def sum_series(first, ratio, max_terms):
    """Σ_k t_k with t_0 = `first` and t_{k+1} = t_k · ratio(k), each element summed until
    its term is below epsilon relative to its sum, is zero (the series terminated), or k
    reaches `max_terms` (a number, or an array: where an asymptotic series' terms start
    to grow)."""
    eps = epsilon(first)

    def active(k, term, total):
        going = (jnp.abs(term) > eps * jnp.abs(total)) & jnp.isfinite(total)
        return going & (k < max_terms)

    def cond(state):
        return jnp.any(active(*state))

    def body(state):
        k, term, total = state
        going = active(*state)
        r = ratio(k.astype(term.dtype))
        return k + 1, jnp.where(going, term * r, 0), jnp.where(going, total + term, total)

    state = (np.int32(0), first, jnp.zeros_like(first))
    return lax.while_loop(cond, body, state)[2]


def is_nonpositive_integer(x):
    return (x <= 0) & (x == jnp.round(x))


def is_odd(whole):
    """Whether the integral floats `whole` are odd."""
    return whole != 2 * jnp.floor(whole / 2)


def gamma_sign(x):
    """The sign of Γ(x) away from its poles."""
    return jnp.where((x < 0) & is_odd(jnp.floor(x)), -1.0, 1.0)


def gamma_ratio(numerators, denominators):
    """Π Γ(n) / Π Γ(d) through log-gamma (no overflow of the factors alone); zero where
    a denominator is at a pole."""
    log_value = sum(lax.lgamma(n) for n in numerators) - sum(lax.lgamma(d) for d in denominators)
    sign = 1.0
    for x in (*numerators, *denominators):
        sign = sign * gamma_sign(x)
    pole = sum(is_nonpositive_integer(d).astype(np.int32) for d in denominators) > 0
    return jnp.where(pole, 0.0, sign * jnp.exp(log_value))


def hypergeometric_jvp(fn, primals, tangents, x_derivative):
    """The jvp rule (defined with symbolic zeros) of fn(*parameters, x): the parameter
    partials are forward derivatives of the summation with unit tangents, in one batched
    jvp for the parameters whose tangents are not zero, which keeps the rule linear in
    the tangents; x's partial is `x_derivative(*primals)` (a contiguous function)."""
    value = fn(*primals)
    symbolic_zero = plax.custom_derivatives.SymbolicZero
    live = [i for i, t in enumerate(tangents[:-1]) if not isinstance(t, symbolic_zero)]
    out = jnp.zeros_like(value)
    if live:
        zero = jnp.zeros_like(primals[0])
        seeds = np.eye(len(primals))[live].astype(np.dtype(zero.dtype))

        def partial(seed):
            return plax.jvp(fn, primals, tuple(zero + seed[i] for i in range(len(primals))))[1]
        partials = plax.vmap(partial)(seeds)
        for row, i in enumerate(live):
            out = out + partials[row] * tangents[i]
    if not isinstance(tangents[-1], symbolic_zero):
        out = out + x_derivative(*primals) * tangents[-1]
    return value, out
