"""What differentiation rules share, kept in the core so that primitives can state
their rules without importing a transform.

* `Zero(aval)`: a tangent or cotangent known to be zero. Rules receive and return it
  instead of an array of zeros, so no zeros are materialised where none are needed.
* `UndefinedPrimal(aval)`: in a transpose rule, the operand the rule transposes
  with respect to (a linear input whose value is not known).
* `tangent_aval`: integer and boolean values have `float0` tangents, like JAX.
* `defjvp(*partials)`, `linear_jvp`, `unbroadcast`: helpers that keep a
  primitive's rules one keyword each (see plax-stdlib's `lax.constructors`).

The helpers that compute (zeros, sums, broadcasts) call the public `lax` functions
through the `lax` seam of the plugin registry: the kernel names them, plax-stdlib
defines them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from plax._src import dtypes, plugins
from plax._src.abstract import (AbstractToken, ShapedArray, abstract_token,  # noqa: F401
                                 is_differentiable_dtype)
from plax._src.staging import StagingTrace, TracedLiteral
from plax._src.tracing import current_trace, get_aval


def lax_module():
    """The public `lax` module (plax-stdlib), through the registry."""
    return plugins.resolve("plax.interpreters", "lax")


class _Placeholder:
    """A value of which only the abstract value `aval` is known."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):  # JAX's: Zero(~float32[])
        return f"{type(self).__name__}({self.aval})"


class Zero(_Placeholder):
    """A symbolic zero of abstract value `aval` (a tangent or cotangent)."""
    __slots__ = ()


class UndefinedPrimal(_Placeholder):
    """A linear operand of a transpose rule: only its abstract value is known."""
    __slots__ = ()


def is_undefined_primal(x) -> bool:
    """Whether a transpose rule's operand is the linear one (an `UndefinedPrimal`)."""
    return isinstance(x, UndefinedPrimal)


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """The abstract value of tangents of `aval` (`ShapedArray.to_tangent_aval`). A
    token's tangent is a token (tokens pass through differentiation unchanged)."""
    return abstract_token if type(aval) is AbstractToken else aval.to_tangent_aval()


def zeros_like_aval(aval: ShapedArray):
    """A materialised zero of `aval`, typed with its sharding and weak type; a new token
    for a token. Where a Jaxpr is traced, a 0-d zero is a tracer holding a literal and a
    float0 zero a broadcast float0 literal, as JAX's; float0 zeros are NumPy arrays
    elsewhere."""
    if type(aval) is AbstractToken:
        return lax_module().create_token()
    zero, sharding = np.zeros((), aval.dtype), getattr(aval, "typed_sharding", None)
    trace = current_trace()  # transformations pass constants to the trace they sit on
    while type(trace) is not StagingTrace and hasattr(trace, "parent"):
        trace = trace.parent
    staged = type(trace) is StagingTrace
    if aval.dtype == dtypes.float0 and not (staged and aval.shape):
        return np.broadcast_to(zero, aval.shape).copy()  # (no device holds float0)
    if staged and not aval.shape and sharding is None:  # (a Python scalar's zero is weak)
        atom = trace.to_atom(zero.item() if aval.weak_type else zero)
        return trace.tracer_type(trace, TracedLiteral(atom.val, atom.aval))
    if aval.weak_type and aval.dtype != dtypes.float0:
        zero = lax_module().full_like(aval, 0, shape=())
    return lax_module().full(aval.shape, zero, sharding=sharding)


def instantiate(t, aval: ShapedArray | None = None):
    """`t` as an array: a `Zero` becomes zeros."""
    return zeros_like_aval(t.aval if aval is None else aval) if isinstance(t, Zero) else t


def add_tangents(x, y):
    """The sum of two tangents, either of which may be `Zero`."""
    if isinstance(x, Zero):
        return y
    if isinstance(y, Zero):
        return x
    return lax_module().add_any(x, y)


# --- helpers for primitives' rules -----------------------------------------------------

def broadcast_to(x, shape: tuple[int, ...]):
    """`x` broadcast as lax's binary operations do: from rank 0, or along size-1 dims."""
    lax = lax_module()
    xshape = get_aval(x).shape
    if xshape == tuple(shape):
        return x
    if not xshape:
        return lax.broadcast_in_dim(x, shape, ())
    squeezed = tuple(i for i, d in enumerate(xshape) if d == 1 and shape[i] != 1)
    x = lax.squeeze(x, squeezed)
    return lax.broadcast_in_dim(x, shape, tuple(i for i in range(len(shape))
                                                if i not in squeezed))


def unbroadcast(ct, aval: ShapedArray):
    """The cotangent of an operand of `aval` that a binary operation broadcast: the
    output cotangent `ct` summed over the broadcast dimensions."""
    lax = lax_module()
    if isinstance(ct, Zero):
        return Zero(aval)
    ct_shape = get_aval(ct).shape
    if ct_shape == aval.shape:
        return ct
    if not aval.shape:
        return lax.reduce_sum(ct, tuple(range(len(ct_shape))))
    axes = tuple(i for i, (a, c) in enumerate(zip(aval.shape, ct_shape)) if a == 1 and c != 1)
    return lax.reshape(lax.reduce_sum(ct, axes), aval.shape)


class PrimitiveRule:
    """A rule built from the primitive it belongs to (`standard_primitive` calls
    `for_primitive` when it registers it)."""

    def for_primitive(self, prim) -> Callable:
        raise NotImplementedError


class defjvp(PrimitiveRule):
    """A jvp rule from one partial derivative per operand: each `partial(g, ans, *primals)`
    gives that operand's contribution to the output tangent for its tangent `g`
    (None: the output does not depend on that operand differentiably)."""

    def __init__(self, *partials: Callable | None):
        self.partials = partials

    def for_primitive(self, prim) -> Callable:
        partials = self.partials

        def jvp(primals, tangents, **params):
            ans = prim.bind(*primals, **params)
            out_shape = np.shape(ans) if not hasattr(ans, "aval") else ans.aval.shape
            t_out: Any = Zero(tangent_aval(get_aval(ans)))
            for partial, t in zip(partials, tangents):
                if partial is None or isinstance(t, Zero):
                    continue
                t_out = add_tangents(t_out, broadcast_to(partial(t, ans, *primals, **params),
                                                         out_shape))
            return ans, t_out
        jvp.__name__ = f"{prim.name}_jvp"
        return jvp


class linear_jvp(PrimitiveRule):
    """The jvp rule of a primitive linear in all its operands: apply it to the tangents
    (Zero tangents are instantiated unless all are zero)."""

    def for_primitive(self, prim) -> Callable:
        def jvp(primals, tangents, **params):
            ans = prim.bind(*primals, **params)
            if all(isinstance(t, Zero) for t in tangents):
                return ans, (([Zero(tangent_aval(get_aval(a))) for a in ans])
                             if prim.multiple_results else Zero(tangent_aval(get_aval(ans))))
            return ans, prim.bind(*(instantiate(t) for t in tangents), **params)
        jvp.__name__ = f"{prim.name}_jvp"
        jvp.linear = True  # its tangent is the primitive itself: reverse mode needs a transpose
        return jvp
