"""Running a Jaxpr on a device: choosing the device, lowering and compiling once per
device, and executing on the call's arguments.

The device comes from the arguments: committed Arrays decide it (they must agree),
otherwise the default device runs the computation. Outputs are committed exactly
when some input was. Lowerings are cached per (Jaxpr, donation, `keep_unused`,
platform, config) and executables per lowering and device, in bounded caches
that hold the Jaxpr and the lowering weakly: a dropped function frees its
lowering and its executables.
"""
from __future__ import annotations

import functools
import logging
from typing import Any, Sequence

import numpy as np

from plax.extend import config, dtypes
from plax.extend.core import ClosedJaxpr
from plax.extend.sharding import Device, Sharding
from plax_runtime import device_put as runtime_put, executable as runtime_executable, placement
from plax_runtime.array import Array
from plax_runtime.sharding_impls import SingleDeviceSharding
from plax_transforms import debug_nans
from plax_transforms.caches import BoundedCache, nbytes_of
from plax_transforms.lowering import LoweringResult, lower_jaxpr_to_module

logger = logging.getLogger(__name__)


# --- the device of a call --------------------------------------------------------

def _single_device(sharding: Sharding, what: str) -> Device:
    devices = sharding._device_assignment
    if len(devices) != 1:
        raise NotImplementedError(
            f"{what} is sharded over {len(devices)} devices; computations over several "
            "devices need plax-sharding")
    return devices[0]


_default_devices: dict[Any, Device] = {}


def default_device() -> Device:
    """The device of uncommitted computations (`jax_default_device`, else the default
    backend's first device), memoized per value of the option."""
    choice = config.default_device.value
    device = _default_devices.get(choice)
    if device is None:
        device = _default_devices[choice] = placement.default_device()
    return device


def device_sharding(device: Device) -> SingleDeviceSharding:
    """The (interned) sharding of an array on `device`: outputs carry it, and the next
    computation recognizes its inputs' placement by identity."""
    return SingleDeviceSharding(device)


def lowering_platform(device: Device) -> str:
    """The platform name lowering rules are registered under: the backend's (`cuda` for
    NVIDIA GPUs, whose devices call themselves `gpu`)."""
    return device.client.platform


def call_device(args: Sequence[Any], in_shardings: Sequence[Sharding | None] = (),
                ) -> tuple[Device, bool]:
    """The device a computation on `args` runs on, and whether its outputs are committed.

    Explicit shardings and committed Arrays must all name the same device; a
    conflict is a ValueError naming the devices and the arguments.
    """
    found: dict[Device, str] = {}  # device → the first argument that asks for it
    for i, sharding in enumerate(in_shardings):
        if sharding is not None:
            found.setdefault(_single_device(sharding, f"in_shardings[{i}]"),
                             f"in_shardings[{i}]")
    for i, x in enumerate(args):
        if type(x) is Array and x._impl._committed:
            found.setdefault(_single_device(x._sharding, f"argument {i}"), f"argument {i}")
    if not found:
        return default_device(), False
    if len(found) > 1:
        listing = ", ".join(f"{where} on {device}" for device, where in found.items())
        raise ValueError(f"Received incompatible devices for computation: {listing}. "
                         "Move the arrays to one device with device_put first.")
    return next(iter(found)), True


# --- compiled Jaxprs ----------------------------------------------------------------

class CompiledJaxpr:
    """A lowered Jaxpr compiled for one device, with its hoisted constants placed there.

    It keeps what calls need, not the lowering: the executables cache holds
    lowerings weakly.
    """

    def __init__(self, lowering: LoweringResult, device: Device):
        self.name = lowering.name
        self.device = device
        sharding = device_sharding(device)
        n_args = len(lowering.in_avals)
        self.executable = runtime_executable.compile(
            lowering.bytecode, [device],
            donated_args=[i for i, d in enumerate(lowering.donated_args) if d],
            in_shardings=[sharding] * n_args, out_avals=lowering.out_avals,
            out_shardings=[sharding] * len(lowering.out_avals), arg_names=lowering.arg_names)
        consts = lowering.const_args
        self.const_args = runtime_put.put_leaves(consts, [sharding] * len(consts),
                                                 [False] * len(consts), [None] * len(consts))
        self.kept_var_idx = lowering.kept_var_idx
        # float0 outputs (tangents of integers) are lowered as booleans; callers get
        # NumPy float0 zeros for them, as JAX returns.
        self._float0_shapes = {i: a.shape for i, a in enumerate(lowering.out_avals)
                               if getattr(a, "dtype", None) == dtypes.float0}
        # Executables hold about their module's size in code and metadata.
        self.nbytes = (len(lowering.bytecode) + nbytes_of(self.const_args)
                       + self.executable.generated_code_bytes())

    def caller_for(self, flat_args: Sequence[Any], committed: bool):
        """A function running this computation on later calls whose arguments look
        like `flat_args` (same signatures and placements): when they are all Arrays
        already where the executable wants them, it skips every check and move."""
        ex = self.executable
        if (not self.const_args and not self._float0_shapes
                and len(flat_args) == len(self.kept_var_idx)
                and ex.laid_out_as_expected(flat_args)):
            return functools.partial(ex.execute_placed, committed=committed)
        return functools.partial(self, committed=committed)

    def __call__(self, flat_args: Sequence[Any], committed: bool) -> list[Array]:
        """Run on the flat inputs of the Jaxpr (pruned ones are skipped)."""
        if not self.const_args and len(flat_args) == len(self.kept_var_idx):
            outs = self.executable.execute(flat_args, committed=committed)  # all kept
        else:
            args = [flat_args[i] for i in self.kept_var_idx]
            outs = self.executable.execute([*self.const_args, *args], committed=committed)
        for i, shape in self._float0_shapes.items():
            outs[i] = np.zeros(shape, dtypes.float0)
        return outs


_lowerings = BoundedCache("lowerings", max_entries=4096, max_bytes=512 << 20)
_compiled = BoundedCache("executables", max_entries=4096, max_bytes=1 << 30)


def lower_jaxpr(closed: ClosedJaxpr, name: str, *, platform: str,
                donated_invars: Sequence[bool], keep_unused: bool) -> LoweringResult:
    """`lower_jaxpr_to_module`, cached while `closed` lives, per options and config."""
    key = (id(closed), name, tuple(donated_invars), keep_unused, platform,
           config.jit_key_context())
    lowering = _lowerings.get(key)
    if lowering is None:
        lowering = lower_jaxpr_to_module(closed, name=name, platform=platform,
                                         donated_invars=donated_invars,
                                         keep_unused=keep_unused)
        _lowerings.put(key, lowering, nbytes=lowering.nbytes, owners=(closed,))
    return lowering


def compile_lowering(lowering: LoweringResult, device: Device) -> CompiledJaxpr:
    """`lowering` compiled for `device`, cached while `lowering` lives."""
    key = (id(lowering), device)
    compiled = _compiled.get(key)
    if compiled is None:
        level = logging.WARNING if (config.log_compiles.value
                                    or config.explain_cache_misses.value) else logging.DEBUG
        logger.log(level, "Compiling jit(%s) for %s with arguments %s", lowering.name, device,
                   ", ".join(a.str_short() for a in lowering.in_avals))
        compiled = CompiledJaxpr(lowering, device)
        _compiled.put(key, compiled, nbytes=compiled.nbytes, owners=(lowering,))
    return compiled


def compiled_for_call(closed: ClosedJaxpr, name: str, args: Sequence[Any], *,
                      donated_invars: Sequence[bool], keep_unused: bool,
                      in_shardings: Sequence[Sharding | None] = ()
                      ) -> tuple[CompiledJaxpr, bool]:
    """The executable running `closed` on `args`' device, and whether outputs are committed."""
    device, committed = call_device(args, in_shardings)
    lowering = lower_jaxpr(closed, name, platform=lowering_platform(device),
                           donated_invars=donated_invars, keep_unused=keep_unused)
    return compile_lowering(lowering, device), committed


def execute_jaxpr(closed: ClosedJaxpr, name: str, args: Sequence[Any], *,
                  donated_invars: Sequence[bool], keep_unused: bool,
                  in_shardings: Sequence[Sharding | None] = ()) -> list[Array]:
    """Compile `closed` (once) for the device `args` live on and run it."""
    compiled, committed = compiled_for_call(closed, name, args, donated_invars=donated_invars,
                                            keep_unused=keep_unused, in_shardings=in_shardings)
    call = functools.partial(compiled, committed=committed)
    if debug_nans.enabled():
        call = debug_nans.checked_jit(call, closed, name)
    return call(args)

