"""Greatest common divisors and least common multiples of integer arrays."""
from __future__ import annotations

from plax_stdlib import jax_jits, lax
from plax_stdlib.numpy import reductions, ufuncs, util


def _gcd_cond(state):
    """Some remainder is still nonzero."""
    return reductions.any(state[1] != 0)


def _gcd_step(state):
    """One step of Euclid's algorithm on every element; finished ones, whose second
    value is 0, keep their value. (JAX's step also orders the pair, larger first: then
    the loop never ends where `abs` overflows, |int32 min| being negative; here the
    second value strictly shrinks in magnitude, so it ends.)"""
    a, b = state
    return (ufuncs.where(b != 0, b, a),
            ufuncs.where(b != 0, lax.rem(a, b), ufuncs._lax_const(b, 0)))


def _check_integers(name: str, x) -> None:
    if util.dtype_category(util.dtype_of(x)) not in "iu":
        raise ValueError(f"Arguments to plax.numpy.{name} must be integers, got dtype "
                         f"{util.dtype_of(x)}")


def gcd(x1, x2):
    """The greatest common divisor of `|x1|` and `|x2|`, elementwise (`gcd(0, 0)` is 0).

    Follows `numpy.gcd`: integer inputs only, broadcast together.

    Args:
        x1: an integer array.
        x2: an integer array.

    Returns:
        An integer array of the broadcast shape.

    Raises:
        ValueError: non-integer inputs.

    Examples:
        >>> jnp.gcd(jnp.array([12, 18, 0]), 8)
        Array([4, 2, 8], dtype=int32)
    """
    x1, x2 = util.promote_dtypes(*util.ensure_arraylike("gcd", x1, x2))
    _check_integers("gcd", x1)
    shape = util.broadcast_shapes(util.shape_of(x1), util.shape_of(x2))
    x1, x2 = util.broadcast_to_shape(x1, shape), util.broadcast_to_shape(x2, shape)
    # JAX's loop body makes a non-scalar carry strongly typed (a strong 0), and its
    # while_loop then converts the initial carry so: the result's weak type is JAX's.
    init = util.strong_unless_scalar(ufuncs.abs(x1), ufuncs.abs(x2))
    return lax.while_loop(_gcd_cond, _gcd_step, init)[0]


def lcm(x1, x2):
    """The least common multiple of `|x1|` and `|x2|`, elementwise (0 if either is 0).

    Follows `numpy.lcm`: integer inputs only, broadcast together.

    Args:
        x1: an integer array.
        x2: an integer array.

    Returns:
        An integer array of the broadcast shape.

    Raises:
        ValueError: non-integer inputs.

    Examples:
        >>> jnp.lcm(jnp.array([4, 6, 0]), 6)
        Array([12,  6,  0], dtype=int32)
    """
    x1, x2 = util.promote_dtypes(*util.ensure_arraylike("lcm", x1, x2))
    x1, x2 = ufuncs.abs(x1), ufuncs.abs(x2)
    _check_integers("lcm", x1)
    d = gcd(x1, x2)
    return ufuncs.where(d == 0, ufuncs._lax_const(d, 0),
                        ufuncs.multiply(x1, ufuncs.floor_divide(x2, d)))


jax_jits.apply(globals())  # JAX's jitted functions become jit functions
