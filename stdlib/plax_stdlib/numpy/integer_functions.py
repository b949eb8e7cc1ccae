"""Greatest common divisors and least common multiples of integer arrays."""
from __future__ import annotations

from plax_stdlib import lax
from plax_stdlib.numpy import ufuncs, util


def _integer_pair(name: str, x1, x2):
    x1, x2 = util.promote_args(name, x1, x2)
    if util.dtype_category(util.dtype_of(x1)) not in "iu":
        raise ValueError(f"Arguments to plax.numpy.{name} must be integers, got dtype "
                         f"{util.dtype_of(x1)}")
    x1, x2 = util.strong_unless_scalar(x1, x2)
    shape = util.broadcast_shapes(util.shape_of(x1), util.shape_of(x2))
    return (util.broadcast_to_shape(ufuncs.absolute(x1), shape),
            util.broadcast_to_shape(ufuncs.absolute(x2), shape))


def _euclid(a, b):
    """gcd(a, b) of non-negative arrays, by Euclid's algorithm run until every
    remainder is zero (finished elements keep their value)."""
    def not_done(state):
        return lax.reduce_or(lax.ne(state[1], 0), tuple(range(len(util.shape_of(state[1])))))

    def step(state):
        a, b = state
        done = lax.eq(b, 0)
        safe = util.select_n(done, b, util.full_like(b, 1))
        return util.select_n(done, b, a), util.select_n(done, lax.rem(a, safe), b)

    return lax.while_loop(not_done, step, (a, b))[0]


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
    return util.as_array(_euclid(*_integer_pair("gcd", x1, x2)))


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
    a, b = _integer_pair("lcm", x1, x2)
    d = _euclid(a, b)
    zero = lax.eq(d, 0)
    return util.as_array(util.select_n(zero, lax.mul(a, lax.div(b, util.select_n(
        zero, d, util.full_like(d, 1)))), util.full_like(d, 0)))
