"""`device_put`: moving host values and Arrays onto devices, in batches.

Host values (NumPy arrays and scalars, Python scalars) are placed one
`batched_device_put` call each, listing all of their shards. Arrays that must move
to other devices go through ONE batched copy for the whole pytree, which groups the
copies by source and destination in C++. An Array whose target placement differs in
layout (other tiling) goes through the host, or, when it spans several processes
(whose data no one host holds), through a jitted copy. `placement.py` holds the
jaxlib calls.
Arrays of extended dtypes (PRNG keys) move as the data of their elements.

Traced values (inside jit, vmap, grad) bind the primitive `plax.device_put` of
plax-sharding, one equation per leaf (the seam `traced_device_put`).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import xla_client as xc

import plax
from plax.extend import dtypes
from plax.extend.core import (ShapedArray, StagingTrace, Tracer, current_trace, physical_aval)
from plax.extend.sharding import (Device, Sharding, hlo_shardings_equal, sharding_from_spec,
                                  traced_device_put)
from plax.extend.tree_util import broadcast_prefix, tree_flatten, tree_unflatten
from plax_runtime import placement, transfer_guard
from plax_runtime.array import Array
from plax_runtime.memory import Space, memory_kind_of
from plax_runtime.placement import PreparedPut
from plax_runtime.shard_buffers import shard_buffers
from plax_runtime.sharding_impls import SingleDeviceSharding


def _as_sharding(target: Device | Sharding | Space | None, x: Any = None) -> Sharding | None:
    if target is None or isinstance(target, Sharding):
        return target
    if isinstance(target, Device):
        return SingleDeviceSharding(target)
    if isinstance(target, Space):  # the same devices, that memory
        kind = memory_kind_of(target)
        if isinstance(x, Array):
            return x.sharding.with_memory_kind(kind)
        return SingleDeviceSharding(placement.default_device(), memory_kind=kind)
    try:  # a bare PartitionSpec names the axes of the mesh in context
        return sharding_from_spec(target, "device_put's device")
    except TypeError:
        raise ValueError(f"device_put: device must be a Device, a Sharding, a "
                        f"PartitionSpec, a plax.memory.Space or None, got {target!r} of "
                        f"type {type(target).__name__}") from None
    except RuntimeError:
        raise ValueError(f"device_put: the device is the PartitionSpec {target}, which "
                         "needs a mesh in context: set one with `plax.set_mesh(mesh)`, or "
                         "pass a NamedSharding(mesh, spec)") from None


def device_put(x: Any, device: Device | Sharding | Any | None = None, *,
               donate: bool | Any = False, may_alias: bool | None | Any = None) -> Any:
    """Places every leaf of the pytree `x` on a device, or splits it over several.

    Without a device, host values (NumPy arrays, Python scalars) go to the default
    device *uncommitted* (computations may move them) and Arrays stay where they
    are. With one, results are *committed* to it: computations on them run there.

    Args:
        x: a pytree of arrays and scalars.
        device: where to put them: a Device, a Sharding (e.g. `NamedSharding(mesh,
            P("x"))` to split a dimension over a mesh axis), a `plax.memory.Space`
            of the devices a leaf is on, or a pytree prefix of `x` of these; or a
            `plax.experimental.layout.Format` (a Sharding with the layout its buffers
            are copied into).
        donate: let the inputs' buffers be reused; inputs that were copied are
            deleted (a bool, or a pytree prefix of `x` of bools).
        may_alias: False always copies; True lets a result share the memory of a
            host NumPy array (mutating that array afterwards is then undefined).

    Returns:
        A pytree like `x` of `plax.Array`s.

    Raises:
        ValueError: a Sharding that does not fit a leaf (a split dimension not
            divisible by the mesh axes' size, a spec longer than the rank).

    Examples:
        >>> import numpy as np, plax
        >>> from plax.sharding import NamedSharding, PartitionSpec as P
        >>> x = plax.device_put(np.arange(8.0), plax.devices()[1])
        >>> x.devices() == {plax.devices()[1]}
        True
        >>> mesh = plax.make_mesh((4, 2), ("data", "model"))
        >>> y = plax.device_put(np.ones((8, 2)), NamedSharding(mesh, P("data", "model")))
        >>> len(y.addressable_shards), y.addressable_shards[0].data.shape
        (8, (2, 1))
    """
    leaves, treedef = tree_flatten(x)
    is_target = lambda t: t is None or isinstance(t, (Device, Sharding, Space))
    n = len(leaves)
    one_target = device is None or isinstance(device, (Device, Sharding))
    places = [device] * n if one_target else _prefix_leaves(device, x, n, is_target, "device")
    donations = _prefix_leaves(donate, x, n, None, "donate")
    aliasing = _prefix_leaves(may_alias, x, n, lambda v: v is None, "may_alias")
    for d, m in zip(donations, aliasing):
        if d and m:
            raise ValueError("device_put: may_alias=True and donate=True cannot both be set")
    # Under a staging trace (jit) every leaf is staged, constants too, and so is every
    # tracer, as in JAX: an equation's sharding then says where the computation runs
    # (one without a target changes nothing).
    staging = isinstance(current_trace(), StagingTrace)
    traced = [i for i, leaf in enumerate(leaves) if staging or isinstance(leaf, Tracer)]
    for i in traced:
        place = places[i]
        if not (place is None or isinstance(place, (Device, Space))):
            place = _as_sharding(place)
        leaves[i] = traced_device_put(leaves[i], place, donations[i], aliasing[i])
        places[i] = None
    if one_target and not traced:
        targets = [_as_sharding(device)] * n
    else:
        targets = [_as_sharding(t, leaf) for t, leaf in zip(places, leaves)]
    with transfer_guard.explicit():
        return tree_unflatten(treedef, _results(leaves, put_leaves(leaves, targets, donations,
                                                                   aliasing)))


def implicit_device_put(x: Any, device: Device | Sharding | None = None) -> Any:
    """`device_put` done by library code on the user's behalf (`plax.numpy.asarray` of
    a NumPy array): the transfer guard counts it as implicit, as JAX does. The seam
    `implicit_device_put` of `plax.extend.core`."""
    leaves, treedef = tree_flatten(x)
    n = len(leaves)
    return tree_unflatten(treedef, _results(leaves, put_leaves(
        leaves, [_as_sharding(device)] * n, [False] * n, [None] * n)))


def _results(leaves: Sequence[Any], placed: list[Array]) -> list[Any]:
    """What `device_put` gives for its leaves, `placed` by `put_leaves`: a float0 host
    value is placed as bools (what the transfer guard sees) but comes back as NumPy
    float0 zeros of its shape, as in JAX: no Array has dtype float0."""
    for i, x in enumerate(leaves):
        if isinstance(x, (np.ndarray, np.generic)) and x.dtype == dtypes.float0:
            placed[i] = np.zeros(np.shape(x), dtypes.float0)
    return placed


def _prefix_leaves(prefix: Any, tree: Any, num_leaves: int, is_leaf, name: str) -> list[Any]:
    """One value per leaf of `tree` from an option given once or as a pytree prefix."""
    if (is_leaf is not None and is_leaf(prefix)) or isinstance(prefix, bool):
        return [prefix] * num_leaves
    try:
        return broadcast_prefix(prefix, tree, is_leaf=is_leaf)
    except ValueError as err:
        raise ValueError(f"device_put: {name} must be a single value or a pytree prefix "
                         f"of the argument: {err}") from None


def put_leaves(leaves: Sequence[Any], targets: Sequence[Sharding | None],
               donations: Sequence[bool], aliasing: Sequence[bool | None]) -> list[Array]:
    """device_put of flat leaves; all Array moves share one batched copy."""
    results: list[Array | None] = [None] * len(leaves)
    # Leaves that go the same way are handled together, so that per leaf only a group
    # lookup is left: NumPy arrays by one prepared put per (shape, dtype, target) —
    # unless each transfer must be checked — and Arrays by one move plan per (source
    # sharding, target, type, options). (Targets and shardings are keyed by identity:
    # an equal one may be spelled differently; all stay alive through the call.)
    puts = None if transfer_guard.active("host_to_device") else {}
    moves: dict[tuple, _Moves] = {}
    for i, (x, target, donate, may_alias) in enumerate(zip(leaves, targets, donations,
                                                           aliasing)):
        if type(x) is not Array and hasattr(x, "__jax_array__") and not isinstance(x, Tracer):
            x = x.__jax_array__()  # an object that stands for an array, as in JAX
        if type(x) is not Array:  # (isinstance is slower: it also admits tracers)
            if puts is not None and PreparedPut.applies_to(x):
                key = (x.shape, x.dtype, id(target), may_alias)
                group = puts.get(key)
                if group is None:
                    group = puts[key] = (target, [], [])
                group[1].append(i)
                group[2].append(x)
                continue
            if isinstance(x, Tracer):  # no target (see device_put)
                results[i] = x
                continue
            if not isinstance(x, Array):
                results[i] = put_host_value(x, target, may_alias=may_alias)
                continue
        if target is None and may_alias is not False:
            x._check_alive()
            results[i] = x
            continue
        key = (id(x._sharding), id(target), id(x._aval), may_alias, donate)
        group = moves.get(key)
        if group is None:
            group = moves[key] = _Moves(x, target, may_alias, donate)
        group.positions.append(i)
        group.arrays.append(x)
    for (shape, dtype, _, may_alias), (target, positions, values) in (puts or {}).items():
        sharding = target if target is not None else SingleDeviceSharding(
            placement.default_device())
        put = PreparedPut.of(shape, dtype, sharding, committed=target is not None,
                             may_alias=may_alias)
        for i, array in zip(positions, Array._from_impls(put.place_all(values), put.aval,
                                                          sharding)):
            results[i] = array
    if moves:
        _move_arrays(moves.values(), results)
    return results


class _Moves:
    """Arrays of one aval and sharding that go to one target with the same options,
    and their positions among the leaves."""
    __slots__ = ("aval", "source", "target", "may_alias", "donate", "positions", "arrays")

    def __init__(self, first: Array, target: Sharding | None, may_alias: bool | None,
                 donate: bool):
        self.aval, self.source = first._aval, first._sharding
        self.target, self.may_alias, self.donate = target, may_alias, donate
        self.positions: list[int] = []
        self.arrays: list[Array] = []

    def committed(self, x: Array) -> bool:
        """Whether `x`'s result is committed: to a target given, or as `x` was."""
        return self.target is not None or x.committed


def _move_arrays(groups: Sequence[_Moves], results: list) -> None:
    """Puts each group's Arrays at their positions in `results`, on their targets:
    re-wrapped, copied by ONE batched C++ copy for all groups, or via the host."""
    copying = []  # (group, target, jaxlib target)
    impls, jaxlib_targets, semantics = [], [], []
    plans: dict[tuple, tuple] = {}  # groups differing only in aval object share a plan
    guarded = transfer_guard.active("device_to_device")
    for group in groups:
        for x in group.arrays:
            x._check_alive()
        target = group.target or group.source
        ndim = physical_aval(group.aval).ndim
        plan_key = (id(group.source), id(target), ndim, group.may_alias is False)
        plan = plans.get(plan_key)
        if plan is None:
            plan = plans[plan_key] = _move_plan(group.source, target, ndim, group.may_alias)
        how, copy_semantics, jaxlib_target = plan
        if how is _REWRAP:
            for i, x in zip(group.positions, group.arrays):
                results[i] = _rewrap(x._impl, x.aval, target, group.committed(x))
            continue
        if guarded and how is not _COPY_IN_PLACE:
            for x in group.arrays:
                transfer_guard.check("device_to_device", x.aval, x.sharding, target)
        if how is _VIA_HOST:
            for i, x in zip(group.positions, group.arrays):
                results[i] = _move_via_host(x, target, group.committed(x))
                if group.donate:
                    x.delete()
            continue
        n = len(group.arrays)
        impls.extend(x._impl for x in group.arrays)
        jaxlib_targets.extend([jaxlib_target] * n)
        semantics.extend([copy_semantics] * n)
        copying.append((group, target, jaxlib_target))
    if not copying:
        return
    copies = iter(placement.copy_buffers(impls, jaxlib_targets, semantics))
    for group, target, jaxlib_target in copying:
        wrapped, wrapped_at = [], []  # copies already placed and committed as wanted
        for i, x, impl in zip(group.positions, group.arrays, copies):
            committed = group.committed(x)
            if impl._committed == committed and impl._sharding is jaxlib_target:
                wrapped.append(impl)
                wrapped_at.append(i)
            else:
                results[i] = _rewrap(impl, x.aval, target, committed)
            if group.donate:  # a real copy was made, so the source can go
                x.delete()
        for i, array in zip(wrapped_at, Array._from_impls(wrapped, group.aval, target)):
            results[i] = array


def _move_via_host(x: Array, target: Sharding, committed: bool) -> Array:
    """`x` on `target` through its host value (a layout the batched copy cannot make),
    or, when it spans several processes, through a jitted copy."""
    if not (x.is_fully_addressable and target.is_fully_addressable):
        return _reshard_across_processes(x, target)
    # The cached host value is immutable, so the new buffers may alias it.
    with transfer_guard.internal():
        placed = put_host_value(x._value, target, weak_type=x.weak_type,
                                committed=committed, may_alias=True)
    return Array._from_impl(placed._impl, x.aval, placed.sharding)


# How an Array reaches its target (`_move_plan`).
_REWRAP, _COPY, _COPY_IN_PLACE, _VIA_HOST = "rewrap", "copy", "copy in place", "via host"


def _move_plan(source: Sharding, target: Sharding, ndim: int, may_alias: bool | None):
    """(how, copy semantics, target's jaxlib sharding) for moving an array of rank
    `ndim` laid out as `source` to `target`: the same placement is re-wrapped (copied
    in place when `may_alias=False`), the same layout on other devices or memory is a
    batched copy, another layout goes through the host."""
    same_layout = hlo_shardings_equal(source._to_xla_hlo_sharding(ndim),
                                      target._to_xla_hlo_sharding(ndim))
    same_place = (same_layout and target.memory_kind == source.memory_kind
                  and target._device_assignment == source._device_assignment)
    if same_place and may_alias is not False:
        return _REWRAP, None, None
    if same_layout and target.num_devices == source.num_devices:
        semantics = (xc.ArrayCopySemantics.ALWAYS_COPY if may_alias is False
                     else xc.ArrayCopySemantics.REUSE_INPUT)
        return (_COPY_IN_PLACE if same_place else _COPY, semantics,
                target._to_jaxlib_sharding(ndim))
    return _VIA_HOST, None, None


def _reshard_across_processes(x: Array, target: Sharding) -> Array:
    """`x` laid out as `target` by a computation on their devices, for an Array whose
    shards live in several processes."""
    if set(target.device_set) != set(x.sharding.device_set):
        raise ValueError(f"device_put of an Array spanning several processes can change "
                         f"its layout but not its devices: it is on "
                         f"{sorted(d.id for d in x.sharding.device_set)}, the target "
                         f"{target} on {sorted(d.id for d in target.device_set)}")
    return _copy_to(target)(x)


@functools.lru_cache(maxsize=64)
def _copy_to(target: Sharding):
    return plax.jit(lambda v: v, out_shardings=target)


def _rewrap(impl: xc.ArrayImpl, aval: ShapedArray, sharding: Sharding,
            committed: bool) -> Array:
    """The same buffers under another sharding object and commitment (no copy)."""
    physical = physical_aval(aval)
    jaxlib_sharding = sharding._to_jaxlib_sharding(physical.ndim)
    if committed:  # re-wrapping always yields a committed array
        impl = impl._rewrap_with_aval_and_sharding(physical, jaxlib_sharding)
    elif impl._committed or impl._sharding is not jaxlib_sharding:
        impl = xc.ArrayImpl(physical, jaxlib_sharding, shard_buffers(impl), False,
                            _skip_checks=True)
    return Array._from_impl(impl, aval, sharding)


def put_host_value(x: Any, sharding: Sharding | None, *, weak_type: bool | None = None,
                   committed: bool | None = None, may_alias: bool | None = None) -> Array:
    """One host value onto the devices of `sharding` as an Array (see
    `placement.place_host_value`)."""
    return Array._from_impl(*placement.place_host_value(
        x, sharding, weak_type=weak_type, committed=committed, may_alias=may_alias))
