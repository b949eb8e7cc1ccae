"""`psend` and `precv`: the two halves of a `ppermute`, as separate operations (XLA's
Send and Recv) that a program can schedule apart, ordered by the token `psend`
returns and `precv` takes.

Only GPU backends implement them: elsewhere lowering raises NotImplementedError,
as JAX does. Both carry a one-sided-communication effect, so an unused send is not
removed. `precv`'s result is typed as the same on every member (JAX's typing for
`check_vma`: the shape given is all it knows).
"""
from __future__ import annotations

import numpy as np

from plax.extend.batching import canonicalize_axis_names, not_mapped
from plax.extend.constructors import standard_primitive
from plax.extend.core import AXIS_NAMES, EFFECTS, Effect, ShapedArray, abstract_token
from plax.extend.mlir import hlo, mu
from plax_stdlib.lax.parallel import _channel, _groups, checked_perm, device_pairs
from plax.extend import tree_util

ONE_SIDED = Effect("one-sided communication")
"""The effect of a send or receive: a communication that its other half completes."""


def _gpu_only(what: str):
    def lower(ctx, *args, **params):
        raise NotImplementedError(f"{what} is currently only implemented on GPU")
    lower.__name__ = f"_{what}_lowering"
    return lower


def _psend_abstract_eval(x, *, axis_name, perm):
    return abstract_token


def _psend_lowering_gpu(ctx, x, *, axis_name, perm):
    groups = _groups(ctx, axis_name, "psend")
    op = hlo.SendOp([x], hlo.create_token(), _channel()["channel_handle"],
                    source_target_pairs=device_pairs(groups, perm))
    return op.result


def _psend_batching(axis_data, args, dims, *, axis_name, perm):
    if axis_data.name in axis_name:
        raise NotImplementedError("vmap of psend over its own axis: a send has no "
                                  "receiver there (use ppermute)")
    return psend_p.bind(args[0], axis_name=axis_name, perm=perm), not_mapped


def _psend_jvp(primals, tangents, **params):
    # (As in JAX: the tangent would need a send of its own, matched by a receive.)
    raise NotImplementedError("Differentiation rule for 'psend' not implemented")


def _effects(**params):
    return frozenset({ONE_SIDED})


def _names_rule(*, axis_name, **params):
    return axis_name


psend_p = standard_primitive(
    "lax.psend", _psend_abstract_eval, _gpu_only("psend"), jvp=_psend_jvp,
    batching=_psend_batching,
    **{EFFECTS: _effects, AXIS_NAMES: _names_rule})
psend_p.def_lowering(_psend_lowering_gpu, platform="cuda")


def _precv_abstract_eval(token, *, out_shape, axis_name, perm):
    return out_shape


def _precv_lowering_gpu(ctx, token, *, out_shape, axis_name, perm):
    groups = _groups(ctx, axis_name, "precv")
    op = hlo.RecvOp([mu.ir_type(out_shape), hlo.TokenType.get()], token,
                    _channel()["channel_handle"], source_target_pairs=device_pairs(groups, perm))
    return op.results[0]


precv_p = standard_primitive(
    "lax.precv", _precv_abstract_eval, _gpu_only("precv"),
    **{EFFECTS: _effects, AXIS_NAMES: _names_rule})
precv_p.def_lowering(_precv_lowering_gpu, platform="cuda")


def psend(x, axis_name, perm):
    """Sends `x` between members of a named axis along the pairs of a permutation,
    as one half of a send/receive pair (the matching `precv` receives it).

    Args:
        x: a pytree of arrays.
        axis_name: the name of a bound manual axis.
        perm: pairs `(source, destination)` of member indices.

    Returns:
        A token (per leaf) to pass to the matching `precv`, which orders it
        after the send.

    Only GPU backends implement the send/receive pair (as in JAX).
    """
    names = canonicalize_axis_names(axis_name)
    pairs = checked_perm("psend", names, perm)  # (NameError for an unbound name)
    return tree_util.tree_map(lambda leaf: psend_p.bind(leaf, axis_name=names, perm=pairs), x)


def precv(token, out_shape, axis_name, perm):
    """Receives an array sent by a matching `psend` over a named axis.

    Args:
        token: what the matching `psend` returned (orders the receive after the
            send).
        out_shape: the received array's shape and dtype (a `ShapeDtypeStruct`
            or an array).
        axis_name: the name of a bound manual axis.
        perm: the same `(source, destination)` pairs as the `psend`.

    Returns:
        The received array (zeros on members that receive nothing).

    Only GPU backends implement the send/receive pair (as in JAX).
    """
    names = canonicalize_axis_names(axis_name)
    pairs = checked_perm("precv", names, perm)
    if not (hasattr(out_shape, "shape") and hasattr(out_shape, "dtype")):
        raise TypeError(f"precv: out_shape must have a shape and a dtype (a "
                        f"ShapeDtypeStruct or an array), got {out_shape!r}")
    aval = ShapedArray(out_shape.shape, np.dtype(out_shape.dtype))
    return precv_p.bind(token, out_shape=aval, axis_name=names, perm=pairs)
