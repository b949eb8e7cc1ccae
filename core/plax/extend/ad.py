"""Writing differentiation rules: symbolic zeros, undefined primals, helper rule
constructors, and the Jaxpr-to-Jaxpr transformations that higher-order primitives'
rules apply to the Jaxprs they carry.

`jvp_jaxpr`, `partial_eval_jaxpr` and `transpose_jaxpr` are part of the contract:
their signatures and meaning are fixed here; plax-transforms implements them
(through the `plax.interpreters` entry points).
"""
from __future__ import annotations

from typing import Sequence

from plax._src.ad_rules import (PrimitiveRule, UndefinedPrimal, Zero, add_tangents, broadcast_to,
                                defjvp, instantiate, is_differentiable_dtype, is_undefined_primal,
                                linear_jvp, tangent_aval, unbroadcast, zeros_like_aval)
from plax._src.debug_info import residual_name, tangent_name
from plax._src.ir import ClosedJaxpr
from plax._src.plugins import seam

_jvp_jaxpr = seam("jvp_jaxpr")
_partial_eval_jaxpr = seam("partial_eval_jaxpr")
_transpose_jaxpr = seam("transpose_jaxpr")


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[ClosedJaxpr, list[bool]]:
    """The jvp of `closed`: it takes `closed`'s inputs then the tangents of the inputs
    where `nonzeros`, and returns `closed`'s outputs then the output tangents not known
    to be zero (or forced by `instantiate`). → (that Jaxpr, which output tangents it
    returns). Debug info names tangents `t:<name>`."""
    return _jvp_jaxpr(closed, nonzeros, instantiate)


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, list[bool], int]:
    """Split `closed` by which inputs are unknown. → `(known, staged, out_unknowns,
    num_residuals)`: `known` maps the known inputs to the known outputs then the
    residuals; `staged` maps the residuals then the unknown inputs to the unknown
    outputs. Outputs in `instantiate` are unknown even when computable now.
    Residuals are named `residual[i]` in the debug info."""
    return _partial_eval_jaxpr(closed, unknowns, instantiate)


def transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool], ct_avals=None) -> ClosedJaxpr:
    """The transpose of `closed` with respect to its inputs where `linear`: a Jaxpr
    taking the non-linear inputs then one cotangent per output, returning the
    (instantiated) cotangents of the linear inputs. The cotangents are of `ct_avals`
    if given, else of `closed`'s output types: a higher-order primitive's transpose
    gives its cotangents' own types (a weak cotangent of a strong output stays weak
    where the backward pass keeps it so, as in JAX)."""
    return _transpose_jaxpr(closed, linear, ct_avals)


__all__ = [
    "PrimitiveRule", "UndefinedPrimal", "Zero", "add_tangents", "broadcast_to", "defjvp",
    "instantiate", "is_differentiable_dtype", "is_undefined_primal", "jvp_jaxpr", "linear_jvp",
    "partial_eval_jaxpr", "residual_name", "tangent_aval", "tangent_name", "transpose_jaxpr",
    "unbroadcast", "zeros_like_aval",
]
