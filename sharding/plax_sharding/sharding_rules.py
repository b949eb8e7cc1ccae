"""Sharding in types: how the `Explicit` axes of a mesh flow through primitives.

An aval's `typed_sharding` (a `NamedSharding` on an abstract mesh, one spec entry
per dimension, naming only explicit axes; None without one) is the layout the
program promises. The kernel calls `sharding_rule` after a primitive's abstract
evaluation whenever an input has one, and lowering states each typed result as a
sharding constraint.

The rules: an explicit `out_sharding`/`sharding` parameter wins; elementwise
operations (every non-scalar operand has the output's shape, or 1 where it is
broadcast) merge the operands' specs dimension by dimension; reductions drop the
reduced dimensions; `dot_general` keeps batch and free dimensions and refuses sharded
contractions on both sides; `transpose` permutes; `broadcast_in_dim` maps operand
dimensions to their places; `reshape` splits or merges one group of dimensions when
the mesh axes divide it; slices, dynamic slices, pads, splits and window reductions
keep the operand's spec where each changed split dimension stays divisible by its
axes (JAX's strict rule); a dynamic update slice needs its update sharded as its
operand; concatenations keep each dimension's split; cumulative ops, sorts and top_k
refuse a split axis they run along; gathers and scatters follow `indexing_specs.py`;
`select_n` needs its cases sharded alike; `clamp`, `convert_element_type`, `fft` and
`select_and_scatter_add` keep their operand's spec; `bitcast_convert_type` adds or
drops an unsplit minor dimension; matrix factorizations need unsplit matrix
dimensions and equal batch specs; `conv_general_dilated` needs an unsplit kernel and
input feature dimension and keeps the batch and spatial splits.
A conflict or an ambiguity is a `ShardingTypeError` naming the specs. Primitives
with no rule keep whatever their abstract evaluation produced (higher-order ones
take their inner Jaxpr's types); other results leave the layout to the partitioner.
"""
from __future__ import annotations

from typing import Any, Callable

from plax.extend.core import short_dtype_name
from plax.extend.sharding import ShardingTypeError, abstract_mesh
from plax_sharding.indexing_specs import gather_spec, scatter_spec
from plax_sharding.named_sharding import DuplicateSpecError, NamedSharding, explicit_part
from plax_sharding.partition_spec import PartitionSpec


Spec = tuple  # one entry per dimension: None, an axis name, or a tuple of names


def _spec(aval) -> Spec:
    sharding = getattr(aval, "typed_sharding", None)
    return tuple(sharding.spec.partitions) + (None,) * (aval.ndim - len(sharding.spec)) \
        if sharding is not None else (None,) * aval.ndim


def _unreduced(aval) -> frozenset:
    return getattr(getattr(aval, "typed_sharding", None), "spec", PartitionSpec()).unreduced


def _reduced(aval) -> frozenset:
    return getattr(getattr(aval, "typed_sharding", None), "spec", PartitionSpec()).reduced


# Sums of partial sums are partial sums: these keep their operands' (equal) unreduced axes.
_KEEP_UNREDUCED = frozenset(("lax.add", "lax.sub", "lax.neg", "lax.convert_element_type",
                             "lax.copy", "lax.copy_p", "ad.add_any", "lax.reduce_sum",
                             "lax.transpose", "lax.reshape", "lax.broadcast_in_dim",
                             "lax.squeeze", "lax.expand_dims"))


def _unreduced_result(prim, avals) -> frozenset:
    """The unreduced axes of the result of `prim` on operands of which some are
    unreduced (partial sums over those axes), by JAX's rules: sums and linear maps of
    values unreduced over the same axes stay so; a product with a value `reduced` over
    them is unreduced; anything else is a ShardingTypeError (reduce first)."""
    arrays = [a for a in avals if hasattr(a, "shape")]
    unreduced = [_unreduced(a) for a in arrays]
    have = frozenset().union(*unreduced)
    if prim.id in _KEEP_UNREDUCED:
        if len(set(unreduced)) > 1:
            raise ShardingTypeError(
                f"{prim.name}: operands must be unreduced along the same mesh axes; got "
                f"{', '.join(a.str_short() for a in arrays)}")
        return have
    if prim.id in ("lax.mul", "lax.div") and len(arrays) == 2:
        lhs, rhs = arrays
        if prim.id == "lax.mul" and _unreduced(rhs) and not _unreduced(lhs):
            lhs, rhs = rhs, lhs
        if not _unreduced(rhs) and _unreduced(lhs) <= _reduced(rhs):
            return _unreduced(lhs)
        raise ShardingTypeError(
            f"RHS should be reduced along the same axes LHS is unreduced on. Got "
            f"lhs={lhs.str_short(lhs.dtype.name)} and rhs={rhs.str_short(rhs.dtype.name)}")
    raise ShardingTypeError(
        f"{prim.name} got an operand unreduced over {sorted(have)} (a partial sum): "
        f"{', '.join(a.str_short() for a in arrays)}. Reduce it first (reshard it to a "
        "spec without unreduced axes)")


def _names(entry) -> tuple:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _entry(names: tuple):
    return None if not names else names[0] if len(names) == 1 else tuple(names)


def _common_mesh(prim, avals):
    """The mesh of the operands' typed shardings; with none, the abstract mesh in
    context (None if there is none either)."""
    meshes = {a.typed_sharding.mesh for a in avals
              if getattr(a, "typed_sharding", None) is not None}
    if len(meshes) > 1:
        raise ShardingTypeError(
            f"{prim.name}: the operands' shardings are on different meshes "
            f"{sorted(map(repr, meshes))}; all inputs must share one mesh")
    return meshes.pop() if meshes else abstract_mesh()


def _illegal_result(prim, avals, out, spec: PartitionSpec) -> ShardingTypeError:
    """JAX's error for a rule whose result spec names a mesh axis twice (no sharding
    can hold it, so the result's type is spelled out here)."""
    dims = ",".join(str(d) if e is None else
                    f"{d}@{e if isinstance(e, str) else '(' + ','.join(e) + ')'}"
                    for d, e in zip(out.shape, spec.partitions))
    return ShardingTypeError(
        f"{prim.name} operation with inputs: {', '.join(a.str_short() for a in avals)} "
        f"produces an illegally sharded result: {short_dtype_name(out.dtype)}[{dims}]")


def _broadcasts_to(aval, out) -> bool:
    """Whether `aval` is an elementwise operand of `out` (equal, or 1 where it is
    broadcast)."""
    return aval.ndim == out.ndim and all(d in (1, o) for d, o in zip(aval.shape, out.shape))


def _elementwise(prim, avals, out_aval) -> Spec:
    specs = [tuple(None if d == 1 != o else e
                   for d, o, e in zip(a.shape, out_aval.shape, _spec(a)))
             for a in avals if getattr(a, "ndim", 0)]
    return _merged(prim, specs, out_aval.ndim)


def _merged(prim, specs: list[Spec], ndim: int) -> Spec:
    """The operands' specs merged dimension by dimension (None yields to a split)."""
    merged = []
    for dim in range(ndim):
        split = {s[dim] for s in specs} - {None}
        if len(split) > 1:
            raise ShardingTypeError(
                f"{prim.name} got incompatible shardings for broadcasting: "
                f"{', '.join(str(s) for s in specs)}")
        merged.append(split.pop() if split else None)
    return tuple(merged)


def _same_rank(prim, avals, outs, **_):
    """Concatenations keep each dimension's split (JAX's rule)."""
    return [_merged(prim, [_spec(a) for a in avals if getattr(a, "ndim", 0)], outs[0].ndim)]


def _axes_size(mesh, entry) -> int:
    size = 1
    for name in _names(entry):
        size *= mesh.shape[name]
    return size


def _kept_where_divisible(what: str, operand, old_shape, out_shape, spec: Spec) -> Spec:
    """`spec` (of dimensions of `old_shape`) for a result of `out_shape`, refused (as
    JAX does) where a split dimension changes size to one its mesh axes do not
    divide."""
    if not any(spec):  # nothing split (the operand may have no sharding at all)
        return spec
    mesh = operand.typed_sharding.mesh
    for old, new, entry in zip(old_shape, out_shape, spec):
        if old != new and entry is not None and new % _axes_size(mesh, entry):
            raise ShardingTypeError(
                f"{what} on sharded dims where out dim ({new}) is not divisible by mesh "
                f"axes ({_axes_size(mesh, entry)}) with spec ({entry}) is not implemented. "
                f"Got input type={operand.str_short()} and output shape={tuple(out_shape)}")
    return spec


def _varying_shape(what: str, per_operand: bool = False):
    """Slices, dynamic slices, pads, splits and window reductions: each result keeps
    its operand's spec (the first operand's, or result i's operand i's), where still
    divisible."""
    def rule(prim, avals, outs, **_):
        return [_kept_where_divisible(what, a, a.shape, o.shape, _spec(a))
                for a, o in zip(avals if per_operand else [avals[0]] * len(outs), outs)]
    return rule


def _select_and_gather_add(prim, avals, outs, **params):
    """Forward-mode max/min pooling: tangents sharded as the operand, then the window
    reduction's rule."""
    tangents, operand = avals
    if _spec(tangents) != _spec(operand):
        raise ShardingTypeError(
            "select_and_gather_add tangents and operand shardings must match, got "
            f"{tangents.str_short()} and {operand.str_short()}")
    return [_kept_where_divisible("reduce_window", operand, operand.shape, outs[0].shape,
                                  _spec(operand))]


def _unsplit_axis(what: str, axis_param: str):
    """Sorts and top_k: each result keeps its operand's spec; the operated-on axis
    must be unsplit (as in JAX)."""
    def rule(prim, avals, outs, **params):
        axis = params[axis_param]
        for a in avals:
            if _spec(a)[axis] is not None:
                raise ShardingTypeError(
                    f"{what}: the input should be unsharded over the axis {axis} it "
                    f"operates along; got input type {a.str_short()}")
        return [_merged(prim, [_spec(a) for a in avals], outs[0].ndim)] * len(outs)
    return rule


def _bitcast_convert_type(prim, avals, outs, **_):
    """A narrower dtype adds an unsplit minor dimension, a wider one drops it."""
    spec, ndim = _spec(avals[0]), outs[0].ndim
    return [spec[:ndim] + (None,) * (ndim - len(spec))]


def _triangular_solve(prim, avals, outs, *, left_side, transpose_a, **_):
    """JAX's rule: batched alike, `a` and `b` unsplit where they contract; the result
    takes `a`'s other matrix dimension's split and `b`'s free one."""
    (a, b), (sa, sb) = avals, (_spec(avals[0]), _spec(avals[1]))
    if sa[:-2] != sb[:-2]:
        raise ShardingTypeError("All inputs to triangular_solve must have the same batch "
                                f"sharding, but got {sa[:-2]} and {sb[:-2]}")
    if sa[-2:][left_side ^ transpose_a] is not None or sb[-2:][not left_side] is not None:
        raise ShardingTypeError(
            "triangular_solve inputs must be unsharded on the contracting axis, got "
            f"{a.str_short()} and {b.str_short()} with left_side={left_side} and "
            f"transpose_a={transpose_a}")
    am, bm = sa[-2:], sb[-2:]
    return [sa[:-2] + ((am[transpose_a], bm[1]) if left_side else (bm[0], am[not transpose_a]))]


def _linalg(prim, avals, outs, **_):
    """Matrix factorizations and solves: the matrix dimensions must be unsplit and
    every operand batched alike; results keep the batch spec (JAX's rule)."""
    batch = [_spec(a)[:a.ndim - 2] for a in avals]
    for i, a in enumerate(avals):
        if any(_spec(a)[a.ndim - 2:]):
            raise ShardingTypeError(f"Input {i} to {prim.name} must be unsharded on "
                                    f"non-batch dimensions, but got {a.str_short()}")
    if any(b != batch[0] for b in batch[1:]):
        raise ShardingTypeError(f"All inputs to {prim.name} must have the same batch "
                                f"sharding, but got {batch}")
    return [batch[0] + (None,) * (o.ndim - len(batch[0])) for o in outs]


def _dynamic_update_slice(prim, avals, outs, **_):
    operand, update = avals[:2]
    if _spec(operand) != _spec(update):
        raise ShardingTypeError(
            "dynamic_update_slice operand sharding must be equal to update sharding, got "
            f"operand sharding {operand.str_short()} and update sharding "
            f"{update.str_short()}")
    return [_spec(operand)]


def _operand(index: int):
    """The spec of operand `index` (clamp's operand, convert_element_type's)."""
    def rule(prim, avals, outs, **_):
        return [_spec(avals[index])]
    return rule


def _select_n(prim, avals, outs, **_):
    which, cases = avals[0], [a for a in avals[1:] if getattr(a, "typed_sharding", None)]
    if not cases:  # only the predicate has a sharding in its type
        return [_spec(which) if which.ndim else (None,) * outs[0].ndim]
    specs = [_spec(c) for c in cases]
    if any(s != specs[0] for s in specs):
        raise ShardingTypeError("select cases must have the same shardings, got "
                                f"{', '.join(c.str_short() for c in avals[1:])}")
    if which.ndim and getattr(which, "typed_sharding", None) and _spec(which) != specs[0]:
        raise ShardingTypeError(
            "select `which` must be scalar or have the same sharding as the cases, got "
            f"`which` {which.str_short()} but cases {avals[1].str_short()}")
    return [specs[0]]


def _ambiguous_indexing(how: str, avals) -> ShardingTypeError:
    return ShardingTypeError(
        f"Use `.at[...].{how}(out_sharding=)` to provide the output PartitionSpec: the "
        "result sharding could not be resolved unambiguously (or would require "
        f"collectives on the inputs). Got {', '.join(a.str_short() for a in avals)}")


def _gather(prim, avals, outs, *, dimension_numbers, slice_sizes, **_):
    operand, indices = avals
    spec = gather_spec(operand.shape, _spec(operand), _spec(indices), dimension_numbers,
                       slice_sizes)
    if spec is None:
        raise _ambiguous_indexing("get", avals)
    return [spec]


def _scatter(prim, avals, outs, *, dimension_numbers, **_):
    operand, indices, updates = avals
    spec = scatter_spec(operand.shape, _spec(operand), _spec(indices), updates.shape,
                        _spec(updates), dimension_numbers)
    if spec is None:
        raise _ambiguous_indexing("set/add/mul/...", avals)
    return [spec]


def _conv_general_dilated(prim, avals, outs, *, dimension_numbers, **_):
    """A replicated kernel and an unsplit input feature dimension: batch and spatial
    dimensions keep their splits (where divisible), the output feature is unsplit."""
    lhs, rhs = avals
    ls, (lhs_layout, _, out_layout) = _spec(lhs), dimension_numbers
    if any(_spec(rhs)) or ls[lhs_layout[1]] is not None:
        raise ShardingTypeError(
            "conv_general_dilated: the kernel must be unsharded and the input feature "
            f"dimension unsplit to decide the output sharding; got lhs {lhs.str_short()} "
            f"and rhs {rhs.str_short()}. Please specify the output sharding via the "
            "`out_sharding` parameter of `conv_general_dilated`")
    spec, old_shape = [None] * lhs.ndim, [0] * lhs.ndim  # the lhs laid out as the output
    for i, o in zip(lhs_layout, out_layout):
        spec[o], old_shape[o] = ls[i], lhs.shape[i]
    return [_kept_where_divisible("conv_general_dilated", lhs, old_shape, outs[0].shape,
                                  tuple(spec))]


def _cumulative(prim, avals, outs, *, axis, **_):
    if _spec(avals[0])[axis] is not None:
        raise ShardingTypeError(
            f"{prim.name}: the input should be unsharded over the axis being reduced; got "
            f"input type {avals[0].str_short()} and axis {axis}")
    return [_spec(avals[0])]


def _reduction(prim, avals, outs, *, axes, **_):
    spec = _spec(avals[0])
    return [tuple(e for i, e in enumerate(spec) if i not in axes)] * len(outs)


def _transpose(prim, avals, outs, *, permutation, **_):
    spec = _spec(avals[0])
    return [tuple(spec[p] for p in permutation)]


def _squeeze(prim, avals, outs, *, dimensions, **_):
    spec = _spec(avals[0])
    return [tuple(e for i, e in enumerate(spec) if i not in dimensions)]


def _broadcast_in_dim(prim, avals, outs, *, shape, broadcast_dimensions, **_):
    operand, spec = avals[0], _spec(avals[0])
    out: list = [None] * len(shape)
    for i, dim in enumerate(broadcast_dimensions):
        out[dim] = spec[i] if operand.shape[i] == shape[dim] else None
    return [tuple(out)]


def _dot_general(prim, avals, outs, *, dimension_numbers, **_):
    (lhs_c, rhs_c), (lhs_b, rhs_b) = dimension_numbers
    (lhs, rhs), (ls, rs) = avals[:2], (_spec(avals[0]), _spec(avals[1]))
    for lc, rc in zip(lhs_c, rhs_c):
        if ls[lc] is not None and rs[rc] is not None:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output "
                "should be sharded. Please specify the output sharding via the "
                f"`out_sharding` parameter. Got lhs_contracting_spec="
                f"{tuple(ls[i] for i in lhs_c)} and rhs_contracting_spec="
                f"{tuple(rs[i] for i in rhs_c)}")
    batch = []
    for lb, rb in zip(lhs_b, rhs_b):
        if ls[lb] is not None and rs[rb] is not None and ls[lb] != rs[rb]:
            raise ShardingTypeError(f"dot_general: batch dimensions {lb} of lhs and {rb} of "
                                    f"rhs are sharded differently: {ls[lb]} and {rs[rb]}")
        batch.append(ls[lb] if ls[lb] is not None else rs[rb])
    free_l = [ls[i] for i in range(lhs.ndim) if i not in lhs_c and i not in lhs_b]
    free_r = [rs[i] for i in range(rhs.ndim) if i not in rhs_c and i not in rhs_b]
    return [tuple(batch + free_l + free_r)]


def _reshape_error(operand, new_sizes) -> ShardingTypeError:
    return ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via "
        "the `out_sharding` argument of plax.lax.reshape. Got operand type: "
        f"{operand.str_short()}, new sizes: {tuple(new_sizes)}")


def _place_axes(mesh, names: tuple, sizes: list[int], error) -> list:
    """`names` (major first) laid over dimensions of `sizes` in order: each axis goes
    to the first dimension it still divides; an axis that does not fit is `error`."""
    pending, out = list(names), []
    for size in sizes:
        taken = []
        while size > 1 and pending:
            size, rest = divmod(size, mesh.shape[pending[0]])
            if rest:
                raise error
            taken.append(pending.pop(0))
        out.append(_entry(tuple(taken)))
    if pending:
        raise error
    return out


def _groups(old: tuple, new: tuple) -> list[tuple[list[int], list[int]]]:
    """The shapes' non-1 dimensions cut into runs of equal products (old, new)."""
    olds = [i for i, d in enumerate(old) if d != 1]
    news = [i for i, d in enumerate(new) if d != 1]
    groups, i, j = [], 0, 0
    while i < len(olds) and j < len(news):
        gi, gj = [olds[i]], [news[j]]
        po, pn, i, j = old[olds[i]], new[news[j]], i + 1, j + 1
        while po != pn:
            if po < pn:
                gi.append(olds[i])
                po, i = po * old[olds[i]], i + 1
            else:
                gj.append(news[j])
                pn, j = pn * new[news[j]], j + 1
        groups.append((gi, gj))
    return groups


def _reshape(prim, avals, outs, *, new_sizes, dimensions, **_):
    operand, spec = avals[0], _spec(avals[0])
    mesh = operand.typed_sharding.mesh
    out: list = [None] * len(new_sizes)
    error = _reshape_error(operand, new_sizes)
    for old_dims, new_dims in _groups(operand.shape, tuple(new_sizes)):
        names = [n for d in old_dims for n in _names(spec[d])]
        if not names:
            continue
        if dimensions is not None or (len(old_dims) > 1 and len(new_dims) > 1):
            raise error
        if len(old_dims) > 1:  # a merge: the axes, major first, with no gap between
            entries = [spec[d] for d in old_dims]
            while entries[-1] is None:
                entries.pop()
            if None in entries:
                raise error
        placed = _place_axes(mesh, tuple(names), [new_sizes[d] for d in new_dims], error)
        for d, entry in zip(new_dims, placed):
            out[d] = entry
    return [tuple(out)]


def _body_types(prim, avals, outs, *, out_shardings=(), **_):
    """Calls (jit, custom_jvp/custom_vjp) keep the types their body computed, or take
    those of jit's `out_shardings` where they name explicit axes."""
    specs = []
    for i, out in enumerate(outs):
        given = out_shardings[i] if i < len(out_shardings or ()) else None
        typed = given._type_sharding(out.ndim) if isinstance(given, NamedSharding) else None
        specs.append(_spec(out) if typed is None else tuple(typed.spec))
    return specs


def _own_types(prim, avals, outs, **_):
    """A primitive whose abstract evaluation types its results itself (device_put)."""
    return [_spec(out) for out in outs]


def _exported_results(prim, avals, outs, *, exported):
    """A call of an exported function: its results have the layouts it was exported
    with, where those name the explicit axes of the operands' mesh (as in JAX)."""
    mesh = _common_mesh(prim, avals)
    specs = []
    for out, named in zip(outs, exported.out_named_shardings):
        typed = None if named is None else explicit_part(mesh, named.spec, out.ndim)
        specs.append((None,) * out.ndim if typed is None else tuple(typed.spec))
    return specs


_RULES: dict[str, Callable[..., list[Spec]]] = {
    **{f"lax.reduce_{m}": _reduction for m in ("sum", "prod", "max", "min", "and", "or",
                                                "xor")},
    "lax.argmax": _reduction, "lax.argmin": _reduction,
    "lax.transpose": _transpose, "lax.squeeze": _squeeze,
    "lax.broadcast_in_dim": _broadcast_in_dim, "lax.dot_general": _dot_general,
    "lax.reshape": _reshape,
    "lax.slice": _varying_shape("slicing"), "lax.pad": _varying_shape("padding"),
    "lax.split": _varying_shape("split"),
    **{f"lax.reduce_window{m}": _varying_shape("reduce_window", per_operand=True)
       for m in ("", "_sum", "_max", "_min")},
    "lax.select_and_scatter_add": _operand(1),
    "lax.select_and_gather_add": _select_and_gather_add,
    "lax.sort": _unsplit_axis("sort", "dimension"), "lax.top_k": _unsplit_axis("top_k", "axis"),
    "lax.bitcast_convert_type": _bitcast_convert_type, "lax.fft": _operand(0),
    "lax.triangular_solve": _triangular_solve,
    **{f"lax.{m}": _linalg for m in ("cholesky", "eigh", "svd", "qr", "lu", "eig")},
    "lax.dynamic_slice": _varying_shape("dynamic_slice"),
    "lax.dynamic_update_slice": _dynamic_update_slice, "lax.concatenate": _same_rank,
    "lax.gather": _gather,
    **{f"lax.{s}": _scatter for s in ("scatter", "scatter-add", "scatter-sub",
                                      "scatter-mul", "scatter-min", "scatter-max")},
    "lax.select_n": _select_n, "lax.clamp": _operand(1),
    "lax.convert_element_type": _operand(0),
    "lax.conv_general_dilated": _conv_general_dilated,
    "export.call_exported": _exported_results, "plax.device_put": _own_types,
    **{f"plax.{c}": _body_types for c in ("jit", "custom_jvp_call", "custom_vjp_call")},
    **{f"lax.{c}": _cumulative for c in ("cumsum", "cumprod", "cummax", "cummin",
                                         "cumlogsumexp")},
}


_NOT_GIVEN = object()


def _given(prim, params: dict, mesh, out):
    """The typed result sharding a primitive's parameters ask for (`out_sharding`, or
    the `sharding` of reshape, broadcast_in_dim and sharding constraints; None where
    it names no explicit axis), or `_NOT_GIVEN`. As in JAX, a spec may name more
    dimensions than the result has if the extra ones are None, and its splits must
    divide the result's dimensions (a ValueError otherwise)."""
    given = params.get("out_sharding", params.get("sharding"))
    if isinstance(given, PartitionSpec) and mesh is not None and not mesh.empty:
        given = NamedSharding(mesh, given)
    if not isinstance(given, NamedSharding):
        return _NOT_GIVEN
    ndim = getattr(out, "ndim", 0)
    if len(given.spec) > ndim:
        if any(e is not None for e in given.spec.partitions[ndim:]):
            raise ValueError(f"{prim.name}: the requested sharding {given.spec} has "
                             f"{len(given.spec)} entries, more than the result's rank "
                             f"{ndim} (shape {tuple(out.shape)})")
        given = given.update(spec=given.spec.update(partitions=given.spec.partitions[:ndim]))
    typed = given._type_sharding(ndim)
    if typed is not None:
        typed.shard_shape(out.shape)  # each split over explicit axes divides its dimension
    return typed


def _typed(prim, avals, out, spec: Spec, mesh, unreduced: frozenset = frozenset()):
    """`prim`'s result `out` typed by `spec`, the spec its rule gave for operands
    `avals`."""
    if not hasattr(out, "typed_sharding"):
        return out
    try:
        return out.update(sharding=NamedSharding(mesh, PartitionSpec(*spec, unreduced=unreduced)))
    except DuplicateSpecError as err:
        raise _illegal_result(prim, avals, out, err.spec) from None


def sharding_rule(prim, avals, out: Any, params: dict) -> Any:
    """`out` (the primitive's result aval, or list of them) with the shardings in
    their types, given operands `avals` of which at least one has one, or parameters
    that ask for a result sharding."""
    mesh = _common_mesh(prim, avals)
    outs = list(out) if prim.multiple_results else [out]
    rule = _RULES.get(prim.id)
    given = [_given(prim, params, mesh, o) for o in outs]
    if all(getattr(a, "typed_sharding", None) is None for a in avals) and all(
            g is _NOT_GIVEN for g in given):
        return out  # an out_sharding without a mesh to type it on
    if any(g is not _NOT_GIVEN for g in given):
        outs = [o if g is _NOT_GIVEN else o.update(sharding=g) for o, g in zip(outs, given)]
    elif rule is not _body_types and any(_unreduced(a) for a in avals):
        unreduced = _unreduced_result(prim, avals)
        specs = (rule(prim, avals, outs, **params) if rule is not None
                 else [_elementwise(prim, avals, o) for o in outs])
        outs = [_typed(prim, avals, o, s, mesh, unreduced) for o, s in zip(outs, specs)]
    elif rule is not None:
        outs = [_typed(prim, avals, o, s, mesh)
                for o, s in zip(outs, rule(prim, avals, outs, **params))]
    elif all(_broadcasts_to(a, o) for a in avals if getattr(a, "ndim", 0)
             for o in outs if hasattr(o, "typed_sharding")):
        outs = [_typed(prim, avals, o, _elementwise(prim, avals, o), mesh)
                if hasattr(o, "typed_sharding") else o for o in outs]
    else:
        outs = [o.update(sharding=None) if _bad_rank(o) else o for o in outs]
    return outs if prim.multiple_results else outs[0]


def _bad_rank(aval) -> bool:
    sharding = getattr(aval, "typed_sharding", None)
    return sharding is not None and len(sharding.spec) != aval.ndim
