"""`shard_map_p`: a per-device program over the manual axes of a mesh.

Its parameters: `jaxpr`, the body as each device sees it (inputs and outputs are
the blocks its specs give one device); `mesh` (a `Mesh`, or an `AbstractMesh` so
that the Jaxpr names no device); `in_specs`/`out_specs`, one `PartitionSpec` per
operand and result, naming only manual axes; `manual_axes`, in mesh order (the
other axes stay automatic: XLA partitions the body over them); `check_vma`.

Its rules, all here:

* abstract evaluation: the global results from the body's blocks and `out_specs`;
* impl: the equation compiled over the mesh's devices (an AbstractMesh takes them
  from the arguments' shardings or the mesh in context) and run;
* lowering: `sdy.manual_computation` over the manual axes, the body inline in its
  region, lowered in an `AxisContext` that the collectives' rules read; a body
  over one device (or axes of size 1) is inlined. Under GSPMD the body is a
  function of its own between GSPMD's annotation ops (inline, XLA would merge its
  constants with equal ones outside, whose layouts differ);
* jvp, batching, partial evaluation (both forms) and dce: one shard_map of the
  transformed body. Residuals get a leading axis of size 1 per device, stacked
  over all manual axes;
* transpose: one shard_map of the transposed body, an exact adjoint of the
  per-device program; at the boundary, a cotangent of an output replicated over
  an axis is shared out evenly over it and the cotangent of an input replicated over
  an axis is summed over it (psum), which makes it the adjoint of the global function.
"""
from __future__ import annotations

import contextlib
import math
import weakref
from typing import Any, Iterator, Sequence

import numpy as np
from jaxlib.mlir.dialects import sdy

from plax.extend.ad import (
    Zero,
    instantiate,
    is_differentiable_dtype,
    is_undefined_primal,
    jvp_jaxpr,
    partial_eval_jaxpr,
    tangent_aval,
    transpose_jaxpr,
)
from plax.extend import config
from plax.extend.batching import batch_jaxpr, extend_axis_env, not_mapped
from plax.extend.core import (
    BATCHING,
    DCE,
    EFFECTS,
    IMPL,
    JVP,
    PARTIAL_EVAL,
    PARTIAL_EVAL_JAXPR,
    TRANSPOSE,
    ClosedJaxpr,
    JaxprEqn,
    Primitive,
    ShapedArray,
    Var,
    dce_closed_jaxpr,
    eval_jaxpr,
    get_aval,
    physical_aval,
    stage_flat,
)
from plax.extend.mlir import ir, mu
from plax.extend.sharding import (concrete_mesh, meshes_in_context, note_axis_order,
                                  set_vma_rule)
from plax_runtime.array import Array
from plax_runtime.device_put import device_put
from plax_stdlib.lax import elementwise, parallel, shape_ops
from plax_stdlib.lax.control_flow.common import cached_on_jaxpr, expand_tangents
from plax_transforms import executing
from plax_transforms.call_placement import register_placement_rule
from plax_transforms.manual_regions import AxisContext, gspmd_sharding, spmd_custom_call
from plax_sharding import vma
from plax_sharding.mesh import AxisType, Mesh
from plax_sharding.named_sharding import NamedSharding, explicit_part
from plax_sharding.partition_spec import PartitionSpec

shard_map_p = Primitive("sharding.shard_map", multiple_results=True)


# --- blocks and specs ---------------------------------------------------------------------

def _pieces(mesh, manual_axes, spec: PartitionSpec, dim: int) -> int:
    sizes = mesh.shape
    return math.prod(sizes[a] for a in spec.axes_of(dim) if a in manual_axes)


def shard_aval(mesh, manual_axes, spec: PartitionSpec, aval: ShapedArray) -> ShapedArray:
    """The block of a value of type `aval` that one device holds under `spec`; its type
    stays split over the Explicit axes that are not manual, as JAX types it."""
    shape = tuple(d // _pieces(mesh, manual_axes, spec, i) for i, d in enumerate(aval.shape))
    typed = getattr(aval, "typed_sharding", None)
    if typed is not None:
        auto = set(mesh.axis_names) - set(manual_axes)
        kept = spec_over(typed.spec, aval.ndim, auto)
        typed = typed.update(spec=kept) if kept.mesh_axes() else None
    return aval.update(shape=shape, sharding=typed)


def spec_over(spec: PartitionSpec, ndim: int, axes) -> PartitionSpec:
    """`spec` with only the mesh axes in `axes` kept, one entry per dimension."""
    return _spec_of([tuple(a for a in spec.axes_of(d) if a in axes) for d in range(ndim)])


def _spec_of(parts, **kw) -> PartitionSpec:
    """The spec splitting dimension `d` over the axes `parts[d]` (a tuple, maybe empty)."""
    return PartitionSpec(*(p[0] if len(p) == 1 else (p or None) for p in parts), **kw)


def unshard_aval(mesh, manual_axes, spec: PartitionSpec, aval: ShapedArray) -> ShapedArray:
    """The global value whose blocks of type `aval` the devices hold under `spec` (no
    longer varying over the manual axes, which are not manual outside). Its type is
    split over the Explicit axes `spec` names, as JAX types it (`f32[6@i]`)."""
    shape = tuple(d * _pieces(mesh, manual_axes, spec, i) for i, d in enumerate(aval.shape))
    mat = aval.manual_axis_type
    if mat.vur & set(manual_axes):
        mat = mat.update(varying=mat.varying - set(manual_axes),
                         unreduced=mat.unreduced - set(manual_axes),
                         reduced=mat.reduced - set(manual_axes))
    return aval.update(shape=shape, manual_axis_type=mat,
                       sharding=_typed_unsharded(mesh, spec, aval))


def _typed_unsharded(mesh, spec: PartitionSpec, aval: ShapedArray):
    """The type sharding of the assembled value: each dimension split over the Explicit
    axes `spec` names, then over those its blocks' type is split over."""
    if not isinstance(aval, ShapedArray) or len(spec) > aval.ndim:
        return None
    inner = aval.typed_sharding.spec if aval.typed_sharding is not None else PartitionSpec()
    merged = _spec_of([spec.axes_of(d) + inner.axes_of(d) for d in range(aval.ndim)],
                      unreduced=spec.unreduced, reduced=spec.reduced)
    return explicit_part(mesh, merged, aval.ndim,
                         config.remove_size_one_mesh_axis_from_type.value)


def unmentioned(manual_axes, spec: PartitionSpec) -> tuple:
    """The manual axes `spec` does not split over: the value is replicated over them."""
    named = set(spec.mesh_axes())
    return tuple(a for a in manual_axes if a not in named)


def residual_spec(manual_axes) -> PartitionSpec:
    """Residuals are stacked along a leading axis over every manual axis."""
    return PartitionSpec(manual_axes[0] if len(manual_axes) == 1 else tuple(manual_axes))


def _with_none_at(spec: PartitionSpec, dim: int) -> PartitionSpec:
    """`spec` for the value with a new (unsplit) dimension `dim`; no trailing Nones, so
    that it stays valid for every rank its layout is."""
    entries = list(spec) + [None] * max(0, dim - len(spec))
    entries.insert(dim, None)
    while entries and entries[-1] is None:
        entries.pop()
    return PartitionSpec(*entries)


def _keep(values, flags) -> tuple:
    return tuple(v for v, f in zip(values, flags) if f)


def _body_name(jaxpr: ClosedJaxpr) -> str:
    dbg = jaxpr.jaxpr.debug_info
    name = dbg.func_name if dbg is not None else ""
    return f"shmap_body({name})" if name and name != "<unknown>" else "shmap_body"


@contextlib.contextmanager
def axes_bound(mesh, manual_axes) -> Iterator[None]:
    """The manual axes bound in the axis environment, as while the body is traced:
    transforming the body traces its collectives again, which read sizes there."""
    with contextlib.ExitStack() as stack:
        for name in manual_axes:
            stack.enter_context(extend_axis_env(name, mesh.shape[name]))
        yield


@contextlib.contextmanager
def body_context(mesh, manual_axes, check_vma: bool) -> Iterator[None]:
    """What holds while a body runs on one device's blocks, traced (under jit) or
    eagerly: the manual axes bound, the body marked manual over them and, with
    check_vma, its values typed with the axes they vary over (`vma.py`); as in JAX,
    the mesh in context is `mesh` with those axes `Manual`."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(meshes_in_context(mesh.abstract_mesh.update_axis_types(
            {a: AxisType.Manual for a in manual_axes})))
        stack.enter_context(axes_bound(mesh, manual_axes))
        stack.enter_context(parallel.tracing_manual_axes(manual_axes, check_vma))
        note_axis_order(mesh.axis_names)
        stack.enter_context(set_vma_rule(vma.stage_vma if check_vma else None))
        stack.enter_context(config.check_vma(bool(check_vma)))
        yield


# --- abstract evaluation, effects, placement --------------------------------------------

@shard_map_p.def_abstract_eval
def _abstract_eval(*avals, jaxpr: ClosedJaxpr, mesh, in_specs, out_specs, manual_axes,
                   check_vma):
    if len(avals) != len(jaxpr.in_avals) or len(in_specs) != len(avals):
        raise TypeError(f"shard_map: the body takes {len(jaxpr.in_avals)} operands "
                        f"({len(in_specs)} specs) but got {len(avals)}")
    for i, (aval, spec, want) in enumerate(zip(avals, in_specs, jaxpr.in_avals)):
        got = shard_aval(mesh, manual_axes, spec, aval)
        if (got.shape, got.dtype) != (want.shape, want.dtype):
            raise TypeError(f"shard_map: operand {i} of type {aval.str_short()} has blocks "
                            f"{got.str_short()} under {spec}, but the body takes "
                            f"{want.str_short()}")
    return [unshard_aval(mesh, manual_axes, s, a) for s, a in zip(out_specs, jaxpr.out_avals)]


shard_map_p.define_rule(EFFECTS, lambda *, jaxpr, **_: jaxpr.effects)


def _pretty_print(eqn, same_names):
    """JAX's parameters: the manual axes printed as `newly_manual_axes`, a set."""
    params = dict(eqn.params)
    params["newly_manual_axes"] = frozenset(params.pop("manual_axes"))
    return sorted(params.items())


shard_map_p.define_rule("pretty_print", _pretty_print)
register_placement_rule(shard_map_p, lambda params: (NamedSharding(params["mesh"],
                                                                   PartitionSpec()),))
vma.register_nested(shard_map_p)


def _out_avals(params) -> list[ShapedArray]:
    return [unshard_aval(params["mesh"], params["manual_axes"], s, a)
            for s, a in zip(params["out_specs"], params["jaxpr"].out_avals)]


# --- eager evaluation ------------------------------------------------------------------------

def _impl(*args, **params):
    mesh = concrete_mesh_for(params["mesh"], args)
    ins = [NamedSharding(mesh, s) for s in params["in_specs"]]
    outs = [NamedSharding(mesh, s) for s in params["out_specs"]]
    closed = _one_equation(params)
    args = [_resharded(x, s) for x, s in zip(args, ins)]
    return executing.execute_jaxpr(closed, _body_name(params["jaxpr"]), args,
                                   donated_invars=(False,) * len(args), keep_unused=False,
                                   in_shardings=ins, out_shardings=outs)


def _resharded(x, sharding: NamedSharding):
    """A committed Array laid out otherwise than its `in_specs` entry is copied to that
    layout first, as JAX's eager shard_map does (a jitted call would refuse it)."""
    if (type(x) is Array and x._impl._committed and x.sharding is not sharding
            and not x.sharding.is_equivalent_to(sharding, x.ndim)):
        return device_put(x, sharding)
    return x


def concrete_mesh_for(mesh, args: Sequence[Any]) -> Mesh:
    """`mesh` itself, or for an AbstractMesh the concrete mesh of its shape: the mesh
    in context, else the mesh of an argument's NamedSharding."""
    if isinstance(mesh, Mesh):
        return mesh
    context = concrete_mesh()
    if context is not None and context.shape_tuple == mesh.shape_tuple:
        return context
    for x in args:
        s = x.sharding if isinstance(x, Array) else None
        if isinstance(s, NamedSharding) and s.mesh.shape_tuple == mesh.shape_tuple:
            return s.mesh
    raise ValueError(
        f"shard_map over the AbstractMesh {mesh} was called outside jit, where it needs "
        "devices: pass plax Arrays with a NamedSharding on a mesh of the same shape, or "
        "put such a mesh in context with plax.set_mesh(mesh)")


_equations: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _one_equation(params) -> ClosedJaxpr:
    """A Jaxpr of this one equation (kept per body and parameters, so that its
    lowering and executables are cached)."""
    per_body = _equations.setdefault(params["jaxpr"], {})
    key = tuple(sorted((k, v) for k, v in params.items() if k != "jaxpr"))
    closed = per_body.get(key)
    if closed is None:
        avals = [unshard_aval(params["mesh"], params["manual_axes"], s, a)
                 for s, a in zip(params["in_specs"], params["jaxpr"].in_avals)]
        dbg = params["jaxpr"].jaxpr.debug_info
        closed = per_body[key] = stage_flat(
            lambda *xs: shard_map_p.bind(*xs, **params), avals,
            None if dbg is None else dbg._replace(traced_for="shard_map"))
    return closed


shard_map_p.define_rule(IMPL, _impl)


# --- lowering ----------------------------------------------------------------------------------

def _lowering(ctx, *args, jaxpr: ClosedJaxpr, mesh, in_specs, out_specs, manual_axes,
              check_vma):
    outer = ctx.axis_context
    manual = frozenset(manual_axes) | (outer.manual_axes if outer is not None else frozenset())
    axis_ctx = AxisContext(tuple(mesh.shape_tuple), manual)
    mctx, name = ctx.module_context, _body_name(jaxpr)
    if math.prod(mesh.shape[a] for a in manual_axes) == 1:  # blocks are whole values
        with mctx.manual_region(axis_ctx):
            return ctx.lower_inline(jaxpr, *args, name=name)
    if ctx.num_partitions != mesh.size:
        raise ValueError(f"a shard_map over the {mesh.size} devices of {mesh} is part of a "
                         f"computation placed on {ctx.num_partitions} device(s); its mesh "
                         "must have as many devices as the arguments' (or the context "
                         "mesh's) device assignment")
    partly_manual = len(manual_axes) < len(mesh.axis_names)
    if not ctx.shardy:
        return _gspmd_lowering(ctx, args, jaxpr, in_specs, out_specs, axis_ctx, partly_manual)
    abstract = mesh.abstract_mesh

    def shardings(specs, avals):
        return sdy.TensorShardingPerValueAttr.get([
            ctx.sharding_attribute(NamedSharding(abstract, s), _rank(a), open_dims=partly_manual)
            for s, a in zip(specs, avals)])

    op = sdy.ManualComputationOp(
        mu.ir_types(ctx.avals_out), list(args), shardings(in_specs, ctx.avals_in),
        shardings(out_specs, ctx.avals_out),
        sdy.ManualAxesAttr.get([ir.StringAttr.get(str(a)) for a in manual_axes]))
    dbg = jaxpr.jaxpr.debug_info  # the body's arguments keep the user's names
    names = [dbg.safe_arg_name(i) if dbg else "" for i in range(len(jaxpr.in_avals))]
    block = ir.Block.create_at_start(op.body, mu.ir_types(jaxpr.in_avals),
                                     [ir.Location.name(n) if n else ir.Location.unknown()
                                      for n in names])
    with ir.InsertionPoint(block), mctx.manual_region(axis_ctx):
        sdy.return_(ctx.lower_inline(jaxpr, *block.arguments, name=name))
    return list(op.results)


def _gspmd_lowering(ctx, args, jaxpr, in_specs, out_specs, axis_ctx, partly_manual):
    """GSPMD's form: each operand constrained to its layout and cut to the device's
    block (`SPMDFullToShardShape`), the body called, each result made whole again
    (`SPMDShardToFullShape`). Nested in another shard_map, the layouts outside are
    manual over the enclosing one's axes."""
    outer = ctx.axis_context.manual_axes if ctx.axis_context is not None else frozenset()

    def layout(spec: PartitionSpec, ndim: int):
        return gspmd_sharding(axis_ctx.mesh_shape, [spec.axes_of(i) for i in range(ndim)],
                              outer)

    def convert(target: str, value, aval_to, sharding, ndim: int):
        return spmd_custom_call(target, value, aval_to, sharding, ndim if partly_manual else 0)

    blocks = []
    for x, spec, whole, inner in zip(args, in_specs, ctx.avals_in, jaxpr.in_avals):
        ndim = _rank(whole)
        x = convert("Sharding", x, whole, layout(spec, ndim), ndim)
        blocks.append(convert("SPMDFullToShardShape", x, inner, axis_ctx.hlo_sharding(ndim),
                              ndim))
    with ctx.module_context.manual_region(axis_ctx):
        outs = ctx.lower_subjaxpr(jaxpr, *blocks, name=_body_name(jaxpr))
    results = []
    for y, spec, inner, whole in zip(outs, out_specs, jaxpr.out_avals, ctx.avals_out):
        ndim = _rank(whole)
        y = convert("Sharding", y, inner, axis_ctx.hlo_sharding(ndim), ndim)
        results.append(convert("SPMDShardToFullShape", y, whole, layout(spec, ndim), ndim))
    return results


def _rank(aval) -> int:
    """The rank of the tensor behind `aval` (a key array's data dimensions count,
    unsplit)."""
    return physical_aval(aval).ndim


shard_map_p.def_lowering(_lowering)


# --- dce ---------------------------------------------------------------------------------------

def _dce(used_outputs: list[bool], eqn: JaxprEqn):
    if not any(used_outputs) and not eqn.effects:
        return [False] * len(eqn.invars), None
    params = eqn.params
    body, used_inputs = dce_closed_jaxpr(params["jaxpr"], used_outputs)
    if all(used_outputs) and all(used_inputs):
        return used_inputs, eqn
    new = dict(params, jaxpr=body, in_specs=_keep(params["in_specs"], used_inputs),
               out_specs=_keep(params["out_specs"], used_outputs))
    return used_inputs, eqn.replace(invars=list(_keep(eqn.invars, used_inputs)),
                                    outvars=list(_keep(eqn.outvars, used_outputs)),
                                    params=new)


shard_map_p.define_rule(DCE, _dce)


# --- jvp -----------------------------------------------------------------------------------------

@cached_on_jaxpr
def _jvp_body(jaxpr, nonzeros):
    return jvp_jaxpr(jaxpr, nonzeros)


def _jvp(primals, tangents, **params):
    nonzeros = [not isinstance(t, Zero) for t in tangents]
    with axes_bound(params["mesh"], params["manual_axes"]):
        body, out_nz = _jvp_body(params["jaxpr"], nonzeros)
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    outs = shard_map_p.bind(
        *primals, *(t for t, nz in zip(tangents, nonzeros) if nz),
        **dict(params, jaxpr=body, in_specs=in_specs + _keep(in_specs, nonzeros),
               out_specs=out_specs + _keep(out_specs, out_nz)))
    n = len(out_specs)
    return outs[:n], expand_tangents(out_nz, outs[n:], _out_avals(params))


shard_map_p.define_rule(JVP, _jvp)


# --- partial evaluation --------------------------------------------------------------------------

@cached_on_jaxpr
def _split(jaxpr, unknowns, manual_axes):
    """The body split into known and staged bodies whose residuals cross the
    boundary with a leading axis of size 1 (so that every device's are stacked)."""
    known, staged, out_uk, n_res = partial_eval_jaxpr(jaxpr, unknowns)
    n_known = len(known.out_avals) - n_res
    res_avals = known.out_avals[n_known:]
    stacked = [a.update(shape=(1, *a.shape)) for a in res_avals]

    def known_fun(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        return [*outs[:n_known], *(shape_ops.expand_dims(r, (0,)) for r in outs[n_known:])]

    def staged_fun(*xs):
        res = [shape_ops.squeeze(r, (0,)) for r in xs[:n_res]]
        return eval_jaxpr(staged.jaxpr, staged.consts, *res, *xs[n_res:])

    known = stage_flat(known_fun, known.in_avals, known.jaxpr.debug_info)
    staged = stage_flat(staged_fun, [*stacked, *staged.in_avals[n_res:]],
                        staged.jaxpr.debug_info)
    return known, staged, out_uk, (residual_spec(manual_axes),) * n_res


def _split_params(params, unknowns):
    """The known and staged equations' parameters, which outputs are unknown, and
    the residuals' specs."""
    with axes_bound(params["mesh"], params["manual_axes"]):
        known, staged, out_uk, res_specs = _split(params["jaxpr"], unknowns,
                                                  params["manual_axes"])
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    known_in = [not u for u in unknowns]
    known_params = dict(params, jaxpr=known, in_specs=_keep(in_specs, known_in),
                        out_specs=_keep(out_specs, [not u for u in out_uk]) + res_specs)
    staged_params = dict(params, jaxpr=staged,
                         in_specs=res_specs + _keep(in_specs, unknowns),
                         out_specs=_keep(out_specs, out_uk))
    return known_params, staged_params, out_uk, len(res_specs)


def _partial_eval(trace, args, **params):
    unknowns = [trace.is_unknown(a) for a in args]
    known_params, staged_params, out_uk, n_res = _split_params(params, unknowns)
    known_outs = trace.bind_known(shard_map_p, [a for a, u in zip(args, unknowns) if not u],
                                  known_params)
    n_known = len(known_outs) - n_res
    staged_outs = iter(trace.stage(
        shard_map_p, [*known_outs[n_known:], *(a for a, u in zip(args, unknowns) if u)],
        staged_params))
    known_iter = iter(known_outs[:n_known])
    return [next(staged_outs) if u else next(known_iter) for u in out_uk]


def _partial_eval_jaxpr(eqn: JaxprEqn, unknowns):
    known_params, staged_params, out_uk, n_res = _split_params(eqn.params, unknowns)
    known_avals = _out_avals(known_params)
    residuals = [Var(a) for a in known_avals[len(known_avals) - n_res:]]
    known_eqn = eqn.replace(
        invars=[a for a, u in zip(eqn.invars, unknowns) if not u],
        outvars=[v for v, u in zip(eqn.outvars, out_uk) if not u] + residuals,
        params=known_params)
    staged_eqn = eqn.replace(
        invars=residuals + [a for a, u in zip(eqn.invars, unknowns) if u],
        outvars=[v for v, u in zip(eqn.outvars, out_uk) if u], params=staged_params)
    return known_eqn, staged_eqn, out_uk, residuals


shard_map_p.define_rule(PARTIAL_EVAL, _partial_eval)
shard_map_p.define_rule(PARTIAL_EVAL_JAXPR, _partial_eval_jaxpr)


# --- transpose ------------------------------------------------------------------------------------

def _share(ct, n: int):
    """`ct` divided among `n` members (a cotangent of a value they all hold)."""
    aval = get_aval(ct)
    if n == 1 or not is_differentiable_dtype(aval.dtype):
        return ct
    return elementwise.div(ct, np.asarray(n, aval.dtype)[()])


@cached_on_jaxpr
def _transpose_body(jaxpr, linear, mesh, manual_axes, in_specs, out_specs):
    transposed = transpose_jaxpr(jaxpr, linear)
    n_nonlin = sum(not lin for lin in linear)
    sizes = mesh.shape
    shared = [math.prod(sizes[a] for a in unmentioned(manual_axes, s)) for s in out_specs]
    summed = [unmentioned(manual_axes, s) for s, lin in zip(in_specs, linear) if lin]

    def fun(*xs):
        cts = [_share(ct, n) for ct, n in zip(xs[n_nonlin:], shared)]
        in_cts = eval_jaxpr(transposed.jaxpr, transposed.consts, *xs[:n_nonlin], *cts)
        return [parallel.psum_p.bind(ct, axes=axes, axis_index_groups=None)
                if axes and is_differentiable_dtype(ct.aval.dtype) else ct
                for ct, axes in zip(in_cts, summed)]
    body = stage_flat(fun, transposed.in_avals, transposed.jaxpr.debug_info)
    # A replicated output's cotangent, shared out and psum'd back, needs no collective.
    in_vma = [frozenset(s.mesh_axes()) for s, lin in zip(in_specs, linear) if not lin]
    in_vma += [frozenset(s.mesh_axes()) for s in out_specs]
    return vma.fold_invariant_psums(body, in_vma, dict(mesh.shape))


def _transpose(cts, *args, **params):
    linear = tuple(is_undefined_primal(a) for a in args)
    in_specs, out_specs = params["in_specs"], params["out_specs"]
    with axes_bound(params["mesh"], params["manual_axes"]):
        body = _transpose_body(params["jaxpr"], linear, params["mesh"], params["manual_axes"],
                               in_specs, out_specs)
    cts = [instantiate(ct, tangent_aval(a)) for ct, a in zip(cts, _out_avals(params))]
    outs = iter(shard_map_p.bind(
        *(a for a, lin in zip(args, linear) if not lin), *cts,
        **dict(params, jaxpr=body,
               in_specs=_keep(in_specs, [not lin for lin in linear]) + tuple(out_specs),
               out_specs=_keep(in_specs, linear))))
    return [next(outs) if lin else None for lin in linear]


shard_map_p.define_rule(TRANSPOSE, _transpose)


# --- batching ----------------------------------------------------------------------------------

@cached_on_jaxpr
def _batch_body(jaxpr, axis_data, dims):
    return batch_jaxpr(jaxpr, axis_data, list(dims), True)[0]


def _batching(axis_data, args, dims, **params):
    if getattr(axis_data, "spmd_name", None) is not None:
        raise NotImplementedError("vmap with spmd_axis_name of a shard_map is not supported")
    with axes_bound(params["mesh"], params["manual_axes"]):
        body = _batch_body(params["jaxpr"], axis_data, tuple(dims))
    in_specs = tuple(s if d is not_mapped else _with_none_at(s, d)
                     for s, d in zip(params["in_specs"], dims))
    out_specs = tuple(_with_none_at(s, 0) for s in params["out_specs"])
    outs = shard_map_p.bind(*args, **dict(params, jaxpr=body, in_specs=in_specs,
                                          out_specs=out_specs))
    return outs, [0] * len(outs)


shard_map_p.define_rule(BATCHING, _batching)

