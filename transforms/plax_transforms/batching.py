"""Batching: the trace behind `vmap`, and the batching of a Jaxpr.

A `BatchTracer` carries a value with one extra dimension, the batch dimension, at
position `batch_dim`. Applying a primitive to batch tracers asks the primitive's
`batching` rule `(axis_data, args, dims, **params) -> (out, out_dim)` (see
`plax.extend.batching`), run with the parent trace current, so the batched
computation goes to whatever trace encloses this one. Values of other traces, and
plain arrays, are not mapped: a primitive none of whose operands is mapped runs
unbatched, unless it uses this trace's axis name (a collective, or a jit whose
body holds one).

`batch_jaxpr` is the same transformation from Jaxpr to Jaxpr, for primitives that
carry Jaxprs (`jit_p` here; `cond`, `while`, `scan`... later).
"""
from __future__ import annotations

import contextlib
from typing import Any, Sequence

from plax.extend import tree_util
from plax.extend.batching import AxisData, extend_axis_env, move_to, not_mapped
from plax.extend.core import (
    AXIS_NAMES,
    BATCHING,
    ClosedJaxpr,
    Jaxpr,
    Primitive,
    ShapedArray,
    Trace,
    Tracer,
    current_trace,
    eval_jaxpr,
    get_aval,
    set_current_trace,
    trace_to_jaxpr,
)
from plax_transforms.ref_discharge import apply_with_refs, has_cells, mixes_refs_and_tracers
from plax_transforms.refs import AbstractRef
from plax_transforms.signature import cached_on_jaxpr


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim", "_aval")

    def __init__(self, trace: "BatchTrace", val, batch_dim: int):
        super().__init__(trace)
        self.val = val
        self.batch_dim = batch_dim
        self._aval = None

    @property
    def aval(self):
        """One example's type, made on first use: the batching of every primitive
        applied to this tracer asks for it (reference checks, jit's tracing cache)."""
        aval = self._aval
        if aval is None:
            aval = get_aval(self.val)
            if isinstance(aval, AbstractRef):  # a batched reference: one per example
                aval = AbstractRef(_example_aval(aval.inner_aval, self.batch_dim))
            else:
                aval = _example_aval(aval, self.batch_dim)
            self._aval = aval
        return aval

    def __repr__(self):  # JAX's
        return f"VmapTracer(aval={self.aval}, batched={get_aval(self.val)})"


def _example_aval(aval: ShapedArray, dim: int) -> ShapedArray:
    """One example's type: the batch dimension gone, with its entry of an Explicit
    layout in the type (as JAX types it: f32[8@x,4,2@y] mapped over 'x' is f32[4,2@y])."""
    typed = aval.typed_sharding
    if typed is not None:
        spec = [*typed.spec, *(None,) * (aval.ndim - len(typed.spec))]
        del spec[dim]
        typed = typed.update(spec=type(typed.spec)(*spec))
    return ShapedArray(aval.shape[:dim] + aval.shape[dim + 1:], aval.dtype, aval.weak_type,
                       sharding=typed)


class BatchTrace(Trace):
    """Maps primitives over one axis of `axis_data.size`; computes on `parent`."""

    def __init__(self, axis_data: AxisData, parent: Trace | None = None):
        super().__init__()
        self.axis_data = axis_data
        self.parent = current_trace() if parent is None else parent

    def describe(self):
        name = "" if self.axis_data.name is None else f" named {self.axis_data.name!r}"
        return f"vmap (axis of size {self.axis_data.size}{name})"

    def to_batch_info(self, x) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace is self:
            return x.val, x.batch_dim
        return x, not_mapped

    def wrap(self, val, dim: int | None):
        return val if dim is not_mapped else BatchTracer(self, val, dim)

    def process_primitive(self, primitive: Primitive, args, params):
        # control flow using a reference cell made under this vmap, or a reference
        # together with batched values: discharged, then batched
        if has_cells(args, self) or mixes_refs_and_tracers(primitive, args, self):
            return apply_with_refs(primitive, args, params)
        vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
        with set_current_trace(self.parent):
            if all(d is not_mapped for d in dims) and not self._uses_axis(primitive, params):
                return primitive.bind(*vals, **params)
            rule = primitive.get_rule(BATCHING)
            if rule is None:
                raise NotImplementedError(
                    f"Batching rule for '{primitive.name}' not implemented (vmap of a "
                    f"function applying it to {', '.join(self._describe_args(vals, dims))})")
            out, out_dims = rule(self.axis_data, list(vals), list(dims), **params)
        if primitive.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dims)]
        if isinstance(out, (list, tuple)) or isinstance(out_dims, (list, tuple)):
            raise TypeError(
                f"the batching rule of primitive '{primitive.id}' returned "
                f"({type(out).__name__}, {type(out_dims).__name__}); a primitive with one "
                "output returns (output, its batch dimension: an int or not_mapped), not "
                "lists (lists are for multiple_results=True)")
        return self.wrap(out, out_dims)

    def _uses_axis(self, primitive: Primitive, params: dict) -> bool:
        name = self.axis_data.name
        return name is not None and name in primitive_axis_names(primitive, params)

    def _describe_args(self, vals, dims) -> list[str]:
        """Per-example types, and where each mapped one carries the batch dimension."""
        return [get_aval(v).str_short() if d is not_mapped
                else f"{self.wrap(v, d).aval.str_short()} (mapped at axis {d})"
                for v, d in zip(vals, dims)]


# --- named axes used by a primitive ----------------------------------------------------

def primitive_axis_names(primitive: Primitive, params: dict) -> frozenset:
    """The axis names a primitive's application refers to: its own (a collective's
    `axis_names` rule) and those of the Jaxprs among its parameters."""
    rule = primitive.get_rule(AXIS_NAMES)
    names = frozenset(rule(**params)) if rule is not None else frozenset()
    for value in params.values():
        if isinstance(value, ClosedJaxpr):
            names |= jaxpr_axis_names(value.jaxpr)
        elif isinstance(value, Jaxpr):
            names |= jaxpr_axis_names(value)
    return names


def jaxpr_axis_names(jaxpr: Jaxpr) -> frozenset:
    return frozenset().union(*(primitive_axis_names(e.primitive, e.params)
                               for e in jaxpr.eqns))


# --- batching a Jaxpr -------------------------------------------------------------------

def batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData | int, in_dims: Sequence[int | None],
                out_dims_instantiate: bool | Sequence[bool | int | None] = False
                ) -> tuple[ClosedJaxpr, list[int | None]]:
    """`closed` mapped over an axis: inputs with an `in_dims` entry get a batch
    dimension there (of `axis_data.size`; an int is taken as the size).

    `out_dims_instantiate` (one entry per output, or one for all) forces outputs to
    be batched: True at 0, an int at that position; False or None leaves each output
    where the batching rules put it, possibly unbatched. Returns the new ClosedJaxpr
    (with the same debug info, one name per input and output) and where each of its
    outputs is batched (None: not batched).
    """
    if not isinstance(axis_data, AxisData):
        axis_data = AxisData(int(axis_data))
    n_out = len(closed.jaxpr.outvars)
    if isinstance(out_dims_instantiate, (bool, int)) or out_dims_instantiate is None:
        out_dims_instantiate = (out_dims_instantiate,) * n_out
    forced = tuple(_forced_dim(f) for f in out_dims_instantiate)
    if len(forced) != n_out:
        raise ValueError(f"batch_jaxpr: {len(forced)} out_dims_instantiate entries for "
                         f"{n_out} outputs")
    return _batch_jaxpr_cached(closed, axis_data, tuple(in_dims), forced)


def _forced_dim(flag) -> int | None:
    if flag is True:
        return 0
    if flag is False or flag is None:
        return None
    return int(flag)


def _batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData, in_dims: tuple, forced: tuple):
    if len(in_dims) != len(closed.jaxpr.invars):
        raise ValueError(f"batch_jaxpr: {len(in_dims)} in_dims for "
                         f"{len(closed.jaxpr.invars)} inputs")
    in_avals = [a if d is not_mapped else _batched_aval(a, d, axis_data.size)
                for a, d in zip(closed.in_avals, in_dims)]
    out_dims: list[int | None] = []

    def batched(*vals):
        trace = BatchTrace(axis_data)
        try:
            with set_current_trace(trace):
                outs = eval_jaxpr(closed.jaxpr, closed.consts,
                                  *(trace.wrap(v, d) for v, d in zip(vals, in_dims)))
            results = []
            for out, want in zip(outs, forced):
                val, dim = trace.to_batch_info(out)
                if want is not None:
                    val, dim = move_to(val, dim, want, axis_data.size), want
                results.append(val)
                out_dims.append(dim)
        finally:
            trace.invalidate()
        return results

    n = len(in_avals)
    in_tree = tree_util.tree_structure(((0,) * n, {}))
    with _axis_bound(axis_data):
        new, _ = trace_to_jaxpr(batched, in_tree, in_avals, None)
    dbg = closed.jaxpr.debug_info
    if dbg is not None:
        new = new.replace(jaxpr=new.jaxpr.replace(debug_info=dbg))
    return new, out_dims


def _axis_bound(axis_data: AxisData):
    if axis_data.name is None:
        return contextlib.nullcontext()
    return extend_axis_env(axis_data.name, axis_data.size)


def _new_batch_entry(closed, axis_data, in_dims, forced):
    new, out_dims = _batch_jaxpr(closed, axis_data, in_dims, forced)
    return new, tuple(out_dims)


_batch_cache = cached_on_jaxpr(_new_batch_entry)


def _batch_jaxpr_cached(closed, axis_data, in_dims, forced):
    try:
        new, out_dims = _batch_cache(closed, axis_data, in_dims, forced)
    except TypeError:  # unhashable parameters somewhere: batch without the cache
        new, out_dims = _new_batch_entry(closed, axis_data, in_dims, forced)
    return new, list(out_dims)


def _batched_aval(aval, dim: int, size: int):
    if isinstance(aval, AbstractRef):
        return AbstractRef(_batched_aval(aval.inner_aval, dim, size))
    shape = list(aval.shape)
    if not 0 <= dim <= len(shape):
        raise ValueError(f"batch dimension {dim} out of range for an input of type "
                         f"{aval.str_short()} (batched rank {len(shape) + 1})")
    shape.insert(dim, size)
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)
