"""Special functions of lax beyond the CHLO-backed ones in `elementwise`.

`bessel_i1e` and `zeta` lower to CHLO ops. `bessel_i0e`, `igamma`, `igammac`,
`igamma_grad_a`, `random_gamma_grad` and `betainc` have no XLA op: each is an
elementwise primitive whose lowering traces a lax program written here (a Chebyshev
series, a power series, an asymptotic expansion, a continued fraction) and calls it, so that a
Jaxpr shows one equation and the derivative is the primitive's own rule rather
than the derivative of the iteration. Derivatives with respect to the shape
parameters (`a` of igamma, computed by forward differentiation through the
iteration) are primitives too; where JAX has no derivative (`betainc` in `a`, `b`;
`zeta` in `x`) these raise.

Half-precision operands are computed in float32.
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

import plax
from plax.extend import tree_util
from plax.extend.constructors import FLOAT, binary, chlo_rule, elementwise, elementwise_lowering
from plax.extend.ad import defjvp
from plax.extend.core import ShapedArray, get_aval, stage_flat
from plax.extend.dtypes import finfo
from plax_stdlib.lax.comparison import eq, ge, gt, le, lt, ne, select
from plax_stdlib.lax.control_flow import while_loop
from plax_stdlib.lax.conversion import convert_element_type, match_python_scalars
from plax_stdlib.lax.creation import full_like
from plax_stdlib.lax.elementwise import (
    abs, add, div, exp, lgamma, log, log1p, mul, neg, sign, sqrt, sub)
from plax_stdlib.lax.bitwise import bitwise_and, bitwise_not, bitwise_or
from plax_stdlib.lax.op_table import unary_op
from plax_stdlib.lax.reductions import reduce_or

# --- lowering a primitive through a lax program ------------------------------------------


@functools.lru_cache(maxsize=256)
def _traced(impl, aval: ShapedArray, arity: int):
    return stage_flat(lambda *xs: [impl(*xs)], [aval] * arity)


def _lowered_from(impl):
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


def _not_differentiable(prim_name: str, operand: str):
    def partial(g, ans, *primals):
        raise NotImplementedError(
            f"Differentiation rule for '{prim_name}' with respect to {operand} is not "
            "implemented")
    return partial


def _public(prim, name: str, params: str, doc: str):
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


def _any(pred):
    return reduce_or(pred, tuple(range(pred.aval.ndim)))


def _isnan(x):
    return ne(x, x)


def _nan_where(pred, x):
    return select(pred, full_like(x, np.nan), x)


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
    "bessel_i0e", FLOAT, _lowered_from(_i0e),
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
                jvp=defjvp(_not_differentiable("zeta", "x"), _zeta_partial_q))
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
zeta = _public(zeta_p, "zeta", "x q", _ZETA_DOC)


# --- regularized incomplete gamma ---------------------------------------------------------

_MAX_ITERATIONS = 2000


def _converging(step, init, done_of, settle: bool = False):
    """Iterate `step` on the state tuple, element by element, until `done_of(state)`
    holds (or `_MAX_ITERATIONS`): an element that has converged is frozen, so further
    steps taken for slower elements cannot drift it by rounding.

    With `settle`, each element runs on to twice the steps its convergence took plus
    10 before it freezes: a derivative taken through the iteration (forward mode, as
    `igamma_grad_a` does) converges more slowly than the value the test watches.
    """
    def frozen_of(n, converged_at):
        limit = add(mul(converged_at, 2), 10) if settle else converged_at
        return bitwise_and(ge(converged_at, 0), ge(n, limit))

    def cond(carry):
        n, converged_at, _ = carry
        return bitwise_and(lt(n, _MAX_ITERATIONS),
                           _any(bitwise_not(frozen_of(n, converged_at))))

    def body(carry):
        n, converged_at, state = carry
        frozen = frozen_of(n, converged_at)
        state = tuple(select(frozen, old, new) for old, new in zip(state, step(state)))
        newly = bitwise_and(lt(converged_at, 0), done_of(state))
        return add(n, 1), select(newly, full_like(converged_at, add(n, 1)), converged_at), state
    start = full_like(init[0], -1, dtype=np.int32)
    return while_loop(cond, body, (np.int32(0), start, init))[2]


def _igamma_series(a, x, settle=False):
    """sum_n x^n / ((a+1)...(a+n)), which converges quickly where x < a + 1."""
    eps = finfo(a.aval.dtype).eps

    def step(state):
        r, term, total = state
        r = add(r, 1.0)
        term = mul(term, div(x, r))
        return r, term, add(total, term)
    init = (a, full_like(a, 1.0), full_like(a, 1.0))
    return _converging(step, init, lambda s: le(abs(s[1]), mul(abs(s[2]), eps)), settle)[2]


def _lentz_fix(v, tiny):
    return select(lt(abs(v), tiny), full_like(v, tiny), v)


def _igammac_fraction(a, x, settle=False):
    """Q(a, x) exp(x) x^-a Γ(a) as a continued fraction (modified Lentz), which
    converges quickly where x > a + 1."""
    dtype = a.aval.dtype
    eps, tiny = finfo(dtype).eps, float(finfo(dtype).tiny) * 16
    b = add(sub(x, a), 1.0)
    d = div(full_like(b, 1.0), _lentz_fix(b, tiny))

    def step(state):
        i, b, c, d, h, _ = state
        i = add(i, 1.0)
        an = mul(neg(i), sub(i, a))
        b = add(b, 2.0)
        d = div(full_like(b, 1.0), _lentz_fix(add(mul(an, d), b), tiny))
        c = _lentz_fix(add(b, div(an, c)), tiny)
        delta = mul(c, d)
        return i, b, c, d, mul(h, delta), delta
    init = (full_like(a, 0.0), b, full_like(a, 1.0 / tiny), d, d, full_like(a, 2.0))
    return _converging(step, init, lambda s: le(abs(sub(s[5], 1.0)), eps), settle)[4]


def _igamma_both(a, x, settle=False):
    """(P(a, x), Q(a, x)) with scipy's conventions at the edges of the domain; `settle`
    for derivatives through the iterations (see `_converging`)."""
    nan_in = bitwise_or(_isnan(a), _isnan(x))
    domain = bitwise_or(lt(a, 0.0), lt(x, 0.0))
    x_zero, a_zero, x_inf = eq(x, 0.0), eq(a, 0.0), eq(x, np.inf)
    undefined = bitwise_or(bitwise_or(nan_in, domain),
                           bitwise_or(bitwise_and(x_zero, a_zero), eq(a, np.inf)))
    special = bitwise_or(bitwise_or(undefined, x_zero), bitwise_or(a_zero, x_inf))
    use_series = bitwise_or(lt(x, 1.0), lt(x, a))
    # Benign operands where an element takes the other path (or no path), so that
    # every element's iteration converges.
    sa = select(special, full_like(a, 1.0), a)
    sx = select(special, full_like(x, 1.0), x)
    log_prefactor = sub(sub(mul(sa, log(sx)), sx), lgamma(sa))
    prefactor = exp(log_prefactor)
    one = full_like(a, 1.0)
    series_a = select(use_series, sa, one)
    series_x = select(use_series, sx, full_like(x, 0.5))
    p_series = div(mul(prefactor, _igamma_series(series_a, series_x, settle)), series_a)
    fraction_a = select(use_series, one, sa)
    fraction_x = select(use_series, full_like(x, 3.0), sx)
    q_fraction = mul(prefactor, _igammac_fraction(fraction_a, fraction_x, settle))
    p = select(use_series, p_series, sub(1.0, q_fraction))
    q = select(use_series, sub(1.0, p_series), q_fraction)
    # P(a, 0) = 0; P(0, x) = 1 and P(a, inf) = 1 for x > 0.
    p = select(x_zero, full_like(p, 0.0), select(bitwise_or(a_zero, x_inf), one, p))
    q = select(x_zero, one, select(bitwise_or(a_zero, x_inf), full_like(q, 0.0), q))
    return _nan_where(undefined, p), _nan_where(undefined, q)


@computed_in_float32
def _igamma(a, x):
    return _igamma_both(a, x)[0]


@computed_in_float32
def _igammac(a, x):
    return _igamma_both(a, x)[1]


def _igamma_grad_domain(a, x):
    """Where dP/da is NaN (as in JAX): a ≤ 0, x < 0 or a NaN operand."""
    return bitwise_or(bitwise_or(_isnan(a), _isnan(x)), bitwise_or(le(a, 0.0), lt(x, 0.0)))


@computed_in_float32
def _igamma_grad_a(a, x):
    """dP/da, by forward differentiation through P's iteration (zero at x = 0 and
    x = inf, where P is constant in a)."""
    grad = plax.jvp(lambda a_: _igamma_both(a_, x, settle=True)[0], (a,),
                    (full_like(a, 1.0),))[1]
    return _nan_where(_igamma_grad_domain(a, x), grad)


def _gamma_density(a, x):
    """x^(a-1) e^-x / Γ(a): dP/dx."""
    return exp(sub(sub(mul(sub(a, 1.0), log(x)), x), lgamma(a)))


@computed_in_float32
def _random_gamma_grad(a, x):
    """dx/da at fixed P(a, x): how a Gamma(a) sample moves with `a`."""
    x_zero = eq(x, 0.0)
    safe_x = select(x_zero, full_like(x, 1.0), x)
    grad = div(neg(_igamma_grad_a(a, safe_x)), _gamma_density(a, safe_x))
    return _nan_where(_igamma_grad_domain(a, x), select(x_zero, full_like(grad, 0.0), grad))


def _igamma_grad_x(g, ans, a, x):
    return mul(g, _gamma_density(a, x))


def _igamma_grad_a_partial(g, ans, a, x):
    return mul(g, igamma_grad_a(a, x))


def _igamma_grad_a_grad_x(g, ans, a, x):
    """d²P/dadx = dP/dx (log x - digamma(a))."""
    from plax_stdlib.lax.elementwise import digamma
    return mul(g, mul(_gamma_density(a, x), sub(log(x), digamma(a))))


igamma_p = binary("lax.igamma", dtypes=FLOAT, lower=_lowered_from(_igamma),
                  jvp=defjvp(_igamma_grad_a_partial, _igamma_grad_x))
igammac_p = binary("lax.igammac", dtypes=FLOAT, lower=_lowered_from(_igammac),
                   jvp=defjvp(lambda g, ans, a, x: neg(_igamma_grad_a_partial(g, ans, a, x)),
                              lambda g, ans, a, x: neg(_igamma_grad_x(g, ans, a, x))))
igamma_grad_a_p = binary(
    "lax.igamma_grad_a", dtypes=FLOAT, lower=_lowered_from(_igamma_grad_a),
    jvp=defjvp(_not_differentiable("igamma_grad_a", "a"), _igamma_grad_a_grad_x))
random_gamma_grad_p = binary(
    "lax.random_gamma_grad", dtypes=FLOAT, lower=_lowered_from(_random_gamma_grad),
    jvp=defjvp(_not_differentiable("random_gamma_grad", "a"),
               _not_differentiable("random_gamma_grad", "x")))

_IGAMMA_DOC = """The regularized lower incomplete gamma function P(a, x), elementwise: the
CDF at `x` of a gamma distribution of shape `a`.

Args:
    a: an array of a floating-point dtype (positive).
    x: an array of `a`'s dtype (non-negative).

Returns:
    An array of values in [0, 1].

Examples:
    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> lax.igamma(jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0]))  # 1 - 1/e, 1 - 2/e
    Array([0.6321... , 0.2642...], dtype=float32)
"""
igamma = _public(igamma_p, "igamma", "a x", _IGAMMA_DOC)
_IGAMMAC_DOC = """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x),
elementwise, accurate where P is close to 1.

Args:
    a: an array of a floating-point dtype (positive).
    x: an array of `a`'s dtype (non-negative).

Returns:
    An array of values in [0, 1].

Examples:
    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> lax.igammac(jnp.array([1.0, 1.0]), jnp.array([1.0, 20.0]))  # exp(-x)
    Array([3.6787...e-01, 2.0611...e-09], dtype=float32)
"""
igammac = _public(igammac_p, "igammac", "a x", _IGAMMAC_DOC)
_IGAMMA_GRAD_A_DOC = """The derivative of the regularized lower incomplete gamma function
`igamma(a, x)` with respect to `a`, elementwise.

Args:
    a: an array of a floating-point dtype (positive).
    x: an array of `a`'s dtype (non-negative).

Returns:
    An array of `a`'s dtype.

Examples:
    >>> import plax
    >>> from plax import lax
    >>> d = lax.igamma_grad_a(2.0, 1.0)
    >>> bool(abs(d - plax.grad(lambda a: lax.igamma(a, 1.0))(2.0)) < 1e-4)
    True
"""
igamma_grad_a = _public(igamma_grad_a_p, "igamma_grad_a", "a x", _IGAMMA_GRAD_A_DOC)
_random_gamma_grad_bound = _public(random_gamma_grad_p, "random_gamma_grad", "a x", "")


def random_gamma_grad(a, x, *, dtype=None):
    """The derivative of a Gamma(a, 1) sample `x` with respect to `a`, elementwise:
    the implicit reparameterization gradient that makes `random.gamma`
    differentiable in `a`.

    Args:
        a: the shape parameter, a floating-point array.
        x: the samples, of `a`'s dtype.
        dtype: the result's dtype (default: `x`'s).

    Returns:
        An array of the derivatives.

    Examples:
        >>> import plax
        >>> from plax import lax
        >>> key = plax.random.key(0)
        >>> g = plax.grad(lambda a: plax.random.gamma(key, a))(2.0)
        >>> x = plax.random.gamma(key, 2.0)
        >>> bool(abs(lax.random_gamma_grad(2.0, x) - g) < 1e-5)
        True
    """
    out = _random_gamma_grad_bound(a, x)
    return out if dtype is None else convert_element_type(out, dtype)


# --- regularized incomplete beta ----------------------------------------------------------

def _beta_fraction(a, b, x):
    """The continued fraction of I_x(a, b) (modified Lentz), which converges quickly
    where x < (a + 1) / (a + b + 2)."""
    dtype = a.aval.dtype
    eps, tiny = finfo(dtype).eps, float(finfo(dtype).tiny) * 16
    d = div(full_like(a, 1.0),
            _lentz_fix(sub(1.0, div(mul(add(a, b), x), add(a, 1.0))), tiny))

    def half_step(m, m2, numerator, c, d):
        aa = div(mul(numerator, x), mul(add(a, sub(m2, 1.0)), add(a, m2)))
        d = div(full_like(d, 1.0), _lentz_fix(add(1.0, mul(aa, d)), tiny))
        c = _lentz_fix(add(1.0, div(aa, c)), tiny)
        return c, d, mul(c, d)

    def step(state):
        m, c, d, h, _ = state
        m = add(m, 1.0)
        m2 = mul(m, 2.0)
        c, d, delta = half_step(m, m2, mul(m, sub(b, m)), c, d)
        h = mul(h, delta)
        c, d, delta = half_step(m, add(m2, 1.0), neg(mul(add(a, m), add(add(a, b), m))), c, d)
        return m, c, d, mul(h, delta), delta
    init = (full_like(a, 0.0), full_like(a, 1.0), d, d, full_like(a, 2.0))
    return _converging(step, init, lambda s: le(abs(sub(s[4], 1.0)), eps))[3]


def _log_beta(a, b):
    return sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))


@computed_in_float32
def _betainc(a, b, x):
    """I_x(a, b), with the limits at zero and infinite a or b (as JAX), and NaN outside
    a, b ≥ 0 (not both 0 or both inf), 0 ≤ x ≤ 1."""
    a_zero, b_zero = eq(a, 0.0), eq(b, 0.0)
    undefined = bitwise_or(
        bitwise_or(bitwise_or(_isnan(a), _isnan(b)), _isnan(x)),
        bitwise_or(bitwise_or(lt(a, 0.0), lt(b, 0.0)),
                   bitwise_or(bitwise_or(lt(x, 0.0), gt(x, 1.0)), bitwise_and(a_zero, b_zero))))
    a_inf, b_inf = eq(a, np.inf), eq(b, np.inf)
    undefined = bitwise_or(undefined, bitwise_and(a_inf, b_inf))
    limit = bitwise_or(bitwise_or(a_zero, b_zero), bitwise_or(a_inf, b_inf))
    undefined_or_limit = bitwise_or(undefined, limit)
    edge = bitwise_or(eq(x, 0.0), eq(x, 1.0))
    swap = gt(x, div(add(a, 1.0), add(add(a, b), 2.0)))
    one = full_like(a, 1.0)
    sa = select(undefined_or_limit, one, select(swap, b, a))
    sb = select(undefined_or_limit, one, select(swap, a, b))
    sx = select(bitwise_or(undefined_or_limit, edge), full_like(x, 0.25),
                select(swap, sub(1.0, x), x))
    log_prefactor = sub(add(mul(sa, log(sx)), mul(sb, log1p(neg(sx)))), _log_beta(sa, sb))
    value = div(mul(exp(log_prefactor), _beta_fraction(sa, sb, sx)), sa)
    value = select(swap, sub(1.0, value), value)
    value = select(edge, x, value)
    # The limits: I_x(0, b) = 1, I_x(a, 0) = 0; I_x(inf, b) = 0 and I_x(a, inf) = 1
    # inside (0, 1).
    zero = full_like(a, 0.0)
    value = select(bitwise_or(a_zero, b_inf), select(eq(x, 0.0), zero, one), value)
    value = select(bitwise_or(b_zero, a_inf), select(eq(x, 1.0), one, zero), value)
    return _nan_where(undefined, value)


def _betainc_grad_x(g, ans, a, b, x):
    density = exp(sub(add(mul(sub(a, 1.0), log(x)), mul(sub(b, 1.0), log1p(neg(x)))),
                      _log_beta(a, b)))
    return mul(g, density)


regularized_incomplete_beta_p = elementwise(
    "lax.regularized_incomplete_beta", 3, dtypes=FLOAT, lower=_lowered_from(_betainc),
    jvp=defjvp(_not_differentiable("regularized_incomplete_beta", "a"),
               _not_differentiable("regularized_incomplete_beta", "b"), _betainc_grad_x))
_BETAINC_DOC = """The regularized incomplete beta function I_x(a, b), elementwise: the CDF at
`x` of a Beta(a, b) distribution.

Args:
    a: an array of a floating-point dtype (positive).
    b: an array of `a`'s dtype (positive).
    x: an array of `a`'s dtype, in [0, 1].

Returns:
    An array of values in [0, 1].

Examples:
    >>> import plax.numpy as jnp
    >>> from plax import lax
    >>> jnp.round(lax.betainc(1.0, 1.0, jnp.array([0.25, 0.5])), 4)  # Beta(1, 1): uniform
    Array([0.25, 0.5 ], dtype=float32)
"""
betainc = _public(regularized_incomplete_beta_p, "betainc", "a b x", _BETAINC_DOC)

__all__ = ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "betainc", "igamma",
           "igamma_grad_a", "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p",
           "random_gamma_grad", "random_gamma_grad_p", "regularized_incomplete_beta_p", "zeta",
           "zeta_p"]
