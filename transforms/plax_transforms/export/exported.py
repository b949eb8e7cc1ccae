"""`export(jit(f))(*specs)` → `Exported`: a function lowered to StableHLO once, with
what is needed to call it later, in another process or from JAX.

The module follows JAX's calling convention (versions 9–10): `@main` takes one
`!stablehlo.token` per ordered effect, then the array arguments that survive
dead-code elimination (`module_kept_var_idx`), and returns the tokens ahead of its
results; when the module is shape-polymorphic or lowered for several platforms it
is a wrapper that first takes a platform index (`jax.global_constant =
"_platform_index"`, only for several platforms), computes each dimension variable
from the arguments' shapes, checks the shapes with `@shape_assertion` custom calls
and calls `@_wrapped_jax_export_main(dims..., tokens..., arrays...)`. Such modules
are marked `jax.uses_shape_polymorphism` and need shape refinement before
compilation. A computation over several devices (jit's `in_shardings`/
`out_shardings`, or `ShapeDtypeStruct`s with a `sharding`) is lowered for SPMD
partitioning, its arguments and results annotated in Shardy's dialect.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Callable, Sequence

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir, passmanager
from jaxlib.mlir.dialects import func

from plax.extend.ad import tangent_aval
from plax.extend.core import ShapeDtypeStruct, ShapedArray, jaxpr_as_fun
from plax.extend.mlir import hlo, mu
from plax_runtime import backends
from plax_transforms.export import serialization, shardings
from plax_transforms.export.call_exported import (argument_path, call_exported,
                                                   differentiable_call)
from plax_transforms.export.calling_convention import CALLING_CONVENTION_VERSION
from plax_transforms.export.merging import merge_module
from plax_transforms.call_placement import place_call
from plax_transforms.export.shape_poly import DimExpr, dimension_variables, shape_text
from plax_transforms.export.solving import constraint_checks, constraint_message, solving_plan
from plax_transforms.jit import JitWrapped, jit
from plax_transforms.lowering import lower_jaxpr_to_module
from plax_transforms.mlir_context import make_ir_context, module_to_bytecode, module_to_string


# The platforms plax can lower for (JAX's built-in ones).
_KNOWN_PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
_WRAPPED_MAIN = "_wrapped_jax_export_main"


class DisabledSafetyCheck:
    """A safety check to skip: `platform()` allows calling on a platform the function was
    not exported for; `custom_call(name)` allows a custom call target."""

    def __init__(self, _impl: str):
        self._impl = _impl

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return cls("platform")

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return cls(f"custom_call:{target_name}")

    def is_custom_call(self) -> str | None:
        """The custom call target this check allows, if it is one."""
        match = re.match(r"custom_call:(.+)$", self._impl)
        return match.group(1) if match else None

    def __eq__(self, other):
        return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

    def __hash__(self):
        return hash(self._impl)

    def __str__(self):
        return self._impl

    __repr__ = __str__


@dataclasses.dataclass(frozen=True, eq=False)
class Exported:
    """A function lowered to StableHLO, with its calling signature.

    `in_tree`/`out_tree` are the pytrees of `(args, kwargs)` and of the result,
    `in_avals`/`out_avals` the flat avals (shapes may hold symbolic dimensions),
    `_in_named_shardings`/`_out_named_shardings` one NamedSharding on an abstract
    mesh or None (unspecified) per aval (empty: all None), `in_shardings_hlo`/
    `out_shardings_hlo` their `HloSharding`s once read back from bytes (None in a
    fresh export, as in JAX 0.10.2; see `shardings.py`), `nr_devices` the number of
    devices the module is partitioned for, `mlir_module_serialized` the portable
    StableHLO artifact.
    """
    fun_name: str
    in_tree: Any
    in_avals: tuple[ShapedArray, ...]
    out_tree: Any
    out_avals: tuple[ShapedArray, ...]
    in_shardings_hlo: tuple[Any, ...]
    out_shardings_hlo: tuple[Any, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple = ()
    unordered_effects: tuple = ()
    disabled_safety_checks: tuple[DisabledSafetyCheck, ...] = ()
    mlir_module_serialized: bytes = b""
    calling_convention_version: int = CALLING_CONVENTION_VERSION
    module_kept_var_idx: tuple[int, ...] = ()
    uses_global_constants: bool = False
    _get_vjp: Callable[[Exported], Exported] | None = None
    _in_named_shardings: tuple = ()
    _out_named_shardings: tuple = ()

    @property
    def in_named_shardings(self) -> tuple:
        return (self._in_named_shardings or self._named_from_hlo[0]
                or (None,) * len(self.in_avals))

    @property
    def out_named_shardings(self) -> tuple:
        return (self._out_named_shardings or self._named_from_hlo[1]
                or (None,) * len(self.out_avals))

    @functools.cached_property
    def _named_from_hlo(self) -> tuple[tuple, tuple]:
        """For an export JAX serialized before 2026 (`HloSharding`s only): named
        shardings of the inputs and outputs on the module's own mesh; else `((), ())`."""
        hlo = (*self.in_shardings_hlo, *self.out_shardings_hlo)
        if self._in_named_shardings or self._out_named_shardings or all(
                h is None for h in hlo):
            return (), ()
        with make_ir_context() as context:
            mesh = shardings.module_mesh(_jax.mlir.deserialize_portable_artifact(
                self.mlir_module_serialized, context))
        named = tuple(None if h is None else shardings.from_hlo(h, len(a.shape), mesh)
                      for h, a in zip(hlo, (*self.in_avals, *self.out_avals)))
        return named[:len(self.in_avals)], named[len(self.in_avals):]

    def mlir_module(self) -> str:
        """The module's StableHLO text."""
        with make_ir_context() as context:
            module = _jax.mlir.deserialize_portable_artifact(self.mlir_module_serialized,
                                                             context)
            return module_to_string(module)

    def __str__(self):
        return f"Exported(fun_name={self.fun_name}, ...)"

    def in_shardings_jax(self, mesh) -> tuple:
        """The arguments' shardings (None: unspecified) on `mesh`, a mesh with the
        export's axis names, sizes and types (its devices may differ): what to
        `device_put` the arguments with before `call`."""
        return shardings.on_mesh(self._in_named_shardings or (None,) * len(self.in_avals),
                                 mesh, self.in_shardings_hlo, self.in_avals)

    def out_shardings_jax(self, mesh) -> tuple:
        """The results' shardings on `mesh` (see `in_shardings_jax`)."""
        return shardings.on_mesh(self._out_named_shardings or (None,) * len(self.out_avals),
                                 mesh, self.out_shardings_hlo, self.out_avals)

    def has_vjp(self) -> bool:
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported VJP (made once): it takes the flat primal arguments and one
        cotangent per flat output, and returns the flat arguments' cotangents."""
        if self._get_vjp is None:
            raise ValueError("No VJP is available")
        return self._vjp

    @functools.cached_property
    def _vjp(self) -> Exported:
        return self._get_vjp(self)

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The bytes `plax.export.deserialize` (or `jax.export.deserialize`) reads back;
        with the VJP functions up to order `vjp_order`, so that the deserialized function
        can be differentiated that many times in reverse mode."""
        return bytearray(serialization.serialize(self, vjp_order))

    @functools.cached_property
    def _differentiable_call(self) -> Callable:
        return differentiable_call(self)

    def call(self, *args, **kwargs):
        """Call the exported function on arrays of its argument pytree, shapes and dtypes
        (inside `jit` too)."""
        return call_exported(self, args, kwargs)


def deserialize(blob: bytes | bytearray) -> Exported:
    """The `Exported` serialized in `blob` (by plax or JAX). The bytes must be trusted:
    the module may call any custom call target jaxlib registers."""
    return serialization.deserialize(blob, Exported, DisabledSafetyCheck)


def default_export_platform() -> str:
    """The platform `export` lowers for by default: the default backend's (`cpu`,
    `cuda`, `rocm` or `tpu`)."""
    return backends.get_backend().platform


def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
    """A function taking the arguments of `fun_jit` (arrays or `ShapeDtypeStruct`s,
    whose shapes may be symbolic) and returning the `Exported` lowering of the call,
    for `platforms` (default: `default_export_platform()`)."""
    if not isinstance(fun_jit, JitWrapped):
        raise ValueError(f"Function to be exported must be the result of `jit` but is: "
                         f"{fun_jit}")
    if isinstance(platforms, str):
        raise TypeError(f"export: platforms must be a sequence of platform names, got the "
                        f"string {platforms!r}")
    wanted = tuple(platforms) if platforms is not None else None
    for p in wanted or ():
        if p not in _KNOWN_PLATFORMS:
            raise ValueError(f"export: unsupported platform {p!r}; the platforms plax can "
                             f"export for are {list(_KNOWN_PLATFORMS)}")
    if wanted is not None and (not wanted or len(set(wanted)) != len(wanted)):
        raise ValueError(f"export: platforms must be a non-empty sequence of distinct names, "
                         f"got {list(wanted)}")
    for check in disabled_checks:
        if not isinstance(check, DisabledSafetyCheck):
            raise TypeError(f"export: disabled_checks must be DisabledSafetyChecks, got "
                            f"{check!r}")

    def do_export(*args, **kwargs) -> Exported:
        return _export_call(fun_jit, wanted or (default_export_platform(),),
                            tuple(disabled_checks), args, kwargs)
    return do_export


def _export_call(fun_jit, platforms: tuple[str, ...], disabled_checks, args, kwargs):
    _check_one_scope(fun_jit, args, kwargs)
    flat, in_tree, result = fun_jit._infer(args, kwargs)
    closed = result.closed
    dbg = closed.jaxpr.debug_info
    fun_name = (dbg.func_name if dbg is not None else "") or "fun"
    if result.leading or result.ref_plan is not None:
        raise NotImplementedError(f"export of {fun_name}: a jitted function that closes "
                                  "over traced values or uses array references")
    # (weak types kept, as JAX's in-memory Exported does; serialization drops them)
    in_avals = tuple(ShapedArray(a.shape, a.dtype, a.weak_type) for a in closed.in_avals)
    out_avals = tuple(ShapedArray(a.shape, a.dtype, a.weak_type) for a in closed.out_avals)
    placement = _placement(fun_jit, args, kwargs, flat, in_tree, result)
    nr_devices = len(placement.devices)
    dim_vars = dimension_variables([a.shape for a in in_avals])
    _check_outputs_use_known_variables(out_avals, dim_vars, fun_name)
    polymorphic = bool(dim_vars) or len(platforms) > 1
    lowerings = [lower_jaxpr_to_module(
        closed, name=fun_name, platform=p, keep_unused=bool(dim_vars), hoist_constants=False,
        dim_vars=dim_vars, num_partitions=nr_devices, in_shardings=placement.in_shardings,
        out_shardings=placement.out_shardings or None) for p in platforms]
    if any(lw.host_callbacks or lw.keepalives for lw in lowerings):
        # As JAX: a module calling back into this process cannot run in another one.
        raise NotImplementedError("serialization of host_callbacks is not yet implemented")
    lowering = lowerings[0]
    ordered = lowering.ordered_effects
    unordered = tuple(sorted((e for e in closed.jaxpr.effects if e not in ordered), key=repr))
    platform_dependent = len({module_to_string(lw.module) for lw in lowerings}) > 1
    if any(lw.kept_var_idx != lowering.kept_var_idx for lw in lowerings):
        raise NotImplementedError(f"export of {fun_name} for platforms {list(platforms)}: "
                                  "the platforms' lowerings use different inputs")
    with lowering.context, ir.Location.unknown():
        if platform_dependent:
            module = _side_by_side(lowerings, platforms)
            inner = [f"_platform_{p}_main" for p in platforms]
        else:
            module, inner = lowering.module, None
        if polymorphic:
            _wrap_main(module, in_avals, dim_vars, lowering.kept_var_idx, in_tree,
                       multi_platform=len(platforms) > 1, inner=inner, n_tokens=len(ordered))
        module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(
            polymorphic)
        _verify(module, fun_name)
        target = hlo.get_version_from_compatibility_requirement(
            hlo.StablehloCompatibilityRequirement.WEEK_4)
        # As JAX: Shardy's dialect stays itself in the artifact where the backend
        # reads it so ("mixed" serialization), rather than frontend attributes.
        serialized = _jax.mlir.serialize_portable_artifact(
            module_to_bytecode(module), target, backends.get_backend().serialize_with_sdy)
    kept = set(lowering.kept_var_idx)
    mesh = shardings.export_mesh([*placement.in_shardings, *(placement.out_shardings or ())])
    in_named = tuple(shardings.abstract_named_sharding(s, len(a.shape), mesh) if i in kept
                     else None
                     for i, (s, a) in enumerate(zip(placement.in_shardings, in_avals)))
    # An output's sharding is jit's, else the one its type has (explicit mesh axes).
    out_layouts = tuple(
        s if s is not None else _typed_on(getattr(a, "typed_sharding", None), placement.devices)
        for s, a in zip(placement.out_shardings or (None,) * len(out_avals), closed.out_avals))
    out_named = tuple(shardings.abstract_named_sharding(s, len(a.shape), mesh)
                      for s, a in zip(out_layouts, out_avals))
    return Exported(
        fun_name=fun_name, in_tree=in_tree, in_avals=in_avals,
        out_tree=result.out_tree, out_avals=out_avals,
        in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
        nr_devices=nr_devices, platforms=platforms, ordered_effects=ordered,
        unordered_effects=unordered, disabled_safety_checks=disabled_checks,
        mlir_module_serialized=serialized, module_kept_var_idx=tuple(lowering.kept_var_idx),
        uses_global_constants=polymorphic,
        _get_vjp=lambda primal: _export_vjp(primal, closed, placement.in_shardings,
                                             out_layouts),
        _in_named_shardings=shardings.stated(in_named),
        _out_named_shardings=shardings.stated(out_named))


def _check_one_scope(fun_jit, args, kwargs) -> None:
    """As JAX: the symbolic dimensions of all the arguments share one scope."""
    from plax.extend import tree_util
    first = None
    for keys, leaf in tree_util.tree_flatten_with_path((args, kwargs))[0]:
        for d in getattr(leaf, "shape", ()):
            if not isinstance(d, DimExpr):
                continue
            where = ("args" if keys[0].idx == 0 else "kwargs") + tree_util.keystr(keys[1:])
            if first is None:
                first = (d.scope, where)
            elif first[0] is not None:
                name = getattr(fun_jit, "__name__", None) or "fun"
                first[0].check_same(d, f"when exporting {name}",
                                    self_descr=f"current (from {first[1]}) ",
                                    other_descr=where)


def _typed_on(typed, devices):
    """A type's sharding (on an abstract mesh) placed on the call's devices."""
    return None if typed is None else typed._on_devices(tuple(devices))


def _placement(fun_jit, args, kwargs, flat, in_tree, result):
    """The devices and shardings of the call being exported: jit's `in_shardings`/
    `out_shardings`, else the `sharding` of `ShapeDtypeStruct` arguments and the
    shardings of committed Arrays; one device when nothing says otherwise."""
    ins, outs = fun_jit._shardings(flat, in_tree, result)
    ins = list(ins or (None,) * len(flat))
    for i, x in enumerate(flat):
        given = getattr(x, "sharding", None) if isinstance(x, ShapeDtypeStruct) else None
        if given is not None and ins[i] is None:
            ins[i] = given
    return place_call(flat, ins, outs, jaxpr=result.closed.jaxpr,
                      describe=fun_jit._describer(args, kwargs, flat))


def _export_vjp(primal: Exported, closed, in_layouts, out_layouts) -> Exported:
    """The VJP of `primal` (whose Jaxpr is `closed`, its inputs and outputs laid out as
    `in_layouts`/`out_layouts`), exported: it takes the flat primal arguments followed
    by one cotangent per flat output (float0 for integer ones) and returns the
    cotangents of the flat arguments, laid out as the arguments are, as JAX's does."""
    from plax_transforms.autodiff_api import vjp  # (importing plax.export stays light)
    n_in = len(primal.in_avals)
    primal_fun = jaxpr_as_fun(closed)

    def fun_vjp(*args_and_cts):
        _, pullback = vjp(lambda *xs: list(primal_fun(*xs)), *args_and_cts[:n_in])
        return tuple(pullback(list(args_and_cts[n_in:])))

    fun_vjp.__name__ = f"vjp_{primal.fun_name}"
    specs = [ShapeDtypeStruct(a.shape, a.dtype)
             for a in (*primal.in_avals, *map(tangent_aval, primal.out_avals))]
    layouts = {}
    if any(s is not None for s in (*in_layouts, *out_layouts)):
        layouts = dict(in_shardings=(*in_layouts, *out_layouts),
                       out_shardings=tuple(in_layouts))
    return export(jit(fun_vjp, **layouts), platforms=primal.platforms,
                  disabled_checks=primal.disabled_safety_checks)(*specs)


def _check_outputs_use_known_variables(out_avals, dim_vars, fun_name) -> None:
    for aval in out_avals:
        for d in aval.shape:
            if isinstance(d, DimExpr) and not set(d.variables) <= set(dim_vars):
                raise ValueError(f"export of {fun_name}: the output shape {aval.str_short()} "
                                 "uses dimension variables that no input shape has")


def _verify(module: ir.Module, fun_name: str) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as err:
        raise ValueError(f"export of {fun_name} produced an invalid module: {err}") from None


# --- the wrapper @main of polymorphic and multi-platform modules --------------------------

def _side_by_side(lowerings, platforms) -> ir.Module:
    """A module (in the first lowering's context) holding each platform's lowering, its
    `@main` as `@_platform_<platform>_main`."""
    first = lowerings[0].module
    module = ir.Module.create()
    for attr in ("sym_name", "mhlo.num_replicas", "mhlo.num_partitions"):
        module.operation.attributes[attr] = first.operation.attributes[attr]
    symbols = ir.SymbolTable(module.operation)
    for lowering, platform in zip(lowerings, platforms):
        src = ir.Module.parse(module_to_bytecode(lowering.module))
        merge_module(module, symbols, src, f"_platform_{platform}_main")
    return module


def _wrap_main(module: ir.Module, in_avals, dim_vars: Sequence[str], kept_var_idx,
               in_tree, *, multi_platform: bool, inner: Sequence[str] | None,
               n_tokens: int = 0) -> None:
    """Add a public `@main([platform index,] tokens..., arrays...)` that computes the
    dimension variables from the arrays' shapes, asserts the shapes, and calls the
    lowered function(s), which take `dims..., tokens..., arrays...` (one token per
    ordered effect): `@main` renamed to
    `@_wrapped_jax_export_main`, or with `inner` one per platform, chosen by the
    platform index."""
    symbols = ir.SymbolTable(module.operation)
    if inner is None:
        first = symbols["main"]
        symbols.set_symbol_name(first, _WRAPPED_MAIN)
        symbols.set_visibility(first, "private")
        callees = [_WRAPPED_MAIN]
    else:
        callees, first = list(inner), symbols[inner[0]]
    inner = first
    n_dims = len(dim_vars)
    inner_type = ir.FunctionType(ir.TypeAttr(inner.attributes["function_type"]).value)
    array_types = list(inner_type.inputs)[n_dims:]
    i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    input_types = [i32] * multi_platform + array_types
    arg_attrs = list(ir.ArrayAttr(inner.attributes["arg_attrs"]))[n_dims:]
    if multi_platform:
        arg_attrs.insert(0, ir.DictAttr.get(
            {"jax.global_constant": ir.StringAttr.get("_platform_index")}))
    with ir.InsertionPoint.at_block_begin(module.body):
        main = func.FuncOp("main", ir.FunctionType.get(input_types, list(inner_type.results)))
    main.attributes["sym_visibility"] = ir.StringAttr.get("public")
    main.arg_attrs = ir.ArrayAttr.get(arg_attrs)
    if "res_attrs" in inner.attributes:
        main.result_attrs = inner.attributes["res_attrs"]
    symbols.insert(main)
    symbols.set_symbol_name(main, "main")
    block = main.add_entry_block()
    with ir.InsertionPoint(block):
        tokens = list(block.arguments)[int(multi_platform):int(multi_platform) + n_tokens]
        arrays = list(block.arguments)[int(multi_platform) + n_tokens:]
        kept_avals = [in_avals[i] for i in kept_var_idx]
        dims = _dimension_values(arrays, kept_avals, dim_vars, in_tree, kept_var_idx)
        results = list(inner_type.results)
        operands = [*dims, *tokens, *arrays]
        if len(callees) == 1:
            outs = func.CallOp(results, ir.FlatSymbolRefAttr.get(callees[0]),
                               operands).results
        else:
            case = hlo.CaseOp(results, block.arguments[0], num_branches=len(callees))
            for region, callee in zip(case.regions, callees):
                with ir.InsertionPoint(region.blocks.append()):
                    hlo.return_(list(func.CallOp(results, ir.FlatSymbolRefAttr.get(callee),
                                                 operands).results))
            outs = case.results
        func.ReturnOp(list(outs))
    passmanager.PassManager.parse("builtin.module(symbol-dce)").run(module.operation)


def _dimension_values(arrays, avals, dim_vars, in_tree, kept_var_idx) -> list[ir.Value]:
    """Each dimension variable's value, solved from the arguments' sizes as
    `shape_poly.solving_plan` says, and `@shape_assertion`s that each division is
    exact, each variable >= 1, every other symbolic dimension matches its size and the
    scope's constraints hold."""
    def path(arg: int, dim: int | None = None) -> str:
        return argument_path(in_tree, kept_var_idx[arg], dim)

    positions = [(arg, dim) for arg, aval in enumerate(avals) for dim in range(len(aval.shape))]
    dims = [avals[arg].shape[dim] for arg, dim in positions]
    specs = ",".join(f"{path(i)}.shape = {shape_text(a.shape)}" for i, a in enumerate(avals))
    plan = solving_plan(dims, specs, lambda i: path(*positions[i]))
    i32 = np.dtype(np.int32)
    prefix = "Input shapes do not match the polymorphic shapes specification."
    values: dict[str, ir.Value] = {}
    with mu.dimension_values(values.__getitem__):
        for step in plan:
            arg, dim = positions[step.source]
            size = hlo.get_dimension_size(arrays[arg], dim)
            numerator = hlo.subtract(size, mu.dimension_value(step.rest))
            value = numerator
            if step.coeff != 1:
                coeff = mu.dense_constant(np.int32(step.coeff))
                remainder = hlo.remainder(numerator, coeff)
                _shape_assertion(
                    mu.compare(remainder, mu.dense_constant(np.int32(0)), "EQ", i32),
                    [remainder],
                    f"{prefix} Division had remainder {{0}} when computing the value of "
                    f"'{step.var}'. Using the following polymorphic shapes specifications: "
                    f"{specs}.")
                value = hlo.divide(numerator, coeff)
            values[step.var] = value
            _shape_assertion(
                mu.compare(value, mu.dense_constant(np.int32(1)), "GE", i32), [value, size],
                f"{prefix} Expected value >= 1 for dimension variable '{step.var}'. Using the "
                f"following polymorphic shapes specifications: {specs}. Obtained dimension "
                f"variables: '{step.var}' = {{0}} from specification '{dims[step.source]}' for "
                f"dimension {path(arg, dim)} (= {{1}}).")
        sources = {step.source for step in plan}
        for i, ((arg, dim), d) in enumerate(zip(positions, dims)):
            if not isinstance(d, DimExpr) or i in sources:
                continue
            expected = mu.dimension_value(d)
            actual = hlo.get_dimension_size(arrays[arg], dim)
            _shape_assertion(
                mu.compare(actual, expected, "EQ", i32), [actual, expected],
                f"{prefix} Found inconsistency between dimension size {path(arg, dim)} "
                f"(= {{0}}) and the specification '{d}' (= {{1}}). Using the following "
                f"polymorphic shapes specifications: {specs}.")
        solved = ", ".join(f"'{step.var}' = {{{i + 1}}}" for i, step in enumerate(plan))
        for c in constraint_checks(dims, values):
            diff = mu.dimension_value(c.diff)
            _shape_assertion(
                mu.compare(diff, mu.dense_constant(np.int32(0)),
                           "EQ" if c.cmp == "==" else "GE", i32),
                [diff, *(values[step.var] for step in plan)],
                constraint_message(c, "{0}", specs, solved))
    return [values[v] for v in dim_vars]


def _shape_assertion(predicate: ir.Value, values: list[ir.Value], message: str) -> None:
    op = hlo.CustomCallOp([], [predicate, *values], call_target_name="shape_assertion",
                          has_side_effect=ir.BoolAttr.get(True),
                          api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2))
    op.attributes["error_message"] = ir.StringAttr.get(message)
