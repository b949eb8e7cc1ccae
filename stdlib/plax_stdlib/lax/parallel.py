"""Collectives over named axes: `psum`, `pmean`, `pmax`, `pmin`, `all_gather`,
`psum_scatter`, `all_to_all`, `ppermute`, `pshuffle`, `pbroadcast`, `pvary` (and
`pcast` to varying), `axis_index`, `axis_size`.

Each is one primitive (or a composition of them), defined here once with all its
rules, whichever transformation binds its axis names. The primitives are JAX's, with
its names and parameters (which printed Jaxprs show): `psum_scatter` binds
`reduce_scatter`, `all_gather(..., to='invarying')` binds `all_gather_invariant`, a
psum in a shard_map body with `check_vma` binds `psum_invariant`; a collective over
several names is one equation over all of them.

* `vmap(..., axis_name=...)` batches it (the batching rules, JAX's): the collective
  is *this* trace's when it names the trace's axis, and then the batch dimension is
  the axis it works across; otherwise it is applied to each batch member alike. A
  reduction over the vmap's axis keeps its primitive, the batch dimension joining its
  `axes` as a positional (integer) axis that it reduces like `reduce_sum`.
* `shard_map` and `pmap` lower it to an XLA collective. Inside a manual region the
  lowering context says which mesh axes are manual (`ctx.axis_context`, device
  free), and the device groups of a collective over some axes are computed from
  the mesh's shape: partition ids are positions in the mesh. A member's index
  (`axis_index`, `pbroadcast`'s source) is read off the partition id, in a nested
  fully manual region (`ctx.lower_fully_manual`) when some mesh axes are automatic.
* Differentiation: the linear collectives are their own jvp and transpose into each
  other as exact adjoints of the per-device program (psum ↔ psum, all_gather ↔
  reduce_scatter, ppermute ↔ the inverse permutation, all_to_all ↔ swapped axes,
  pbroadcast ↔ psum into the source); `pmax`/`pmin` share the tangent among the
  members that attain the extremum (JAX has no jvp for them).

The public functions look the names up in the axis environment (`plax.extend.batching`),
so an unbound name is a NameError, and give the primitives the sizes their shapes
depend on as parameters (`all_to_all`, which has none, reads the environment: the
transformations of a shard_map body bind its manual axes there). A psum of values that
are not traced (`psum(1, 'i')`, the axis size) is computed on the spot, as JAX's.

`axis_index_groups` (psum, pmax, pmin, pmean, all_gather, psum_scatter, all_to_all)
splits the members of an axis into groups, as JAX does: positions along the axis (the
product of the names, the first slowest), which each collective then works within. A
lowering picks the devices at those positions out of each of its device groups; vmap
has no rule for groups of its own axis (nor has JAX), and psum refuses them in a body
traced with `check_vma=True` (so does JAX).

About `check_vma`: plax infers which mesh axes values vary over from the traced body
of a shard_map (see plax_sharding), not from types carried by every value. Its
transposes are exact per-device adjoints, with shard_map's own transpose correcting
at the boundary; that matches JAX's answers for differentiating *through* a
shard_map. Differentiating a psum (or pvary, or an invariant all_gather) *inside* a
body traced with `check_vma=True` would need JAX's typed semantics, so it is refused
(`tracing_manual_axes` records the bodies being traced). In such a body a collective's
operand that does not vary over the collective's axes is first cast with `pvary`, as
JAX casts it.
"""
from __future__ import annotations

import contextlib
import math
import operator
import threading
from typing import Iterator, Sequence

import numpy as np

from plax.extend import config, tree_util
from plax.extend.ad import (PrimitiveRule, UndefinedPrimal, Zero, instantiate, linear_jvp,
                             tangent_aval)
from plax.extend.batching import axis_size as _bound_size
from plax.extend.batching import canonicalize_axis_names, move_to, moveaxis, not_mapped
from plax.extend.constructors import (
    NUMBER,
    ORDERED,
    canonicalize_axis,
    check_dtype,
    describe,
    standard_primitive,
)
from plax.extend.core import AXIS_NAMES, TRANSPOSE, ShapedArray, Tracer, get_aval
from plax.extend.mlir import hlo, ir, mu
from plax.extend.sharding import mat_axis_order
from plax_stdlib.lax import comparison, elementwise, reductions, shape_ops, slicing
from plax_stdlib.lax.conversion import constant_like, convert_element_type
from plax_stdlib.lax.creation import iota


def _names(axis_name) -> tuple:
    """A primitive's `axis_name` parameter (one name or a tuple of them) as a tuple."""
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _as_given(axis_name):
    """The `axis_name` parameter of the primitives JAX binds with the name as the
    caller gave it (all_to_all, pbroadcast): a list becomes a tuple."""
    return tuple(axis_name) if isinstance(axis_name, list) else axis_name


def _param_name(names: tuple):
    """How messages name the axes `names`: the name itself when there is one."""
    return names[0] if len(names) == 1 else names


def _sizes(names: tuple) -> int:
    return math.prod(_bound_size(n) for n in names)


def axis_size(axis_name) -> int:
    """The number of members of a named axis (a Python int, known at trace time).

    Args:
        axis_name: the name of a bound axis, or a tuple of names (then the
            product of their sizes).

    Returns:
        An int.

    Raises:
        NameError: `axis_name` is not bound.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.vmap(lambda x: x / plax.lax.axis_size("i"), axis_name="i")(jnp.ones(4))
        Array([0.25, 0.25, 0.25, 0.25], dtype=float32)
    """
    return _sizes(canonicalize_axis_names(axis_name))


def _same_aval(x: ShapedArray) -> ShapedArray:
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _names_rule(*, axis_name, **_):
    return _names(axis_name)


def _is_this_traces(axis_data, axis_name, what: str) -> bool:
    """Whether a collective over `axis_name` (of one name, for those without a rule
    for several) works across this vmap's axis."""
    names = _names(axis_name)
    if axis_data.name not in names:
        return False
    if len(names) > 1:
        raise NotImplementedError(f"vmap of {what} over several axis names")
    return True


def _refuse_vmap_groups(what: str, name, axis_index_groups) -> None:
    """Groups of the members of a vmap's own axis have no batching rule (none in JAX
    either): NotImplementedError."""
    if axis_index_groups is not None:
        raise NotImplementedError(
            f"{what}: axis_index_groups over the axis {name!r} of a vmap is not supported "
            "(JAX has no batching rule for it either); use pmap or shard_map")


# --- axis_index_groups ---------------------------------------------------------------------

def _checked_groups(fn: str, axis_index_groups) -> tuple | None:
    """`axis_index_groups` as a tuple of tuples of ints (None stays None). As in JAX,
    the groups (none empty) must together name each of the positions 0..n-1 once
    (ValueError), n being how many they name; that n is the axis's size is checked
    when lowering."""
    if axis_index_groups is None:
        return None
    try:
        groups = tuple(tuple(group) for group in axis_index_groups)
        named = [i for group in groups for i in group]
        covered = bool(groups) and all(groups) and set(named) == set(range(len(named)))
    except TypeError:
        raise TypeError(f"{fn}: axis_index_groups must be a sequence of sequences of axis "
                        f"indices, got {axis_index_groups!r}") from None
    if not covered:
        raise ValueError(f"{fn}: axis_index_groups must cover all indices exactly once, got "
                         f"{axis_index_groups!r}")
    try:
        return tuple(tuple(operator.index(i) for i in group) for group in groups)
    except TypeError:
        raise TypeError(f"{fn}: axis_index_groups must hold integers, got "
                        f"{axis_index_groups!r}") from None


def _group_size(names: tuple, axis_index_groups) -> int:
    """How many members a collective over `names` combines: the product of their
    sizes, or with groups the size of the first group (JAX's rule)."""
    size = _sizes(names)
    return size if axis_index_groups is None else len(axis_index_groups[0])


# --- the bodies being traced ---------------------------------------------------------------

class _Frames(threading.local):
    def __init__(self):
        self.stack: list[tuple[frozenset, bool]] = []  # (manual axes, check_vma)


_frames = _Frames()


@contextlib.contextmanager
def tracing_manual_axes(axes, check_vma: bool) -> Iterator[None]:
    """Mark the tracing of a shard_map body manual over `axes` (what the transpose
    rules below check)."""
    _frames.stack.append((frozenset(axes), bool(check_vma)))
    try:
        yield
    finally:
        _frames.stack.pop()


def _refuse_typed_transpose(what: str, axes: tuple) -> None:
    for manual, check_vma in reversed(_frames.stack):
        if manual & set(axes):
            if check_vma:
                raise NotImplementedError(
                    f"differentiating {what} over {axes} inside the body of a shard_map "
                    "with check_vma=True needs JAX's varying-manual-axes types, which plax "
                    "does not carry. Differentiate the whole shard_map instead, compute "
                    "per-device gradients and psum/pmean them, or pass check_vma=False "
                    "(pmap's semantics: psum transposes to psum)")
            return


def _typed_body(names: tuple) -> bool:
    """Whether a collective over `names` is traced in a shard_map body with check_vma
    that is manual over them (where JAX types values with the axes they vary over)."""
    return bool(_frames.stack) and _frames.stack[-1][1] and set(names) <= _frames.stack[-1][0]


def _varying_over(leaf, names: tuple):
    """`leaf` cast with pvary to vary over `names` where it does not yet, in a typed
    body with auto_pcast on: JAX's implicit cast of a collective's operand."""
    if not (_typed_body(names) and config.auto_pcast.value):
        return leaf
    missing = set(names) - getattr(get_aval(leaf), "vma", frozenset())
    return pvary_p.bind(leaf, axes=mat_axis_order(missing)) if missing else leaf


def _manual_now() -> frozenset:
    """The manual axes of the shard_map (or pmap) bodies being traced."""
    return frozenset().union(*(manual for manual, _ in _frames.stack))


# --- lowering helpers ----------------------------------------------------------------------

def _groups(ctx, names: tuple, what: str, axis_index_groups=None, *,
            uneven: bool = False) -> list[list[int]]:
    """The partition ids of each group of devices `what` runs over: those along
    `names`, or split into `axis_index_groups` (positions along `names`), which must
    have one size unless `uneven` (ValueError)."""
    axis_ctx = ctx.axis_context
    if axis_ctx is None:
        raise NameError(f"unbound axis name: {names[0]}. {what} lowers only inside the "
                        "body of a shard_map or pmap, where its axes are manual")
    axis_ctx.check_manual(names, what)
    groups = axis_ctx.replica_groups(names)
    if axis_index_groups is None:
        return groups
    size = len(groups[0])
    if max(i for members in axis_index_groups for i in members) >= size:
        raise IndexError(f"{what}: axis_index_groups {axis_index_groups} name members beyond "
                         f"the {size} of axis {_param_name(names)!r}")
    if not uneven and len({len(members) for members in axis_index_groups}) > 1:
        where = " on TPU" if ctx.platform == "tpu" else ""
        raise ValueError(f"{what}: the groups of axis_index_groups must all be the same "
                         f"size{where}, got {axis_index_groups}")
    return [[group[i] for i in members] for group in groups for members in axis_index_groups]


def _groups_attr(groups) -> ir.DenseIntElementsAttr:
    """XLA's replica groups: a matrix, a shorter group padded with -1."""
    width = max(map(len, groups))
    rows = [list(group) + [-1] * (width - len(group)) for group in groups]
    return ir.DenseIntElementsAttr.get(np.ascontiguousarray(np.asarray(rows, np.int64)))


def _alone(groups) -> bool:
    """Whether every device is in a group of its own (the collective moves nothing)."""
    return all(len(group) == 1 for group in groups)


def _channel() -> dict:
    """A device-to-device channel: collectives name partitions, not replicas."""
    return dict(channel_handle=hlo.ChannelHandle.get(1, 1))


def _all_reduce(ctx, x: ir.Value, dtype, names: tuple, combine, what: str,
                axis_index_groups=None) -> ir.Value:
    # XLA:CPU and GPU reduce within groups of several sizes; TPUs need one size.
    groups = _groups(ctx, names, what, axis_index_groups, uneven=ctx.platform != "tpu")
    if _alone(groups):
        return x
    op = hlo.AllReduceOp([x.type], [x], _groups_attr(groups), use_global_device_ids=True,
                         **_channel())
    mu.build_region(op.regions[0], [ShapedArray((), dtype)] * 2, lambda a, b: [combine(a, b)])
    return op.results[0]


def _member_index(ctx, names: tuple, what: str) -> ir.Value:
    """This device's position along `names` (the first varying slowest), as an i32,
    read off its partition id. Only a fully manual region may ask for that: in a
    partially manual one it is computed in a nested fully manual region, which takes
    its constants from outside (see `ctx.lower_fully_manual`)."""
    _groups(ctx, names, what)
    axis_ctx = ctx.axis_context
    sizes = axis_ctx.axis_sizes
    names = tuple(n for n in names if sizes[n] > 1)  # an axis of size 1 adds nothing
    if not names:
        return mu.dense_constant(np.int32(0))
    consts = [mu.dense_constant(np.int32(v)) for n in names
              for v in (axis_ctx.stride(n), sizes[n])]
    if axis_ctx.is_fully_manual:
        return _index_of_partition(*consts)
    scalar = ShapedArray((), np.dtype(np.int32))
    return ctx.lower_fully_manual(lambda *cs: [_index_of_partition(*cs)], [scalar], consts,
                                  [scalar] * len(consts))[0]


def _index_of_partition(*strides_and_sizes: ir.Value) -> ir.Value:
    """The index along axes of these (stride, size) pairs, the first varying slowest:
    the position along each is (partition id // stride) % size."""
    pid = hlo.convert(ir.RankedTensorType.get([], ir.IntegerType.get_signless(32)),
                      hlo.PartitionIdOp().result)
    index = None
    for stride, size in zip(strides_and_sizes[::2], strides_and_sizes[1::2]):
        here = hlo.remainder(hlo.divide(pid, stride), size)
        index = here if index is None else hlo.add(hlo.multiply(index, size), here)
    return index


def _reshape(x: ir.Value, shape, dtype) -> ir.Value:
    return hlo.reshape(mu.ir_type(ShapedArray(shape, dtype)), x)


# --- psum, pmax, pmin ----------------------------------------------------------------------

def _split_axes(axes: tuple) -> tuple[tuple, tuple]:
    """A reduction's `axes` as (names, positions): an int is a dimension of the operand
    (where vmap puts its own axis, as JAX does), anything else an axis name."""
    return (tuple(a for a in axes if not isinstance(a, int)),
            tuple(a for a in axes if isinstance(a, int)))


class _reduction_batcher(PrimitiveRule):
    """JAX's rule. Over this trace's axis a mapped operand's batch dimension, moved to
    the front, joins `axes` as a positional axis (the result is the same for every
    member); an unmapped one is the same for every member, `unmapped(x, size)` after
    reducing over the other axes. Another vmap's positional axes shift past the batch
    dimension, moved to the front too. (`groups`: the `axis_index_groups` parameter,
    which psum_invariant has not.)"""

    def __init__(self, unmapped):
        self.unmapped = unmapped

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, *, axes, **groups):
            (x,), (d,) = args, dims
            own = axis_data.name in axes
            if not own and not _split_axes(axes)[1]:
                return prim.bind(x, axes=axes, **groups), d
            _refuse_vmap_groups(prim.name, axis_data.name, groups.get("axis_index_groups"))
            if d is not_mapped:
                rest = tuple(a for a in axes if a != axis_data.name)
                x = prim.bind(x, axes=rest, **groups) if rest else x
                return self.unmapped(x, axis_data.size), not_mapped
            axes = tuple(a + 1 if isinstance(a, int) else 0 if a == axis_data.name else a
                         for a in axes)
            return (prim.bind(moveaxis(x, d, 0), axes=axes, **groups),
                    not_mapped if own else 0)
        rule.__name__ = f"{prim.name}_batching"
        return rule


def _reduction(name: str, kinds: frozenset, identity, combine, keeps_weak, unmapped,
               **rules):
    """A reduction over named and positional axes: `combine` all-reduces over the
    names, after reducing the positions from `identity`; the result is weakly typed
    if the operand is and `keeps_weak()` (JAX's psum drops the weak type)."""
    def abstract_eval(x, *, axes, axis_index_groups=None):
        check_dtype(name, x, kinds)
        positions = _split_axes(axes)[1]
        shape = tuple(n for i, n in enumerate(x.shape) if i not in positions)
        return ShapedArray(shape, x.dtype, x.weak_type and keeps_weak())

    def lower(ctx, x, *, axes, axis_index_groups=None):
        names, positions = _split_axes(axes)
        dtype = ctx.avals_in[0].dtype
        if positions:
            x = mu.reduce([x], [mu.dense_constant(identity(dtype), dtype)], ctx.avals_out,
                          positions, lambda a, b: [combine(a, b)])[0]
        return _all_reduce(ctx, x, dtype, names, combine, name, axis_index_groups) if names else x
    lower.__name__ = f"_{name}_lowering"
    return standard_primitive(f"lax.{name}", abstract_eval, lower, dtypes=kinds,
                              batching=_reduction_batcher(unmapped),
                              **{AXIS_NAMES: lambda *, axes, **_: _split_axes(axes)[0]},
                              **rules)


def _times_size(x, n: int):
    """The sum over the axis of a value every member has alike (JAX's constant first)."""
    return elementwise.mul(constant_like(x, n), x)


def _psum_transpose(ct, x, *, axes, axis_index_groups=None):
    """Positional axes broadcast the cotangent back; named ones psum it (JAX's rule:
    a psum is its own transpose over the names)."""
    names, positions = _split_axes(axes)
    _refuse_typed_transpose("psum", names)
    return [psum_p.bind(_unreduced(instantiate(ct), x.aval, positions), axes=names,
                        axis_index_groups=axis_index_groups)]


def _unreduced(ct, aval: ShapedArray, positions: tuple):
    """`ct` broadcast back over the positional axes a reduction of a value of type
    `aval` removed (reduce_sum's transpose, which JAX's psum transposes them with)."""
    if not positions:
        return ct
    return reductions.reduce_sum_p.get_rule(TRANSPOSE)(ct, UndefinedPrimal(aval),
                                                      axes=positions, out_sharding=None)[0]


class _extremum_jvp(PrimitiveRule):
    """The tangent of a pmax/pmin: the mean of the tangents of the members whose
    value is the extremum (ties share it, as `reduce_max`'s jvp does)."""

    def for_primitive(self, prim):
        def jvp(primals, tangents, **params):
            (x,), (t,) = primals, tangents
            ans = prim.bind(x, **params)
            if isinstance(t, Zero):
                return ans, Zero(tangent_aval(get_aval(ans)))
            dtype = get_aval(t).dtype
            whole = _unreduced(ans, get_aval(x), _split_axes(params["axes"])[1])
            hit = convert_element_type(comparison.eq(x, whole), dtype)
            total = psum_p.bind(elementwise.mul(t, hit), **params)
            return ans, elementwise.div(total, psum_p.bind(hit, **params))
        jvp.__name__ = f"{prim.name}_jvp"
        return jvp


# (The combiners are looked up when lowering: importing lax must not load MLIR.)
psum_p = _reduction("psum", NUMBER, lambda dtype: 0, lambda a, b: hlo.add(a, b),
                    lambda: False, _times_size, jvp=linear_jvp(), transpose=_psum_transpose)
# JAX's psum inside a shard_map body with check_vma: from varying over `axes` to the
# same on every member (a value that did not vary is first cast with pvary). The same
# all-reduce as psum; its own name, as JAX prints it, and its own varying-axes rule.
psum_invariant_p = _reduction("psum_invariant", NUMBER, lambda dtype: 0,
                              lambda a, b: hlo.add(a, b), lambda: True, _times_size,
                              jvp=linear_jvp(), transpose=_psum_transpose)
# (Typed as JAX's: weak results where check_vma types the body, strong elsewhere.)
pmax_p = _reduction("pmax", ORDERED, reductions.lowest_value, lambda a, b: hlo.maximum(a, b),
                    lambda: config.check_vma.value, lambda x, n: x, jvp=_extremum_jvp())
pmin_p = _reduction("pmin", ORDERED, reductions.highest_value, lambda a, b: hlo.minimum(a, b),
                    lambda: config.check_vma.value, lambda x, n: x, jvp=_extremum_jvp())


def _reduction_axes(fn: str, axis_name, groups) -> tuple:
    """A reduction's `axes`, its names bound (else NameError); groups go only with
    names (ValueError, as JAX's)."""
    axes = canonicalize_axis_names(axis_name)
    names, positions = _split_axes(axes)
    if positions and groups is not None:
        raise ValueError(f"{fn}: axis_index_groups only supported for reductions over just "
                         f"named axes, got {axes}")
    _group_size(names, groups)
    return axes


def psum(x, axis_name, *, axis_index_groups=None):
    """Sums `x` over every member of a named axis: a collective (an all-reduce).

    Inside `shard_map` the members are the devices along a mesh axis; inside
    `vmap(..., axis_name=...)` or `pmap`, the mapped examples. Every member gets
    the total.

    Args:
        x: a pytree of arrays.
        axis_name: the axis name, or a tuple of names to sum over all of them
            (an int among them is a dimension of `x`, summed as `reduce_sum`).
        axis_index_groups: optional lists of positions along the axis: each
            group is summed apart (`[[0, 1], [2, 3]]` on an axis of size 4 sums
            members 0 and 1, and 2 and 3). The groups must cover every position
            once. Under `pmap` and `shard_map` with `check_vma=False`, not over a
            `vmap`'s axis.

    Returns:
        A pytree like `x` holding the sums (booleans are counted as int32). Values
        that are not traced (`psum(1, "i")`, the axis size) are summed on the spot,
        a Python scalar into a Python scalar.

    Raises:
        NameError: `axis_name` is not bound by an enclosing `vmap`, `shard_map` or
            `pmap`.
        ValueError: `axis_index_groups` does not cover each position once.
        NotImplementedError: `axis_index_groups` over a `vmap`'s axis, or inside
            a `shard_map` with `check_vma=True` (as in JAX).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.vmap(lambda x: plax.lax.psum(x, "i"), axis_name="i")(jnp.arange(4.0))
        Array([6., 6., 6., 6.], dtype=float32)
    """
    groups = _checked_groups("psum", axis_index_groups)
    axes = _reduction_axes("psum", axis_name, groups)
    if not axes:
        return x
    leaves, tree = tree_util.tree_flatten(x)
    # As in JAX, booleans are summed as int32 (the count of members holding True).
    leaves = [convert_element_type(leaf, np.int32)
              if get_aval(leaf).dtype == np.dtype(bool) else leaf for leaf in leaves]
    names, positions = _split_axes(axes)
    if not any(isinstance(leaf, Tracer) for leaf in leaves):
        n = _group_size(names, groups)
        return tree_util.tree_unflatten(tree, [_untraced_total(leaf, n, positions)
                                               for leaf in leaves])
    if _typed_body(axes):
        if groups is not None:
            raise NotImplementedError(
                "psum: axis_index_groups inside the body of a shard_map with check_vma=True "
                "is not supported (nor in JAX); pass check_vma=False")
        return tree_util.tree_unflatten(tree, [
            psum_invariant_p.bind(_varying_over(leaf, axes), axes=axes) for leaf in leaves])
    return tree_util.tree_unflatten(tree, [
        psum_p.bind(leaf, axes=axes, axis_index_groups=groups) for leaf in leaves])


def _untraced_total(leaf, n: int, positions: tuple):
    """The psum of a value that is not traced, which every member holds alike: `n`
    times it, computed as JAX's (Python scalars in Python, NumPy values in NumPy)."""
    if positions:
        leaf = reductions.reduce_sum(leaf, positions)
    return constant_like(leaf, n) * leaf


def _extremum(prim, which: str, result: str):
    """`pmax` or `pmin`: the public function of `prim`, the elementwise `which`
    ("maximum", "minimum") over the members; `result` is its example's output."""
    def extremum(x, axis_name, *, axis_index_groups=None):
        groups = _checked_groups(prim.name, axis_index_groups)
        axes = _reduction_axes(prim.name, axis_name, groups)
        return tree_util.tree_map(lambda leaf: prim.bind(
            _varying_over(leaf, axes), axes=axes, axis_index_groups=groups), x)
    extremum.__name__ = extremum.__qualname__ = prim.name
    extremum.__doc__ = f"""The elementwise {which} of `x` over every member of a named axis (an
    all-reduce); every member gets the result.

    Args:
        x: a pytree of arrays.
        axis_name: the name of an axis bound by an enclosing `shard_map`,
            `vmap(..., axis_name=...)` or `pmap`, or a tuple of names.
        axis_index_groups: optional lists of positions along the axis, each
            group reduced apart (see `psum`).

    Returns:
        A pytree like `x` holding the {which} values.

    Raises:
        NameError: `axis_name` is not bound by an enclosing transformation.
        ValueError: `axis_index_groups` does not cover each position once.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> f = lambda x: plax.lax.{prim.name}(x, "i")
        >>> plax.vmap(f, axis_name="i")(jnp.array([3, 1, 2]))
        {result}
    """
    return extremum


pmax = _extremum(pmax_p, "maximum", "Array([3, 3, 3], dtype=int32)")
pmin = _extremum(pmin_p, "minimum", "Array([1, 1, 1], dtype=int32)")


def pmean(x, axis_name, *, axis_index_groups=None):
    """The mean of `x` over every member of a named axis (an all-reduce); every
    member gets the result.

    Args:
        x: a pytree of arrays (integers are averaged as floats).
        axis_name: a bound axis name (of `shard_map`, `pmap` or a named
            `vmap`), or a tuple of names to average over all of them.
        axis_index_groups: optional lists of positions along the axis, each
            group averaged apart (see `psum`); the sums are divided by the size of
            the first group, as in JAX.

    Returns:
        A pytree like `x` holding the means, floating-point.

    Raises:
        NameError: no enclosing transformation binds `axis_name`.
        ValueError: `axis_index_groups` does not cover each position once.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.vmap(lambda x: x - plax.lax.pmean(x, "i"), axis_name="i")(jnp.arange(4.0))
        Array([-1.5, -0.5,  0.5,  1.5], dtype=float32)
    """
    total = psum(x, axis_name, axis_index_groups=axis_index_groups)
    names = _split_axes(canonicalize_axis_names(axis_name))[0]
    n = _group_size(names, _checked_groups("pmean", axis_index_groups))
    return tree_util.tree_map(lambda v: v / n, total)


# --- pvary: a value that may vary over axes (no data moves) ------------------------------

def _pvary_transpose(ct, x, *, axes):
    _refuse_typed_transpose("pvary", axes)
    return [instantiate(ct)]


pvary_p = standard_primitive(
    "lax.pvary", lambda x, *, axes: _same_aval(x), lambda ctx, x, *, axes: x,
    jvp=linear_jvp(), transpose=_pvary_transpose,
    batching=lambda axis_data, args, dims, *, axes: (pvary_p.bind(args[0], axes=axes),
                                                     dims[0]),
    **{AXIS_NAMES: lambda *, axes: axes})


def pvary(x, axis_name):
    """Marks `x` as varying over named manual axes: the same values, now typed as
    possibly different on each member.

    Inside `shard_map` with `check_vma=True`, values replicated over an axis
    (invariant) and values that differ per member (varying) have different
    types; combining them with some collectives, or returning one where the
    other is expected, needs this cast. Where no types are checked (manual axes
    of a shard_map with `check_vma=False`, or pmap's) it does nothing, as JAX's.

    Args:
        x: a pytree of arrays.
        axis_name: an axis name or tuple of names of the enclosing `shard_map`.

    Returns:
        A pytree like `x`, typed as varying over those axes.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> f = plax.shard_map(lambda: plax.lax.pvary(jnp.float32(1.0), "x").reshape(1),
        ...                    mesh=mesh, in_specs=(), out_specs=P("x"))
        >>> f()
        Array([1., 1., 1., 1.], dtype=float32)
    """
    axes = canonicalize_axis_names(axis_name)
    _sizes(axes)
    if not axes or (not config.check_vma.value and set(axes) <= _manual_now()):
        return x
    return tree_util.tree_map(lambda leaf: pvary_p.bind(leaf, axes=mat_axis_order(axes)), x)


def pcast(x, axis_name, *, to: str):
    """Casts `x` to another kind of value over named manual axes (see `pvary`).

    plax's values carry no reduced or unreduced axes, so the only cast is
    `to="varying"`, which is `pvary`.

    Args:
        x: a pytree of arrays.
        axis_name: an axis name or tuple of names of the enclosing `shard_map`.
        to: `"varying"`.

    Returns:
        A pytree like `x`, typed as varying over those axes.

    Raises:
        NotImplementedError: any other `to`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> from plax.sharding import PartitionSpec as P
        >>> mesh = plax.make_mesh((4,), ("x",))
        >>> f = plax.shard_map(lambda: plax.lax.pcast(jnp.ones(1), "x", to="varying"),
        ...                    mesh=mesh, in_specs=(), out_specs=P("x"))
        >>> f()
        Array([1., 1., 1., 1.], dtype=float32)
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"pcast: axis_name must be a name or a tuple of names, got the set "
                        f"{axis_name!r}")
    if not axis_name:
        return x
    if to not in ("varying", "reduced", "unreduced"):
        raise ValueError(f"pcast: to must be 'varying', 'reduced' or 'unreduced', got {to!r}")
    if to != "varying":
        raise NotImplementedError(f"pcast to {to!r}: plax's values have no reduced or "
                                  "unreduced axes")
    return pvary(x, axis_name)


# --- axis_index ----------------------------------------------------------------------------

def _axis_index_batching(axis_data, args, dims, *, axis_name):
    return iota(np.int32, axis_data.size), 0


axis_index_p = standard_primitive(
    "lax.axis_index", lambda *, axis_name: ShapedArray((), np.dtype(np.int32)),
    lambda ctx, *, axis_name: _member_index(ctx, (axis_name,), "axis_index"),
    batching=_axis_index_batching, **{AXIS_NAMES: lambda *, axis_name: (axis_name,)})


def axis_index(axis_name):
    """This member's position along a named axis.

    Inside `shard_map` this is the device's coordinate on the mesh axis; inside
    `vmap(..., axis_name=...)` the example's index. For a tuple of names, the
    position in their product, the first name varying slowest (summed from the
    last name's index up, as JAX's).

    Args:
        axis_name: the name of a bound axis, or a tuple of names.

    Returns:
        An int32 scalar.

    Raises:
        NameError: `axis_name` is not bound.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.vmap(lambda x: x * plax.lax.axis_index("i"), axis_name="i")(jnp.ones(3))
        Array([0., 1., 2.], dtype=float32)
    """
    if not isinstance(axis_name, (tuple, list)):
        _bound_size(axis_name)
        return axis_index_p.bind(axis_name=axis_name)
    index, stride = 0, 1
    for name in reversed(canonicalize_axis_names(axis_name)):
        index = index + axis_index(name) * stride
        stride *= _bound_size(name)
    return index


# --- pbroadcast: every member takes the source member's value ----------------------------

def _pbroadcast_lowering(ctx, x, *, axis_name, source):
    names = _names(axis_name)
    aval = ctx.avals_in[0]
    is_source = mu.compare(_member_index(ctx, names, "pbroadcast"),
                           mu.dense_constant(np.int32(source)), "EQ", np.dtype(np.int32))
    masked = hlo.select(mu.broadcast_to(is_source, aval.update(dtype=np.dtype(bool))), x,
                        mu.splat(0, aval))
    combine = hlo.or_ if aval.dtype == np.dtype(bool) else hlo.add
    return _all_reduce(ctx, masked, aval.dtype, names, combine, "pbroadcast")


def _pbroadcast_transpose(ct, x, *, axis_name, source):
    """The source member receives the sum of every member's cotangent, the others 0."""
    names = _names(axis_name)
    total = psum_p.bind(instantiate(ct), axes=names, axis_index_groups=None)
    aval = get_aval(total)
    mask = shape_ops.broadcast_in_dim(comparison.eq(axis_index(names), np.int32(source)),
                                      aval.shape, ())
    zeros = shape_ops.broadcast_in_dim(np.zeros((), aval.dtype)[()], aval.shape, ())
    return [comparison.select_n(mask, zeros, total)]


def _pbroadcast_batching(axis_data, args, dims, *, axis_name, source):
    (x,), (d,) = args, dims
    if not _is_this_traces(axis_data, axis_name, "pbroadcast"):
        return pbroadcast_p.bind(x, axis_name=axis_name, source=source), d
    if d is not_mapped:
        return x, not_mapped
    return slicing.index_in_dim(x, source, axis=d, keepdims=False), not_mapped


pbroadcast_p = standard_primitive(
    "lax.pbroadcast", lambda x, *, axis_name, source: _same_aval(x), _pbroadcast_lowering,
    jvp=linear_jvp(), transpose=_pbroadcast_transpose, batching=_pbroadcast_batching,
    **{AXIS_NAMES: _names_rule})


def pbroadcast(x, axis_name, source: int):
    """Every member of a named axis gets the value of member `source`.

    Args:
        x: a pytree of arrays.
        axis_name: the name of a bound axis.
        source: the index of the member whose value is sent.

    Returns:
        A pytree like `x` holding member `source`'s values.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.vmap(lambda x: plax.lax.pbroadcast(x, "i", 2), axis_name="i")(jnp.array([1, 2, 3]))
        Array([3, 3, 3], dtype=int32)
    """
    names = canonicalize_axis_names(axis_name)
    size = _sizes(names)
    source = operator.index(source)
    if not 0 <= source < size:
        raise ValueError(f"pbroadcast: source {source} is not a member of axis "
                         f"{_param_name(names)!r} of size {size}")
    return tree_util.tree_map(
        lambda leaf: pbroadcast_p.bind(leaf, axis_name=_as_given(axis_name), source=source), x)


# --- all_gather, all_gather_invariant ----------------------------------------------------

def _split_dim(x, dim: int, n: int):
    """`x` with dimension `dim` split into two, the first of size `n`."""
    shape = list(get_aval(x).shape)
    shape[dim:dim + 1] = [n, shape[dim] // n]
    return shape_ops.reshape(x, tuple(shape))


def _merge_dims(x, dim: int):
    """`x` with dimensions `dim` and `dim + 1` merged into one."""
    shape = list(get_aval(x).shape)
    shape[dim:dim + 2] = [shape[dim] * shape[dim + 1]]
    return shape_ops.reshape(x, tuple(shape))


def _past_batch(dim: int, d, change: int) -> tuple:
    """For a collective over another vmap's axis: where its per-member dimension
    `dim` is in the batched operand, and where the result's batch dimension is (`d`,
    moved by `change` when `dim`, before it, gains or loses a dimension). `d` is
    unmapped only for one name of several, done one at a time."""
    if d is not_mapped:
        return dim, d
    return (dim + 1, d) if d <= dim else (dim, d + change)


def _all_gather_abstract_eval(x, *, all_gather_dimension, axis_name, axis_size, tiled,
                              axis_index_groups=None):
    shape = list(x.shape)
    if tiled:
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


class _all_gather_batcher(PrimitiveRule):
    """JAX's rule. Over another axis the gathered dimension shifts past the batch
    dimension; over this trace's axis every member gathers the whole batch (the
    result is the same for all): the batch dimension moved (or an unmapped value
    broadcast) to the gathered position. Over several names, among them this trace's,
    a gather one name at a time, the last first (JAX has no rule)."""

    def for_primitive(self, prim):
        def rule(axis_data, args, dims, *, all_gather_dimension: int, axis_name, tiled,
                 **params):
            (x,), (d,) = args, dims
            dim = all_gather_dimension
            if axis_data.name not in axis_name:  # (a gather adds a dimension unless tiled)
                dim, d = _past_batch(dim, d, 0 if tiled else 1)
                return prim.bind(x, all_gather_dimension=dim, axis_name=axis_name,
                                 tiled=tiled, **params), d
            _refuse_vmap_groups("all_gather", axis_data.name, params.get("axis_index_groups"))
            if len(axis_name) > 1:
                for k, name in enumerate(reversed(axis_name)):
                    x, d = rule(axis_data, [x], [d], all_gather_dimension=dim, axis_name=(name,),
                                tiled=tiled or k > 0,
                                **dict(params, axis_size=_bound_size(name)))
                return x, d
            if d is not_mapped:
                shape = list(get_aval(x).shape)
                shape.insert(dim, axis_data.size)
                x = shape_ops.broadcast_in_dim(x, tuple(shape),
                                               tuple(i for i in range(len(shape)) if i != dim))
            else:
                x = moveaxis(x, d, dim)
            return (_merge_dims(x, dim) if tiled else x), not_mapped
        rule.__name__ = f"{prim.name}_batching"
        return rule


def _all_gather_lowering(ctx, x, *, all_gather_dimension, axis_name, axis_size, tiled,
                         axis_index_groups=None):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if not tiled:  # gather along a new axis of size 1
        shape = list(aval_in.shape)
        shape.insert(all_gather_dimension, 1)
        x = _reshape(x, shape, aval_in.dtype)
    groups = _groups(ctx, axis_name, "all_gather", axis_index_groups)
    if _alone(groups):
        return x
    return hlo.AllGatherOp([mu.ir_type(aval_out)], [x], all_gather_dimension,
                           _groups_attr(groups), use_global_device_ids=True,
                           **_channel()).results[0]


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_index_groups=None, **params):
    """The per-device adjoint: a reduce-scatter of the cotangent."""
    return [reduce_scatter_p.bind(instantiate(ct), scatter_dimension=all_gather_dimension,
                                  axis_index_groups=axis_index_groups, **params)]


def _all_gather_invariant_transpose(ct, x, **params):
    _refuse_typed_transpose("all_gather(..., to='invarying')", params["axis_name"])
    return _all_gather_transpose(ct, x, **params)


all_gather_p = standard_primitive(
    "lax.all_gather", _all_gather_abstract_eval, _all_gather_lowering,
    jvp=linear_jvp(), transpose=_all_gather_transpose, batching=_all_gather_batcher(),
    **{AXIS_NAMES: _names_rule})
# all_gather(..., to='invarying'): the same gather, typed as the same on every member.
all_gather_invariant_p = standard_primitive(
    "lax.all_gather_invariant", _all_gather_abstract_eval, _all_gather_lowering,
    jvp=linear_jvp(), transpose=_all_gather_invariant_transpose,
    batching=_all_gather_batcher(), **{AXIS_NAMES: _names_rule})


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False,
               to: str = "varying"):
    """Gathers `x` from every member of a named axis, so that each member holds all
    of them.

    The members' values are stacked along a new axis `axis` (or, with `tiled`,
    concatenated along the existing axis `axis`). Over several names, the
    members are ordered with the first name varying slowest.

    Args:
        x: a pytree of arrays.
        axis_name: the name of a bound axis, or a tuple of names.
        axis_index_groups: optional lists of positions along the axis, of one
            size: each member gathers from its group only (see `psum`).
        axis: where the gathered dimension goes.
        tiled: concatenate along `axis` instead of stacking on a new one.
        to: `"varying"` (the default) or `"invarying"` (the result is the same
            on every member, for `shard_map`'s `check_vma`).

    Returns:
        A pytree like `x`, each leaf with the gathered dimension.

    Raises:
        NameError: `axis_name` is not bound.
        ValueError: `axis_index_groups` does not cover each position once.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.vmap(lambda x: plax.lax.all_gather(x, "i"), axis_name="i")(jnp.arange(3))
        Array([[0, 1, 2],
               [0, 1, 2],
               [0, 1, 2]], dtype=int32)
    """
    if to not in _GATHER_TO:
        raise ValueError(f"all_gather: `to` must be one of {_GATHER_TO} (plax has no "
                         f"'reduced' types); got {to!r}")
    if to == "invarying" and axis_index_groups is not None:
        raise NotImplementedError("all_gather: axis_index_groups with to='invarying' is not "
                                  "supported (nor in JAX)")
    groups = _checked_groups("all_gather", axis_index_groups)
    names = canonicalize_axis_names(axis_name)
    if not names:
        return x
    size = _group_size(names, groups)
    prim, params = ((all_gather_p, dict(axis_index_groups=groups)) if to == "varying"
                    else (all_gather_invariant_p, {}))

    def gather(leaf):
        ndim = get_aval(leaf).ndim
        dim = canonicalize_axis("all_gather", axis, ndim if tiled else ndim + 1)
        return prim.bind(_varying_over(leaf, names), all_gather_dimension=dim, axis_name=names,
                         axis_size=size, tiled=tiled, **params)
    return tree_util.tree_map(gather, x)


_GATHER_TO = ("varying", "invarying")


def _size_kind(axis_index_groups) -> str:
    """What an error about the number of members a collective spans calls it."""
    return "axis size" if axis_index_groups is None else "group size"


# --- psum_scatter: reduce_scatter ---------------------------------------------------------

def _reduce_scatter_abstract_eval(x, *, scatter_dimension, axis_name, axis_index_groups,
                                  axis_size, tiled):
    check_dtype("psum_scatter", x, NUMBER)
    shape = list(x.shape)
    if not 0 <= scatter_dimension < len(shape):
        raise ValueError(f"psum_scatter: scatter_dimension {scatter_dimension} out of range "
                         f"for operand {describe(x)}")
    if tiled:
        if shape[scatter_dimension] % axis_size:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of operand "
                             f"{describe(x)} must be divisible by the "
                             f"{_size_kind(axis_index_groups)} {axis_size}")
        shape[scatter_dimension] //= axis_size
    else:
        if shape[scatter_dimension] != axis_size:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of operand "
                             f"{describe(x)} must equal the {_size_kind(axis_index_groups)} "
                             f"{axis_size} (or pass tiled=True)")
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _reduce_scatter_batching(axis_data, args, dims, *, scatter_dimension: int, axis_name,
                             axis_index_groups, axis_size, tiled):
    """JAX's rule. Over another axis the scattered dimension shifts past the batch
    dimension; over this trace's axis the batch is summed and member j keeps chunk j:
    the scattered dimension (split in two when tiled) becomes the batch dimension.
    Over several names, among them this trace's, a scatter one name at a time, the
    first first (JAX has no rule)."""
    (x,), (d,) = args, dims
    dim = scatter_dimension
    if axis_data.name not in axis_name:  # (a scatter drops its dimension unless tiled)
        dim, d = _past_batch(dim, d, 0 if tiled else -1)
        return reduce_scatter_p.bind(x, scatter_dimension=dim, axis_name=axis_name,
                                     axis_index_groups=axis_index_groups, axis_size=axis_size,
                                     tiled=tiled), d
    _refuse_vmap_groups("psum_scatter", axis_data.name, axis_index_groups)
    if len(axis_name) > 1:
        for k, name in enumerate(axis_name):
            x, d = _reduce_scatter_batching(
                axis_data, [x], [d], scatter_dimension=dim, axis_name=(name,),
                axis_index_groups=None, axis_size=_bound_size(name),
                tiled=tiled or k < len(axis_name) - 1)
        return x, d
    if d is not_mapped:
        x = elementwise.mul(x, constant_like(x, axis_size))
    else:
        x = reductions.reduce_sum(x, (d,))
    return (_split_dim(x, dim, axis_size) if tiled else x), dim


def _reduce_scatter_lowering(ctx, x, *, scatter_dimension, axis_name, axis_index_groups,
                             axis_size, tiled):
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    shape = list(aval_in.shape)
    shape[scatter_dimension] //= axis_size
    groups = _groups(ctx, axis_name, "psum_scatter", axis_index_groups)
    if not _alone(groups):
        op = hlo.ReduceScatterOp(mu.ir_type(ShapedArray(shape, aval_in.dtype)), x,
                                 scatter_dimension, _groups_attr(groups),
                                 use_global_device_ids=True, **_channel())
        mu.build_region(op.regions[0], [ShapedArray((), aval_in.dtype)] * 2,
                        lambda a, b: [hlo.add(a, b)])
        x = op.result
    return x if tiled else _reshape(x, aval_out.shape, aval_out.dtype)


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, **params):
    """The per-device adjoint: an all-gather of the cotangent."""
    return [all_gather_p.bind(instantiate(ct), all_gather_dimension=scatter_dimension,
                              **params)]


reduce_scatter_p = standard_primitive(
    "lax.reduce_scatter", _reduce_scatter_abstract_eval, _reduce_scatter_lowering,
    jvp=linear_jvp(), transpose=_reduce_scatter_transpose, batching=_reduce_scatter_batching,
    **{AXIS_NAMES: _names_rule})


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
    """Sums `x` over a named axis and leaves each member only its own chunk of the
    sum (a reduce-scatter).

    `scatter_dimension` is divided among the members: unless `tiled`, it must
    have the axis's size and is removed; with `tiled` it is cut into equal
    chunks. Together with `all_gather`, it makes a `psum` in two halves.

    Args:
        x: an array.
        axis_name: the name of a bound axis (or a tuple of names).
        scatter_dimension: the dimension to divide among members.
        axis_index_groups: optional lists of positions along the axis, of one
            size: each group sums and scatters apart, the dimension divided
            among the group's members (see `psum`).
        tiled: keep the dimension, cut into chunks.

    Returns:
        This member's chunk of the sum.

    Raises:
        ValueError: `scatter_dimension`'s size does not fit the axis (or group)
            size, or `axis_index_groups` does not cover each position once.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> x = jnp.array([[1, 2], [10, 20]])  # member i holds row i
        >>> plax.vmap(lambda r: plax.lax.psum_scatter(r, "i"), axis_name="i")(x)
        Array([11, 22], dtype=int32)
    """
    groups = _checked_groups("psum_scatter", axis_index_groups)
    names = canonicalize_axis_names(axis_name)
    if not names:
        return x
    size = _group_size(names, groups)

    def scatter(leaf):
        dim = canonicalize_axis("psum_scatter", scatter_dimension, get_aval(leaf).ndim)
        return reduce_scatter_p.bind(_varying_over(leaf, names), scatter_dimension=dim,
                                     axis_name=names, axis_index_groups=groups,
                                     axis_size=size, tiled=tiled)
    return tree_util.tree_map(scatter, x)


# --- all_to_all ------------------------------------------------------------------------------

def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                              tiled):
    size = _group_size(_names(axis_name), axis_index_groups)
    shape = list(x.shape)
    for what, a in (("split_axis", split_axis), ("concat_axis", concat_axis)):
        if not 0 <= a < len(shape):
            raise ValueError(f"all_to_all: {what} {a} out of range for operand {describe(x)}")
    if shape[split_axis] % size:
        raise ValueError(f"all_to_all: split_axis {split_axis} of operand {describe(x)} must "
                         f"be divisible by the {_size_kind(axis_index_groups)} {size}")
    shape[split_axis] //= size
    shape[concat_axis] *= size
    return ShapedArray(tuple(shape), x.dtype)


def _all_to_all_batching(axis_data, args, dims, *, axis_name, split_axis, concat_axis,
                         axis_index_groups, tiled):
    """JAX's rule over one name: x[i] (member i) splits into chunks x[i, j]; member j
    receives chunk j of every member, concatenated in order i along concat_axis."""
    (x,), (d,) = args, dims
    params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups, tiled=tiled)
    if axis_data.name not in _names(axis_name):
        return all_to_all_p.bind(x, split_axis=split_axis + (d <= split_axis),
                                 concat_axis=concat_axis + (d <= concat_axis), **params), d
    _refuse_vmap_groups("all_to_all", axis_data.name, axis_index_groups)
    if len(_names(axis_name)) > 1:
        raise NotImplementedError("vmap of all_to_all over several axis names")
    n = axis_data.size
    if d is not_mapped:
        x, d = shape_ops.broadcast(x, (n,)), 0
    if split_axis != concat_axis:
        x = _merge_dims(moveaxis(x, d, concat_axis), concat_axis)
        return _split_dim(x, split_axis, n), split_axis
    axis = split_axis + (d <= split_axis)
    x = _split_dim(x, axis, n)
    moved = d + (axis <= d)
    perm = list(range(get_aval(x).ndim))
    perm[axis], perm[moved] = moved, axis
    return _merge_dims(shape_ops.transpose(x, perm), axis), d


def _all_to_all_lowering(ctx, x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                         tiled):
    groups = _groups(ctx, _names(axis_name), "all_to_all", axis_index_groups)
    if _alone(groups):
        return x
    return hlo.AllToAllOp([x], split_axis, concat_axis, len(groups[0]), _groups_attr(groups),
                          results=[mu.ir_type(ctx.avals_out[0])], **_channel()).results[0]


def _all_to_all_transpose(ct, x, *, split_axis, concat_axis, **params):
    return [all_to_all_p.bind(instantiate(ct), split_axis=concat_axis, concat_axis=split_axis,
                              **params)]


all_to_all_p = standard_primitive(
    "lax.all_to_all", _all_to_all_abstract_eval, _all_to_all_lowering, jvp=linear_jvp(),
    transpose=_all_to_all_transpose, batching=_all_to_all_batching,
    **{AXIS_NAMES: _names_rule})


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
    """Exchanges chunks among the members of a named axis: each member splits `x`
    into one chunk per member, sends chunk j to member j, and joins what it
    receives.

    Unless `tiled`, `split_axis` must have the axis's size and is removed, and
    the received chunks are stacked on a new axis `concat_axis`; with `tiled`,
    `split_axis` is cut into equal chunks and they are concatenated along
    `concat_axis`.

    Args:
        x: an array.
        axis_name: the name of a bound axis (or a tuple of names).
        split_axis: the dimension of `x` to split.
        concat_axis: the dimension along which received chunks are joined.
        axis_index_groups: optional lists of positions along the axis, of one
            size: chunks are exchanged within each group, one per member of
            the group (see `psum`).
        tiled: split and concatenate without removing or adding dimensions.

    Returns:
        The array of received chunks.

    Raises:
        NameError: `axis_name` is not bound.
        ValueError: `split_axis`'s size is not divisible by (or, untiled, equal
            to) the axis (or group) size, or `axis_index_groups` does not cover
            each position once.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> x = jnp.arange(4).reshape(2, 2)  # member i holds row i
        >>> plax.vmap(lambda r: plax.lax.all_to_all(r, "i", 0, 0), axis_name="i")(x)
        Array([[0, 2],
               [1, 3]], dtype=int32)
    """
    groups = _checked_groups("all_to_all", axis_index_groups)
    names = canonicalize_axis_names(axis_name)
    size = _group_size(names, groups)

    def exchange(leaf):
        aval = get_aval(leaf)
        split = canonicalize_axis("all_to_all", split_axis, aval.ndim, "split_axis")
        concat = canonicalize_axis("all_to_all", concat_axis, aval.ndim, "concat_axis")
        if not tiled:
            if aval.shape[split] != size:
                raise ValueError(f"all_to_all: split_axis {split} of {describe(aval)} must "
                                 f"equal the {_size_kind(groups)} {size} (or pass "
                                 "tiled=True)")
            if split != concat:
                # The new axis is inserted at concat_axis of the result without split_axis.
                concat = concat + 1 if split < concat else concat
                split = split if split < concat else split + 1
                leaf = shape_ops.expand_dims(leaf, (concat,))
        out = all_to_all_p.bind(_varying_over(leaf, names), split_axis=split,
                                concat_axis=concat, axis_name=_as_given(axis_name),
                                axis_index_groups=groups, tiled=tiled)
        return out if tiled or split == concat else shape_ops.squeeze(out, (split,))
    return tree_util.tree_map(exchange, x)


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """Swaps a named axis with a positional axis of `x`: member i's slice j along
    `axis` becomes member j's slice i.

    Args:
        x: an array whose dimension `axis` has the named axis's size.
        axis_name: the name of a bound axis.
        axis: the positional dimension to swap with.
        axis_index_groups: optional lists of positions along the axis, of one
            size: the swap happens within each group (see `all_to_all`).

    Returns:
        An array of `x`'s shape.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> x = jnp.arange(4).reshape(2, 2)
        >>> plax.vmap(lambda r: plax.lax.pswapaxes(r, "i", 0), axis_name="i")(x)
        Array([[0, 2],
               [1, 3]], dtype=int32)
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- ppermute, pshuffle ------------------------------------------------------------------------

def _ppermute_batching(axis_data, args, dims, *, axis_name, perm):
    """JAX's rule: member j takes `x` from its source by a `jnp.take` along the batch
    dimension. (JAX's wants a whole permutation; with a partial one, members that
    receive nothing take zeros, filled in for an index out of range.)"""
    from plax_stdlib.numpy import take  # (plax.numpy is built on lax)
    (x,), (d,) = args, dims
    if not _is_this_traces(axis_data, axis_name, "ppermute"):
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    n = axis_data.size
    whole = len(perm) == n
    if d is not_mapped:
        if whole:
            return x, not_mapped
        x, d = move_to(x, d, 0, n), 0
    sources = np.full(n, 0 if whole else n)
    for src, dst in perm:
        sources[dst] = src
    fill = {} if whole else dict(mode="fill", fill_value=0)
    return take(x, sources, d, **fill), d


def _ppermute_lowering(ctx, x, *, axis_name, perm):
    groups = _groups(ctx, _names(axis_name), "ppermute")
    if len(groups[0]) == 1:
        return x if perm else mu.splat(0, ctx.avals_out[0])
    return hlo.CollectivePermuteOp(x, device_pairs(groups, perm), **_channel()).results[0]


def device_pairs(groups, perm) -> ir.DenseIntElementsAttr:
    """The (source, target) partition ids of `perm` (pairs of members) in each group."""
    pairs = np.array([(g[src], g[dst]) for g in groups for src, dst in perm],
                     np.int64).reshape(-1, 2)
    return ir.DenseIntElementsAttr.get(pairs)


def _ppermute_transpose(ct, x, *, axis_name, perm):
    inverse = tuple((dst, src) for src, dst in perm)
    return [ppermute_p.bind(instantiate(ct), axis_name=axis_name, perm=inverse)]


ppermute_p = standard_primitive(
    "lax.ppermute", lambda x, *, axis_name, perm: _same_aval(x), _ppermute_lowering,
    jvp=linear_jvp(), transpose=_ppermute_transpose, batching=_ppermute_batching,
    **{AXIS_NAMES: _names_rule})


def checked_perm(fn: str, names: tuple, perm) -> tuple:
    """`perm` as a tuple of (source, destination) pairs of members of the axes
    `names`, each source and each destination at most once (else a ValueError)."""
    size = _sizes(names)
    pairs = tuple((operator.index(s), operator.index(d)) for s, d in perm)
    for what, column in (("sources", [s for s, _ in pairs]),
                         ("destinations", [d for _, d in pairs])):
        if len(set(column)) != len(column) or any(not 0 <= i < size for i in column):
            raise ValueError(f"{fn}: {what} {column} must be distinct members of axis "
                             f"{_param_name(names)!r} of size {size}; got perm {pairs}")
    return pairs


def ppermute(x, axis_name, perm):
    """Sends `x` between members of a named axis along the pairs of a permutation.

    For each `(src, dst)` in `perm`, member `dst` receives member `src`'s `x`;
    members that receive nothing get zeros. A ring shift, the building block of
    pipelines and ring all-reduces, is `[(i, (i + 1) % n) for i in range(n)]`.

    Args:
        x: a pytree of arrays.
        axis_name: the name of a bound axis (or a tuple of names, the first
            varying slowest).
        perm: pairs `(source, destination)` of member indices; no index may be
            a source twice or a destination twice.

    Returns:
        A pytree like `x` holding what this member received.

    Raises:
        ValueError: `perm` repeats a source or destination, or names a member
            outside the axis.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> shift = lambda x: plax.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)])
        >>> plax.vmap(shift, axis_name="i")(jnp.array([10, 20, 30]))
        Array([30, 10, 20], dtype=int32)
    """
    names = canonicalize_axis_names(axis_name)
    pairs = checked_perm("ppermute", names, perm)
    return tree_util.tree_map(lambda leaf: ppermute_p.bind(_varying_over(leaf, names),
                                                           axis_name=names, perm=pairs), x)


def pshuffle(x, axis_name, perm: Sequence[int]):
    """Member `i` of a named axis receives `x` from member `perm[i]`.

    Args:
        x: a pytree of arrays.
        axis_name: the name of a bound axis.
        perm: a permutation of `range(axis_size)`.

    Returns:
        What this member received.

    Raises:
        ValueError: `perm` is not a permutation of the axis's members.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> f = lambda x: plax.lax.pshuffle(x, "i", [2, 0, 1])
        >>> plax.vmap(f, axis_name="i")(jnp.array([10, 20, 30]))
        Array([30, 10, 20], dtype=int32)
    """
    names = canonicalize_axis_names(axis_name)
    size = _sizes(names)
    sources = [operator.index(p) for p in perm]
    if sorted(sources) != list(range(size)):
        raise ValueError(f"pshuffle: perm must be a permutation of range({size}) (the size "
                         f"of axis {_param_name(names)!r}); got {list(perm)}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(sources)])
