"""Special functions of lax beyond the CHLO-backed ones in `elementwise`, and the
means of those that XLA has no op for.

`bessel_i1e` and `zeta` lower to CHLO ops. `bessel_i0e` (here), the incomplete gamma
functions (`incomplete_gamma`) and `betainc` (`incomplete_beta`) have none: each is
an elementwise primitive whose lowering traces a lax program (a Chebyshev series, a
power series, a continued fraction) and calls it, so that a Jaxpr shows one equation
and the derivative is the primitive's own rule rather than the derivative of the
iteration. Where JAX has no derivative (`zeta` in `x`) these raise.

Half-precision operands are computed in float32.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from plax.extend import tree_util
from plax.extend.constructors import FLOAT, binary, chlo_rule, elementwise_lowering
from plax.extend.ad import defjvp
from plax.extend.core import ShapedArray, get_aval, stage_flat
from plax.extend.dtypes import finfo
from plax_stdlib.lax.comparison import gt, le, select
from plax_stdlib.lax.conversion import convert_element_type, match_python_scalars
from plax_stdlib.lax.creation import full_like
from plax_stdlib.lax.elementwise import (
    abs, add, div, mul, neg, sign, sqrt, sub)
from plax_stdlib.lax.op_table import unary_op

# --- lowering a primitive through a lax program ------------------------------------------


@functools.lru_cache(maxsize=256)
def _traced(impl, aval: ShapedArray, arity: int):
    return stage_flat(lambda *xs: [impl(*xs)], [aval] * arity)


def lowered_from(impl):
    """A lowering rule that computes the primitive by `impl`, a function of lax
    operations on operands already broadcast to the result's shape and dtype."""
    @elementwise_lowering
    def lower(ctx, *operands):
        out = ctx.avals_out[0]
        jaxpr = _traced(impl, ShapedArray(out.shape, out.dtype), len(operands))
        return ctx.lower_subjaxpr(jaxpr, *operands, name=impl.__name__.strip("_"))[0]
    return lower


def computed_in_float32(impl):
    """`impl` computed in float32 for narrower floats (and cast back): the series and
    fractions of special functions are tuned for float32 and float64."""
    @functools.wraps(impl)
    def wrapped(*xs):
        dtype = np.dtype(get_aval(xs[0]).dtype)
        if dtype.itemsize >= 4:
            return impl(*xs)
        out = impl(*(convert_element_type(x, np.float32) for x in xs))
        return tree_util.tree_map(lambda o: convert_element_type(o, dtype), out)
    return wrapped


def not_differentiable(prim_name: str, operand: str):
    def partial(g, ans, *primals):
        raise NotImplementedError(
            f"Differentiation rule for '{prim_name}' with respect to {operand} is not "
            "implemented")
    return partial


def public_binding(prim, name: str, params: str, doc: str):
    """`name`, binding `prim`, with the parameters named in `params` (JAX's names,
    so that they can be passed by keyword)."""
    sig = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                             for p in params.split()])
    arity = len(sig.parameters)

    def apply(*args, **kwargs):
        # (all positional, the common call, needs no binding)
        if kwargs or len(args) != arity:
            try:
                args = sig.bind(*args, **kwargs).args
            except TypeError as err:
                raise TypeError(f"{name}(): {err}") from None
        return prim.bind(*match_python_scalars(name, *args))
    apply.__name__ = apply.__qualname__ = name
    apply.__module__ = __name__
    apply.__doc__ = doc
    apply.__signature__ = sig
    return apply


def _chebyshev(coefficients, t):
    """The Chebyshev series sum' c_k T_k(t) (first term halved), the coefficients given
    highest order first, by Clenshaw's recurrence (as Cephes' `chbevl`)."""
    b0 = b1 = b2 = full_like(t, 0.0)
    for c in coefficients:
        b0, b1, b2 = add(sub(mul(t, b0), b1), c), b0, b1
    return mul(sub(b0, b2), 0.5)


# --- exponentially scaled modified Bessel functions -----------------------------------------

# exp(-|x|) I0(x) by Cephes' Chebyshev expansions (i0.c): in t = |x|/2 - 2 on [0, 8], and
# sqrt(|x|) exp(-|x|) I0(x) in t = 32/|x| - 2 beyond. Single precision (i0f.c) keeps the
# last 18 and 7 terms. Evaluated with these coefficients in this order, as JAX does, the
# bits are JAX's.
_I0E_NEAR = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_FAR = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)
_I0E_TERMS = {4: (18, 7), 8: (len(_I0E_NEAR), len(_I0E_FAR))}  # by itemsize


@computed_in_float32
def _i0e(x):
    near_terms, far_terms = _I0E_TERMS[np.dtype(x.aval.dtype).itemsize]
    ax = abs(x)
    near = _chebyshev(_I0E_NEAR[-near_terms:], sub(mul(ax, 0.5), 2.0))
    far = div(_chebyshev(_I0E_FAR[-far_terms:], sub(div(full_like(ax, 32.0), ax), 2.0)),
              sqrt(ax))
    return select(le(ax, 8.0), near, far)


def _i0e_partial(g, ans, x):
    return mul(g, sub(bessel_i1e(x), mul(sign(x), ans)))


def _i1e_partial(g, ans, x):
    """i0e(x) - i1e(x) (sign(x) + 1/x), which tends to 1/2 at 0."""
    tiny = finfo(get_aval(x).dtype).eps
    not_tiny = gt(abs(x), tiny)
    safe_x = select(not_tiny, x, full_like(x, 1.0))
    slope = sub(bessel_i0e(safe_x), mul(ans, add(sign(safe_x), div(full_like(x, 1.0), safe_x))))
    return mul(g, select(not_tiny, slope, full_like(x, 0.5)))


bessel_i0e_p, bessel_i0e = unary_op(
    "bessel_i0e", FLOAT, lowered_from(_i0e),
    "Exponentially scaled modified Bessel function of order 0: exp(-|x|) I0(x).",
    jvp=_i0e_partial,
    example=("lax.bessel_i0e(jnp.array([0.0, 1.0]))",
             "Array([1.0000001 , 0.46575963], dtype=float32)"))
bessel_i1e_p, bessel_i1e = unary_op(
    "bessel_i1e", FLOAT, chlo_rule("bessel_i1e"),
    "Exponentially scaled modified Bessel function of order 1: exp(-|x|) I1(x).",
    jvp=_i1e_partial,
    example=("lax.bessel_i1e(jnp.array([0.0, 1.0]))",
             "Array([0. , 0.2079...], dtype=float32)"))


# --- Hurwitz zeta -------------------------------------------------------------------------

def _zeta_partial_q(g, ans, x, q):
    return mul(g, mul(neg(x), zeta(add(x, 1.0), q)))


zeta_p = binary("lax.zeta", dtypes=FLOAT, lower=chlo_rule("zeta"),
                jvp=defjvp(not_differentiable("zeta", "x"), _zeta_partial_q))
_ZETA_DOC = """The Hurwitz zeta function, elementwise: the sum over n >= 0 of
`(n + q) ** -x`.

With `q = 1` it is Riemann's zeta function.

Args:
    x: an array of a floating-point dtype (the exponent, > 1 for a finite
        sum).
    q: an array of `x`'s dtype.

Returns:
    An array of `x`'s dtype.

Examples:
    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> lax.zeta(jnp.array([2.0, 4.0]), 1.0)  # pi**2 / 6, pi**4 / 90
    Array([1.6449... , 1.0823...], dtype=float32)
"""
zeta = public_binding(zeta_p, "zeta", "x q", _ZETA_DOC)


__all__ = ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "computed_in_float32",
           "lowered_from", "not_differentiable", "public_binding", "zeta", "zeta_p"]
