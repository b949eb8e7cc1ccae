"""`plax.stages`: the ahead-of-time stages of a jitted function, `Wrapped` →
`Traced` → `Lowered` → `Compiled`.

`jit(f).trace(*args)` stops after tracing (`.jaxpr`, `.out_info`),
`jit(f).lower(*args)` after lowering to StableHLO (`.as_text()`,
`.compiler_ir()`, `.cost_analysis()` of the unoptimized module), and `.compile()`
gives an executable that is called with the *dynamic* arguments only (static ones
were fixed when lowering), in the same pytree structure and with the same shapes
and dtypes. Every stage describes its arguments (`args_info`, `in_avals`,
`donate_argnums`) and outputs (`out_info`, `out_avals`).
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from jaxlib import _jax

from plax.extend import tree_util
from plax.extend.core import AbstractToken, AbstractValue, ClosedJaxpr, ShapeDtypeStruct, get_aval
from plax_transforms import executing
from plax_transforms.call_placement import CallPlacement, incompatible_devices_error
from plax_transforms.lowering import LoweringResult
from plax_transforms.mlir_context import module_to_bytecode, module_to_string
from plax_transforms.refs import AbstractRef
from plax_runtime.layouts import Format, executable_layouts

CompilerOptions = dict[str, str | bool | int | float]


def compiler_option_pairs(options: CompilerOptions | None, where: str) -> tuple:
    """`options` as sorted (name, value) pairs, hashable for the compilation caches;
    a clear TypeError for anything but a dict keyed by option names (XLA itself
    rejects an unknown name or a bad value when compiling)."""
    if options is None:
        return ()
    if not isinstance(options, dict):
        raise TypeError(f"{where}: compiler_options must be a dict of XLA option names "
                        f"to values, got {type(options).__name__}")
    for name in options:
        if not isinstance(name, str):
            raise TypeError(f"{where}: compiler_options keys must be XLA option names "
                            f"(str), got {name!r}")
    return tuple(sorted(options.items()))


@runtime_checkable
class Wrapped(Protocol):
    """A function staged out by `jit`: callable, and traceable/lowerable ahead of time."""

    def __call__(self, *args, **kwargs): ...

    def trace(self, *args, **kwargs) -> Traced: ...

    def lower(self, *args, **kwargs) -> Lowered: ...


class ArgInfo:
    """One (dynamic) argument leaf of a staged call: its abstract value and whether
    it is donated."""
    __slots__ = ("_aval", "donated")

    def __init__(self, aval: AbstractValue, donated: bool):
        self._aval = aval
        self.donated = donated

    aval = property(lambda self: self._aval)
    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)

    def __eq__(self, other):
        return (isinstance(other, ArgInfo) and self._aval == other._aval
                and self.donated == other.donated)

    def __hash__(self):
        return hash((self._aval, self.donated))

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"


def out_info(out_avals: Sequence[AbstractValue], out_tree) -> Any:
    """The output pytree as `ShapeDtypeStruct`s, tokens as their aval (as JAX), and
    outputs past the tree's leaves are the final values of mutable references, not
    the function's."""
    return tree_util.tree_unflatten(out_tree, [
        a if isinstance(a, AbstractToken) else
        ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                         sharding=getattr(a, "typed_sharding", None))
        for a in out_avals[:out_tree.num_leaves]])


class StagedCall:
    """What every stage knows of the call: its Jaxpr (whose leading inputs, if any,
    are values closed over from enclosing traces), the argument and output pytrees,
    which argument leaves are donated, and the function's name.

    A function using mutable references is shown as traced (`jaxpr`, references and
    all) but `lowered` in its pure form, which takes the `leading` inputs (references
    it closed over, then traced values) first; `ref_plan` reads the references before
    a run and writes their final values after it (`ref_namer` names inputs in its
    errors).

    The compiled stage needs only the call's signature (`arg_avals`, `arg_names`,
    `out_avals`, `num_inputs`), which `signature_only` keeps for a call restored
    without its Jaxpr (a deserialized executable).
    """

    def __init__(self, jaxpr: ClosedJaxpr, in_tree, out_tree, donated: Sequence[bool],
                 fun_name: str, *, lowered: ClosedJaxpr | None = None, ref_plan=None,
                 leading: tuple = (), ref_namer=None):
        self.jaxpr = jaxpr
        self.lowered = jaxpr if lowered is None else lowered
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.donated = tuple(donated[len(donated) - in_tree.num_leaves:])
        self.fun_name = fun_name
        self.ref_plan = ref_plan
        self.leading = leading
        self.ref_namer = ref_namer
        n = in_tree.num_leaves
        self.arg_avals = tuple(jaxpr.in_avals[len(jaxpr.in_avals) - n:])
        self.out_avals = tuple(jaxpr.out_avals)
        dbg = jaxpr.jaxpr.debug_info
        self.arg_names = tuple(dbg.safe_arg_name(i) if dbg else "" for i in range(n))
        self.num_inputs = len(self.lowered.jaxpr.invars)  # the lowered module's

    @classmethod
    def signature_only(cls, in_tree, out_tree, donated: Sequence[bool], fun_name: str,
                       arg_avals: Sequence[AbstractValue], arg_names: Sequence[str],
                       out_avals: Sequence[AbstractValue]) -> StagedCall:
        """A call known by its signature alone: no Jaxpr, references or leading inputs."""
        call = cls.__new__(cls)
        call.jaxpr = call.lowered = None
        call.in_tree, call.out_tree, call.fun_name = in_tree, out_tree, fun_name
        call.donated, call.arg_avals = tuple(donated), tuple(arg_avals)
        call.arg_names, call.out_avals = tuple(arg_names), tuple(out_avals)
        call.ref_plan, call.leading, call.ref_namer = None, (), None
        call.num_inputs = len(call.arg_avals)
        return call

    def values(self, flat: Sequence[Any]) -> list:
        """All the lowered module's inputs for arguments `flat`, references read."""
        return self.ref_plan.read((*self.leading, *flat), self.ref_namer)

    def donate_argnums(self) -> tuple[int, ...]:
        args_tree, _ = tree_util.treedef_children(self.in_tree)
        flags, start = [], 0
        for i, t in enumerate(tree_util.treedef_children(args_tree)):
            if any(self.donated[start:start + t.num_leaves]):
                flags.append(i)
            start += t.num_leaves
        return tuple(flags)


class _Stage:
    """The descriptions of arguments and outputs that all stages share."""
    _call: StagedCall

    in_tree = property(lambda self: self._call.in_tree)
    out_tree = property(lambda self: self._call.out_tree)
    fun_name = property(lambda self: self._call.fun_name)

    @property
    def out_info(self) -> Any:
        """The outputs as a pytree of `ShapeDtypeStruct`s."""
        return out_info(self._call.out_avals, self._call.out_tree)

    @property
    def out_avals(self) -> Any:
        out_tree = self.out_tree
        return tree_util.tree_unflatten(
            out_tree, list(self._call.out_avals[:out_tree.num_leaves]))

    @property
    def in_avals(self) -> Any:
        """The dynamic arguments' abstract values, as `(args, kwargs)`."""
        return tree_util.tree_unflatten(self.in_tree, list(self._call.arg_avals))

    @property
    def args_info(self) -> Any:
        """The dynamic arguments as `ArgInfo`s, as `(args, kwargs)`."""
        call = self._call
        return tree_util.tree_unflatten(self.in_tree, [
            ArgInfo(a, d) for a, d in zip(call.arg_avals, call.donated)])

    @property
    def donate_argnums(self) -> tuple[int, ...]:
        """The positions of the (dynamic) positional arguments that are donated."""
        return self._call.donate_argnums()


class Traced(_Stage):
    """A traced call: its Jaxpr and output structure; `.lower()` continues."""

    def __init__(self, call: StagedCall, lower_fn):
        self._call = call
        self.jaxpr = call.jaxpr
        self._lower_fn = lower_fn

    def lower(self, *, lowering_platforms: Sequence[str] | None = None) -> Lowered:
        """Lower for the devices the arguments decide, with their platform's rules, or
        (`lowering_platforms=("tpu",)`) with another platform's: the module then
        compiles only for devices of that platform (a topology's, say)."""
        if lowering_platforms is None:
            return self._lower_fn(None)
        if isinstance(lowering_platforms, str) or len(lowering_platforms) != 1:
            raise ValueError(
                f"lowering_platforms must name one platform, got {lowering_platforms!r} "
                "(a module for several platforms is what plax.export makes: "
                "export(jit(f), platforms=...))")
        return self._lower_fn(str(lowering_platforms[0]).lower())

    def __repr__(self):
        return f"Traced(jaxpr=\n{self.jaxpr})"


class Lowered(_Stage):
    """A lowered call: a StableHLO module for one platform and its calling convention."""

    def __init__(self, lowering: LoweringResult, call: StagedCall, placement: CallPlacement,
                 compiler_options: tuple = (), platform: str | None = None):
        self._lowering = lowering
        self._call = call
        self._placement = placement
        self._compiler_options = compiler_options  # jit's, as (name, value) pairs
        self._platform = platform or executing.lowering_platform(placement.devices[0])

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The module as StableHLO text (default), or as XLA HLO text (`dialect="hlo"`).

        `debug_info=True` adds MLIR locations: the user's source lines and the
        argument names.
        """
        if _dialect(dialect) == "stablehlo":
            return module_to_string(self._lowering.module, debug_info=debug_info)
        return self.compiler_ir("hlo").as_hlo_text()

    def compiler_ir(self, dialect: str | None = None):
        """The `ir.Module` (default, `"stablehlo"`) or an XLA `XlaComputation` (`"hlo"`)."""
        if _dialect(dialect) == "stablehlo":
            return self._lowering.module
        return _jax.mlir.mlir_module_to_xla_computation(
            module_to_bytecode(self._lowering.module), use_tuple_args=False,
            return_tuple=False)

    def cost_analysis(self) -> dict[str, float]:
        """XLA's estimates for the module before optimization (`flops`, ...)."""
        client = self._placement.devices[0].client
        return _jax.hlo_module_cost_analysis(client, self.compiler_ir("hlo").get_hlo_module())

    def compile(self, compiler_options: CompilerOptions | None = None) -> Compiled:
        """Compile for the lowered call's devices; `compiler_options` are XLA options
        by name, over those given to jit (an unknown name is XLA's error)."""
        given = dict(compiler_option_pairs(compiler_options, "compile"))
        options = tuple(sorted((dict(self._compiler_options) | given).items()))
        devices_platform = executing.lowering_platform(self._placement.devices[0])
        if self._platform != devices_platform:
            raise ValueError(
                f"jit({self.fun_name}) was lowered for {self._platform.upper()} but its "
                f"arguments place it on {devices_platform.upper()} devices "
                f"{[d.id for d in self._placement.devices]}: compile it for {self._platform} "
                "devices (ShapeDtypeStructs with shardings on a topology's devices, from "
                "plax.experimental.topologies)")
        compiled = executing.compile_lowering(self._lowering, self._placement, options)
        return Compiled(compiled, self._call, self._placement.committed)

    def __repr__(self):
        return (f"Lowered({self._lowering.name} for devices "
                f"{[d.id for d in self._placement.devices]})")


def _dialect(dialect: str | None) -> str:
    if dialect in (None, "stablehlo"):
        return "stablehlo"
    if dialect == "hlo":
        return "hlo"
    raise ValueError(f"unknown dialect {dialect!r}; expected 'stablehlo' or 'hlo'")


class Compiled(_Stage):
    """A compiled call: run it with the dynamic arguments of the lowered call."""

    def __init__(self, compiled: executing.CompiledJaxpr, call: StagedCall, committed: bool):
        self._compiled = compiled
        self._call = call
        self._committed = committed

    def _flat_inputs(self, per_kept_input: Sequence, unused: Any) -> list:
        """One entry per dynamic argument from one per input the executable kept."""
        by_input = dict(zip(self._compiled.kept_var_idx, per_kept_input))
        n_extra = self._call.num_inputs - self.in_tree.num_leaves
        return [by_input.get(i + n_extra, unused) for i in range(self.in_tree.num_leaves)]

    @property
    def input_shardings(self) -> Any:
        """The shardings the executable expects, as `(args, kwargs)` of the dynamic
        arguments (an input the computation does not use gets the first device)."""
        compiled = self._compiled
        flat = self._flat_inputs(compiled.in_shardings,
                                 executing.device_sharding(compiled.device))
        return tree_util.tree_unflatten(self.in_tree, flat)

    @property
    def output_shardings(self) -> Any:
        """The shardings of the outputs, in the output pytree."""
        out_tree = self.out_tree  # (the references' final values come after)
        return tree_util.tree_unflatten(
            out_tree, list(self._compiled.out_shardings[:out_tree.num_leaves]))

    @property
    def input_formats(self) -> Any:
        """The layouts and shardings the executable expects, as `(args, kwargs)`
        (layout None for an input it does not use, or where XLA cannot say)."""
        compiled = self._compiled
        loaded = compiled.executable.runtime_executable()
        layouts = executable_layouts(loaded.get_parameter_layouts,
                                     len(compiled.kept_var_idx))
        shardings = tree_util.tree_leaves(self.input_shardings)
        flat = self._flat_inputs(layouts, None)
        return tree_util.tree_unflatten(
            self.in_tree, [Format(layout, sharding) for layout, sharding in zip(flat, shardings)])

    @property
    def output_formats(self) -> Any:
        """The layouts and shardings of the outputs, in the output pytree."""
        n = self.out_tree.num_leaves
        loaded = self._compiled.executable.runtime_executable()
        layouts = executable_layouts(loaded.get_output_layouts,
                                     len(self._compiled.out_shardings))[:n]
        return tree_util.tree_unflatten(self.out_tree, [
            Format(layout, sharding)
            for layout, sharding in zip(layouts, self._compiled.out_shardings[:n])])

    def as_text(self) -> str:
        """The optimized HLO module XLA produced."""
        return self._compiled.executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        """XLA's estimates for the executable: `flops`, `bytes accessed`, ..."""
        return self._compiled.executable.cost_analysis()

    def memory_analysis(self) -> Any:
        """XLA's sizes of the arguments, outputs, temporaries and generated code."""
        return self._compiled.executable.memory_analysis()

    def runtime_executable(self) -> Any:
        """The PJRT loaded executable behind this call."""
        return self._compiled.executable.runtime_executable()

    def __call__(self, *args, **kwargs):
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        if in_tree != self.in_tree:
            raise TypeError(f"Compiled function called with arguments of pytree structure "
                            f"{in_tree}, but it was compiled for {self.in_tree} (static "
                            "arguments are not passed to a compiled function)")
        self._check_types(flat)
        call, plan = self._call, self._call.ref_plan
        if plan is not None:  # references: their values in, their final values back
            all_args = (*call.leading, *flat)
            values = plan.read(all_args, call.ref_namer, consume=True)
        else:
            values = flat
        # (the inputs the module prunes name no devices, as in JAX)
        placement = executing.place_call([values[i] for i in self._compiled.kept_var_idx])
        devices = self._compiled.devices
        if placement.committed and placement.devices != devices:
            raise incompatible_devices_error([(devices, "the compiled function"),
                                              (placement.devices, "its arguments")])
        outs = self._compiled(values, self._committed or placement.committed)
        if plan is not None:
            outs = plan.write_back(all_args, outs, consume=True)
        return tree_util.tree_unflatten(self.out_tree, outs)

    def _check_types(self, flat: Sequence[Any]) -> None:
        errors = []
        for i, (x, expected, name) in enumerate(zip(flat, self._call.arg_avals,
                                                    self._call.arg_names)):
            got = get_aval(x)
            if ((got.shape, got.dtype) != (expected.shape, expected.dtype)
                    or isinstance(got, AbstractRef) != isinstance(expected, AbstractRef)):
                name = name or f"argument {i}"
                errors.append(f"{name} compiled with {expected.str_short()} and called with "
                              f"{got.str_short()}")
        if errors:
            raise TypeError("Argument types differ from the types for which this computation "
                            "was compiled: " + "; ".join(errors))

    def __repr__(self):
        return (f"Compiled({self._compiled.name} on devices "
                f"{[d.id for d in self._compiled.devices]})")


__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
