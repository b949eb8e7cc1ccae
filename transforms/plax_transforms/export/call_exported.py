"""`Exported.call`: the `export.call_exported` primitive, with all its rules.

* abstract evaluation checks the arguments against the exported avals (ranks,
  dtypes, constant dimensions; `ValueError`s naming `args[i].shape[j]` as JAX
  does), solves the dimension variables from the arguments' shapes (`solving.py`),
  and gives the output avals;
* effects: the export's ordered and unordered effects;
* impl: eager dispatch (the one-equation module is compiled and run);
* jvp: none — an `Exported` with a VJP is called through `custom_vjp` (the
  backward pass calls the exported VJP, as JAX does); one without says so;
* lowering: the exported module is deserialized into the module being built, its
  symbols renamed apart, and `@main` called (after checking the platform and the
  number of devices) with the tokens of its ordered effects, its arguments and
  results constrained to the exported shardings. A shape-polymorphic callee marks
  the module for shape refinement, which `lowering` runs before compilation.
"""
from __future__ import annotations

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func

from plax.extend import dtypes, tree_util
from plax.extend.core import Primitive, ShapedArray
from plax.extend.mlir import hlo, mu
from plax_transforms.export.calling_convention import (
    maximum_supported_calling_convention_version, minimum_supported_calling_convention_version)
from plax_stdlib.lax.linalg.lapack import ensure_targets
from plax_transforms.custom_derivatives import custom_vjp
from plax_transforms.export.merging import merge_module
from plax_transforms.export.shape_poly import (DimExpr, InconclusiveDimensionOperation,
                                               evaluate_shape, shape_text)
from plax_transforms.export.solving import constraint_checks, constraint_message, solving_plan
from plax_transforms.lowering import sharding_constraint

call_exported_p = Primitive("export.call_exported", multiple_results=True)


def call_exported(exported, args, kwargs):
    """`exported` called on `(args, kwargs)`; the results in its output pytree."""
    flat, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != exported.in_tree:
        raise ValueError(
            f"The invocation args and kwargs must have the same pytree structure as when "
            f"the function '{exported.fun_name}' was exported, but they are "
            f"{in_tree} in the invocation and {exported.in_tree} when exported.")
    # float0 values (the cotangents of integer outputs, passed to VJPs) carry no data;
    # the module takes them as booleans.
    flat = [np.zeros(np.shape(x), bool) if getattr(x, "dtype", None) == dtypes.float0
            else x for x in flat]
    if exported.has_vjp():
        outs = exported._differentiable_call(*flat)
    else:
        outs = call_exported_p.bind(*flat, exported=exported)
    return tree_util.tree_unflatten(exported.out_tree, outs)


def differentiable_call(exported):
    """The flat call as a `custom_vjp` function whose backward pass calls the exported
    VJP on the primal arguments and the output cotangents (`Exported` keeps one)."""
    @custom_vjp
    def call(*args):
        return call_exported_p.bind(*args, exported=exported)

    def fwd(*args):
        return call(*args), args

    def bwd(args, cts):
        return tuple(call_exported(exported.vjp(), (*args, *cts), {}))

    call.defvjp(fwd, bwd)
    return call


def _no_vjp(primals, tangents, *, exported):
    raise ValueError(f"The exported function '{exported.fun_name}' has no VJP (it was "
                     "deserialized without one: serialize it with vjp_order >= 1 to "
                     "differentiate it)")


call_exported_p.def_jvp(_no_vjp)
call_exported_p.define_rule("effects", lambda *, exported: frozenset(
    (*exported.ordered_effects, *exported.unordered_effects)))


def argument_path(in_tree, flat_index: int, dim: int | None = None) -> str:
    """`args[0]['w']` (or `args[0]['w'].shape[1]`): flat argument `flat_index` of the
    `(args, kwargs)` pytree `in_tree` (and one of its dimensions)."""
    args, kwargs = tree_util.tree_unflatten(in_tree, list(range(in_tree.num_leaves)))
    path = "args"
    for keys, leaf in tree_util.tree_flatten_with_path((args, kwargs))[0]:
        if leaf == flat_index:
            path = ("args" if keys[0].idx == 0 else "kwargs") + tree_util.keystr(keys[1:])
            break
    return path if dim is None else f"{path}.shape[{dim}]"


def _describe(exported, arg: int, dim: int | None = None) -> str:
    return argument_path(exported.in_tree, arg, dim)


@call_exported_p.def_abstract_eval
def _abstract_eval(*avals, exported):
    if len(avals) != len(exported.in_avals):
        raise ValueError(f"'{exported.fun_name}' takes {len(exported.in_avals)} arrays, "
                         f"called with {len(avals)}")
    env: dict[str, object] = {}
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        if not isinstance(got, ShapedArray):
            raise ValueError(f"Expected an array for {_describe(exported, i)}, got {got}")
        if len(want.shape) != len(got.shape):
            raise ValueError(f"Rank mismatch for {_describe(exported, i)}: expected "
                             f"{shape_text(want.shape)} and called with "
                             f"{shape_text(got.shape)}")
        if want.dtype != got.dtype and not (want.dtype == dtypes.float0
                                            and got.dtype == np.dtype(bool)):
            raise ValueError(f"Dtype mismatch for {_describe(exported, i)}: expected "
                             f"{want.dtype} and called with {got.dtype}")
        for j, (w, g) in enumerate(zip(want.shape, got.shape)):
            if not isinstance(w, DimExpr):
                if isinstance(g, DimExpr) or w != g:
                    raise ValueError(
                        f"Shape mismatch for {_describe(exported, i, j)} (expected same "
                        f"constant): expected {shape_text(want.shape)} and called with "
                        f"{shape_text(got.shape)}")
    _solve(exported, avals, env)
    for i, (want, got) in enumerate(zip(exported.in_avals, avals)):
        for j, (w, g) in enumerate(zip(want.shape, got.shape)):
            if isinstance(w, DimExpr) and w.evaluate(env) != g:
                raise ValueError(
                    f"Input shapes do not match the polymorphic shapes specification: "
                    f"{_describe(exported, i, j)} is {g}, but '{w}' = {w.evaluate(env)} "
                    f"(from {', '.join(f'{k} = {v}' for k, v in sorted(env.items()))})")
    _check_constraints(exported, env)
    return [ShapedArray(evaluate_shape(a.shape, env), a.dtype) for a in exported.out_avals]


def _specs(exported) -> str:
    return ",".join(f"{_describe(exported, i)}.shape = {shape_text(a.shape)}"
                    for i, a in enumerate(exported.in_avals))


def _check_constraints(exported, env: dict) -> None:
    """ValueError where the solved variables `env` break a constraint of the export's
    scope (as the module's shape assertions would)."""
    dims = [d for a in exported.in_avals for d in a.shape]
    for c in constraint_checks(dims, env):
        found = c.diff.evaluate(env)
        try:
            holds = found == 0 if c.cmp == "==" else found >= 0
        except InconclusiveDimensionOperation:
            holds = False
        if not holds:
            solved = ", ".join(f"'{k}' = {v}" for k, v in env.items())
            raise ValueError(constraint_message(c, str(found), _specs(exported), solved))


def _solve(exported, avals, env: dict) -> None:
    """Put in `env` the dimension variables' values that the arguments' shapes give."""
    positions = [(i, j) for i, a in enumerate(exported.in_avals) for j in range(len(a.shape))]
    dims = [exported.in_avals[i].shape[j] for i, j in positions]
    specs = _specs(exported)
    prefix = "Input shapes do not match the polymorphic shapes specification. "
    for step in solving_plan(dims, specs, lambda k: _describe(exported, *positions[k])):
        i, j = positions[step.source]
        size = avals[i].shape[j]
        try:
            env[step.var] = value = step.solve(size, env)
        except ValueError as err:
            raise ValueError(f"{prefix}{err}. Using the following polymorphic shapes "
                             f"specifications: {specs}.") from None
        if isinstance(value, int) and value < 1:
            raise ValueError(f"{prefix}Expected value >= 1 for dimension variable "
                             f"'{step.var}'. Using the following polymorphic shapes "
                             f"specifications: {specs}. Obtained dimension variables: "
                             f"'{step.var}' = {value} from specification "
                             f"'{dims[step.source]}' for dimension "
                             f"{_describe(exported, i, j)} (= {size}).")


@call_exported_p.def_lowering
def _lowering(ctx, *args, exported):
    platform = ctx.platform
    if (platform not in exported.platforms
            and "platform" not in map(str, exported.disabled_safety_checks)):
        raise ValueError(f"Function '{exported.fun_name}' was exported for platforms "
                         f"'{exported.platforms}' but it is used on '{(platform,)}'.")
    if exported.nr_devices not in (1, ctx.num_partitions):
        raise ValueError(f"Function {exported.fun_name} was exported for "
                         f"{exported.nr_devices} devices and is called in a context with "
                         f"{ctx.num_partitions} devices, which is not allowed.")
    version = exported.calling_convention_version
    if not (minimum_supported_calling_convention_version <= version
            <= maximum_supported_calling_convention_version):
        raise ValueError(f"The exported function '{exported.fun_name}' uses calling "
                         f"convention version {version}, outside the supported range "
                         f"[{minimum_supported_calling_convention_version}.."
                         f"{maximum_supported_calling_convention_version}]")
    mctx = ctx.module_context
    # As JAX does: the arguments and results are constrained to the export's shardings
    # (on the context's devices), which the partitioner then honours.
    args = [value if s is None else sharding_constraint(ctx, value, s, aval)
            for value, s, aval in zip(args, exported.in_named_shardings, ctx.avals_in)]
    main_name, main_type = _merge_module(mctx, exported)
    operands = []
    if len(exported.platforms) > 1:
        index = exported.platforms.index(platform) if platform in exported.platforms else 0
        operands.append(mu.dense_constant(np.int32(index)))
    operands += [ctx.tokens[e] for e in exported.ordered_effects]
    kept = [args[i] for i in exported.module_kept_var_idx]
    for value, want in zip(kept, list(main_type.inputs)[len(operands):]):
        operands.append(value if value.type == want else hlo.convert(want, value))
    call = func.CallOp(list(main_type.results), ir.FlatSymbolRefAttr.get(main_name), operands)
    n_tokens = len(exported.ordered_effects)
    if exported.uses_global_constants or not all(
            ir.RankedTensorType(t).has_static_shape for t in main_type.results[n_tokens:]):
        mctx.needs_shape_refinement = True
    results = list(call.results)
    for e in exported.ordered_effects:
        ctx.tokens[e] = results.pop(0)
    outs = []
    for value, aval, s in zip(results, ctx.avals_out, exported.out_named_shardings):
        want = mu.ir_type(aval)
        value = value if value.type == want else hlo.convert(want, value)
        outs.append(value if s is None else sharding_constraint(ctx, value, s, aval))
    return outs


def _calls_lapack(module: ir.Module) -> bool:
    """Whether `module` has custom calls of jaxlib's LAPACK kernels (which plax
    registers on first use)."""
    found = []

    def visit(op):
        if op.name == "stablehlo.custom_call":
            name = ir.StringAttr(op.attributes["call_target_name"]).value
            found.append(name.startswith("lapack_"))
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return any(found)


def _merge_module(mctx, exported) -> tuple[str, ir.FunctionType]:
    """Copy the exported module's functions into the module being lowered (`@main` as
    `@call_exported_<name>`); the name and type of the copied `@main`."""
    sub = _jax.mlir.deserialize_portable_artifact(exported.mlir_module_serialized,
                                                  mctx.context)
    if mctx.platform == "cpu" and _calls_lapack(sub):
        ensure_targets()
    return merge_module(mctx.module, mctx.symbol_table, sub,
                        f"call_exported_{exported.fun_name}")
