"""`shard_map`: write the program one device runs, over the manual axes of a mesh.

`shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P())(x)` splits `x` into blocks
by `in_specs`, runs `f` on each device's block, with collectives (`lax.psum`...)
over the manual axes, and assembles the results by `out_specs`. `axis_names`
makes only some mesh axes manual; XLA partitions the body over the others. The
mesh may be an `AbstractMesh` (or come from `plax.set_mesh`), so that the Jaxpr
names no device and meshes of one shape share its trace and lowering.

A call flattens the arguments, checks them against their specs (rank,
divisibility, naming each argument), traces `f` on one device's blocks (cached per
function and signature) with the manual axes bound, checks that outputs claimed
replicated by `out_specs` do not vary (`check_vma`, see `vma.py`), and binds
`shard_map_p` (`shard_map_primitive.py`). Values `f` closes over (constants, and
values of an enclosing trace) become operands replicated on every device, as JAX's.
With `check_vma`, an output is cast with `pvary` to vary over the axes its
`out_specs` entry splits it over, as JAX casts it. Called outside every
transformation, `shard_map` (and `smap`) instead runs `f` eagerly, one primitive at
a time on every device (`shard_map_eager.py`), with the same checks: as in JAX,
`print` in the body shows each device's block.
"""
from __future__ import annotations

import functools
import math
import weakref
from typing import Any, Callable, Sequence

from jaxlib._jax import config as _jaxlib_config

from plax.extend.traceback_util import api_boundary
from plax.extend import config, tree_util
from plax.extend.core import (
    EVAL_TRACE,
    ClosedJaxpr,
    Tracer,
    TracingDebugInfo,
    check_callable,
    current_trace,
    fun_sourceinfo,
    get_aval,
    make_tracing_debug_info,
    result_paths_from_tree,
    trace_to_jaxpr,
)
from plax.extend.sharding import abstract_mesh as context_abstract_mesh
from plax.extend.sharding import mat_axis_order
from plax_stdlib.lax.parallel import pvary
from plax_transforms.jit import traced_consts_as_args
from plax_transforms.refs import AbstractRef
from plax_sharding.mesh import AbstractMesh, AxisType, Mesh
from plax_sharding.partition_spec import PartitionSpec
from plax_sharding.shard_map_eager import ShardMapTrace
from plax_sharding.shard_map_primitive import (body_context, concrete_mesh_for, shard_aval,
                                               shard_map_p, spec_over, unmentioned)
from plax_sharding.vma import infer_vma, matching_required


class _Infer:
    """JAX's default `in_specs`: each argument's type sharding over the manual axes,
    which must all be Explicit."""

    def __repr__(self):
        return "Infer"


Infer = _Infer()


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = Infer,
              mesh: Mesh | AbstractMesh | None = None, axis_names=frozenset(),
              check_vma: bool = True):
    """Maps `f` over blocks of its arguments, one block per device of `mesh`.

    Each argument is split into blocks along its dimensions as its `in_specs`
    entry says; `f` runs once per device on that device's blocks (per-device code:
    shapes inside are the block shapes), may communicate with collectives over the
    mesh's axis names (`lax.psum`, `lax.all_gather`, `lax.ppermute`...), and its
    results are assembled from the blocks as `out_specs` says.

    Args:
        f: the per-device function. Without it, returns a decorator.
        out_specs: a PartitionSpec per output (a pytree prefix of the outputs): the
            mesh axes each output dimension is split over. An axis the spec does
            not name means every device along it holds the same value.
        in_specs: a PartitionSpec per positional argument (a pytree prefix); by
            default, inferred from the arguments' shardings.
        mesh: the Mesh (or AbstractMesh); by default the one set with
            `plax.set_mesh`.
        axis_names: the mesh axes that are manual inside `f` (by default all);
            the others stay automatic (the compiler partitions over them). Inside
            an enclosing shard_map, the axes it made manual stay its own.
        check_vma: check, and infer, which mesh axes each value varies over, so
            that an output said to be replicated really is.

    Returns:
        A function taking `f`'s arguments as global arrays and returning global
        arrays.

    Raises:
        ValueError: a dimension is not divisible by the size of the mesh axes that
            split it, or a spec names an axis the mesh lacks, or one an enclosing
            shard_map made manual.
        TypeError: `in_specs=None` (`P()` is the spec of a replicated argument).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import AxisType, PartitionSpec as P
        >>> mesh = plax.make_mesh((8,), ("i",), axis_types=(AxisType.Auto,))
        >>> total = plax.shard_map(lambda x: plax.lax.psum(x.sum(), "i"), mesh=mesh,
        ...                        in_specs=P("i"), out_specs=P())
        >>> total(jnp.arange(16.0))
        Array(120., dtype=float32)
    """
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    check_callable(f, "shard_map")
    if in_specs is None:
        raise TypeError("shard_map in_specs argument must be a pytree of "
                        "`plax.sharding.PartitionSpec` instances, but it was None.\n"
                        "Instead of `in_specs=None`, did you mean `in_specs=P()`, where "
                        "`P = plax.sharding.PartitionSpec`?")
    if not isinstance(axis_names, (set, frozenset)):
        raise TypeError(f"`axis_names` argument of shard_map should be of type `frozenset` "
                        f"or `set`. Got type: {type(axis_names)}")
    if mesh is not None:  # check now what can be checked before the first call
        resolve_mesh(mesh, axis_names, in_specs, out_specs)

    @api_boundary
    @functools.wraps(f)
    def wrapped(*args):
        the_mesh, manual = resolve_mesh(mesh, axis_names, in_specs, out_specs)
        dbg = make_tracing_debug_info("shard_map", f, args, {})
        specs = _inferred_in_specs(the_mesh, manual, args) if in_specs is Infer else in_specs
        return apply_shard_map(f, args, mesh=the_mesh, manual_axes=manual, in_specs=specs,
                               out_specs=out_specs, check_vma=check_vma, debug_info=dbg,
                               eager=True)
    return wrapped


def resolve_mesh(mesh, axis_names, in_specs, out_specs) -> tuple[Mesh | AbstractMesh, tuple]:
    """The mesh (the one in context if `mesh` is None) and the manual axes in mesh
    order, after checking that the specs name only manual axes."""
    context = context_abstract_mesh()
    if mesh is None:
        if context is None or context.empty:
            raise ValueError("The context mesh cannot be empty. Use `plax.set_mesh(mesh)` "
                             "to enter into a mesh context, or pass mesh= to shard_map")
        mesh = context
    elif not isinstance(mesh, (Mesh, AbstractMesh)):
        raise TypeError("shard_map requires a `plax.sharding.Mesh` or a "
                        "`plax.sharding.AbstractMesh` instance for its mesh argument, but got "
                        f"{mesh} of type {type(mesh)}.")
    elif context is not None and not context.empty and context.shape_tuple != mesh.shape_tuple:
        raise ValueError(f"The context mesh {context} should match the mesh passed to "
                         f"shard_map {mesh}")
    if mesh.empty:
        raise ValueError(f"shard_map requires a non-empty mesh. Got {mesh}")
    names = frozenset(axis_names) or frozenset(mesh.axis_names)
    if not names <= set(mesh.axis_names):
        raise ValueError(f"shard_map requires axis_names={set(names)} to be a subset of "
                         f"mesh.axis_names={mesh.axis_names}")
    # as in JAX, the axes an enclosing shard_map made manual (in the mesh in context
    # inside its body) stay its own
    outer = frozenset(context.manual_axes if context is not None else ()) & set(mesh.axis_names)
    manual = tuple(a for a in mesh.axis_names if a in names - outer)
    if in_specs is not Infer:
        _check_specs("in", in_specs, manual, outer)
    _check_specs("out", out_specs, manual, outer)
    return mesh, manual


def _check_specs(prefix: str, specs, manual, outer: frozenset) -> None:
    """Each spec a PartitionSpec naming only `manual` axes, none twice; naming one of
    the `outer` axes (manual in an enclosing shard_map) is refused here, before
    lowering, where JAX's lowering fails."""
    if callable(specs) and not isinstance(specs, PartitionSpec):
        return  # computed from the output structure (pmap)
    paths = tree_util.tree_flatten_with_path(specs, is_leaf=lambda x: x is None)[0]
    problems = []
    for path, spec in paths:
        where = f"{prefix}_specs{tree_util.keystr(path)}"
        if spec is None:  # an argument passed unchanged, or an empty output subtree
            continue
        if not isinstance(spec, PartitionSpec):
            raise TypeError(f"shard_map {prefix}_specs argument must be a pytree of "
                            f"`plax.sharding.PartitionSpec` instances, but {where} is "
                            f"{spec!r} of type {type(spec).__name__}")
        axes = spec.mesh_axes()
        if len(set(axes)) != len(axes):
            raise ValueError(f"shard_map: {where} is {spec}, which names a mesh axis more "
                             "than once")
        bound = [a for a in axes if a in outer]
        if bound:
            raise ValueError(f"shard_map: {where} is {spec}, which names the mesh axis "
                             f"{bound[0]!r}, already bound by an enclosing shard_map (manual "
                             "there); a nested shard_map can split values only over the "
                             f"other mesh axes ({set(manual)})")
        problems += [f"  {where} refers to {a!r}" for a in axes if a not in manual]
    if problems:
        raise ValueError(f"shard_map {prefix}_specs argument must refer to an axis marked as "
                         f"manual ({set(manual)}), but:\n\n" + "\n\n".join(problems)
                         + f"\n\nCheck the {prefix}_specs values passed to shard_map.")


def _inferred_in_specs(mesh, manual: tuple, args: tuple):
    """Without `in_specs`, each argument is split as its type says over the manual axes
    (JAX's `Infer`), which must be Explicit."""
    kinds = dict(zip(mesh.axis_names, mesh.axis_types))
    if any(kinds[a] is not AxisType.Explicit for a in manual):
        raise TypeError("shard_map in_specs argument must be a pytree of "
                        "`plax.sharding.PartitionSpec` instances, but it was `None` when "
                        f"axis_names={frozenset(manual)} are of type "
                        + ", ".join(str(kinds[a]) for a in manual))
    leaves, treedef = tree_util.tree_flatten(args)
    return tree_util.tree_unflatten(treedef, [_manual_part(_arg_aval(x, "", "shard_map"), manual)
                                              for x in leaves])


def _manual_part(aval, manual: tuple) -> PartitionSpec:
    """`aval`'s type sharding with the axes that are not manual left out."""
    spec = _type_spec(aval)
    return spec_over(spec, len(spec), manual)


def _type_spec(aval) -> PartitionSpec:
    """The spec of `aval`'s type sharding, one entry per dimension."""
    sharding = getattr(aval, "sharding", None)
    spec = getattr(sharding, "spec", None) or PartitionSpec()
    return spec.for_rank(aval.ndim)


def _check_types_match(mesh, manual_axes: tuple, specs, avals) -> None:
    """Over a mesh that is all manual and all Explicit, each argument's type sharding
    must be its spec (as in JAX, where `reshard` is how to change it)."""
    if set(manual_axes) != set(mesh.axis_names) or any(
            t is not AxisType.Explicit for t in mesh.axis_types):
        return
    for spec, aval in zip(specs, avals):
        want, have = spec.for_rank(aval.ndim), _type_spec(aval)
        if want != have:
            raise ValueError(
                f"in_specs passed to shard_map: {want} does not match the specs of the input: "
                f"{have} for arg: {aval}. `in_specs` is an optional argument so "
                "you can omit specifying it and shard_map will infer the in_specs from the "
                "arguments. If you want to reshard your inputs, you can use `plax.reshard` "
                "on the arguments and then pass those args to shard_map.")


# --- a call ----------------------------------------------------------------------------------

def apply_shard_map(f: Callable, args: Sequence[Any], *, mesh, manual_axes: tuple, in_specs,
                    out_specs, check_vma: bool, debug_info: TracingDebugInfo,
                    bind_mesh: Callable[[], Mesh] | None = None, eager: bool = False):
    """`f(*args)` shard-mapped. `out_specs` is a pytree prefix of the output, or a
    function of the output's treedef giving one spec per output leaf (pmap's).
    `bind_mesh`, if given, names the mesh to run on once `f` is traced (nested pmaps
    learn the inner axes then); `mesh` must then have the manual axes' sizes. With
    `eager`, a call outside every transformation runs `f` eagerly on each device's
    blocks, as JAX's shard_map does (`shard_map_eager.py`); else `f` is traced and
    `shard_map_p` bound."""
    fun_name = _fun_name(f)
    leaves, in_tree = tree_util.tree_flatten(tuple(args))
    try:
        specs = tree_util.broadcast_prefix(in_specs, tuple(args), is_leaf=lambda x: x is None)
    except ValueError as err:
        raise ValueError(f"shard_map in_specs must be a pytree prefix of the arguments of "
                         f"{fun_name}: {err}") from None
    dynamic = [s is not None for s in specs]
    names = list(debug_info.arg_names or [""] * len(leaves))
    avals = [_arg_aval(x, name, fun_name) for x, name, dyn in zip(leaves, names, dynamic)
             if dyn]
    dyn_specs = tuple(s for s, dyn in zip(specs, dynamic) if dyn)
    dyn_names = [n for n, dyn in zip(names, dynamic) if dyn]
    _check_args(fun_name, mesh, manual_axes, dyn_specs, avals, dyn_names)
    _check_types_match(mesh, manual_axes, dyn_specs, avals)
    blocks = tuple(shard_aval(mesh, manual_axes, s, a) for s, a in zip(dyn_specs, avals))
    if check_vma:  # each block varies over the manual axes its spec splits it over
        blocks = tuple(b.update_manual_axis_type(b.manual_axis_type.update(
            varying=b.manual_axis_type.varying | (set(s.mesh_axes()) & set(manual_axes))))
            for s, b in zip(dyn_specs, blocks))
    statics = tuple(x for x, dyn in zip(leaves, dynamic) if not dyn)
    dyn_leaves = [x for x, dyn in zip(leaves, dynamic) if dyn]
    if eager and current_trace() is EVAL_TRACE:
        body = _per_device(f, in_tree, dynamic, statics, out_specs, manual_axes, check_vma)
        return _run_eagerly(body, dyn_leaves, fun_name, mesh=mesh, manual_axes=manual_axes,
                            in_specs=dyn_specs, blocks=blocks, out_specs=out_specs,
                            check_vma=check_vma)
    dbg = debug_info._replace(arg_names=tuple(dyn_names)) if debug_info.arg_names else debug_info
    body, out_tree = _trace_body(f, in_tree, dynamic, statics, blocks, mesh, manual_axes,
                                 out_specs, check_vma, dbg)
    body, extra = traced_consts_as_args(body, every=True)
    out_flat_specs = _out_specs_for(out_specs, out_tree, fun_name)
    out_vmas = _inferred_out_vmas(body, mesh, manual_axes, dyn_specs, len(extra)) \
        if check_vma else None
    _check_outputs(fun_name, mesh, manual_axes, out_specs, out_tree, out_flat_specs,
                   body.out_avals, out_vmas)
    outs = shard_map_p.bind(*extra, *dyn_leaves,
                            jaxpr=body, mesh=mesh if bind_mesh is None else bind_mesh(),
                            in_specs=(PartitionSpec(),) * len(extra) + dyn_specs,
                            out_specs=out_flat_specs, manual_axes=manual_axes,
                            check_vma=bool(check_vma))
    return tree_util.tree_unflatten(out_tree, outs)


def _run_eagerly(body, args, fun_name, *, mesh, manual_axes, in_specs, blocks, out_specs,
                 check_vma):
    """`body` run on each device's blocks of `args` one primitive at a time, its
    outputs checked and assembled as `out_specs` says."""
    trace = ShardMapTrace(concrete_mesh_for(mesh, args), manual_axes, check_vma)
    outs, out_tree = trace.run(body, args, in_specs, blocks)
    flat_specs = _out_specs_for(out_specs, out_tree, fun_name)
    out_avals = [get_aval(o) for o in outs]
    # (a returned reference has no varying axes: the check refuses it first)
    _check_outputs(fun_name, mesh, manual_axes, out_specs, out_tree, flat_specs, out_avals,
                   [getattr(a, "vma", None) for a in out_avals] if check_vma else None)
    return tree_util.tree_unflatten(out_tree, trace.assemble(outs, flat_specs))


def _arg_aval(x, name: str, fun_name: str):
    try:
        return get_aval(x)
    except TypeError:
        raise TypeError(f"shard_map of {fun_name}: argument {name or '?'} is {x!r} of type "
                        f"{type(x).__name__}, which is not an array; give it the in_specs "
                        "entry None to pass it unchanged") from None


def _check_args(fun_name, mesh, manual_axes, specs, avals, names) -> None:
    sizes = mesh.shape
    for spec, aval, name in zip(specs, avals, names):
        what = f"argument {name}" if name else "an argument"
        if len(spec) > aval.ndim:
            raise ValueError(
                f"shard_map applied to the function '{fun_name}' was given an in_specs entry "
                f"which is too long: {what} has shape {aval.str_short()}, of rank "
                f"{aval.ndim}, but its in_specs entry is {spec} of length {len(spec)}."
                + (" For scalar values (rank 0), use an in_specs entry of `P()`."
                   if aval.ndim == 0 else ""))
        for dim in range(len(spec)):
            axes = [a for a in spec.axes_of(dim) if a in manual_axes]
            pieces = math.prod(sizes[a] for a in axes)
            if aval.shape[dim] % pieces:
                over = f"axes {tuple(axes)}" if len(axes) > 1 else f"axis {axes[0]!r}"
                raise ValueError(
                    f"shard_map applied to the function '{fun_name}' was given argument "
                    f"arrays with axis sizes that are not evenly divisible by the "
                    f"corresponding mesh axis sizes: {what} of shape {aval.str_short()} "
                    f"corresponds to in_specs entry {spec}, which maps array axis {dim} (of "
                    f"size {aval.shape[dim]}) to mesh {over} (of size {pieces}), but "
                    f"{pieces} does not evenly divide {aval.shape[dim]}. The mesh has shape "
                    f"{tuple(mesh.axis_sizes)} with axis names {mesh.axis_names}.")


# --- tracing the body --------------------------------------------------------------------------

_traces: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trace_body(f, in_tree, dynamic, statics, blocks, mesh, manual_axes, out_specs,
                check_vma: bool, dbg):
    """`f` traced on one device's blocks: (ClosedJaxpr, output treedef), cached per
    function and signature when it closes over no tracer."""
    key = (in_tree, tuple(dynamic), statics, blocks, mesh.shape_tuple, manual_axes,
           _hashable(out_specs if check_vma else None), check_vma, dbg,
           _jaxlib_config.trace_context())
    try:
        per_fun = _traces.setdefault(f, {})
        hit = per_fun.get(key)
    except TypeError:  # `f` not weakly referenceable, or an unhashable static
        per_fun, hit = None, None
    if hit is not None:
        return hit
    body = _per_device(f, in_tree, dynamic, statics, out_specs, manual_axes, check_vma)
    flat_tree = tree_util.tree_structure((tuple(blocks), {}))
    with body_context(mesh, manual_axes, check_vma):
        closed, out_tree = trace_to_jaxpr(body, flat_tree, list(blocks), dbg)
    result = (closed, out_tree)
    if per_fun is not None and not any(isinstance(c, Tracer) for c in closed.consts):
        if len(per_fun) > 64:
            per_fun.clear()
        per_fun[key] = result
    return result


def _per_device(f, in_tree, dynamic, statics, out_specs, manual_axes, check_vma: bool):
    """The body one device runs, on the blocks of the dynamic arguments: `f` with the
    static ones put back, its outputs cast to vary as `out_specs` says (check_vma)."""
    def body(*blocks_in):
        it_dyn, it_static = iter(blocks_in), iter(statics)
        flat = [next(it_dyn) if d else next(it_static) for d in dynamic]
        out = f(*tree_util.tree_unflatten(in_tree, flat))
        return _varying_as_specified(out, out_specs, manual_axes, f) if check_vma else out
    return body


def _hashable(specs):
    """A pytree of PartitionSpecs as a cache key (its leaves and structure)."""
    leaves, tree = tree_util.tree_flatten(specs, is_leaf=lambda s: s is None)
    return tuple(leaves), tree


def _fun_name(f) -> str:
    """How messages name the function shard-mapped."""
    return getattr(f, "__name__", None) or fun_sourceinfo(f)


def _varying_as_specified(out, out_specs, manual_axes, f):
    """The outputs of a body with check_vma, each cast with pvary to vary over the
    manual axes its out_specs entry splits it over: JAX's implicit cast (none with
    jax_auto_pcast off; a reference is left for `_check_outputs` to refuse)."""
    if not config.auto_pcast.value:
        return out
    leaves, tree = tree_util.tree_flatten(out)
    specs = _out_specs_for(out_specs, tree, _fun_name(f))
    return tree_util.tree_unflatten(tree, [
        leaf if isinstance(aval := get_aval(leaf), AbstractRef) else
        pvary(leaf, mat_axis_order(set(spec.mesh_axes()) & set(manual_axes) - aval.vma))
        for leaf, spec in zip(leaves, specs)])


# --- the outputs ---------------------------------------------------------------------------------

def _out_specs_for(out_specs, out_tree, fun_name: str) -> tuple:
    if callable(out_specs) and not isinstance(out_specs, PartitionSpec):
        return tuple(out_specs(out_tree))
    example = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    try:
        return tuple(tree_util.broadcast_prefix(out_specs, example))
    except ValueError as err:
        raise ValueError(f"shard_map out_specs must be a pytree prefix of the output of "
                         f"{fun_name}: {err}") from None


def _inferred_out_vmas(body: ClosedJaxpr, mesh, manual_axes, in_specs, n_extra: int) -> list:
    """The manual axes each output of the traced body may vary over, its inputs
    varying over those their specs name (the closed-over values, first, over none)."""
    size_one = _size_one_axes(mesh, manual_axes)
    in_vma = [frozenset()] * n_extra + [frozenset(s.mesh_axes()) - size_one for s in in_specs]
    with matching_required(not config.auto_pcast.value):
        return infer_vma(body.jaxpr, in_vma)


def _size_one_axes(mesh, manual_axes) -> frozenset:
    """With jax_remove_size_one_mesh_axis_from_type, the manual axes of size 1, over
    which no value counts as varying."""
    if not config.remove_size_one_mesh_axis_from_type.value:
        return frozenset()
    return frozenset(a for a in manual_axes if mesh.shape[a] == 1)


def _check_outputs(fun_name, mesh, manual_axes, out_specs, out_tree, flat_specs, out_avals,
                   out_vmas) -> None:
    """Each output's block has at least its spec's rank and, with check_vma (when
    `out_vmas` are given), varies over no manual axis its spec leaves unmentioned."""
    paths = result_paths_from_tree(out_tree) or [""] * len(flat_specs)
    for spec, aval, path in zip(flat_specs, out_avals, paths):
        if isinstance(aval, AbstractRef):
            raise ValueError(f"shard_map applied to the function '{fun_name}' returned a "
                             f"`plax.Ref` as {path or 'an output'}: a reference cannot leave "
                             "the body; return its value (`ref[...]`) instead")
        if len(spec) > aval.ndim:
            raise ValueError(
                f"shard_map applied to the function '{fun_name}' was given an out_specs "
                f"entry which is too long to be compatible with the corresponding output "
                f"value from the function: out_specs entry {spec} has length {len(spec)}, "
                f"but {fun_name}(*args){path[len('result'):]} has shape "
                f"{aval.str_short()}, of rank {aval.ndim}."
                + (" For rank 0 outputs which are not constant over the mesh, add at least "
                   "one (singleton) axis to them so that they can be concatenated using "
                   "out_specs." if aval.ndim == 0 else ""))
    if out_vmas is None:
        return
    size_one = _size_one_axes(mesh, manual_axes)
    problems = [_replication_problem(mesh, spec, where, path, vma - size_one)
                for spec, vma, where, path
                in zip(flat_specs, out_vmas, _spec_paths(out_specs, out_tree), paths)
                if any(a in vma - size_one for a in unmentioned(manual_axes, spec))]
    if problems:
        if len(problems) == 1:
            problems = [problems[0][2:]]  # no bullet for a single one, as JAX's
        raise ValueError(
            f"shard_map applied to the function '{fun_name}' was given out_specs which "
            f"require replication which can't be statically inferred given the mesh:\n\n"
            f"The mesh given has shape {tuple(mesh.axis_sizes)} with corresponding axis "
            f"names {mesh.axis_names}.\n\n" + "\n\n".join(problems) + "\n\n"
            "Check if these output values are meant to be replicated over those mesh axes. "
            "If not, consider revising the corresponding out_specs entries. If so, consider "
            "disabling the check by passing the check_vma=False argument to "
            "`plax.shard_map`.")


def _replication_problem(mesh, spec: PartitionSpec, where: str, path: str, varying) -> str:
    """One bullet of the replication error, in JAX's words, saying also which axes the
    output was inferred to vary over and, when its spec covers several outputs, which
    output it is."""
    def axes(names) -> str:
        return "{" + ",".join(str(a) for a in mesh.axis_names if a in names) + "}"
    what = "the corresponding output value"
    if path and path[len("result"):] != where[len("out_specs"):]:
        what += f" {path}"
    named = set(spec.mesh_axes())
    replicated = [a for a in mesh.axis_names if a not in named]
    if len(replicated) > 1:
        claim = (f"is only varying across mesh axes {axes(named)} and not "
                 f"{axes(set(replicated) & varying)}")
    else:
        claim = f"is replicated across mesh axis '{replicated[0]}'"
    return (f"* {where} is {spec} which implies that {what} {claim}, but it was inferred "
            f"to be possibly varying over {axes(varying)}")


def _spec_paths(out_specs, out_tree) -> list[str]:
    """Where each output's spec is in `out_specs` (`out_specs[0]`), one per output."""
    if callable(out_specs) and not isinstance(out_specs, PartitionSpec):
        return ["out_specs"] * out_tree.num_leaves
    entries, spec_tree = tree_util.tree_flatten_with_path(out_specs)
    labels = tree_util.tree_unflatten(spec_tree, ["out_specs" + tree_util.keystr(path)
                                                  for path, _ in entries])
    example = tree_util.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    return tree_util.broadcast_prefix(labels, example)
