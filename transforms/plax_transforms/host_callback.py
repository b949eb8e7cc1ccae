"""Calling Python from compiled code: what the callback primitives share.

A callback equation lowers to jaxlib's own host-callback custom call,
`xla_ffi_python_cpu_callback` (`..._gpu_callback` on GPUs), whose FFI attribute
`index` picks a Python function from the list the module is compiled with
(`ModuleContext.add_host_callback`; `executable.compile(host_callbacks=...)`). XLA
calls it with read-only NumPy views of the operands and expects NumPy results. On TPU,
which has no such custom call, the operands are sent to the host and the results
received from it (`_emit_by_host_transfers`), and the runtime calls the function
between the two. An ordered callback also takes and returns its effect's token, which
chains it after the previous one (`ctx.tokens`). In a computation over several devices
the call is placed on the first device, so it runs once on the whole (logical) values.

The user's function sees plax Arrays on the CPU device, as in JAX, and its results
are checked against the declared shapes and dtypes.
"""
from __future__ import annotations

import logging
import pickle
import traceback
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib.mlir import ir

from plax.extend import dtypes, tree_util
from plax.extend.core import Effect, ShapedArray, abstract_token
from plax.extend.mlir import hlo, mu
from plax.errors import JaxRuntimeError
from jaxlib import xla_client as xc

from plax_runtime import api as runtime_api

logger = logging.getLogger(__name__)

class DebugEffect(Effect):
    """The effect of `debug.callback`/`debug.print`: kept by DCE, not ordered."""
    __slots__ = ()


class OrderedDebugEffect(Effect):
    """The effect of an ordered `debug.callback`/`debug.print`."""
    __slots__ = ()


DEBUG = DebugEffect("Debug")
ORDERED_DEBUG = OrderedDebugEffect("OrderedDebug", ordered=True)
IO = Effect("IO")
ORDERED_IO = Effect("OrderedIO", ordered=True)

_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback",
            "rocm": "xla_ffi_python_gpu_callback"}


class FlatCallback:
    """The user's function called on flat arguments, returning flat results. Equal for
    the same function and argument structure, so equal calls make equal equations."""
    __slots__ = ("fun", "in_tree", "__weakref__")

    def __init__(self, fun: Callable, in_tree):
        self.fun = fun
        self.in_tree = in_tree

    def __call__(self, *flat_args) -> list:
        args, kwargs = tree_util.tree_unflatten(self.in_tree, flat_args)
        return tree_util.tree_leaves(self.fun(*args, **kwargs))

    def __eq__(self, other):
        return (type(other) is FlatCallback and self.fun == other.fun
                and self.in_tree == other.in_tree)

    def __hash__(self):
        return hash((self.fun, self.in_tree))

    @property
    def __name__(self):  # how the Jaxpr printer shows it
        return getattr(self.fun, "__name__", type(self.fun).__name__)


def result_avals(result_shape_dtypes: Any, api: str) -> tuple[tuple[ShapedArray, ...], Any]:
    """The flat avals and treedef of a pytree of `shape`/`dtype` objects."""
    leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for i, leaf in enumerate(leaves):
        if not hasattr(leaf, "shape") or not hasattr(leaf, "dtype"):
            raise ValueError(f"{api}: every leaf of result_shape_dtypes must have 'shape' and "
                             f"'dtype' attributes; got {leaf!r} at position {i}")
        dtype = np.dtype(leaf.dtype)
        if dtypes.canonicalize_dtype(dtype) != dtype:
            raise ValueError(f"{api}: result_shape_dtypes cannot specify 64-bit types when "
                             f"jax_enable_x64 is disabled (got {dtype} at position {i})")
        avals.append(ShapedArray(tuple(leaf.shape), dtype))
    return tuple(avals), tree


def cpu_arrays(values: Sequence[Any]) -> list:
    """Values as plax Arrays on the (first) CPU device: what a user's callback sees."""
    cpu = runtime_api.local_devices(backend="cpu")[0]
    return list(runtime_api.device_put(list(values), cpu))


def call_user(callback: Callable, args: Sequence[Any], avals_out: Sequence[ShapedArray],
              api: str) -> tuple[np.ndarray, ...]:
    """Run the user's flat `callback` on `args` (as CPU Arrays); its results as NumPy
    arrays, checked against `avals_out`."""
    try:
        outs = callback(*cpu_arrays(args))
    except BaseException:
        logger.exception("%s failed", api)
        raise
    outs = list(outs) if outs is not None else []
    if len(outs) != len(avals_out):
        raise RuntimeError(f"{api}: the callback returned {len(outs)} values where "
                           f"result_shape_dtypes declares {len(avals_out)}")
    checked = []
    for i, (out, aval) in enumerate(zip(outs, avals_out)):
        value = np.asarray(out)
        if value.shape != aval.shape or value.dtype != aval.dtype:
            raise RuntimeError(
                f"{api}: result {i} of the callback has shape {value.shape} and dtype "
                f"{value.dtype}, but result_shape_dtypes declares {aval.str_short()}")
        checked.append(value)
    return tuple(checked)


def _layout(aval) -> ir.Attribute:
    ndim = 0 if aval is abstract_token else len(aval.shape)
    return ir.DenseIntElementsAttr.get(np.arange(ndim - 1, -1, -1, dtype=np.int64),
                                       type=ir.IndexType.get())


def emit_python_callback(ctx, host_fn: Callable[..., Sequence[np.ndarray]],
                         operands: Sequence[ir.Value], *, has_side_effect: bool,
                         effect: Effect | None = None) -> list[ir.Value]:
    """Emit a call of `host_fn` (NumPy operands → NumPy results of `ctx.avals_out`)
    and return its results. For an ordered `effect`, the call is chained on the
    effect's token in `ctx.tokens`."""
    if ctx.platform == "tpu":
        return _emit_by_host_transfers(ctx, host_fn, operands, effect)
    target = _TARGETS.get(ctx.platform)
    if target is None:
        raise NotImplementedError(f"host callbacks are not supported on platform "
                                  f"{ctx.platform!r}")
    avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
    operands = list(operands)
    ordered = effect is not None and effect.ordered
    if ordered:
        def chained(token, *args):
            return (token, *host_fn(*args))
        callback = chained
        operands = [ctx.tokens[effect], *operands]
        avals_in, avals_out = [abstract_token, *avals_in], [abstract_token, *avals_out]
    else:
        callback = host_fn
    mctx = ctx.module_context
    index = mctx.add_host_callback(callback)
    op = hlo.CustomCallOp(
        mu.ir_types(avals_out), operands, call_target_name=ir.StringAttr.get(target),
        has_side_effect=ir.BoolAttr.get(has_side_effect),
        backend_config=ir.StringAttr.get(""),
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1),
        operand_layouts=ir.ArrayAttr.get([_layout(a) for a in avals_in]),
        result_layouts=ir.ArrayAttr.get([_layout(a) for a in avals_out]))
    # api_version 1 with a dictionary here is how XLA is told to call a typed FFI handler.
    op.attributes["mhlo.backend_config"] = ir.DictAttr.get(
        {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)})
    if ctx.num_partitions > 1 and not getattr(ctx, "manual_axes", None):
        mctx.place_on_one_device(op.operation)
    results = list(op.results)
    if ordered:
        ctx.tokens[effect] = results.pop(0)
    return results


# What the runtime's send/receive rendezvous recognizes a host transfer by.
_RENDEZVOUS_HANDLER = "pjrt_rendezvous"


def _host_transfer(op, channel: int, mctx, one_device: bool):
    op.attributes["mhlo.frontend_attributes"] = ir.DictAttr.get({
        "_xla_host_transfer_handler_name": ir.StringAttr.get(_RENDEZVOUS_HANDLER),
        "_xla_host_transfer_rendezvous": ir.StringAttr.get(str(channel))})
    if one_device:
        mctx.place_on_one_device(op.operation)
    return op


def _emit_by_host_transfers(ctx, host_fn: Callable[..., Sequence[np.ndarray]],
                            operands: Sequence[ir.Value], effect: Effect | None
                            ) -> list[ir.Value]:
    """A host callback on TPU: each operand sent to the host, each (non-empty) result
    received from it, chained on one token; the runtime calls `host_fn` once every
    operand has arrived. A callback without operands sends a dummy value, and one
    without results receives one, so that the call happens and is waited for. TPU
    cannot receive empty arrays: those results are constants."""
    try:
        client = runtime_api.get_backend("tpu")
    except RuntimeError as err:
        raise NotImplementedError(
            "host callbacks on TPU need the TPU they run on (its runtime calls them): a "
            "program with one cannot be compiled for a topology ahead of time") from err
    mctx = ctx.module_context
    one_device = ctx.num_partitions > 1 and not getattr(ctx, "manual_axes", None)
    ordered = effect is not None and effect.ordered
    token = ctx.tokens[effect] if ordered else hlo.create_token()
    avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
    sent = list(zip(operands, avals_in))
    if not sent:
        dummy = ShapedArray((1,), np.dtype(np.float32))
        sent = [(mu.dense_constant(np.zeros(1, np.float32)), dummy)]
    send_channels = []
    for value, _ in sent:
        channel = mctx.new_host_channel()
        token = _host_transfer(
            hlo.SendOp([value], token, hlo.ChannelHandle.get(channel, 2),
                       is_host_transfer=ir.BoolAttr.get(True)),
            channel, mctx, one_device).result
        send_channels.append(channel)
    received = [a for a in avals_out if 0 not in a.shape] or [
        ShapedArray((), np.dtype(np.float32))]
    recv_channels, values = [], []
    for aval in received:
        channel = mctx.new_host_channel()
        op = _host_transfer(
            hlo.RecvOp([mu.ir_type(aval), hlo.TokenType.get()], token,
                       hlo.ChannelHandle.get(channel, 3), is_host_transfer=ir.BoolAttr.get(True)),
            channel, mctx, one_device)
        value, token = op.results
        values.append(value)
        recv_channels.append(channel)
    empty = [i for i, a in enumerate(avals_out) if 0 in a.shape]

    def call(*arrays):
        results = host_fn(*arrays[:len(avals_in)])
        return tuple(r for i, r in enumerate(results) if i not in empty) or (
            np.zeros((), np.float32),)
    shape = lambda a: xc.Shape.array_shape(a.dtype, a.shape)
    mctx.add_host_callback(client.make_python_callback_from_host_send_and_recv(
        call, [shape(a) for _, a in sent], [shape(a) for a in received], send_channels,
        recv_channels, pickle.dumps))
    if ordered:
        ctx.tokens[effect] = token
    results = iter(values[:len(avals_out) - len(empty)])  # (not the dummy)
    return [mu.dense_constant(np.zeros(a.shape, a.dtype)) if 0 in a.shape else next(results)
            for a in avals_out]


def eager_call(callback: Callable, args: Sequence[Any], avals_out: Sequence[ShapedArray],
               api: str) -> list:
    """A callback primitive's `impl`: the user's function called now, its results put
    on the default device. As in JAX, whose eager call runs in a compiled computation,
    a failing callback (or a result unlike its declaration) reaches the caller as
    XLA's JaxRuntimeError with the traceback in its message and the callback's own
    exception as its cause, whether the call is eager or compiled."""
    try:
        outs = call_user(callback, args, avals_out, api)
    except Exception as err:
        raise JaxRuntimeError("INTERNAL: CpuCallback error calling callback: "
                              + traceback.format_exc()) from err
    return list(runtime_api.device_put(list(outs)))


def lower_call(ctx, callback: Callable, args: Sequence[ir.Value],
               avals_out: Sequence[ShapedArray], api: str, *, has_side_effect: bool,
               effect: Effect | None = None) -> list[ir.Value]:
    """A callback primitive's `lowering`: a host callback of the user's function."""
    def host(*arrays):
        return call_user(callback, arrays, avals_out, api)
    return emit_python_callback(ctx, host, args, has_side_effect=has_side_effect,
                                effect=effect)


def now_or_later(stage: Callable, first: Any, args: tuple, kwargs: dict, api: str):
    """JAX's two call forms: `api(first, *args, **kwargs)` stages at once (None);
    `api(**options)` returns `stage` for the second call."""
    if first is not None:
        stage(first, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError(f"{api} received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return stage
