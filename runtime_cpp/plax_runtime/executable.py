"""Compiling StableHLO modules for a device assignment, and running them on Arrays.

`compile` builds jaxlib `CompileOptions` and calls `Client.compile_and_load`; an
executable is shared by every compile of the same (module digest, devices, options,
FDO profile, metadata), so an identical module is compiled once per process (a
function redefined in a loop or a notebook cell finds its executable here). The cache
is bounded by entries and bytes like plax-transforms' caches. `Executable.execute`
checks and places the arguments, runs `execute_sharded`, and wraps the outputs via
`array_result_handler`s built once per executable.

A module with side effects takes and returns, ahead of its other arguments and
results, one token per ordered effect (`effect_tokens`): each run is given the token
the previous run of that effect on the same devices left (so runs keep their
order) and leaves its own; every effectful run also records its runtime token, so
`effects.effects_barrier()` can wait for it. Python `host_callbacks` that the
module's custom calls call by index are handed to the compiler with it.

Callers compiling the same key at once wait for one compile (`_Pending`) rather than
each compiling it.

Below the in-process cache sits the optional persistent one (`persistent_cache`):
with a cache directory set, an executable another process compiled is loaded from
disk instead of compiled.

Compiles for automatic PGLE (`pgle=True`, see `pgle`) know two executables of a
module: the one to profile and the one compiled with the profile. The profiled one
is remembered per module in this process and stored in the persistent cache under
the module's key with a stand-in for the profile, so a later compile of the module
(here, or in a process with a warm cache) gets it without profiling again.
"""
from __future__ import annotations

import functools
import hashlib
import io
import logging
import os
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax, xla_client as xc

from plax.extend import config, mlir
from plax.extend.core import (AbstractToken, ShapedArray, StagingTrace, Token, Tracer,
                              current_trace, physical_aval, register_cache)
from plax.extend.dtypes import ExtendedDType
from plax.extend.mlir import ir, make_ir_context, mu
from plax.extend.monitoring import BACKEND_COMPILE_EVENT, timed_event
from plax.extend.sharding import Device, Sharding
from plax.extend.tree_util import tree_flatten, tree_unflatten
from plax_runtime import (_fastpath, distributed_watch, persistent_cache, thread_guard,
                          transfer_guard)
from plax_runtime import pgle as pgle_module
from plax_runtime.array import Array
from plax_runtime.caches import BoundedCache
from plax_runtime.device_put import device_put, put_leaves
from plax_runtime.effects import runtime_tokens
from plax_runtime.layouts import (AUTO, Format, Layout, layouts_signed, satisfies,
                                  sign_layouts)
from plax_runtime.placement import PreparedPut
from plax_runtime.sharding_impls import replicated_sharding, sharding_from_xla

logger = logging.getLogger(__name__)

_cache = BoundedCache("compiled modules", max_entries=512, max_bytes=512 << 20)
_cache_lock = threading.Lock()
# Where the profile of a PGLE-optimized executable loaded from the persistent cache
# stands in its keys (the cache stores the executable, not the profile).
PGLE_PROFILED = b"plax: PGLE-optimized"
_in_flight: dict[tuple, _Pending] = {}  # the compiles running now, by key

_spmd_in_flight: list = []  # the outputs of the last SPMD program started on CPU
_TOKEN_AVAL = ShapedArray((0,), np.dtype(bool))  # how a token travels between runs


def _wait_for_spmd_in_flight() -> None:
    pending = [x for x in _spmd_in_flight if not x.is_deleted()]
    _spmd_in_flight.clear()
    if pending:
        xc.batched_block_until_ready(pending)


def _record_spmd_in_flight(outs: list) -> None:
    _spmd_in_flight[:] = outs


def _before_run(multi_process: bool, serialized: bool):
    """What must run before each execution (None if nothing): the thread guard's check
    for a program spanning processes, the wait for the SPMD program in flight."""
    if multi_process and serialized:
        return lambda: (thread_guard.check(), _wait_for_spmd_in_flight())
    if multi_process:
        return thread_guard.check
    return _wait_for_spmd_in_flight if serialized else None


class Executable:
    """A compiled module loaded on its devices; `execute` runs it on plax Arrays.

    One compiled for the compile-only devices of a topology holds an unloaded XLA
    executable: it can be inspected and serialized (to be loaded where those devices
    are), not run.
    """

    def __init__(self, loaded: xc.LoadedExecutable | xc.Executable, devices: tuple[Device, ...],
                 in_shardings: tuple[Sharding, ...], out_avals: tuple[ShapedArray, ...],
                 out_shardings: tuple[Sharding, ...], donated_args: tuple[int, ...],
                 arg_names: tuple[str, ...] | None, effect_tokens: tuple = (),
                 host_callbacks: tuple = (), compile_options: bytes = b""):
        self._loaded = loaded
        self._compile_options = compile_options  # serialized, to load it again
        # The FDO profile it was compiled with (PGLE_PROFILED when loaded as a module's
        # PGLE-optimized executable from the persistent cache), else None.
        self.fdo_profile: bytes | None = None
        self._identity: tuple = ()  # what `compile` knows the module by, its profile aside
        self.devices = devices
        self.in_shardings = in_shardings
        self.out_avals = out_avals
        self.out_shardings = out_shardings
        self.donated_args = donated_args
        self._arg_names = arg_names
        self._layouts: list | None = None  # of the arguments, read when first needed
        self._device_set = frozenset(devices)
        self._multi_device = len(devices) > 1
        # XLA's CPU runtime can deadlock when several programs with collectives over
        # the same devices are in flight at once (their participants wait for each
        # other on too few threads; JAX hangs the same way): on CPU, one SPMD program
        # runs at a time.
        self._serialized = self._multi_device and devices[0].platform == "cpu"
        self._before_run = _before_run(thread_guard.spans_processes(devices), self._serialized)
        self._out_types = tuple(zip(out_avals, out_shardings))
        # What the buffers hold (a token result: an empty bool array, as between runs).
        physical = [_TOKEN_AVAL if isinstance(aval, AbstractToken) else physical_aval(aval)
                    for aval in out_avals]
        self._token_values = any(isinstance(a, AbstractToken) for a in out_avals)
        self._handlers = {c: [xc.array_result_handler(aval, s._to_jaxlib_sharding(aval.ndim),
                                                      c, _skip_checks=True)
                              for aval, s in zip(physical, out_shardings)]
                          for c in (False, True)}
        self.effect_tokens = effect_tokens
        self._host_callbacks = host_callbacks  # alive while the executable is
        self._effectful = bool(effect_tokens or host_callbacks)
        if effect_tokens:
            self._token_sharding = replicated_sharding(devices)
            self._token_handlers = [xc.array_result_handler(
                _TOKEN_AVAL, self._token_sharding._to_jaxlib_sharding(1), True,
                _skip_checks=True)] * len(effect_tokens)

    def _arg_label(self, i: int) -> str:
        name = self._arg_names[i] if self._arg_names is not None else ""
        return f"argument {i} ({name})" if name else f"argument {i}"

    def execute(self, args: Sequence[Any], *, committed: bool | None = None) -> list[Array]:
        """Runs the executable. Arguments are Arrays (or host values, placed here).

        Uncommitted Arrays elsewhere are moved to where the executable wants them;
        committed ones on other devices are an error. Donated arguments are deleted.
        Outputs are committed when `committed` says so, else when the executable spans
        several devices or any argument was committed.
        """
        self._check_runnable()
        if len(args) != len(self.in_shardings):
            raise TypeError(f"the executable takes {len(self.in_shardings)} arguments, "
                            f"got {len(args)}")
        in_place = self._impls_in_place(args)
        if in_place is None:
            impls, any_committed = self._place(args)
        else:
            impls, any_committed = in_place
        if layouts_signed():
            self._match_layouts(args, impls)
        if self.donated_args:
            self._check_donated_once(args)
        results = self._run(impls, args)
        if committed is None:
            committed = self._multi_device or any_committed
        outs = results.consume_with_handlers(self._handlers[committed])
        if self._serialized:
            _spmd_in_flight[:] = outs
        for i in self.donated_args:
            # an Array whose own buffers the runtime kept was a buffer donor XLA did not
            # use (a program over several devices): it stays alive, as in JAX
            x = args[i]
            if isinstance(x, Array) and not x.is_deleted() and not (
                    self._multi_device and impls[i] is x._impl):
                x.delete()
        wrap = Array._from_impl
        return [Token(wrap(impl, _TOKEN_AVAL, s)) if isinstance(aval, AbstractToken)
                else wrap(impl, aval, s) for impl, (aval, s) in zip(outs, self._out_types)]

    @property
    def runnable(self) -> bool:
        """Whether it is loaded on devices of this process (not compiled ahead of time
        for a topology's)."""
        return isinstance(self._loaded, xc.LoadedExecutable)

    def _check_runnable(self) -> None:
        if not self.runnable:
            platform = self.devices[0].platform.upper()
            raise RuntimeError(
                f"{self!r} was compiled ahead of time for the devices of a {platform} "
                "topology, which this process is not attached to: inspect it (as_text, "
                "cost_analysis, memory_analysis) or serialize it and load it where those "
                "devices are")

    @property
    def needs_profiling(self) -> bool:
        """Whether automatic PGLE still has to profile this module: it was compiled
        without a profile, and none was applied to it in this process."""
        return self.fdo_profile is None and pgle_module.known(self._identity) is None

    @property
    def effectful(self) -> bool:
        """Whether runs thread effect tokens, keep host callbacks or take or return
        token values (then they take `execute`, not an `executor`)."""
        return self._effectful or self._token_values

    def takes_as_is(self, args: Sequence[Any], offset: int = 0) -> bool:
        """Whether every Array among `args` (the executable's arguments from `offset`
        on) is laid out as the executable expects, so that its buffers can be passed
        unchanged; the other arguments are host values, placed on each call (in the
        default layout: not once Arrays may have others, when the executable may not
        take that)."""
        layouts = self._param_layouts()[offset:] if layouts_signed() else None
        for i, (x, expected) in enumerate(zip(args, self.in_shardings[offset:])):
            if isinstance(x, Array):
                sharding = x._sharding
                if not (sharding is expected or sharding == expected
                        or sharding.is_equivalent_to(expected, x.ndim)):
                    return False
                if layouts is not None and not _same_layout(_buffer_layout(x._impl),
                                                            layouts[i]):
                    return False
            elif layouts is not None or not isinstance(
                    x, (np.ndarray, np.generic, bool, int, float, complex)):
                return False
        return len(args) == len(self.in_shardings) - offset

    def _param_layouts(self) -> list[xc.PjRtLayout | None]:
        """The layout of each argument's buffers (after the effect tokens); Nones where
        XLA cannot say."""
        if self._layouts is None:
            try:
                layouts = self._loaded.get_parameter_layouts()[len(self.effect_tokens):]
            except _jax.JaxRuntimeError:
                layouts = []
            if len(layouts) != len(self.in_shardings):
                layouts = [None] * len(self.in_shardings)
            self._layouts = layouts
        return self._layouts

    def _match_layouts(self, args: Sequence[Any], impls: list) -> None:
        """Each buffer in the layout the executable takes (checked once Arrays may have
        other layouts than the default: `layouts.sign_layouts`): an uncommitted Array's
        or a host value's is copied into it; a committed Array's must be, as in JAX."""
        mismatches = []
        for i, (x, impl, wanted) in enumerate(zip(args, impls, self._param_layouts())):
            have = _buffer_layout(impl)
            if wanted is None or have is None or _same_layout(have, wanted):
                continue
            if isinstance(x, Array) and x.committed:
                name = self._arg_names[i] if self._arg_names and self._arg_names[i] else i
                mismatches.append(
                    f"Argument {name} with shape {str(x.aval).lstrip('~')}:\n"
                    f"  Passed layout: {Layout.from_pjrt_layout(have)}\n"
                    f"  Required layout: {Layout.from_pjrt_layout(wanted)}")
                continue
            sharding = self.in_shardings[i]
            held = (Array._from_impl(impl, x.aval, sharding) if isinstance(x, Array)
                    else put_leaves([x], [sharding], [False], [None])[0])
            impls[i] = relayout(held, wanted, committed=False)._impl
        if mismatches:
            count = (f"the {len(mismatches)} mismatches" if len(mismatches) < 5
                     else f"5 mismatches out of {len(mismatches)}")
            raise ValueError("Computation was compiled for input layouts that disagree with "
                             f"the layouts of arguments passed to it. Here are {count}:\n"
                             + "\n".join(mismatches[:5]))

    @property
    def donates_by_choice(self) -> bool:
        """Whether which donated arguments are consumed is XLA's choice (buffer donors of
        a program over several devices), known only after a run: not for `executor`."""
        return bool(self.donated_args) and self._multi_device

    def executor(self, *, committed: bool, num_flat: int, kept: Sequence[int] | None = None,
                 consts: Sequence[Array] = ()) -> _fastpath.Executor:
        """This executable as one C++ call on flat arguments (for cached calls whose
        key fixes every Array argument's placement as the executable expects): the
        module's arguments are `consts` then `flat[i] for i in kept`; host values
        among them are placed here, on the sharding the executable wants."""
        self._check_runnable()
        if self.effectful:
            raise ValueError(f"{self!r} threads effect tokens: run it with execute()")
        kept = list(range(num_flat)) if kept is None else list(kept)
        n_consts = len(consts)
        if n_consts + len(kept) != len(self.in_shardings):
            raise TypeError(f"the executable takes {len(self.in_shardings)} arguments, "
                            f"got {n_consts} constants and {len(kept)} arguments")
        place_host = _HostValues(self.in_shardings[n_consts:])

        def explain_failure(flat: Sequence[Any]) -> None:
            args = [flat[i] for i in kept]
            self._check_alive(args, offset=n_consts)
            self._check_donated_once(args, offset=n_consts)

        return _fastpath.Executor(
            self._loaded, self._handlers[committed], list(self.out_avals),
            list(self.out_shardings), [c._impl for c in consts], kept,
            list(self.donated_args), num_flat, place_host,
            transfer_guard.level_state("host_to_device"), explain_failure,
            self._before_run, _record_spmd_in_flight if self._serialized else None)

    def _run(self, impls: list, args: Sequence[Any]):
        if self._before_run is not None:
            self._before_run()
        try:
            if self._effectful:
                return self._run_effectful(impls)
            return self._loaded.execute_sharded(impls)
        except _jax.JaxRuntimeError as err:
            self._check_alive(args)  # a deleted input: say which, in plain words
            distributed_watch.raise_if_lost_peer(
                f"a computation over devices {_device_ids(self.devices)}", err)
            raise

    def _run_effectful(self, impls: list):
        """Run with the ordered effects' tokens ahead of `impls`; record the tokens
        this run leaves and its runtime token. The results left are the outputs."""
        tokens = [runtime_tokens.get_token(effect, self.devices) for effect in self.effect_tokens]
        tokens = [self._new_token() if t is None else t for t in tokens]
        results = self._loaded.execute_sharded([*tokens, *impls], with_tokens=True)
        if tokens:
            new = results.consume_with_handlers(self._token_handlers, strict=False)
            for effect, token in zip(self.effect_tokens, new):
                runtime_tokens.set_token(effect, self.devices, token)
        runtime_tokens.set_output_token(self.devices, results.consume_token())
        return results

    def _new_token(self) -> xc.ArrayImpl:
        return put_leaves([np.zeros(0, bool)], [self._token_sharding], [False], [None])[0]._impl

    def _impls_in_place(self, args: Sequence[Any]) -> tuple[list, bool] | None:
        """(buffers, any committed) when every argument is an Array already laid out
        as this executable expects (the common case of a cached call), else None."""
        impls = []
        any_committed = False
        for x, expected in zip(args, self.in_shardings):
            if type(x) is not Array or x._sharding is not expected:
                return None
            impl = x._impl
            any_committed = any_committed or impl._committed
            impls.append(impl)
        return impls, any_committed

    def _check_alive(self, args: Sequence[Any], offset: int = 0) -> None:
        """Raises naming the first deleted Array of `args`, the executable's arguments
        from `offset` on."""
        for i, x in enumerate(args, offset):
            if isinstance(x, Array) and x._impl.is_deleted():
                raise RuntimeError(f"Array passed as {self._arg_label(i)} has been deleted "
                                   f"(shape={x.aval.str_short()}); it cannot be used after "
                                   "delete() or being donated")

    def _check_donated_once(self, args: Sequence[Any], offset: int = 0) -> None:
        """Raises JAX's runtime error class, naming both arguments, when a donated
        Array is also passed as another argument (the runtime would reuse the buffer it
        gives away; on several devices it crashes the process)."""
        impls = {i: x._impl for i, x in enumerate(args, offset) if isinstance(x, Array)}
        for k in self.donated_args:
            donated = impls.get(k)
            twin = next((i for i, impl in impls.items() if i != k and impl is donated), None)
            if donated is not None and twin is not None:
                raise _jax.JaxRuntimeError(
                    f"INVALID_ARGUMENT: the Array passed as {self._arg_label(k)} is donated "
                    f"and also passed as {self._arg_label(twin)} "
                    f"(shape={args[k - offset].aval.str_short()}); a donated buffer can be "
                    "passed only once: pass a copy (jnp.copy) as one of them, or do not "
                    "donate it")

    def _place(self, args: Sequence[Any]) -> tuple[list, bool]:
        """Checks the arguments and moves those not yet where the executable wants them.
        A token argument passes the buffer that stands for it."""
        args = [x._buf if isinstance(x, Token) else x for x in args]
        self._check_alive(args)
        impls = [None] * len(args)
        moves = []
        any_committed = False
        for i, (x, expected) in enumerate(zip(args, self.in_shardings)):
            if not isinstance(x, Array):
                moves.append(i)
                continue
            any_committed = any_committed or x.committed
            sharding = x._sharding
            if sharding is expected or sharding == expected or sharding.is_equivalent_to(
                    expected, physical_aval(x.aval).ndim):
                impls[i] = x._impl
                continue
            if x.committed and sharding.device_set != self._device_set:
                raise ValueError(
                    f"Array passed as {self._arg_label(i)} is committed to devices "
                    f"{_device_ids(sharding.device_set)}, but the executable runs on devices "
                    f"{_device_ids(self.devices)}; move it with device_put first")
            moves.append(i)
        if moves:
            placed = put_leaves([args[i] for i in moves], [self.in_shardings[i] for i in moves],
                                [False] * len(moves), [None] * len(moves))
            for i, array in zip(moves, placed):
                impls[i] = array._impl
        return impls, any_committed

    def as_text(self) -> str:
        """The optimized HLO module, as text."""
        return self._loaded.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict[str, float]:
        """XLA's estimates: flops, bytes accessed, ..."""
        return dict(self._loaded.cost_analysis())

    def memory_analysis(self) -> Any:
        """Sizes of arguments, outputs, temporaries and generated code."""
        return self._loaded.get_compiled_memory_stats()

    def generated_code_bytes(self) -> int:
        """The size of the compiled code (0 where the backend does not say)."""
        if not self.runnable:  # (XLA says it of loaded executables only)
            return 0
        try:
            return int(self._loaded.size_of_generated_code_in_bytes())
        except _jax.JaxRuntimeError:  # backends without the query (UNIMPLEMENTED)
            return 0

    def runtime_executable(self) -> xc.LoadedExecutable | xc.Executable:
        return self._loaded

    def serialize(self) -> dict[str, Any]:
        """What `deserialize` needs to load this executable again, in another process
        or onto other devices: XLA's serialized executable, its options and the
        metadata (shardings hold devices: pickle it with a device-aware pickler)."""
        if self._effectful:
            raise ValueError("an executable with side effects (host callbacks, ordered "
                             "effects) cannot be serialized")
        return dict(executable=self._loaded.serialize(), options=self._compile_options,
                    devices=self.devices, in_shardings=self.in_shardings,
                    out_avals=self.out_avals, out_shardings=self.out_shardings,
                    donated_args=self.donated_args, arg_names=self._arg_names)

    def __repr__(self):
        return (f"Executable({len(self.in_shardings)} args -> {len(self.out_avals)} outputs "
                f"on devices {_device_ids(self.devices)})")


def deserialize(state: Mapping[str, Any]) -> Executable:
    """The executable `Executable.serialize` described, loaded onto `state["devices"]`
    (its device assignment follows them)."""
    devices = tuple(state["devices"])
    options = xc.CompileOptions.ParseFromString(state["options"])
    ids = np.array([d.id for d in devices]).reshape(options.num_replicas,
                                                    options.num_partitions)
    options.device_assignment = xc.DeviceAssignment.create(ids)
    loaded = devices[0].client.deserialize_executable(
        state["executable"], xc.DeviceList(devices), options)
    return Executable(loaded, devices, tuple(state["in_shardings"]), tuple(state["out_avals"]),
                      tuple(state["out_shardings"]), tuple(state["donated_args"]),
                      state["arg_names"], compile_options=options.SerializeAsString())


class _HostValues:
    """Places an executor's host arguments (the executor itself reuses the buffers of
    scalars it has seen). NumPy arrays onto replicated shardings take a prepared
    `batched_device_put`. Under an active host-to-device transfer guard every value
    takes the checked path."""

    def __init__(self, shardings: Sequence[Sharding]):
        self._shardings = shardings
        self._puts: dict[int, tuple[tuple, np.dtype, PreparedPut]] = {}  # j -> shape, dtype

    def __call__(self, x: Any, j: int):
        if transfer_guard.active("host_to_device"):  # every transfer checked, none saved
            return put_leaves([x], [self._shardings[j]], [False], [None])[0]._impl
        prepared = self._puts.get(j)
        if prepared is not None and type(x) is np.ndarray and x.dtype == prepared[1] and (
                x.shape == prepared[0]):
            return prepared[2](x)
        sharding = self._shardings[j]
        if PreparedPut.applies_to(x) and sharding.is_fully_replicated:
            put = PreparedPut.of(x.shape, x.dtype, sharding, committed=False)
            self._puts[j] = (x.shape, x.dtype, put)
            return put(x)
        return put_leaves([x], [sharding], [False], [None])[0]._impl

    def direct(self, j: int) -> tuple | None:
        """For the executor, which then places NumPy arrays of the dtype and shape seen
        at position `j` itself: (dtype, shape, *PreparedPut.replicated_call()). None
        when no prepared put is kept for `j`."""
        prepared = self._puts.get(j)
        call = None if prepared is None else prepared[2].replicated_call()
        return None if call is None else (prepared[1], prepared[0], *call)


# --- copies into another layout ---------------------------------------------------
# Placement cannot lay buffers out in a chosen way; XLA can: an identity computation
# compiled with the source layout on its argument and the target one on its result
# copies a buffer from one to the other (what JAX's `device_put` to a `Format` runs).

def put_with_format(x: Any, format: Format, **options) -> Any:
    """`device_put` onto `format`'s sharding, each array's buffers then copied into its
    layout where they are not in it (committed, as JAX's copy is)."""
    if format.layout is AUTO:
        raise ValueError("sharding and layout in `Layout` instance should be concrete. Got "
                         f"layout: {format}")
    if format.layout is None:
        return device_put(x, format.sharding, **options)
    leaves, treedef = tree_flatten(x)
    for leaf in leaves:
        format.layout.check_compatible_aval(np.shape(leaf))
    if isinstance(current_trace(), StagingTrace) or any(isinstance(v, Tracer) for v in leaves):
        raise NotImplementedError(f"device_put to a Format with a layout ({format.layout}) "
                                  "inside a traced function is not supported")
    placed = [device_put(leaf, format.sharding, **options) for leaf in leaves]
    return tree_unflatten(treedef, [
        p if satisfies(p.format.layout, format.layout)
        else relayout(p, format.layout, committed=True) for p in placed])


def relayout(x: Array, layout: Layout | xc.PjRtLayout, *, committed: bool) -> Array:
    """`x` with its buffers copied into `layout` (a requested tiling of None: the
    backend's for that order), committed or not."""
    if isinstance(x.dtype, ExtendedDType):
        raise NotImplementedError(f"placing an array of {x.aval.str_short()} in another "
                                  "layout is not supported (its dtype is not a machine type)")
    if isinstance(layout, xc.PjRtLayout):
        layout = Layout.from_pjrt_layout(layout)
    source = Layout.from_pjrt_layout(x._impl._pjrt_layout)
    copy = _copy_executable(x.shape, x.dtype, x.sharding, source.mlir_layout_mode(x.dtype),
                            layout.mlir_layout_mode(x.dtype))
    return copy.execute([x], committed=committed)[0]


@functools.lru_cache(maxsize=256)
def _copy_executable(shape: tuple, dtype, sharding: Sharding, source: str, target: str
                     ) -> Executable:
    """The identity on arrays of `shape` and `dtype` placed as `sharding`, from the
    layout `source` to `target` (as `mhlo.layout_mode`s state them)."""
    sign_layouts()
    devices = sharding._device_assignment
    with make_ir_context(), ir.Location.unknown():
        tensor = str(ir.RankedTensorType.get(shape, mu.ir_element_type(dtype)))
    placed = ("" if len(devices) == 1 else
              f', mhlo.sharding = "{sharding._to_xla_hlo_sharding(len(shape))}"')
    module = (
        f"module @relayout attributes {{mhlo.num_partitions = {len(devices)} : i32, "
        f"mhlo.num_replicas = 1 : i32}} {{\n"
        f'  func.func public @main(%arg0: {tensor} {{mhlo.layout_mode = "{source}"{placed}}})'
        f' -> ({tensor} {{mhlo.layout_mode = "{target}"{placed}}}) {{\n'
        f"    return %arg0 : {tensor}\n  }}\n}}\n")
    return compile(module, devices, in_shardings=[sharding], out_shardings=[sharding],
                   build_options={"use_shardy_partitioner": False}, name="relayout")


register_cache(_copy_executable.cache_clear)


def _buffer_layout(impl: xc.ArrayImpl) -> xc.PjRtLayout | None:
    """The layout of `impl`'s buffers; None once deleted (the run then says so; jaxlib
    must not be asked: it crashes)."""
    return None if impl.is_deleted() else impl._pjrt_layout


def _same_layout(a: xc.PjRtLayout | None, b: xc.PjRtLayout | None) -> bool:
    return a is b or (a is not None and b is not None and a == b)


def _device_ids(devices) -> list[int]:
    return sorted(d.id for d in devices) if isinstance(devices, (set, frozenset)) else [
        d.id for d in devices]


def _module_payload(module: str | bytes | Any) -> str | bytes:
    """Text or bytecode that jaxlib compiles; an `ir.Module` becomes bytecode."""
    if isinstance(module, (str, bytes)):
        return module
    if hasattr(module, "operation"):
        buffer = io.BytesIO()
        module.operation.write_bytecode(file=buffer)
        return buffer.getvalue()
    raise TypeError(f"compile expects StableHLO text, bytecode or an ir.Module, got "
                    f"{type(module).__name__}")


def _frozen(value: Any) -> Any:
    """A hashable form of option values (lists become tuples)."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def compile(module: str | bytes | Any, devices: Sequence[Device], *, num_replicas: int = 1,
            num_partitions: int | None = None, donated_args: Sequence[int] = (),
            compile_options_overrides: Mapping[str, str | bool | int | float] | None = None,
            build_options: Mapping[str, Any] | None = None,
            in_shardings: Sequence[Sharding | None] | None = None,
            out_avals: Sequence[ShapedArray] | None = None,
            out_shardings: Sequence[Sharding | None] | None = None,
            arg_names: Sequence[str] | None = None,
            sharding_like: Sequence[Sharding] = (),
            shared_shardings: Sequence[Sharding] = (), name: str | None = None,
            effect_tokens: Sequence[Any] = (), host_callbacks: Sequence[Any] = (),
            use_persistent_cache: bool = True, fdo_profile: bytes | None = None,
            pgle: bool = False) -> Executable:
    """Compiles `module` for `devices` (replica-major), or returns the cached executable.

    `compile_options_overrides` are XLA options (`env_option_overrides`, JAX's
    `compiler_options`); `build_options` sets attributes of `ExecutableBuildOptions`
    (`use_shardy_partitioner`, `allow_spmd_sharding_propagation_to_output`...).
    In/out shardings (or their None entries) and output avals default to what XLA
    reports and what the module declares (with `weak_type=False`); shardings XLA
    chose take the kind of one of `sharding_like` where it can say them, or are
    the one of `shared_shardings` equal to them (see `sharding_from_xla`). Lowering
    passes its own avals to keep weak types. Executables with several replicas need
    all three. `name` (default: the module's) is what logs and the
    `/jax/core/compile/backend_compile_duration` event call it.

    `effect_tokens` names the ordered effects whose tokens the module takes and
    returns first (the other arguments, results and their metadata exclude them);
    `host_callbacks` are the Python functions its callback custom calls call (the
    module must then be an `ir.Module`, as jaxlib requires).

    `fdo_profile` is a serialized `ProfiledInstructionsProto` for the compiler's
    latency estimates (`ExecutableBuildOptions.fdo_profile`). `pgle=True` says the
    compile is automatic PGLE's: with a profile, every process of a distributed run
    compiles with the one `pgle.agree` gives and the executable is the module's
    PGLE-optimized one; without, the module's PGLE-optimized executable is returned
    when this process compiled it before or the persistent cache holds it (its
    `fdo_profile` is then not None: it needs no profiling).

    With a cache directory set (`jax_compilation_cache_dir`), executables are also
    loaded from and saved to the persistent cache (see `persistent_cache`), unless
    `use_persistent_cache` is False (XLA calls back into Python while compiling it) or
    the module has host callbacks.
    """
    payload = _module_payload(module)
    effect_tokens, host_callbacks = tuple(effect_tokens), tuple(host_callbacks)
    if host_callbacks and not hasattr(module, "operation"):
        raise TypeError("compile: a module with host callbacks must be given as an ir.Module")
    devices = tuple(devices)
    if not devices or not all(isinstance(d, Device) for d in devices):
        raise TypeError(f"compile needs a non-empty sequence of devices, got {devices!r}")
    if num_partitions is None:
        num_partitions = len(devices) // num_replicas
    if num_replicas < 1 or num_partitions < 1 or num_replicas * num_partitions != len(devices):
        raise ValueError(f"{len(devices)} devices cannot run num_replicas={num_replicas} x "
                         f"num_partitions={num_partitions}")
    if fdo_profile is not None and not isinstance(fdo_profile, bytes):
        raise TypeError(f"compile: fdo_profile must be bytes (a serialized "
                        f"ProfiledInstructionsProto), got {type(fdo_profile).__name__}")
    overrides = tuple(sorted((compile_options_overrides or {}).items()))
    build = tuple(sorted((k, _frozen(v)) for k, v in (build_options or {}).items()))
    if name is None:
        name = (ir_module_name(module) if hasattr(module, "operation") else "module")
    digest = hashlib.sha256(payload.encode() if isinstance(payload, str) else payload).digest()
    build = build + _configured_build()
    _dump_ir(module, name)
    identity = (digest, isinstance(payload, str), devices, num_replicas, num_partitions,
                tuple(donated_args), overrides, build, tuple(sharding_like),
                tuple(shared_shardings), effect_tokens,
                tuple(map(id, host_callbacks)),  # kept alive by the cached executable
                *(None if v is None else tuple(v)
                  for v in (in_shardings, out_avals, out_shardings, arg_names)))
    if pgle and fdo_profile is not None:
        fdo_profile = pgle_module.agree(fdo_profile, digest.hex(), devices, name)
        pgle_module.remember(identity, fdo_profile)
    elif pgle:
        fdo_profile = pgle_module.known(identity)
        cached = _cache.get((*identity, PGLE_PROFILED))
        if fdo_profile is None and cached is not None:
            return cached
    fdo_profile = fdo_profile or None  # an empty profile changes nothing
    key = (*identity, fdo_profile)
    while True:
        with _cache_lock:
            executable = _cache.get(key)
            if executable is not None:
                return executable
            pending = _in_flight.get(key)
            if pending is None or pending.thread == threading.get_ident():
                pending = _in_flight[key] = _Pending()
                break
        executable = pending.wait()  # another thread compiles it; None: its compile failed
        if executable is not None:
            return executable
    try:
        options = _compile_options(devices, num_replicas, num_partitions, overrides, build,
                                   fdo_profile)
        loaded, from_pgle_entry = _compile_and_load(module, payload, devices, options,
                                                    host_callbacks, name,
                                                    use_persistent_cache, pgle)
        executable = _describe(loaded, payload, devices, num_replicas, tuple(donated_args),
                               in_shardings, out_avals, out_shardings, arg_names,
                               tuple(sharding_like), tuple(shared_shardings),
                               effect_tokens, host_callbacks,
                               options.SerializeAsString())
        executable.fdo_profile = PGLE_PROFILED if from_pgle_entry else fdo_profile
        executable._identity = identity
        with _cache_lock:  # (two threads compiling one module keep the first executable)
            found = _cache.get(stored := (*identity, executable.fdo_profile))
            if found is not None:
                executable = found
            else:
                _cache.put(stored, executable,
                           nbytes=len(payload) + executable.generated_code_bytes())
        pending.result = executable
    finally:
        with _cache_lock:
            if _in_flight.get(key) is pending:
                del _in_flight[key]
        pending.done.set()
    return executable


def _with_profile(options: xc.CompileOptions, profile: bytes) -> xc.CompileOptions:
    copy = xc.CompileOptions.ParseFromString(options.SerializeAsString())
    copy.executable_build_options.fdo_profile = profile
    return copy


class _Pending:
    """A compile in progress: callers of the same key wait for it rather than compile
    the module again (threads calling a jitted function with the same new shapes)."""

    def __init__(self):
        self.thread = threading.get_ident()  # a compile it starts itself does not wait
        self.done = threading.Event()
        self.result: Executable | None = None  # None if the compile raised

    def wait(self) -> Executable | None:
        self.done.wait()
        return self.result


def _compile_and_load(module, payload, devices, options, host_callbacks, name,
                      use_persistent_cache, pgle: bool) -> tuple[xc.LoadedExecutable, bool]:
    """Loads the executable from the persistent cache, or compiles it (and saves it
    there when the cache is on and the module can be saved); and whether it is the
    module's PGLE-optimized executable loaded in place of the one asked for.

    PGLE's compiles (and all of them under `jax_compilation_cache_expect_pgle`) know
    the module's PGLE-optimized entry: the key of its options with `PGLE_PROFILED`
    for the profile. A compile with a profile is stored there; one without loads
    it when it is there."""
    client = devices[0].client
    path = None if is_compile_only(client) else persistent_cache.directory(client)
    key = None
    if path is not None:
        if host_callbacks:
            persistent_cache.skip(name, "it calls Python host callbacks")
        elif not use_persistent_cache:
            persistent_cache.skip(name, "XLA calls back into Python while compiling it")
        else:
            key = persistent_cache.cache_key(payload, devices, options, client, name)
            profiled = bool(options.executable_build_options.fdo_profile)
            if pgle or config.compilation_cache_expect_pgle.value:
                pgle_key = persistent_cache.cache_key(
                    payload, devices, _with_profile(options, PGLE_PROFILED), client, name)
                if profiled:
                    key = pgle_key
                elif persistent_cache.contains(path, pgle_key):
                    loaded = persistent_cache.lookup(path, pgle_key, client, devices, options,
                                                     name)
                    if loaded is not None:
                        return loaded, True
                elif not pgle and persistent_cache.contains(path, key):
                    warnings.warn(f"PERSISTENT CACHE MISS for the PGLE-optimized {name} "
                                  "despite a hit for its unprofiled executable: it may not "
                                  "have run its PGLE profiling runs when the cache was "
                                  "filled", RuntimeWarning, stacklevel=5)
            loaded = persistent_cache.lookup(path, key, client, devices, options, name)
            if loaded is not None:
                return loaded, False
    start = time.monotonic()
    with timed_event(BACKEND_COMPILE_EVENT, name,
                     "Finished XLA compilation of {fun_name} in {elapsed_time:.9f} sec",
                     logger, _log_level):
        if is_compile_only(client):
            if host_callbacks:
                raise NotImplementedError(
                    f"{name} calls back into Python (host callbacks), which cannot be "
                    f"compiled for the compile-only devices of a {client.platform.upper()} "
                    "topology: the callbacks live in this process, not on those devices")
            return client.compile(_module_object(module), xc.DeviceList(devices),
                                  options), False
        if host_callbacks:
            loaded = client.compile_and_load(
                module, executable_devices=xc.DeviceList(devices), compile_options=options,
                host_callbacks=list(host_callbacks))
        else:
            loaded = client.compile_and_load(payload, xc.DeviceList(devices), options)
    if key is not None:
        persistent_cache.store(path, key, loaded, client, time.monotonic() - start, name)
    return loaded, False


def _module_object(module: str | bytes | Any) -> Any:
    """`module` as an `ir.Module`: what a compile-only client compiles (it takes no
    text or bytecode)."""
    if hasattr(module, "operation"):
        return module
    with mlir.make_ir_context():
        return mlir.ir.Module.parse(module)


def is_compile_only(client) -> bool:
    """Whether `client` describes devices this process is not attached to (a topology's,
    for compiling ahead of time): it compiles, it cannot load or run."""
    return isinstance(client, _jax.CompileOnlyPyClient)


def ir_module_name(module) -> str:
    """The `sym_name` of an `ir.Module` (`jit_f`), or "module"."""
    attrs = module.operation.attributes
    return attrs["sym_name"].value if "sym_name" in attrs else "module"


def _log_level() -> int:
    return logging.WARNING if config.log_compiles.value else logging.DEBUG


def clear_cache() -> None:
    _cache.clear()
    pgle_module.forget_all()


register_cache(clear_cache)


_EFFORT_LEVELS = {"UNKNOWN": 0, "O0": 9, "O1": 19, "O2": 29, "O3": 39}  # XLA's values


def _configured_build() -> tuple:
    """The compiler settings the configuration asks for (jax_optimization_level,
    jax_memory_fitting_level, the two efforts, jax_disable_most_optimizations,
    jax_compiler_enable_remat_pass), as (build option, value) pairs; ones the caller's
    build_options set come first and win."""
    settings = [("exec_time_optimization_effort", config.exec_time_optimization_effort.value),
                ("memory_fitting_effort", config.memory_fitting_effort.value),
                ("optimization_level", _EFFORT_LEVELS[config.optimization_level.value]),
                ("memory_fitting_level", _EFFORT_LEVELS[config.memory_fitting_level.value])]
    if config.disable_most_optimizations.value:
        settings += [("debug_options.xla_backend_optimization_level", 0),
                     ("debug_options.xla_llvm_disable_expensive_passes", True)]
    if not config.compiler_enable_remat_pass.value:
        settings.append(("debug_options.xla_disable_hlo_passes", "rematerialization"))
    return tuple(settings)


def _dump_ir(module, name: str) -> None:
    """With jax_dump_ir_to set, the program's StableHLO written there as NAME.mlir
    (NAME-1.mlir... when the name repeats)."""
    folder = config.dump_ir_to.value
    if not folder or "stablehlo" not in config.dump_ir_modes.value.split(","):
        return
    os.makedirs(folder, exist_ok=True)
    text = (module if isinstance(module, str) else str(module) if hasattr(module, "operation")
            else _bytecode_text(module))
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    path, n = os.path.join(folder, f"{name}.mlir"), 0
    while os.path.exists(path):
        n += 1
        path = os.path.join(folder, f"{name}-{n}.mlir")
    with open(path, "w") as f:
        f.write(text)


def _bytecode_text(payload: bytes) -> str:
    with mlir.make_ir_context() as context:
        return str(mlir.ir.Module.parse(payload, context=context))


def _compile_options(devices, num_replicas, num_partitions, overrides, build,
                     fdo_profile: bytes | None = None) -> xc.CompileOptions:
    options = xc.CompileOptions()
    options.num_replicas = num_replicas
    options.num_partitions = num_partitions
    ids = np.array([d.id for d in devices]).reshape(num_replicas, num_partitions)
    options.device_assignment = xc.DeviceAssignment.create(ids)
    build_options = options.executable_build_options
    build_options.num_replicas = num_replicas
    build_options.num_partitions = num_partitions
    build_options.use_spmd_partitioning = num_partitions > 1
    for name, value in build:
        if name.startswith("debug_options."):  # from the configuration (_configured_build)
            setattr(build_options.debug_options, name.split(".", 1)[1], value)
            continue
        if name.startswith("_") or not hasattr(build_options, name):
            raise ValueError(f"compile: ExecutableBuildOptions has no option {name!r}")
        setattr(build_options, name, list(value) if isinstance(value, tuple) else value)
    for name, value in overrides:
        if not isinstance(value, (str, bool, int, float)):
            raise TypeError(f"compile: XLA option {name!r} must be a str, bool, int or "
                            f"float, got {type(value).__name__}")
    options.env_option_overrides = list(overrides)
    if fdo_profile:
        build_options.fdo_profile = fdo_profile
    return options


def _describe(loaded, payload, devices, num_replicas, donated_args, in_shardings,
              out_avals, out_shardings, arg_names, like, shared, effect_tokens=(),
              host_callbacks=(), compile_options: bytes = b"") -> Executable:
    """Fills in argument/output metadata that the caller left to XLA (tokens excluded)."""
    n_tokens = len(effect_tokens)
    num_args = _num_parameters(loaded, payload, n_tokens) - n_tokens
    if num_replicas > 1 and None in (in_shardings, out_avals, out_shardings):
        raise ValueError("compile: executables with num_replicas > 1 need in_shardings, "
                         "out_avals and out_shardings")
    if out_avals is None:
        out_avals = _declared_result_avals(payload, n_tokens)
    if in_shardings is None or None in in_shardings:
        in_shardings = list(in_shardings or [None] * num_args)
        xla_in = (loaded.get_parameter_shardings() or [None] * (num_args + n_tokens))[n_tokens:]
        in_ndims = [len(shape.dimensions()) for shape in
                    _program_shape(payload).parameter_shapes()[n_tokens:]]
        in_shardings = [s if s is not None else
                        sharding_from_xla(devices, x, ndim=n, like=like, shared=shared)
                        for s, x, n in zip(in_shardings, xla_in, in_ndims)]
    if out_shardings is None or None in out_shardings:
        out_shardings = list(out_shardings or [None] * len(out_avals))
        xla_out = (loaded.get_output_shardings() or [None] * (len(out_avals) + n_tokens)
                   )[n_tokens:]
        kinds = loaded.get_output_memory_kinds()[0][n_tokens:]
        out_shardings = [s if s is not None else
                         sharding_from_xla(devices, _logical_hlo(x, a), kind,
                                           ndim=len(a.shape), like=like, shared=shared)
                         for s, x, kind, a in zip(out_shardings, xla_out, kinds, out_avals)]
    for what, values, n in (("in_shardings", in_shardings, num_args),
                            ("out_shardings", out_shardings, len(out_avals)),
                            ("arg_names", arg_names, num_args)):
        if values is not None and len(values) != n:
            raise ValueError(f"compile: {len(values)} {what} given for {n} "
                             f"{'arguments' if what != 'out_shardings' else 'outputs'}")
    bad = [i for i in donated_args if not 0 <= i < num_args]
    if bad:
        raise ValueError(f"compile: donated_args {bad} out of range for {num_args} arguments")
    return Executable(loaded, devices, tuple(in_shardings), tuple(out_avals),
                      tuple(out_shardings), donated_args,
                      None if arg_names is None else tuple(arg_names), effect_tokens,
                      host_callbacks, compile_options)


def _num_parameters(loaded: xc.LoadedExecutable, payload: str | bytes, n_tokens: int) -> int:
    """How many parameters the program has. XLA cannot list the layouts of token
    parameters (the ordered effects', or a token argument's): then they are counted
    from the program."""
    if not n_tokens:
        try:
            return len(loaded.get_parameter_layouts())
        except _jax.JaxRuntimeError:  # a token argument
            pass
    return len(_program_shape(payload).parameter_shapes())


def _logical_hlo(hlo, aval):
    """XLA's sharding of the tensor behind `aval` as a sharding of `aval`: a key
    array's trailing data dimensions, which are never split, are dropped."""
    extra = len(physical_aval(aval).shape) - len(aval.shape)
    if not extra or hlo is None:
        return hlo
    proto = (hlo if isinstance(hlo, xc.OpSharding) else hlo.to_proto()).clone()
    if proto.type != xc.OpSharding.Type.OTHER:  # replicated, maximal or manual
        return hlo
    dims, ndim = list(proto.tile_assignment_dimensions), len(aval.shape)
    if any(d != 1 for d in dims[ndim:ndim + extra]):
        raise ValueError(f"XLA split the data of the elements of a {aval.str_short()} "
                         f"result (sharding {hlo}); only its {ndim} array dimensions "
                         f"can be sharded")
    proto.tile_assignment_dimensions = dims[:ndim] + dims[ndim + extra:]
    return xc.HloSharding.from_proto(proto)


def _program_shape(payload: str | bytes):
    return _jax.mlir.mlir_module_to_xla_computation(
        payload, use_tuple_args=False, return_tuple=False).program_shape()


def _declared_result_avals(payload: str | bytes, n_tokens: int) -> tuple[ShapedArray, ...]:
    result = _program_shape(payload).result_shape()
    shapes = (result.tuple_shapes() if result.is_tuple() else [result])[n_tokens:]
    for shape in shapes:
        if not shape.is_array():
            raise ValueError(f"compile: result {shape} is not an array; pass out_avals")
    return tuple(ShapedArray(s.dimensions(), s.numpy_dtype()) for s in shapes)
