"""Where a computation runs: the device assignment of a call and the shardings its
module states.

The devices come from what names them: explicit `in_shardings`/`out_shardings`,
committed Array arguments, shardings inside the Jaxpr on concrete meshes (a
`with_sharding_constraint` on a `Mesh`), and the mesh in context (`plax.set_mesh`).
They must all name the same devices in the same order; a conflict is JAX's
"incompatible devices" ValueError, naming each source. When nothing names devices,
the computation runs on the default device.

Shardings here are only those of the base class (`plax.extend.sharding`), and the
context mesh is opaque but for its `_flat_devices_tuple`; a sharding on it comes from
`sharding_from_spec`.
"""
from __future__ import annotations

import weakref
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

from plax.extend import config
from plax.extend.core import (ClosedJaxpr, Jaxpr, Primitive, ShapeDtypeStruct, dce_jaxpr,
                              get_aval, register_cache, user_frame)
from plax.extend.sharding import Device, Sharding, concrete_mesh, sharding_from_spec
from plax_runtime import placement as runtime_placement
from plax_runtime.array import Array
from plax_runtime.layouts import (Format, Layout, default_layout, layouts_signed,
                                  nondefault_layout, satisfies, sign_layouts)
from plax_runtime.sharding_impls import SingleDeviceSharding


class CallPlacement(NamedTuple):
    """A call's device assignment, whether its outputs are committed, and the
    shardings its module states: per flat argument and output, None where the
    partitioner chooses."""
    devices: tuple[Device, ...]
    committed: bool
    in_shardings: tuple[Sharding | None, ...]
    out_shardings: tuple[Sharding | None, ...]
    # A sharding on the context mesh, whose kind the partitioner's choices take when
    # no argument's sharding can say them.
    reference: Sharding | None = None
    # The layouts the module asks for, per flat argument and output (empty: all the
    # default): a `Layout`, `Layout.AUTO` (XLA's choice) or None (the default).
    in_layouts: tuple = ()
    out_layouts: tuple = ()


_default_devices: dict[Any, Device] = {}
register_cache(_default_devices.clear)


def default_device() -> Device:
    """The device of uncommitted computations (`jax_default_device`, else the default
    backend's first device), memoized per value of the option."""
    choice = config.default_device.value
    device = _default_devices.get(choice)
    if device is None:
        device = _default_devices[choice] = runtime_placement.default_device()
    return device


# --- shardings inside a Jaxpr ------------------------------------------------------------

_inner_cache: weakref.WeakKeyDictionary[Jaxpr, tuple] = weakref.WeakKeyDictionary()


def inner_shardings(jaxpr: Jaxpr) -> tuple[tuple[Sharding, str], ...]:
    """Every sharding in the equation parameters of `jaxpr` and its sub-Jaxprs, with a
    description of where it is (`sharding_constraint inside jit at f.py:3 (f)`)."""
    found = _inner_cache.get(jaxpr)
    if found is None:
        found = _inner_cache[jaxpr] = tuple(_walk(jaxpr))
    return found


# Higher-order primitives whose parameters say where they run without holding a
# Sharding (shard_map names a mesh) give a rule: their params → Shardings.
_placement_rules: dict[Primitive, Callable[[dict], Iterable[Sharding]]] = {}


def register_placement_rule(prim: Primitive, rule: Callable[[dict], Iterable[Sharding]]
                            ) -> None:
    """Declare that `prim`'s equations place a computation on `rule(params)`'s
    shardings (a concrete one names its devices; any one tells the kind of layout
    the partitioner's choices take)."""
    _placement_rules[prim] = rule


def _walk(jaxpr: Jaxpr) -> Iterator[tuple[Sharding, str]]:
    for eqn in jaxpr.eqns:
        rule = _placement_rules.get(eqn.primitive)
        for item in rule(eqn.params) if rule is not None else ():
            yield item, _where(eqn)
        for value in eqn.params.values():
            for item in _param_items(value):
                if isinstance(item, Sharding):
                    yield item, _where(eqn)
                elif isinstance(item, ClosedJaxpr):
                    yield from inner_shardings(item.jaxpr)
                elif isinstance(item, Jaxpr):
                    yield from inner_shardings(item)


def _where(eqn) -> str:
    where = user_frame(eqn.source_info)
    return f"{eqn.primitive.name} inside jit" + (f" at {where}" if where else "")


def _param_items(value) -> Iterator[Any]:
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _param_items(v)
    else:
        yield value


# --- the placement of a call ------------------------------------------------------------

def _device_ids(devices: Sequence[Device]) -> str:
    return f"device ids {[d.id for d in devices]} on platform {devices[0].platform.upper()}"


def incompatible_devices_error(sources: Sequence[tuple[tuple[Device, ...], str]]
                               ) -> ValueError:
    first_devices, first = sources[0]
    other_devices, other = next((d, w) for d, w in sources if d != first_devices)
    return ValueError(
        f"Received incompatible devices for jitted computation. Got {first} and with "
        f"{_device_ids(first_devices)} and {other} and with {_device_ids(other_devices)}")


_used_cache: weakref.WeakKeyDictionary[Jaxpr, dict] = weakref.WeakKeyDictionary()


def used_inputs(jaxpr: Jaxpr, keep: Sequence[bool]) -> tuple[bool, ...]:
    """Which inputs of `jaxpr` an output or effect needs, or `keep` marks: all a module
    lowered without `keep_unused` takes (memoized per Jaxpr)."""
    per_keep = _used_cache.get(jaxpr)
    if per_keep is None:
        per_keep = _used_cache[jaxpr] = {}
    keep = tuple(keep) or (False,) * len(jaxpr.invars)
    used = per_keep.get(keep)
    if used is None:
        _, kept = dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars), instantiate=list(keep))
        used = per_keep[keep] = tuple(kept)
    return used


def place_call(args: Sequence[Any], in_shardings: Sequence[Sharding | None] = (),
               out_shardings: Sequence[Sharding | None] = (), *,
               jaxpr: Jaxpr | None = None, keep_unused: bool = True,
               aliases: Sequence[int | None] = (),
               describe: Callable[[int], str] | None = None) -> CallPlacement:
    """The placement of a computation (`jaxpr`, if its inner shardings matter) on the
    flat `args`, given per-argument and per-output shardings (None: unspecified; a
    `Format` also asks for a layout, see `_with_layouts`).

    Without `keep_unused`, inputs the module prunes (no output needs them, no alias
    keeps them: `used_inputs`) name no devices, by their sharding or their Array, as
    in JAX. `describe(i)` names argument `i` in errors (default: `argument i`).
    """
    describe = describe or (lambda i: f"argument {i}")
    in_shardings, in_formats = _without_formats(in_shardings)
    out_shardings, out_formats = _without_formats(out_shardings)
    # (only where `args` are the Jaxpr's inputs one to one: an AOT lowering of a call
    # with leading closed-over tracers passes its own arguments alone)
    prunes = jaxpr is not None and not keep_unused and len(jaxpr.invars) == len(args)
    used = (used_inputs(jaxpr, [a is not None for a in aliases]) if prunes
            else (True,) * len(args))
    sources: list[tuple[tuple[Device, ...], str]] = []
    for i, s in enumerate(in_shardings):
        if s is not None and used[i]:
            s = _concrete(s, f"in_shardings of {describe(i)}")
            sources.append((s._device_assignment, f"in_shardings of {describe(i)}"))
    committed_args = []
    for i, x in enumerate(args):
        carried = _carried_sharding(x)
        if carried is not None and used[i]:
            committed_args.append(i)
            sources.append((carried._device_assignment, describe(i)))
    for i, s in enumerate(out_shardings):
        if s is not None:
            s = _concrete(s, f"out_shardings[{i}]")
            sources.append((s._device_assignment, f"out_shardings[{i}]"))
    for s, where in inner_shardings(jaxpr) if jaxpr is not None else ():
        if s._is_concrete:
            sources.append((s._device_assignment, where))
    mesh = concrete_mesh()
    if mesh is not None:
        sources.append((mesh._flat_devices_tuple, "jit's context mesh"))
    if sources:
        devices = sources[0][0]
        if any(d != devices for d, _ in sources):
            raise incompatible_devices_error(sources)
        committed = True
    else:
        committed = False
        devices = (default_device(),)
    if jaxpr is not None:
        _check_typed_outputs(jaxpr, len(devices))
    if not any(s is not None for s in in_shardings) and not committed_args:
        arg_shardings = (None,) * len(args)
    else:
        arg_shardings = tuple(_arg_sharding(x, in_shardings[i] if i < len(in_shardings)
                                            else None, describe(i)) if used[i] else None
                              for i, x in enumerate(args))
    reference = None if mesh is None else sharding_from_spec((), "the context mesh")
    placement = CallPlacement(devices, committed, arg_shardings, tuple(out_shardings),
                              reference)
    if in_formats or out_formats or layouts_signed():
        placement = _with_layouts(placement, args, jaxpr, in_formats, out_formats, used,
                                  describe)
    return placement


def _without_formats(shardings: Sequence) -> tuple[tuple, tuple]:
    """The shardings of `shardings` (a `Format` stands for its sharding), and the
    `Format`s among them by position (empty where there are none)."""
    if not any(isinstance(s, Format) for s in shardings):
        return tuple(shardings), ()
    return (tuple(s.sharding if isinstance(s, Format) else s for s in shardings),
            tuple(s if isinstance(s, Format) else None for s in shardings))


def _with_layouts(placement: CallPlacement, args: Sequence[Any], jaxpr: Jaxpr | None,
                  in_formats: tuple, out_formats: tuple, used: Sequence[bool],
                  describe) -> CallPlacement:
    """`placement` with the layouts its module asks for, as JAX resolves them: the one
    a `Format` gives (which a committed Array must have; the default one is no
    request), else a committed Array's own where it is not the default."""
    in_layouts = []
    for i, x in enumerate(args):
        given = in_formats[i] if i < len(in_formats) else None
        committed = used[i] and type(x) is Array and x._impl._committed
        if given is None or given.layout is None:
            in_layouts.append(nondefault_layout(x) if committed else None)
            continue
        if committed:
            _check_arg_layout(x, given.layout, describe(i))
        in_layouts.append(_asked(given, get_aval(x)))
    out_avals = [v.aval for v in jaxpr.outvars] if jaxpr is not None else [None] * len(
        out_formats)
    out_layouts = [None if f is None else _asked(f, aval)
                   for f, aval in zip(out_formats, out_avals)]
    if all(layout is None for layout in (*in_layouts, *out_layouts)):
        return placement
    sign_layouts()
    return placement._replace(in_layouts=tuple(in_layouts), out_layouts=tuple(out_layouts))


def _asked(format: Format, aval) -> Any:
    """What a module asks XLA for a value of `aval` in `format`: None for its
    backend's default layout."""
    layout = format.layout
    if isinstance(layout, Layout) and aval is not None and satisfies(
            default_layout(aval, format.sharding), layout):
        return None
    return layout


def _check_arg_layout(x: Array, given: Any, name: str) -> None:
    """JAX's ValueError for a committed Array not in the layout jit is given for it (a
    tiling of None compares the dimension order alone; `Layout.AUTO` none)."""
    actual = x.format.layout
    if actual is None or (isinstance(given, Layout) and satisfies(actual, given)):
        return
    hint = ("" if isinstance(given, Layout) else
            " jit is given Layout.AUTO for it, but the argument is an Array with a concrete "
            "layout: pass a ShapeDtypeStruct in its place to let the compiler choose.")
    raise ValueError("Layout passed to jit does not match the layout on the respective arg. "
                     f"Got jit layout: {given},\narg layout: {actual} for arg type: "
                     f"{str(x.aval).lstrip('~')} ({name}).{hint}")


def _check_typed_outputs(jaxpr: Jaxpr, n_devices: int) -> None:
    """JAX's ValueError for a computation whose results' types split them over a mesh
    of `Explicit` axes larger or smaller than the devices it runs on (a gradient, or a
    sampler with a NamedSharding `out_sharding`, called with no mesh in context on
    values that name no devices): it would give values typed as split that sit on
    one device."""
    for var in jaxpr.outvars:
        aval = var.aval
        mesh = getattr(getattr(aval, "typed_sharding", None), "mesh", None)
        if (mesh is not None and not mesh.empty and mesh.size != n_devices
                and len(mesh.explicit_axes) == len(mesh.axis_names)):
            raise ValueError(
                f"Length of device assignment {n_devices} is not equal to the size of the "
                f"mesh {mesh.size} of aval {aval.str_short()}. Please enter your `jit` "
                "into a mesh context via `plax.set_mesh`.")


def _concrete(s: Sharding, what: str) -> Sharding:
    if not s._is_concrete:
        raise ValueError(f"{what} is {s}, whose mesh has no devices; a jitted call needs "
                         "shardings on a concrete mesh here (or a bare PartitionSpec "
                         "under plax.set_mesh)")
    return s


def _carried_sharding(x: Any) -> Sharding | None:
    """The sharding an argument fixes: a committed Array's, or the one a
    `ShapeDtypeStruct` (an ahead-of-time argument) carries on concrete devices; else
    None."""
    if type(x) is Array:
        return x._sharding if x._impl._committed else None
    if (isinstance(x, ShapeDtypeStruct) and isinstance(x.sharding, Sharding)
            and x.sharding._is_concrete):
        return x.sharding
    return None


def _arg_sharding(x: Any, given: Sharding | None, name: str) -> Sharding | None:
    """The sharding the module states for an argument: the one given (which a committed
    Array or a ShapeDtypeStruct's sharding must already be), the argument's own, or None."""
    carried = _carried_sharding(x)
    if given is None:
        return carried
    if carried is not None:
        ndim = len(x.shape)
        if not (carried is given or carried == given or carried.is_equivalent_to(given, ndim)):
            raise ValueError(
                "Sharding passed to jit does not match the sharding on the respective arg. "
                f"Got jit sharding: {given},\narg sharding: {carried} for arg type: "
                f"{get_aval(x).str_short()} ({name})")
    return given


def single_device_sharding(device: Device, memory_kind: str | None = None
                           ) -> SingleDeviceSharding:
    """The (interned) sharding of an array on `device`: outputs carry it, and the next
    computation recognizes its inputs' placement by identity."""
    return SingleDeviceSharding(device, memory_kind=memory_kind)
