"""`plax.experimental.serialize_executable`: a compiled function as bytes, loaded
again without compiling, in this process or another with the same backend.

`serialize(compiled)` gives `(payload, in_tree, out_tree)`; the trees are returned
apart because pytree definitions do not pickle. The payload is XLA's serialized
executable with what the call needs around it: the argument and output types and
names, shardings, donations and constants (as NumPy values). Devices are written
by id, so `deserialize_and_load` can put the executable back on the devices of
those ids, or on `execution_devices` given in the same order.

Loading a payload runs the code it holds: never load one you did not make.
"""
from __future__ import annotations

import io
import pickle
from typing import Any, Sequence

from plax.extend.sharding import Device
from plax_runtime.backends import get_backend
from plax_transforms.executing import CompiledJaxpr
from plax_transforms.stages import Compiled, StagedCall

__all__ = ["deserialize_and_load", "serialize"]

_FORMAT = "plax-serialized-executable-1"


class _DevicesById(pickle.Pickler):
    def persistent_id(self, obj):
        return ("device", obj.id) if isinstance(obj, Device) else None


class _DevicesFromIds(pickle.Unpickler):
    def __init__(self, file, devices: dict[int, Device]):
        super().__init__(file)
        self._devices = devices

    def persistent_load(self, pid):
        return self._devices[pid[1]]


def serialize(compiled: Compiled) -> tuple[bytes, Any, Any]:
    """`(payload, in_tree, out_tree)` of a `jit(f).lower(...).compile()`."""
    if not isinstance(compiled, Compiled):
        raise TypeError(f"serialize takes a Compiled (jit(f).lower(...).compile()), got "
                        f"{type(compiled).__name__}")
    call = compiled._call
    if call.ref_plan is not None or call.leading:
        raise ValueError("can't serialize a compiled function that uses mutable array "
                         "references or closes over traced values")
    executable = compiled._compiled
    state = dict(compiled=executable.serialize(), committed=compiled._committed,
                 fun_name=call.fun_name, donated=call.donated, arg_avals=call.arg_avals,
                 arg_names=call.arg_names, out_avals=call.out_avals)
    with io.BytesIO() as file:
        _DevicesById(file).dump(state)
        body = file.getvalue()
    payload = pickle.dumps((_FORMAT, executable.devices[0].platform,
                            [d.id for d in executable.devices], body))
    return payload, call.in_tree, call.out_tree


def deserialize_and_load(serialized: bytes, in_tree, out_tree, backend=None,
                         execution_devices: Sequence[Device] | None = None) -> Compiled:
    """The `Compiled` that `serialize` gave `serialized` for, loaded onto the devices it
    was compiled for (by id) in `backend` (a name or a client; default: the default
    backend), or onto `execution_devices`, one per original device, in their order."""
    try:
        fmt, platform, ids, body = pickle.loads(serialized)
    except Exception as e:  # noqa: BLE001 - anything unreadable is the same error
        raise ValueError(f"deserialize_and_load: not a serialized plax executable "
                         f"({type(e).__name__}: {e})") from None
    if fmt != _FORMAT:
        raise ValueError(f"deserialize_and_load: not a serialized plax executable "
                         f"(format {fmt!r})")
    client = get_backend(backend)
    if execution_devices is None:
        by_id = {d.id: d for d in client.devices()}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ValueError(f"deserialize_and_load: the executable was compiled for "
                             f"devices {ids}, and the {client.platform} backend has no "
                             f"device with id {missing[0]}")
        targets = [by_id[i] for i in ids]
    else:
        targets = list(execution_devices)
        if len(targets) != len(ids):
            raise ValueError(f"deserialize_and_load: the executable runs on {len(ids)} "
                             f"devices, got {len(targets)} execution_devices")
        foreign = [d for d in targets if d.client != client]
        if foreign:
            raise ValueError(f"Execution devices belong to a client other than `backend`. "
                             f"Got backend client {client.platform} and execution device "
                             f"{foreign[0]} of {foreign[0].client.platform}")
    if client.platform != platform:
        raise ValueError(f"deserialize_and_load: the executable was compiled for "
                         f"{platform}, not for the {client.platform} backend")
    with io.BytesIO(body) as file:
        state = _DevicesFromIds(file, dict(zip(ids, targets))).load()
    call = StagedCall.signature_only(in_tree, out_tree, state["donated"], state["fun_name"],
                                     state["arg_avals"], state["arg_names"],
                                     state["out_avals"])
    if call.in_tree.num_leaves != len(call.arg_avals):
        raise ValueError(f"deserialize_and_load: in_tree has {in_tree.num_leaves} leaves "
                         f"but the executable takes {len(call.arg_avals)} arguments")
    return Compiled(CompiledJaxpr.deserialize(state["compiled"]), call, state["committed"])
