"""pallas_call compiled for TPU: the kernel as a Mosaic module, serialized into the
`tpu_custom_call` that libtpu compiles.

The module holds the kernel function and one `transform_<i>` function per blocked
operand and result (its index map). The kernel takes the program ids (i32), the
scalar-prefetch operands (SMEM memrefs), the blocked inputs and the results (memrefs
of their block shape, squeezed dimensions kept as 1), then the scratch buffers; its
attributes give the grid (`iteration_bounds`), `dimension_semantics`, each block's
window (`window_params`: its shape and index map; none for operands left in place,
`pl.ANY`) and how many operands are scalar prefetch and scratch. libtpu pipelines the
windows between HBM and VMEM itself.

The backend config is the JSON libtpu reads: the module (serialized by Mosaic's
versioned `mosaic-serde` pass, then bytecode, then base64), its serialization format,
that it needs Mosaic's layout passes, and the scoped VMEM limit and flags from
`pltpu.CompilerParams`. Scratch buffers are results of the `pallas_call` primitive
that the call drops; here they are kernel operands, and the primitive's results for
them are zeros that XLA removes.
"""
from __future__ import annotations

import base64
import io
import json
import types
from typing import Any, Sequence

import numpy as np
from jaxlib.mlir import ir, passmanager
from jaxlib.mlir.dialects import func
from jaxlib.mosaic.python import tpu

from plax.extend.mlir import make_ir_context, mu
from plax_pallas.specs import Blocked, Buffered, Element, RevisitMode, Squeezed
from plax_transforms.ffi import build_ffi_lowering_function
from plax_tpu.mosaic.kernel import (Context, LoweringError, Ref, lower_jaxpr,
                                    memory_space_name, memref_type)

_SEMANTICS = ("parallel", "arbitrary", "core_parallel", "subcore_parallel")


def _windowed(block, space: str) -> bool:
    """Whether libtpu moves the block through VMEM/SMEM windows (else the kernel sees
    the whole array where it is)."""
    return space in ("vmem", "smem") and not block.scratch


def _block_type(block, space: str, prefetch: bool) -> ir.Type:
    if prefetch or not _windowed(block, space):
        return memref_type(block.array_aval.shape, block.array_aval.dtype, space)
    return memref_type(block.block_shape, block.array_aval.dtype, space)


def _squeezed(block, space: str, prefetch: bool) -> tuple[int, ...]:
    if prefetch or not _windowed(block, space):
        return ()
    return tuple(d for d, dim in enumerate(block.dims) if isinstance(dim, Squeezed))


def _trivial_window(block) -> bool:
    jaxpr = block.index_map.jaxpr
    return (tuple(block.block_shape) == tuple(block.array_aval.shape)
            and all(not hasattr(o, "count") and hasattr(o, "val") and o.val == 0
                    for o in jaxpr.outvars))


def _dimension_semantics(params, grid) -> list[str]:
    semantics = tuple(getattr(params, "dimension_semantics", None) or ())
    if not semantics:
        return ["arbitrary"] * len(grid)
    semantics = tuple(str(getattr(s, "value", s)) for s in semantics)
    for s in semantics:
        if s not in _SEMANTICS:
            raise ValueError(f"dimension_semantics entries are one of {_SEMANTICS}, got {s!r}")
    if len(semantics) > len(grid):
        raise ValueError(f"dimension_semantics {semantics} has more entries than the grid "
                         f"{grid} has dimensions")
    # vmap adds leading grid dimensions, each one independent of the others.
    return ["parallel"] * (len(grid) - len(semantics)) + list(semantics)


def build_module(kernel, grid, blocks, num_inputs: int, num_scalar_prefetch: int,
                 compiler_params, name: str) -> ir.Module:
    """The Mosaic module of a pallas_call, in the current context."""
    ins = list(range(num_inputs))
    outs = [k for k in range(num_inputs, len(blocks)) if not blocks[k].scratch]
    scratch = [k for k in range(num_inputs, len(blocks)) if blocks[k].scratch]
    order = ins + outs + scratch  # block indices in the kernel function's argument order
    spaces = [memory_space_name(b.memory_space) for b in blocks]
    i32 = ir.IntegerType.get_signless(32)
    prefetch_types = [_block_type(blocks[k], "smem", True) for k in range(num_scalar_prefetch)]
    arg_types = [i32] * len(grid) + [
        _block_type(blocks[k], spaces[k], k < num_scalar_prefetch) for k in order]
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        kernel_fn = func.FuncOp(name, (arg_types, []))
        entry = kernel_fn.add_entry_block()
        with ir.InsertionPoint(entry):
            args = list(entry.arguments)
            refs: list[Any] = [None] * len(blocks)
            for pos, k in enumerate(order):
                refs[k] = Ref(args[len(grid) + pos],
                              _squeezed(blocks[k], spaces[k], k < num_scalar_prefetch),
                              "smem" if k < num_scalar_prefetch else spaces[k])
            lower_jaxpr(Context(), kernel.jaxpr, kernel.consts, [*args[:len(grid)], *refs])
            func.ReturnOp([])
        windowed = ins[num_scalar_prefetch:] + outs
        window_params = [_window(blocks[k], spaces[k], f"transform_{i}", grid, prefetch_types)
                         for i, k in enumerate(windowed)] if grid else []
    attrs = kernel_fn.attributes
    if grid:
        attrs["window_params"] = ir.ArrayAttr.get(window_params)
        attrs["iteration_bounds"] = ir.DenseI64ArrayAttr.get(list(grid))
    elif any(not _trivial_window(blocks[k]) for k in windowed):
        raise LoweringError("Pallas TPU lowering: blocks smaller than their arrays need a grid")
    i64 = ir.IntegerType.get_signless(64)
    attrs["scalar_prefetch"] = ir.IntegerAttr.get(i64, num_scalar_prefetch)
    attrs["scratch_operands"] = ir.IntegerAttr.get(i64, len(scratch))
    attrs["dimension_semantics"] = ir.ArrayAttr.get([
        ir.Attribute.parse(f"#tpu.dimension_semantics<{s}>")
        for s in _dimension_semantics(compiler_params, grid)])
    attrs["tpu.core_type"] = ir.Attribute.parse("#tpu.core_type<tc>")
    return module


def _window(block, space: str, fn_name: str, grid, prefetch_types) -> ir.Attribute:
    """The window of a blocked operand or result: its shape and its index map (emitted
    as the function `fn_name`); an empty one for an operand the kernel sees whole in
    place (`pl.ANY`)."""
    if not _windowed(block, space):
        return ir.DictAttr.get({})
    i32 = ir.IntegerType.get_signless(32)
    index_fn = func.FuncOp(fn_name, ([i32] * len(grid) + prefetch_types, [i32] * len(block.dims)))
    entry = index_fn.add_entry_block()
    with ir.InsertionPoint(entry):
        args = list(entry.arguments)
        prefetch = [Ref(a, (), "smem") for a in args[len(grid):]]
        outs = lower_jaxpr(Context(), block.index_map.jaxpr, block.index_map.consts,
                           [*args[:len(grid)], *prefetch])
        func.ReturnOp(outs)
    params = {"transform_indices": ir.FlatSymbolRefAttr.get(fn_name),
              "window_bounds": ir.DenseI64ArrayAttr.get(list(block.block_shape))}
    if any(isinstance(d, Element) for d in block.dims):
        if any(isinstance(d, Blocked) for d in block.dims):
            raise LoweringError("Pallas TPU lowering: a block shape mixing pl.Element and "
                                "blocked dimensions")
        low = [d.padding[0] if isinstance(d, Element) else 0 for d in block.dims]
        high = [d.padding[1] if isinstance(d, Element) else 0 for d in block.dims]
        params["window_kind"] = ir.Attribute.parse(f"#tpu.element_window<{low},{high}>")
    params.update(_pipeline_params(block, space))
    return ir.DictAttr.get(params)


def _pipeline_params(block, space: str) -> dict[str, ir.Attribute]:
    """The window's buffering (`pl.Buffered`): a trivial window in VMEM takes one buffer,
    as there is nothing to pipeline."""
    mode = block.pipeline_mode
    if space == "vmem" and _trivial_window(block):
        mode = Buffered(1)
    if mode is None:
        return {}
    if not isinstance(mode, Buffered):
        raise LoweringError(f"Pallas TPU lowering: unsupported pipeline mode {mode!r} (a "
                            "BlockSpec's pipeline_mode is a pl.Buffered)")
    if mode.use_lookahead:
        raise NotImplementedError("Pallas TPU lowering: pl.Buffered(use_lookahead=True) is "
                                  "not supported by the TPU compiler's pipeline")
    if mode.buffer_count not in (1, 2):
        raise LoweringError(f"Pallas TPU lowering: a block is single (1) or double (2) "
                            f"buffered, got pl.Buffered({mode.buffer_count})")
    kind = "synchronous" if mode.buffer_count == 1 else "double_buffered"
    params = {"pipeline_mode": ir.Attribute.parse(f"#tpu.pipeline_mode<{kind}>")}
    if mode.revisit is not None:
        if mode.revisit is RevisitMode.ANY and mode.buffer_count > 1:
            raise LoweringError("Pallas TPU lowering: RevisitMode.ANY needs a single "
                                "buffer, got pl.Buffered(2)")
        params["revisit_mode"] = ir.Attribute.parse(f"#tpu.revisit_mode<{mode.revisit.value}>")
    return params


def serialize(module: ir.Module) -> bytes:
    """The module as libtpu reads it: Mosaic's versioned serialization, as bytecode."""
    context = module.context
    with context, module.operation.location:
        copy = module.operation.clone()
        allowed = context.allow_unregistered_dialects
        context.allow_unregistered_dialects = True
        try:
            passmanager.PassManager.parse(
                "builtin.module(mosaic-serde{serialize=true})").run(copy)
        finally:
            context.allow_unregistered_dialects = allowed
        out = io.BytesIO()
        copy.write_bytecode(out, desired_version=0)
    return out.getvalue()


def backend_config(body: bytes, compiler_params) -> str:
    """The JSON of the custom call's backend config (what libtpu reads)."""
    p = compiler_params
    call: dict[str, Any] = {"body": base64.b64encode(body).decode("ascii"),
                            "serialization_format": getattr(p, "serialization_format", 1),
                            "needs_layout_passes": True}
    if not getattr(p, "shape_invariant_numerics", False):
        call["shape_invariant_numerics"] = False
    if getattr(p, "allow_input_fusion", None) is not None:
        call["allow_input_fusion"] = [bool(x) for x in p.allow_input_fusion]
    if getattr(p, "internal_scratch_in_bytes", None) is not None:
        call["internal_scratch_in_bytes"] = int(p.internal_scratch_in_bytes)
    for flag in ("disable_bounds_checks", "disable_semaphore_checks", "skip_device_barrier"):
        if getattr(p, flag, False):
            call[flag] = True
    config: dict[str, Any] = {"custom_call_config": call}
    limit = getattr(p, "vmem_limit_bytes", None)
    if limit is not None:
        if not isinstance(limit, (int, np.integer)) or isinstance(limit, bool):
            raise ValueError(f"vmem_limit_bytes must be an int: provided with a {type(limit)}.")
        config["scoped_memory_configs"] = [{"memory_space": 1, "offset": 0, "size": int(limit)}]
    if getattr(p, "flags", None):
        config["flag_configs"] = [{"flag_type": k, "value": _flag_value(v)} for k, v in p.flags]
    return json.dumps(config, separators=(",", ":"))


def _flag_value(v) -> dict:
    if isinstance(v, bool):
        return {"boolean_value": v}
    if isinstance(v, (int, np.integer)):
        return {"integer_value": int(v)}
    if isinstance(v, float):
        return {"double_value": v}
    raise ValueError(f"invalid flag value: {v!r}")


def kernel_name(kernel, name: str | None) -> str:
    if name:
        return name
    dbg = kernel.jaxpr.debug_info
    fn = getattr(dbg, "func_name", None) or "pallas_kernel"
    return "".join(c if c.isalnum() or c == "_" else "_" for c in fn) or "pallas_kernel"


def mosaic_module(kernel, grid, blocks, num_inputs: int, num_scalar_prefetch: int,
                  compiler_params, name: str) -> ir.Module:
    """The Mosaic module in a context of its own (with the TPU dialect)."""
    context = make_ir_context()
    tpu.register_dialect(context)
    with context, ir.Location.unknown():
        return build_module(kernel, grid, blocks, num_inputs, num_scalar_prefetch,
                            compiler_params, name)


def lower_pallas_call(ctx, *operands, kernel, grid, blocks, num_inputs: int,
                      num_scalar_prefetch: int, input_output_aliases, debug: bool,
                      name: str | None, compiler_params) -> Sequence[ir.Value]:
    """pallas_call's lowering for TPU: the `tpu_custom_call` of the kernel's Mosaic module."""
    axes = ctx.axis_context
    if (axes is None and ctx.num_partitions > 1) or (axes is not None
                                                     and not axes.is_fully_manual):
        raise NotImplementedError(
            "Mosaic kernels cannot be automatically partitioned: call the pallas_call "
            "inside a shard_map over every mesh axis (each device runs the kernel on its "
            "own shard)")
    fn_name = kernel_name(kernel, name)
    module = mosaic_module(kernel, grid, blocks, num_inputs, num_scalar_prefetch,
                           compiler_params, fn_name)
    if debug:
        print(f"\nThe Mosaic module for pallas_call {fn_name}:")
        print(module)
    config = backend_config(serialize(module), compiler_params)
    result_blocks = blocks[num_inputs:]
    outs = [k for k, b in enumerate(result_blocks) if not b.scratch]
    position = {k: i for i, k in enumerate(outs)}
    aliases = {i: position[o] for i, o in input_output_aliases}
    shim = types.SimpleNamespace(avals_in=list(ctx.avals_in),
                                 avals_out=[ctx.avals_out[k] for k in outs])
    build = build_ffi_lowering_function("tpu_custom_call", api_version=1,
                                        backend_config=config, operand_output_aliases=aliases)
    call = build(shim, *operands)
    call.operation.attributes["kernel_name"] = ir.StringAttr.get(fn_name)
    results = iter(call.results)
    return [next(results) if not b.scratch else mu.splat(0, ctx.avals_out[k])
            for k, b in enumerate(result_blocks)]
