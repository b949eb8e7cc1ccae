"""Running a Jaxpr on devices: placing the call, lowering once per abstract layout,
compiling once per device assignment, and executing on the call's arguments.

`call_placement.place_call` decides the devices and the shardings the module
states. Lowerings are cached per (Jaxpr, donation, `keep_unused`, platform, config,
number of devices, and the *abstract* form of each stated sharding: mesh axis names
and sizes, memory kind), so two meshes of one shape on different devices share a
lowering; executables are cached per lowering and device assignment. Both caches
are bounded and hold the Jaxpr and the lowering weakly: a dropped function frees its
lowering and its executables. In front of them, `execute_jaxpr` (the eager call of a
Jaxpr: jitted functions met by eager transformations, eager shard_map) keeps a
prepared caller per Jaxpr, options, argument signature (placements included), config
and context mesh, as jit's fast path does for top-level calls. Outputs are committed
when the computation spans several devices or some input was committed.

With PGLE on (`jax_enable_pgle`), a `CompiledJaxpr` runs its first
`jax_pgle_profiling_runs` executions under the profiler (`plax_runtime.pgle`); the
call after them recompiles the module with the aggregated profile and swaps the new
executable in, for every holder of the `CompiledJaxpr` (the executables cache, AOT
`Compiled`s) and, through `ProfiledCaller`, for the fast-path entries that ran it.
"""
from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
import weakref
from typing import Any, Hashable, Sequence

import numpy as np

from plax.extend import config, dtypes
from plax.extend.core import ClosedJaxpr, register_cache
from plax.extend.monitoring import JAXPR_TO_MLIR_MODULE_EVENT, timed_event
from plax.extend.sharding import Device, Sharding, concrete_mesh
from plax_runtime import device_put as runtime_put, executable as runtime_executable
from plax_runtime import distributed_watch, gc_guard, pgle, transfer_guard
from plax_runtime.array import Array
from plax_runtime.sharding_impls import replicated_sharding
from plax_transforms import debug_nans, explain, key_reuse
from plax_runtime.caches import BoundedCache, nbytes_of
from plax_transforms.call_placement import (CallPlacement, default_device, inner_shardings,
                                            place_call, single_device_sharding)
from plax_transforms.lowering import LoweringResult, lower_jaxpr_to_module
from plax_transforms.signature import arg_signature, trace_context

logger = logging.getLogger(__name__)

__all__ = ["CallPlacement", "CompiledJaxpr", "ProfiledCaller", "abstract_layout",
           "compile_lowering", "compiled_for_call", "default_device", "device_sharding",
           "execute_jaxpr", "lower_jaxpr", "lower_module", "lowering_platform", "place_call"]

device_sharding = single_device_sharding


def lowering_platform(device: Device) -> str:
    """The platform name lowering rules are registered under: the backend's (`cuda` for
    NVIDIA GPUs, whose devices call themselves `gpu`)."""
    return device.client.platform


def _log_level() -> int:
    return (logging.WARNING if config.log_compiles.value or config.explain_cache_misses.value
            else logging.DEBUG)


# --- compiled Jaxprs ----------------------------------------------------------------

def check_execution_allowed(name: str) -> None:
    """Raises under `jax_no_execution`. It is part of the trace context, so fast-path
    entries made without it are never used with it: checking where they are made
    and on slow calls covers every execution."""
    if config.no_execution.value:
        raise RuntimeError(f"plax tried to execute function jit({name}), but the "
                           "no_execution config option is set")


class CompiledJaxpr:
    """A lowered Jaxpr compiled for one device assignment, with its hoisted constants
    placed there (replicated).

    It keeps what calls need, not the lowering: the executables cache holds
    lowerings weakly. `compiler_options` are XLA options as (name, value) pairs, and
    `fdo_profile` (bytes) among them the compiler's profile; `profile` lets PGLE
    profile the module when it is on.
    """

    def __init__(self, lowering: LoweringResult, placement: CallPlacement,
                 compiler_options: tuple = (), profile: bool = False):
        self.name = lowering.name
        options = dict(compiler_options)
        fdo_profile = options.pop("fdo_profile", None)
        if fdo_profile is not None and not isinstance(fdo_profile, bytes):
            raise TypeError(f"compiler_options['fdo_profile'] of jit({lowering.name}) must "
                            "be bytes (a serialized ProfiledInstructionsProto), got "
                            f"{type(fdo_profile).__name__}")
        auto_pgle = profile and fdo_profile is None and pgle.enabled()
        # what the executable calls back into: custom-call targets and host callbacks
        self.keepalives = (lowering.keepalives, lowering.host_callbacks)
        self.devices = devices = placement.devices
        self.device = devices[0]
        n_consts = len(lowering.const_args)
        if len(devices) == 1:
            sharding = single_device_sharding(devices[0])
            in_shardings = [_on_device(s, devices[0]) for s in lowering.arg_shardings]
            out_shardings = _one_device_outputs(lowering, placement)
            const_sharding, build = sharding, {}
            like: tuple[Sharding, ...] = ()
            shared: tuple[Sharding, ...] = ()
        else:
            kept = [placement.in_shardings[i] for i in lowering.kept_var_idx]
            const_sharding = replicated_sharding(devices)
            in_shardings = [const_sharding] * n_consts + kept
            out_shardings = list(placement.out_shardings or [None] * len(lowering.out_avals))
            inner = [s._on_devices(devices) for s, _ in
                     (inner_shardings(lowering.jaxpr) if lowering.jaxpr is not None else ())]
            typed = [a.typed_sharding._on_devices(devices) for a in lowering.out_avals
                     if getattr(a, "typed_sharding", None) is not None]  # explicit axes first
            like = tuple(dict.fromkeys(s for s in (*typed, *kept, *out_shardings, *inner,
                                                   placement.reference) if s is not None))
            # as in JAX, a result laid out as its type, or as the first argument, is
            # given that sharding itself (P('x', None) stays so spelled); others are
            # spelled from XLA's layout (P('x',))
            shared = tuple(s for s in (*typed, *kept[:1]) if s is not None)
            build = dict(
                use_shardy_partitioner=lowering.shardy,
                allow_spmd_sharding_propagation_to_parameters=[s is None for s in in_shardings],
                allow_spmd_sharding_propagation_to_output=[s is None for s in out_shardings])
        # jaxlib takes host callbacks, and compiles for a topology, only with a module
        # object
        module = (lowering.module if lowering.host_callbacks
                  or runtime_executable.is_compile_only(devices[0].client)
                  else lowering.bytecode)
        compile_module = functools.partial(
            _compile_as, (devices, like), bool(lowering.keepalives or lowering.on_compile),
            functools.partial(
                runtime_executable.compile, module, devices,
                donated_args=[i for i, d in enumerate(lowering.donated_args) if d],
                compile_options_overrides=options, build_options=build,
                in_shardings=in_shardings,
                out_avals=lowering.out_avals, out_shardings=out_shardings,
                arg_names=lowering.arg_names, sharding_like=like, shared_shardings=shared,
                name=f"jit({lowering.name})", effect_tokens=lowering.ordered_effects,
                host_callbacks=lowering.host_callbacks,
                use_persistent_cache=not lowering.keepalives))
        self.executable = compile_module(fdo_profile=fdo_profile, pgle=auto_pgle,
                                         hooks=lowering.on_compile)
        self._pgle = None  # while profiled: the runs so far and how to compile again
        if auto_pgle and self.executable.runnable and self.executable.needs_profiling:
            loaded = self.executable.runtime_executable()
            self._pgle = _Profiling(pgle.ProfileRunner(
                config.pgle_profiling_runs.value, pgle.percentile(),
                loaded.hlo_modules()[0].name, f"jit({self.name})"), compile_module)
        self._attach(lowering.const_args, const_sharding, lowering.kept_var_idx,
                     lowering.out_avals)
        # Executables hold about their module's size in code and metadata.
        self.nbytes = (len(lowering.bytecode) + nbytes_of(self.const_args)
                       + self.executable.generated_code_bytes())

    def _attach(self, consts: Sequence[Any], const_sharding: Sharding,
                kept_var_idx: Sequence[int], out_avals: Sequence[Any]) -> None:
        """What calls need besides the executable: its constants placed, the inputs it
        keeps, and its float0 outputs."""
        if not self.executable.runnable:  # compiled for a topology: nothing to place on
            self.const_args = [np.asarray(c) for c in consts]
        else:
            with transfer_guard.internal():  # the computation's constants, not the user's
                self.const_args = runtime_put.put_leaves(
                    consts, [const_sharding] * len(consts), [False] * len(consts),
                    [None] * len(consts))
        self.kept_var_idx = tuple(kept_var_idx)
        # float0 outputs (tangents of integers) are lowered as booleans; callers get
        # NumPy float0 zeros for them, as JAX returns.
        self._float0_shapes = {i: a.shape for i, a in enumerate(out_avals)
                               if getattr(a, "dtype", None) == dtypes.float0}

    def serialize(self) -> dict[str, Any]:
        """What `deserialize` needs (constants as NumPy values; shardings and the
        executable's state hold devices: pickle it with a device-aware pickler)."""
        if any(self.keepalives):
            raise ValueError(f"jit({self.name}) calls back into Python (custom-call "
                             "targets or host callbacks) and cannot be serialized")
        return dict(name=self.name, executable=self.executable.serialize(),
                    consts=[np.asarray(c) for c in self.const_args],
                    kept_var_idx=self.kept_var_idx,
                    out_avals=self.executable.out_avals)

    @classmethod
    def deserialize(cls, state: dict[str, Any]) -> CompiledJaxpr:
        """The computation `serialize` described, loaded onto the devices its state
        names."""
        compiled = cls.__new__(cls)
        compiled.name, compiled.keepalives = state["name"], ((), ())
        compiled._pgle = None  # a serialized executable is run as it was compiled
        compiled.executable = runtime_executable.deserialize(state["executable"])
        compiled.devices = devices = compiled.executable.devices
        compiled.device = devices[0]
        compiled._attach(state["consts"], replicated_sharding(devices), state["kept_var_idx"],
                         state["out_avals"])
        compiled.nbytes = (nbytes_of(compiled.const_args)
                           + compiled.executable.generated_code_bytes())
        return compiled

    @property
    def in_shardings(self) -> tuple[Sharding, ...]:
        """Per flat input that the module takes (after the hoisted constants)."""
        return self.executable.in_shardings[len(self.const_args):]

    @property
    def out_shardings(self) -> tuple[Sharding, ...]:
        return self.executable.out_shardings

    def caller_for(self, flat_args: Sequence[Any], committed: bool):
        """A function running this computation on later calls whose arguments look
        like `flat_args` (same signatures and placements): when its Arrays are
        already where the executable wants them, one C++ call that skips every check
        and move (host values are placed as they come). While PGLE profiles the
        module, a `ProfiledCaller` around it."""
        check_execution_allowed(self.name)
        kept = [flat_args[i] for i in self.kept_var_idx]
        # The C++ caller makes its output Arrays itself, unwatched by the gc guard; in a
        # multi-process run, a failed run must reach Python (distributed_watch names a
        # lost peer); and it deletes every donated Array, where XLA may leave some.
        direct = (not (self._float0_shapes or self.executable.effectful or gc_guard.watching
                       or distributed_watch.current() is not None
                       or self.executable.donates_by_choice)
                  and self.executable.takes_as_is(kept, offset=len(self.const_args)))
        if self._pgle is not None:
            return ProfiledCaller(self, committed, len(flat_args), direct)
        return self._caller(committed, len(flat_args), direct)

    def _caller(self, committed: bool, num_flat: int, direct: bool):
        if direct:
            return self.executable.executor(committed=committed, num_flat=num_flat,
                                            kept=self.kept_var_idx, consts=self.const_args)
        return functools.partial(self._execute, committed=committed)

    def __call__(self, flat_args: Sequence[Any], committed: bool) -> list[Array]:
        """Run on the flat inputs of the Jaxpr (pruned ones are skipped)."""
        check_execution_allowed(self.name)
        state = self._profiling()
        if state is not None:
            return state.runner.run(lambda: self._execute(flat_args, committed), _block)
        return self._execute(flat_args, committed)

    def _profiling(self) -> _Profiling | None:
        """PGLE's state while it still profiles this module, else None: after its
        profiling runs, the module is recompiled with their profile first."""
        state = self._pgle
        if state is not None and state.runner.done:
            self._recompile_with_profile(state)
            state = self._pgle
        return state

    def _recompile_with_profile(self, state: _Profiling) -> None:
        with state.lock:
            if self._pgle is not state:  # another thread did it
                return
            runner = state.runner
            profile = runner.aggregate()
            if config.explain_cache_misses.value:
                explain.explain_pgle_recompile(self.name, len(runner.profiles),
                                               runner.percentile, profile)
            start = time.monotonic()
            executable = state.compile_module(fdo_profile=profile, pgle=True)
            pgle.record_recompile(runner.fun_name, time.monotonic() - start,
                                  executable.fdo_profile)
            self.executable = executable
            self._pgle = None

    def _execute(self, flat_args: Sequence[Any], committed: bool) -> list[Array]:
        if not self.const_args and len(flat_args) == len(self.kept_var_idx):
            outs = self.executable.execute(flat_args, committed=committed)  # all kept
        else:
            args = [flat_args[i] for i in self.kept_var_idx]
            outs = self.executable.execute([*self.const_args, *args], committed=committed)
        for i, shape in self._float0_shapes.items():
            outs[i] = np.zeros(shape, dtypes.float0)
        return outs


class _Profiling:
    """A module PGLE profiles: its runner and the compile to run again with the
    profile (`compile_module(fdo_profile=..., pgle=True)`)."""

    def __init__(self, runner: pgle.ProfileRunner, compile_module):
        self.runner = runner
        self.compile_module = compile_module
        self.lock = threading.Lock()


def _compile_as(target: tuple, serialized: bool, compile_module, *, hooks=(), **options):
    """`compile_module(**options)`, then `hooks`, with `target` as the compile in
    progress (`compiling_for`). XLA may call back into Python from its own threads
    during a compile, and those callbacks read the target from a global: compiles of
    modules with callbacks (`serialized`) run one at a time."""
    with _compiling_lock if serialized else _no_lock:
        previous = _compiling["target"]
        _compiling["target"] = target
        try:
            executable = compile_module(**options)
            for hook in hooks:
                hook()
            return executable
        finally:
            _compiling["target"] = previous


def _block(outs: Sequence[Any]) -> None:
    """Waits for a profiled run's outputs (the run ends when they are computed)."""
    for out in outs:
        if isinstance(out, Array):
            out.block_until_ready()


class ProfiledCaller:
    """The fast-path runner of a call while PGLE profiles its module: each run goes
    through the profiler until the runs are done; the call after them recompiles the
    module, and from then on this caller runs what `caller_for` gives for the new
    executable and puts that in the fast-path entries that hold it (`held_by`), so
    they call the executable directly again."""

    def __init__(self, compiled: CompiledJaxpr, committed: bool, num_flat: int,
                 direct: bool):
        self._compiled = compiled
        self._committed = committed
        self._num_flat = num_flat
        self._direct = direct
        self._in_shardings = compiled.executable.in_shardings
        self._profiled = compiled._caller(committed, num_flat, direct)
        self._after = None  # the runner for the recompiled executable
        self._holders: list[tuple[weakref.ref, Hashable, Any]] = []

    def held_by(self, jitted: Any, key: Hashable, out_tree: Any) -> None:
        """Notes that the fast-path cache `jitted` holds this caller under `key`."""
        self._holders.append((weakref.ref(jitted), key, out_tree))

    def __call__(self, flat: Sequence[Any]) -> list[Array]:
        if self._after is not None:
            return self._after(flat)
        compiled = self._compiled
        state = compiled._profiling()
        if state is not None:
            return state.runner.run(lambda: self._profiled(flat), _block)
        self._after = compiled._caller(
            self._committed, self._num_flat,
            self._direct and compiled.executable.in_shardings == self._in_shardings)
        for ref, key, out_tree in self._holders:
            jitted = ref()
            entry = None if jitted is None else jitted._fast_entries().get(key)
            if entry is not None and entry[0] is self:
                jitted._fast_insert(key, self._after, out_tree)
        self._holders.clear()
        return self._after(flat)


# The compile in progress. Compiles are serialized by the lock, so that callbacks XLA
# makes from its own threads during one (custom-call partitioners) can read it.
_compiling: dict[str, Any] = {"target": None}
_compiling_lock = threading.RLock()
_no_lock = contextlib.nullcontext()


def compiling_for() -> tuple[tuple[Device, ...], tuple[Sharding, ...]]:
    """While a lowering is compiled: its devices and the shardings whose kind the
    shardings XLA chooses should take (what custom-call callbacks describe them by)."""
    target = _compiling["target"]
    if target is None:
        raise RuntimeError("compiling_for() is only available while plax compiles")
    return target


def _on_device(sharding: Sharding | None, device: Device) -> Sharding:
    """The sharding on `device` in the memory kind `sharding` states (default: device)."""
    kind = None if sharding is None else sharding.memory_kind
    return single_device_sharding(device, None if kind == "device" else kind)


def _one_device_outputs(lowering: LoweringResult, placement: CallPlacement) -> list[Sharding]:
    """The shardings of a one-device computation's outputs, as JAX's: the one stated
    for an output, else one of the kind of the first stated input's (or output's)
    sharding where that kind can say it (a NamedSharding on a one-device mesh stays
    one), else the device's; in the memory kind the module states."""
    device = placement.devices[0]
    stated = placement.out_shardings or (None,) * len(lowering.out_avals)
    kept = [placement.in_shardings[i] for i in lowering.kept_var_idx]
    model = next((s for s in (*kept, *stated) if s is not None), None)
    outs = []
    for s, in_module, aval in zip(stated, lowering.result_shardings, lowering.out_avals):
        if s is None:
            s = _on_device(in_module, device)
            ndim = len(getattr(aval, "shape", ()))
            like = model and model._like_from_xla(s._to_xla_hlo_sharding(ndim), ndim)
            s = s if like is None else like.with_memory_kind(s.memory_kind)
        outs.append(s)
    return outs


_lowerings = BoundedCache("lowerings", max_entries=4096, max_bytes=512 << 20)
_compiled = BoundedCache("executables", max_entries=4096, max_bytes=1 << 30)
register_cache(_lowerings.clear)
register_cache(_compiled.clear)


def abstract_layout(sharding: Sharding | None, ndim: int, num_devices: int) -> Hashable:
    """What a stated sharding contributes to a lowering's cache key: its memory kind
    and its layout in Shardy's device-free terms (on one device, the memory kind alone)."""
    if sharding is None:
        return None
    if num_devices == 1:
        return None if sharding.memory_kind in (None, "device") else sharding.memory_kind
    return sharding.memory_kind, sharding._to_sdy_sharding(ndim)


def lower_jaxpr(closed: ClosedJaxpr, name: str, *, platform: str,
                donated_invars: Sequence[bool], keep_unused: bool,
                placement: CallPlacement | None = None,
                aliases: Sequence[int | None] = ()) -> LoweringResult:
    """`lower_jaxpr_to_module` for a call placed as `placement` (default: one
    device, nothing stated), cached while `closed` lives, per options, config and
    the abstract layouts of the placement."""
    num_devices = 1 if placement is None else len(placement.devices)
    ins = placement.in_shardings if placement else (None,) * len(closed.jaxpr.invars)
    outs = placement.out_shardings if placement else (None,) * len(closed.jaxpr.outvars)
    if not any(s is not None for s in outs):
        outs = (None,) * len(closed.jaxpr.outvars)
    layout = (tuple(abstract_layout(s, a.ndim, num_devices)
                    for s, a in zip(ins, closed.in_avals)),
              tuple(abstract_layout(s, a.ndim, num_devices)
                    for s, a in zip(outs, closed.out_avals)))
    if placement is not None and (placement.in_layouts or placement.out_layouts):
        layout += (placement.in_layouts, placement.out_layouts)
    key = (id(closed), name, (tuple(donated_invars), tuple(aliases)), keep_unused, platform,
           config.jit_key_context(), num_devices, layout)
    lowering = _lowerings.get(key)
    if lowering is None:
        if config.explain_cache_misses.value:
            explain.explain_lowering_miss(name, closed, key, _lowerings.keys())
        lowering = lower_module(closed, name, platform=platform,
                                donated_invars=donated_invars, keep_unused=keep_unused,
                                num_partitions=num_devices, in_shardings=ins,
                                out_shardings=outs, aliases=aliases,
                                in_layouts=placement.in_layouts if placement else (),
                                out_layouts=placement.out_layouts if placement else ())
        _lowerings.put(key, lowering, nbytes=lowering.nbytes, owners=(closed,))
    return lowering


def lower_module(closed: ClosedJaxpr, name: str, **options) -> LoweringResult:
    """`lower_jaxpr_to_module`, timed as the `jaxpr_to_mlir_module` event."""
    with timed_event(JAXPR_TO_MLIR_MODULE_EVENT, f"jit({name})",
                     "Finished jaxpr to MLIR module conversion {fun_name} in "
                     "{elapsed_time:.9f} sec", logger, _log_level):
        return lower_jaxpr_to_module(closed, name=name, **options)


def compile_lowering(lowering: LoweringResult, placement: CallPlacement | Device,
                     compiler_options: tuple = ()) -> CompiledJaxpr:
    """`lowering` compiled for the placement's device assignment (or one device),
    cached while `lowering` lives; `compiler_options` are sorted (name, value) pairs
    of XLA options."""
    if isinstance(placement, Device):
        placement = CallPlacement((placement,), False, (), ())
    key = (id(lowering), placement.devices, compiler_options)
    compiled = _compiled.get(key)
    if compiled is None:
        if config.explain_cache_misses.value:
            explain.explain_compile_miss(lowering.name, id(lowering), placement.devices,
                                         _compiled.keys())
        logger.log(_log_level(), "Compiling jit(%s) for devices %s with arguments %s",
                   lowering.name, [d.id for d in placement.devices],
                   ", ".join(a.str_short() for a in lowering.in_avals))
        compiled = CompiledJaxpr(lowering, placement, compiler_options, profile=True)
        _compiled.put(key, compiled, nbytes=compiled.nbytes, owners=(lowering,))
    return compiled


def compiled_for_call(closed: ClosedJaxpr, name: str, args: Sequence[Any], *,
                      donated_invars: Sequence[bool], keep_unused: bool,
                      in_shardings: Sequence[Sharding | None] = (),
                      out_shardings: Sequence[Sharding | None] = (),
                      compiler_options: tuple = (),
                      describe=None, aliases: Sequence[int | None] = ()
                      ) -> tuple[CompiledJaxpr, bool]:
    """The executable running `closed` on `args`' devices, and whether outputs are
    committed; `compiler_options` are XLA options as sorted (name, value) pairs."""
    placement = place_call(args, in_shardings, out_shardings, jaxpr=closed.jaxpr,
                           keep_unused=keep_unused, aliases=aliases, describe=describe)
    lowering = lower_jaxpr(closed, name, platform=lowering_platform(placement.devices[0]),
                           donated_invars=donated_invars, keep_unused=keep_unused,
                           placement=placement, aliases=aliases)
    return compile_lowering(lowering, placement, compiler_options), placement.committed


COMPILE_SETTINGS = (config.optimization_level, config.memory_fitting_level,
                    config.exec_time_optimization_effort, config.memory_fitting_effort,
                    config.disable_most_optimizations, config.compiler_enable_remat_pass)
"""The options that change compiled code but are not in the trace context (XLA's
compiler settings): with it, the config a prepared call depends on."""

# `execute_jaxpr`'s prepared callers, by (Jaxpr, options, argument signature, trace
# context, compiler settings, context mesh). A caller holds its executable: both caches
# count it.
_callers = BoundedCache("jaxpr callers", max_entries=4096, max_bytes=1 << 30)
register_cache(_callers.clear)


def execute_jaxpr(closed: ClosedJaxpr, name: str, args: Sequence[Any], *,
                  donated_invars: Sequence[bool], keep_unused: bool,
                  in_shardings: Sequence[Sharding | None] = (),
                  out_shardings: Sequence[Sharding | None] = ()) -> list[Array]:
    """Compile `closed` (once) for the devices `args` live on and run it.

    Eager transformations call this for every jitted call they meet (an eager
    `grad` of `jnp` functions, each step): a call whose arguments look like an
    earlier one's (same signatures and placements, same options and config) runs
    the caller prepared then, as jit's own fast path does for top-level calls."""
    try:
        key = (id(closed), name, tuple(donated_invars), keep_unused, tuple(in_shardings),
               tuple(out_shardings), arg_signature(args), trace_context(),
               tuple([state.value for state in COMPILE_SETTINGS]), concrete_mesh())
        call = _callers.get(key)
    except TypeError:  # an argument or sharding the key cannot hold: no caching
        key, call = None, None
    if call is None:
        compiled, committed = compiled_for_call(
            closed, name, args, donated_invars=donated_invars, keep_unused=keep_unused,
            in_shardings=in_shardings, out_shardings=out_shardings)
        call = compiled.caller_for(args, committed)
        if key is not None:
            _callers.put(key, call, nbytes=compiled.nbytes, owners=(closed,))
    if debug_nans.enabled():
        call = debug_nans.checked_jit(call, closed, name)
    if key_reuse.enabled():
        call = key_reuse.checked_jit(call, closed)
    return call(args)
