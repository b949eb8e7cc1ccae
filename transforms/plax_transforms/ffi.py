"""`plax.ffi`: calling C++ (or CUDA) kernels written against XLA's FFI.

A kernel is compiled against the FFI headers jaxlib ships (`include_dir()`),
exposed as a handler (a PyCapsule: `pycapsule` wraps a ctypes function pointer) and
registered under a name with `register_ffi_target`. `ffi_call(name, result shapes)`
then returns a function that applies it: the primitive `ffi.ffi_call` lowers to a
`stablehlo.custom_call` of that target (typed FFI: keyword arguments become the
call's attributes, `api_version=4`), runs eagerly by compiling that one call, is
batched by its `vmap_method` (`vmap_methods`), and is not differentiable (give it a
`custom_jvp`/`custom_vjp`). With `has_side_effect=True` it has the effect `FFI`, so
it is kept when its results are unused. `ffi_lowering(name)` gives a lowering rule
for a primitive of one's own.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Mapping, Sequence

import jaxlib
import numpy as np
from jaxlib import xla_client
from jaxlib.mlir import ir

from plax.extend.core import (AbstractToken, Effect, Primitive, ShapedArray, abstract_token,
                              get_aval)
from plax.extend.mlir import hlo, mu
from plax_transforms.vmap_methods import batch_call, check_vmap_method

FFI_EFFECT = Effect("FFI")


# --- registration ------------------------------------------------------------------

def include_dir() -> str:
    """The folder of the XLA FFI headers that jaxlib ships (`xla/ffi/api/ffi.h`...), to
    compile kernels against: the headers of the jaxlib that will run them."""
    return os.path.join(os.path.dirname(os.path.abspath(jaxlib.__file__)), "include")


def pycapsule(funcptr) -> Any:
    """A PyCapsule holding a ctypes function pointer (e.g. `ctypes.cdll.LoadLibrary(
    path).MyHandler`), which is how XLA is handed an FFI handler."""
    address = ctypes.cast(funcptr, ctypes.c_void_p).value
    if not address:
        raise ValueError(f"pycapsule: {funcptr!r} is a null function pointer")
    make = ctypes.pythonapi.PyCapsule_New
    make.restype = ctypes.py_object
    make.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return make(address, None, None)


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
    """Register the handler `fn` (a PyCapsule, or a dict of them by FFI stage, e.g.
    `{"execute": capsule}`) as the custom-call target `name` on `platform`.
    `api_version` 1 is the typed FFI, 0 the older custom-call API."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_ffi_target: name must be a non-empty string, got {name!r}")
    xla_client.register_custom_call_target(name, fn, platform, api_version, **kwargs)


def register_ffi_type(name: str, type_registration: Mapping[str, Any],
                      platform: str = "cpu") -> None:
    """Register a user type for FFI handlers: `{"type_id": capsule of the XLA_FFI_TypeId,
    "type_info": optional capsule of its XLA_FFI_TypeInfo}`."""
    xla_client.register_custom_type(name, dict(type_registration), platform=platform)


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
    """Register a user type by its type id alone (a capsule of an `XLA_FFI_TypeId`,
    which XLA fills in)."""
    register_ffi_type(name, {"type_id": obj}, platform)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
    """Let the SPMD partitioner split calls of target `name` along their batch axes."""
    xla_client.register_custom_call_as_batch_partitionable(name)


# --- lowering ------------------------------------------------------------------------

def _row_major(aval) -> tuple[int, ...]:
    return () if isinstance(aval, AbstractToken) else tuple(range(len(aval.shape) - 1, -1, -1))


def _layout_attr(layout: Sequence[int]) -> ir.Attribute:
    return ir.DenseIntElementsAttr.get(np.asarray(layout, dtype=np.int64),
                                       type=ir.IndexType.get())


def ir_attribute(value: Any) -> ir.Attribute:
    """A Python value as an FFI attribute: Python scalars as i64/f64/i1, NumPy scalars
    of their type, arrays as dense elements, strings, dicts, sequences."""
    if isinstance(value, ir.Attribute):
        return value
    if isinstance(value, _Hashable):
        value = value.value
    if isinstance(value, str):
        return ir.StringAttr.get(value)
    if isinstance(value, dict):
        return ir.DictAttr.get({k: ir_attribute(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return ir.ArrayAttr.get([ir_attribute(v) for v in value])
    if isinstance(value, (bool, int, float)):
        value = np.asarray(value, {bool: np.bool_, int: np.int64, float: np.float64}[type(value)])
    if isinstance(value, (np.ndarray, np.generic)):
        value = np.asarray(value)
        element = mu.ir_element_type(value.dtype)
        if value.ndim:
            return ir.DenseElementsAttr.get(np.ascontiguousarray(value), type=element,
                                            shape=value.shape)
        if isinstance(element, ir.IntegerType):
            return ir.IntegerAttr.get(element, int(value))
        return ir.FloatAttr.get(element, float(value))
    raise TypeError(f"ffi: cannot pass {value!r} of type {type(value).__name__} as an "
                    "attribute; use scalars, strings, NumPy arrays, dicts or sequences")


def build_ffi_lowering_function(call_target_name: str, *,
                                operand_layouts: Sequence[Sequence[int] | None] | None = None,
                                result_layouts: Sequence[Sequence[int] | None] | None = None,
                                backend_config: Mapping[str, Any] | str | None = None,
                                skip_ffi_layout_processing: bool = False,
                                api_version: int = 4, has_side_effect: bool = False,
                                operand_output_aliases: Mapping[int, int] | None = None):
    """A function `(ctx, *operands, **attributes) -> the custom_call op` of target
    `call_target_name`. Layouts are minor-to-major (XLA's order), row-major by
    default; keyword arguments become FFI attributes (api_version 4)."""
    def build(ctx, *operands: ir.Value, **attributes: Any):
        result_types = mu.ir_types(ctx.avals_out)
        if api_version >= 4:
            if backend_config is not None and not isinstance(backend_config, Mapping):
                raise ValueError("ffi: with api_version 4 backend_config must be a dictionary")
            config = {**(backend_config or {}), **attributes}
            config_attr, version = ir.StringAttr.get(""), 1  # 1 + a dict: the typed FFI
        else:
            if attributes:
                raise ValueError("ffi: attributes need custom call api_version 4, got "
                                 f"api_version={api_version}")
            config_attr, version = ir.StringAttr.get(backend_config or ""), api_version
        attrs = dict(
            call_target_name=ir.StringAttr.get(call_target_name),
            has_side_effect=ir.BoolAttr.get(has_side_effect), backend_config=config_attr,
            api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), version),
            called_computations=ir.ArrayAttr.get([]))
        if not skip_ffi_layout_processing:
            ins = operand_layouts or [None] * len(operands)
            outs = result_layouts or [None] * len(result_types)
            attrs["operand_layouts"] = ir.ArrayAttr.get(
                [_layout_attr(_row_major(a) if lay is None else lay)
                 for a, lay in zip(ctx.avals_in, ins)])
            attrs["result_layouts"] = ir.ArrayAttr.get(
                [_layout_attr(_row_major(a) if lay is None else lay)
                 for a, lay in zip(ctx.avals_out, outs)])
        if operand_output_aliases:
            many = len(result_types) > 1
            attrs["output_operand_aliases"] = ir.ArrayAttr.get([
                hlo.OutputOperandAlias.get(output_tuple_indices=[o] if many else [],
                                           operand_index=i, operand_tuple_indices=[])
                for i, o in operand_output_aliases.items()])
        op = hlo.CustomCallOp.build_generic(results=result_types, operands=list(operands),
                                            attributes=attrs)
        if api_version >= 4:
            op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(
                {k: ir_attribute(v) for k, v in config.items()})
        return op
    return build


def ffi_lowering(call_target_name: str, **options: Any):
    """A lowering rule `(ctx, *operands, **attributes) -> results` calling the FFI target
    `call_target_name` (options as for `build_ffi_lowering_function`)."""
    build = build_ffi_lowering_function(call_target_name, **options)
    return lambda ctx, *operands, **attributes: list(build(ctx, *operands,
                                                           **attributes).results)


# --- ffi_call --------------------------------------------------------------------------

class _Hashable:
    """An attribute value (array, dict) held by value, so equal calls hash equal."""
    __slots__ = ("value", "_key")

    def __init__(self, value):
        self.value = value
        self._key = (repr(value) if isinstance(value, dict) else
                     (value.dtype.str, value.shape, value.tobytes()))

    def __eq__(self, other):
        return isinstance(other, _Hashable) and self._key == other._key

    def __hash__(self):
        return hash(self._key)


def _hashable_attributes(attributes: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    items = []
    for key, value in sorted(attributes.items()):
        if isinstance(value, (np.ndarray, dict)):
            value = _Hashable(value)
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"Non-hashable keyword argument to ffi_call {key}: {value!r}"
                            ) from None
        items.append((key, value))
    return tuple(items)


ffi_call_p = Primitive("ffi.ffi_call", multiple_results=True)
ffi_call_p.def_abstract_eval(lambda *avals, result_avals, **_: list(result_avals))
ffi_call_p.define_rule("effects", lambda *, has_side_effect, **_: frozenset(
    {FFI_EFFECT} if has_side_effect else ()))


@ffi_call_p.def_lowering
def _lowering(ctx, *operands, target_name, has_side_effect, input_layouts, output_layouts,
              input_output_aliases, custom_call_api_version, legacy_backend_config,
              attributes, result_avals, vmap_method):
    rule = ffi_lowering(target_name, operand_layouts=input_layouts,
                        result_layouts=output_layouts, backend_config=legacy_backend_config,
                        api_version=custom_call_api_version, has_side_effect=has_side_effect,
                        operand_output_aliases=dict(input_output_aliases))
    return rule(ctx, *operands, **dict(attributes))


def _batched_layout(layout: tuple[int, ...]) -> tuple[int, ...]:
    """A minor-to-major layout with a new most-major (batch) dimension in front."""
    return (*(n + 1 for n in layout), 0)


def _batching(axis_data, args, dims, *, result_avals, vmap_method, input_layouts,
              output_layouts, **params):
    def rebind(new_args, avals, leading_batch):
        ins = tuple(_batched_layout(lay) if b else lay
                    for lay, b in zip(input_layouts, leading_batch))
        outs = tuple(_batched_layout(lay) if len(a.shape) > len(r.shape) else lay
                     for lay, a, r in zip(output_layouts, avals, result_avals))
        return ffi_call_p.bind(*new_args, result_avals=avals, vmap_method=vmap_method,
                               input_layouts=ins, output_layouts=outs, **params)
    return batch_call(rebind, axis_data.size, args, dims, vmap_method=vmap_method,
                      result_avals=result_avals, what=f"the FFI call {params['target_name']!r}")


def _not_differentiable(*args, target_name, **params):
    raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                     "`plax.custom_jvp` or `plax.custom_vjp` to add support.")


ffi_call_p.define_rule("batching", _batching)
ffi_call_p.define_rule("jvp", lambda primals, tangents, **params: _not_differentiable(**params))
ffi_call_p.define_rule("transpose", lambda cts, *args, **params: _not_differentiable(**params))


def _result_avals(results: Sequence[Any]) -> tuple:
    avals = []
    for i, r in enumerate(results):
        if isinstance(r, AbstractToken):
            avals.append(abstract_token)
        elif hasattr(r, "shape") and hasattr(r, "dtype"):
            avals.append(ShapedArray(tuple(r.shape), np.dtype(r.dtype)))
        else:
            raise ValueError("All elements of result_shape_dtypes must have 'shape' and "
                             f"'dtype' attributes. Got {r!r} at position {i}.")
    return tuple(avals)


def _static_layouts(avals, layouts, what: str) -> tuple[tuple[int, ...], ...]:
    """Minor-to-major layouts from the user's major-to-minor ones (None: row-major)."""
    if layouts is None:
        return tuple(_row_major(a) for a in avals)
    if len(layouts) != len(avals):
        raise ValueError(f"The number of {what} ({len(avals)}) must equal the number of "
                         f"{what[:-1] if what.endswith('s') else what} layouts ({len(layouts)}).")
    out = []
    for aval, layout in zip(avals, layouts):
        if layout is None:
            out.append(_row_major(aval))
            continue
        layout = tuple(int(d) for d in layout)
        if sorted(layout) != list(range(len(getattr(aval, "shape", ())))):
            raise ValueError(f"ffi_call: the layout {layout} is not a permutation of the "
                             f"dimensions of a value of shape {aval.str_short()}")
        out.append(layout[::-1])
    return tuple(out)


def ffi_call(target_name: str, result_shape_dtypes: Any, *, has_side_effect: bool = False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4, legacy_backend_config: str | None = None):
    """A function calling the registered FFI target `target_name` on its positional
    array arguments, with its keyword arguments as the call's attributes, and returning
    arrays like `result_shape_dtypes` (one object with `shape` and `dtype`, or a
    sequence of them). Layouts are major-to-minor per value (None: row-major);
    `input_output_aliases` maps input indices to the outputs that reuse their buffers.
    `vmap_method` says how `vmap` batches it (see `plax.pure_callback`)."""
    check_vmap_method(vmap_method, "ffi_call")
    multiple = isinstance(result_shape_dtypes, (list, tuple))
    result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
    if custom_call_api_version >= 4 and legacy_backend_config is not None:
        raise ValueError("The use of the legacy_backend_config parameter requires "
                         f"custom_call_api_version < 4; got {custom_call_api_version}.")
    out_layouts = output_layouts if multiple or output_layouts is None else [output_layouts]
    static_out_layouts = _static_layouts(result_avals, out_layouts, "outputs")

    def call(*args, **attributes):
        in_avals = [get_aval(x) for x in args]
        static_in_layouts = _static_layouts(in_avals, input_layouts, "input arguments")
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if not 0 <= i < len(args) or not 0 <= o < len(result_avals):
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"outside the {len(args)} inputs and {len(result_avals)} "
                                 "outputs")
            a, r = in_avals[i], result_avals[o]
            if (a.shape, a.dtype) != (r.shape, r.dtype) or \
                    static_in_layouts[i] != static_out_layouts[o]:
                raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' "
                                 f"between an input {a.str_short()} and an output "
                                 f"{r.str_short()} of different types or layouts")
            aliases.append((i, o))
        results = ffi_call_p.bind(
            *args, target_name=target_name, result_avals=result_avals,
            vmap_method=vmap_method, has_side_effect=bool(has_side_effect),
            input_layouts=static_in_layouts, output_layouts=static_out_layouts,
            input_output_aliases=tuple(aliases),
            custom_call_api_version=custom_call_api_version,
            legacy_backend_config=legacy_backend_config,
            attributes=_hashable_attributes(attributes))
        if not multiple:
            return results[0]
        return tuple(results) if isinstance(result_shape_dtypes, tuple) else list(results)
    return call


__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_call_p", "ffi_lowering",
           "include_dir", "pycapsule", "register_ffi_target",
           "register_ffi_target_as_batch_partitionable", "register_ffi_type",
           "register_ffi_type_id"]
