"""The `accuracy=` of lax's transcendental functions: a request to the compiler for
how closely `exp`, `sin`, `tanh`... must match the exact result.

`AccuracyMode.HIGHEST` asks for the most accurate implementation, `DEFAULT` for the
backend's usual one (no request at all), and a `Tolerance(atol, rtol, ulps)` bounds
the error. The request is a parameter of the primitive (absent when not given, so
programs without it lower as before) and becomes StableHLO's `result_accuracy`
attribute on the op that computes the result (`with_result_accuracy`).
"""
from __future__ import annotations

import enum
import numbers
from typing import Callable

from plax.extend.mlir import hlo


class AccuracyMode(enum.Enum):
    """A named accuracy for the `accuracy=` of lax's transcendental functions
    (`exp`, `log`, `sin`, `tanh`...): `HIGHEST` asks for the most accurate
    implementation, `DEFAULT` for the backend's usual one. For an explicit
    bound, use `lax.Tolerance`.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.tanh(jnp.array([0.0, 1.0]), accuracy=lax.AccuracyMode.HIGHEST)
        Array([0. , 0.7615...], dtype=float32)
    """
    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """An error bound that a transcendental function's implementation must meet
    (the `accuracy=` of `lax.exp`, `lax.sin`, `lax.tanh`...): absolute
    (`atol`), relative (`rtol`) and in units in the last place (`ulps`).

    At least one must be positive and none negative. Tolerances equal by value
    are the same parameter, so equal requests share one compilation.

    Args:
        atol: the absolute error bound.
        rtol: the relative error bound.
        ulps: the bound in units in the last place.

    Raises:
        TypeError: a bound of the wrong type.
        ValueError: a negative bound, or all of them zero.

    Examples:
        >>> import plax.numpy as jnp
        >>> from plax import lax
        >>> lax.exp(jnp.array([0.0, 1.0]), accuracy=lax.Tolerance(rtol=1e-6))
        Array([1. , 2.7182...], dtype=float32)
    """
    __slots__ = ("atol", "rtol", "ulps")

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        for name, value, kind in (("atol", atol, numbers.Real), ("rtol", rtol, numbers.Real),
                                  ("ulps", ulps, numbers.Integral)):
            if isinstance(value, bool) or not isinstance(value, kind):
                what = "an integer" if kind is numbers.Integral else "a real number"
                raise TypeError(f"Tolerance: {name} must be {what}, got {value!r}")
        if atol < 0 or rtol < 0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0 and rtol == 0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        object.__setattr__(self, "atol", float(atol))
        object.__setattr__(self, "rtol", float(rtol))
        object.__setattr__(self, "ulps", int(ulps))

    def __setattr__(self, name, value):
        raise AttributeError(f"Tolerance is immutable: cannot set {name}")

    def _key(self) -> tuple:
        return (self.atol, self.rtol, self.ulps)

    def __eq__(self, other):
        return type(other) is Tolerance and self._key() == other._key()

    def __hash__(self):
        return hash((Tolerance, self._key()))

    def __repr__(self):
        return f"Tolerance(atol={self.atol!r}, rtol={self.rtol!r}, ulps={self.ulps!r})"


def check_accuracy(name: str, accuracy) -> None:
    """NotImplementedError (JAX's class) unless `accuracy` is None, an `AccuracyMode`
    or a `Tolerance`."""
    if accuracy is not None and not isinstance(accuracy, (AccuracyMode, Tolerance)):
        raise NotImplementedError(
            f"{name}: accuracy {accuracy!r} not supported; pass an lax.AccuracyMode, "
            "an lax.Tolerance or None")


def _result_accuracy_attr(accuracy):
    if isinstance(accuracy, Tolerance):
        return hlo.ResultAccuracyAttr.get(accuracy.atol, accuracy.rtol, accuracy.ulps,
                                          "TOLERANCE")
    return hlo.ResultAccuracyAttr.get(0.0, 0.0, 0, accuracy.name)


def with_result_accuracy(name: str, lower: Callable) -> Callable:
    """`lower` (a unary op's lowering) marking the op that computes its result with the
    equation's `accuracy`; without one (or with `DEFAULT`) the lowering is `lower`'s."""
    def rule(ctx, x, *, accuracy=None):
        out = lower(ctx, x)
        check_accuracy(name, accuracy)
        if accuracy is not None and accuracy is not AccuracyMode.DEFAULT:
            out.owner.attributes["result_accuracy"] = _result_accuracy_attr(accuracy)
        return out
    rule.__name__ = getattr(lower, "__name__", "lower")
    return rule
