"""`expm` and `expm_frechet` of `plax.scipy.linalg`, formulated as JAX 0.10.2's (the
same Jaxpr, the same values).

`expm` is scaling and squaring (Higham 2005): A is divided by 2^s so that its
1-norm is below the largest for which a diagonal Padé approximant of degree at most
13 (7 in single precision) is accurate to the dtype's precision; the approximant of
the lowest degree that suffices for that norm is chosen by `lax.switch`; r = q⁻¹ p is
solved for; and r is squared s times in a `scan` (at most `max_squarings`: beyond
that the result is NaN). Its derivative is that of the operations (`expm_frechet`
is its `jvp`).
"""
from __future__ import annotations

import functools

import numpy as np

import plax
from plax_stdlib import jax_jits, lax
from plax_stdlib import numpy as jnp
from plax_stdlib.numpy import util

# The coefficients b_0..b_m of the diagonal Padé approximants of exp of degree m.
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}
# bits of precision -> (the degrees to choose from, the 1-norms up to which each but
# the highest suffices, the largest 1-norm for the highest) (Higham 2005, table 2.3)
_CHOICES = {
    64: ((3, 5, 7, 9, 13), (1.495585217958292e-002, 2.539398330063230e-001,
                            9.504178996162932e-001, 2.097847961257068e+000), 5.371920351148152),
    32: ((3, 5, 7), (4.258730016922831e-001, 1.880152677804762e+000), 3.925724783138660),
}

def _dot(a, b):
    return jnp.dot(a, b, precision=lax.Precision.HIGHEST)


def _weighted_sum(terms, total=None):
    """total + Σ c M over `terms` (c, M), left to right."""
    for coefficient, matrix in terms:
        term = coefficient * matrix
        total = term if total is None else total + term
    return total


def _pade(degree: int):
    """(U, V) with p = V + U and q = V - U, the numerator and denominator of the
    Padé approximant of `degree` (3, 5, 7 or 9): U the odd part, V the even part,
    from the even powers A², A⁴, ..."""
    b = _PADE[degree]

    def uv(A):
        identity = jnp.eye(*A.shape, dtype=A.dtype)
        A2 = _dot(A, A)
        powers = [identity, A2]  # A⁰, A², A⁴...
        for _ in range(degree // 2 - 1):
            powers.append(_dot(powers[-1], A2))
        descending = range(degree // 2, -1, -1)
        U = _dot(A, _weighted_sum((b[2 * k + 1], powers[k]) for k in descending))
        return U, _weighted_sum((b[2 * k], powers[k]) for k in descending)
    uv.__name__ = f"_pade{degree}"
    return uv


def _pade13(A):
    """(U, V) of the degree-13 approximant, with six products: the high powers
    A⁸..A¹² come as A⁶ times a combination of A⁶, A⁴, A²."""
    b = _PADE[13]
    identity = jnp.eye(*A.shape, dtype=A.dtype)
    A2 = _dot(A, A)
    A4 = _dot(A2, A2)
    A6 = _dot(A4, A2)
    high = _dot(A6, _weighted_sum([(b[13], A6), (b[11], A4), (b[9], A2)]))
    U = _dot(A, _weighted_sum([(b[7], A6), (b[5], A4), (b[3], A2), (b[1], identity)], high))
    high = _dot(A6, _weighted_sum([(b[12], A6), (b[10], A4), (b[8], A2)]))
    V = _weighted_sum([(b[6], A6), (b[4], A4), (b[2], A2), (b[0], identity)], high)
    return U, V


@plax.jit
def _calc_P_Q(A):
    """p(A/2^s), q(A/2^s) and s."""
    bits = {"float64": 64, "complex128": 64, "float32": 32, "complex64": 32}.get(A.dtype.name)
    if bits is None:
        raise TypeError(f"A.dtype={A.dtype} is not supported.")
    degrees, bounds, largest = _CHOICES[bits]
    norm = jnp.linalg.norm(A, 1)
    n_squarings = jnp.maximum(0, jnp.floor(jnp.log2(norm / largest)))
    A = A / 2 ** n_squarings.astype(A.dtype)
    choice = jnp.digitize(norm, jnp.array(bounds, dtype=norm.dtype))
    approximants = [_pade13 if degree == 13 else _pade(degree) for degree in degrees]
    U, V = lax.switch(choice, approximants, A)
    return U + V, -U + V, n_squarings


@functools.partial(plax.jit, static_argnums=2)
def _squaring(R, n_squarings, max_squarings: int):
    """R squared n_squarings times (of at most max_squarings)."""
    def step(x, i):
        return lax.cond(i < n_squarings, lambda x: _dot(x, x), lambda x: x, x), None
    R, _ = lax.scan(step, R, jnp.arange(max_squarings, dtype=n_squarings.dtype))
    return R


def expm(A, *, upper_triangular: bool = False, max_squarings: int = 16):
    """The matrix exponential of each square matrix of A `(..., n, n)` (upper triangular
    ones solved for by back substitution with `upper_triangular`); NaN where more than
    `max_squarings` squarings would be needed."""
    A, = util.promote_dtypes_inexact(A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"Expected A to be a (batched) square matrix, got {A.shape=}.")
    if A.ndim > 2:
        return jnp.vectorize(functools.partial(expm, upper_triangular=upper_triangular,
                                               max_squarings=max_squarings),
                             signature="(n,n)->(n,n)")(A)
    P, Q, n_squarings = _calc_P_Q(jnp.asarray(A))

    def approximate(operands):
        _, P, Q = operands
        if upper_triangular:
            from plax_stdlib.scipy.linalg import solve_triangular  # (which imports this)
            R = solve_triangular(Q, P)
        else:
            R = jnp.linalg.solve(Q, P)
        return _squaring(R, n_squarings, max_squarings)
    return lax.cond(n_squarings > max_squarings,
                    lambda operands: jnp.full_like(operands[0], np.nan), approximate,
                    (A, P, Q))


def expm_frechet(A, E, *, method: str | None = None, compute_expm: bool = True):
    """The Fréchet derivative of expm at A in the direction E (`method` is ignored): the
    `jvp` of `expm`; with `compute_expm`, `(expm(A), derivative)`."""
    A, E = jnp.asarray(A), jnp.asarray(E)
    for name, x in (("A", A), ("E", E)):
        if x.ndim < 2 or x.shape[-2] != x.shape[-1]:
            raise ValueError(f"expected {name} to be a (batched) square matrix, got "
                             f"{name}.shape={x.shape}")
    if A.shape != E.shape:
        raise ValueError(f"expected A and E to be the same shape, got A.shape={A.shape} "
                         f"E.shape={E.shape}")
    expm_A, derivative = plax.jvp(
        functools.partial(expm, upper_triangular=False, max_squarings=16), (A,), (E,))
    return (expm_A, derivative) if compute_expm else derivative


jax_jits.apply(globals(), "scipy.linalg")  # JAX's jitted functions become jit functions
