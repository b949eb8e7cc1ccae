"""`Exported` to bytes and back, in the FlatBuffers schema of JAX 0.10.2's
`jax.export` (`serialization.fbs`, serialization version 11), so that either side
reads what the other wrote.

What is written: the function name, the `(args, kwargs)` and result pytrees
(`PyTreeDef` tables: leaf/None/tuple/list/dict, and custom nodes registered with
`register_pytree_node_serialization`), the avals both as plain lists and as
indices into a table of distinct avals (JAX's v10 form), the named shardings of
the inputs and outputs (`serialized_shardings.py`), the number of devices, the
platforms, the ordered and unordered effects (by class), the disabled safety
checks, the serialized StableHLO module, the calling convention version, the kept
inputs, whether the module needs shape refinement, and optionally the exported
VJP (recursively).
"""
from __future__ import annotations

import collections
import json
import struct
from typing import Any, Callable

import numpy as np
from jaxlib.xla_client import HloSharding

from plax.extend import dtypes, tree_util
from plax.extend.core import Effect, ShapedArray
from plax_transforms.export import flatbuffer as fb
from plax_transforms.export.flatbuffer import BOOL, INT8, INT16, UINT16, UINT32, Table, Vector
from plax_transforms.export.serialized_shardings import Shardings, read_shardings
from plax_transforms.export.shape_poly import SymbolicScope, parse_dimension
from plax_transforms.export.shardings import hlo_shardings, stated

# JAX writes 3 in the version field for the sake of old readers; so do we.
_WRITTEN_SERIALIZATION_VERSION = 3

# Field slots, in the order of the schema's tables.
_TREE_KIND, _TREE_CHILDREN, _TREE_NAMES, _TREE_CUSTOM_NAME, _TREE_AUXDATA = range(5)
_AVAL_KIND, _AVAL_SHAPE, _AVAL_DTYPE, _AVAL_MEMORY_SPACE = range(4)
_CHECK_KIND, _CHECK_TARGET = range(2)
_EFFECT_TYPE_NAME = 0
(_EXP_VERSION, _EXP_NAME, _EXP_IN_TREE, _EXP_IN_AVALS, _EXP_OUT_TREE, _EXP_OUT_AVALS,
 _EXP_NR_DEVICES_SHORT, _EXP_IN_SHARDINGS, _EXP_OUT_SHARDINGS, _EXP_PLATFORMS,
 _EXP_ORDERED_EFFECTS, _EXP_UNORDERED_EFFECTS, _EXP_DISABLED_CHECKS, _EXP_MODULE,
 _EXP_CALLING_CONVENTION, _EXP_KEPT_VAR_IDX, _EXP_USES_GLOBAL_CONSTANTS, _EXP_VJP,
 _EXP_NR_DEVICES, _EXP_UNIQUE_AVALS, _EXP_UNIQUE_MESHES, _EXP_UNIQUE_SHARDINGS,
 _EXP_IN_AVALS_IDXS, _EXP_OUT_AVALS_IDXS, _EXP_IN_SHARDINGS_IDXS,
 _EXP_OUT_SHARDINGS_IDXS) = range(26)

_SHARDING_SLOTS = {
    "in": {"meshes": _EXP_UNIQUE_MESHES, "named": _EXP_UNIQUE_SHARDINGS,
           "idxs": _EXP_IN_SHARDINGS_IDXS, "entries": _EXP_IN_SHARDINGS},
    "out": {"meshes": _EXP_UNIQUE_MESHES, "named": _EXP_UNIQUE_SHARDINGS,
            "idxs": _EXP_OUT_SHARDINGS_IDXS, "entries": _EXP_OUT_SHARDINGS},
}

_LEAF, _NONE, _TUPLE, _LIST, _DICT, _CUSTOM = range(6)
_MEMORY_SPACE_DEVICE = 1
_CHECK_PLATFORM, _CHECK_CUSTOM_CALL = 0, 1

_DTYPE_CODES = {
    "bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6,
    "uint32": 7, "uint64": 8, "float16": 9, "float32": 10, "float64": 11, "complex64": 12,
    "complex128": 13, "bfloat16": 14, "int4": 15, "uint4": 16, "float8_e4m3b11fnuz": 17,
    "float8_e4m3fn": 18, "float8_e4m3fnuz": 19, "float8_e5m2": 20, "float8_e5m2fnuz": 21,
    "float8_e4m3": 23, "float8_e3m4": 24, "float8_e8m0fnu": 25, "float4_e2m1fn": 26,
}
_FLOAT0_CODE = 22
# PRNG key dtypes, by the name plax prints them with → (code, implementation).
_KEY_CODES = {"key<fry>": (27, "threefry2x32"), "key<rbg>": (28, "rbg"),
              "key<urbg>": (29, "unsafe_rbg")}
_DTYPES_BY_CODE = {code: np.dtype(getattr(dtypes, name, None) or name)
                   for name, code in _DTYPE_CODES.items()}
_DTYPES_BY_CODE[_FLOAT0_CODE] = np.dtype(dtypes.float0)


# --- custom pytree nodes ---------------------------------------------------------------

# node type → (serialized name, auxdata → bytes); name → (node type, bytes → auxdata,
# (auxdata, children) → node).
_serializers: dict[type, tuple[str, Callable[[Any], bytes]]] = {}
_deserializers: dict[str, tuple[type, Callable[[bytes], Any], Callable]] = {}


def register_pytree_node_serialization(nodetype: type, *, serialized_name: str,
                                       serialize_auxdata: Callable[[Any], bytes],
                                       deserialize_auxdata: Callable[[bytes], Any]) -> type:
    """Make pytrees with `nodetype` nodes (already registered as pytree nodes)
    serializable in an `Exported`'s argument and result trees, under `serialized_name`."""
    if nodetype in _serializers:
        raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. "
                         f"Previous registration was with serialized_name "
                         f"`{_serializers[nodetype][0]}`.")
    if serialized_name in _deserializers:
        raise ValueError(f"Duplicate serialization registration for serialized_name "
                         f"`{serialized_name}`. Previous registration was for type "
                         f"`{_deserializers[serialized_name][0]}`.")
    _serializers[nodetype] = (serialized_name, serialize_auxdata)
    _deserializers[serialized_name] = (nodetype, deserialize_auxdata)
    return nodetype


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Make a namedtuple class serializable in an `Exported`'s trees."""
    if not (issubclass(nodetype, tuple) and hasattr(nodetype, "_fields")):
        raise ValueError(f"Use `register_pytree_node_serialization` for types other "
                         f"than namedtuples; {nodetype} is not a namedtuple.")
    return register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name, serialize_auxdata=lambda _: b"",
        deserialize_auxdata=lambda _: None)


register_pytree_node_serialization(
    collections.OrderedDict, serialized_name="collections.OrderedDict",
    serialize_auxdata=lambda keys: json.dumps(list(keys)).encode("utf-8"),
    deserialize_auxdata=lambda data: tuple(json.loads(data.decode("utf-8"))))


# --- writing -------------------------------------------------------------------------------

def serialize(exp, vjp_order: int = 0) -> bytes:
    """`exp` (an `Exported`) as bytes, with its VJPs up to order `vjp_order`."""
    return fb.build(_exported_table(exp, vjp_order))


def _exported_table(exp, vjp_order: int) -> Table:
    if vjp_order < 0:
        raise ValueError(f"vjp_order must be >= 0, got {vjp_order}")
    vjp = None
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError("serialization of an Exported that does not have vjps of "
                             f"high-enough order (vjp_order={vjp_order})")
        vjp = _exported_table(exp.vjp(), vjp_order - 1)
    in_named, out_named = exp.in_named_shardings, exp.out_named_shardings
    named = Shardings((*in_named, *out_named))
    unique_avals = list(dict.fromkeys(_aval_key(a) for a in (*exp.in_avals, *exp.out_avals)))
    index = {key: i for i, key in enumerate(unique_avals)}
    return Table({
        _EXP_VERSION: (UINT16, _WRITTEN_SERIALIZATION_VERSION),
        _EXP_NAME: (None, exp.fun_name),
        _EXP_IN_TREE: (None, _tree_table(exp.in_tree)),
        _EXP_IN_AVALS: (None, Vector([_aval_table(a) for a in exp.in_avals])),
        _EXP_OUT_TREE: (None, _tree_table(exp.out_tree)),
        _EXP_OUT_AVALS: (None, Vector([_aval_table(a) for a in exp.out_avals])),
        _EXP_IN_SHARDINGS: (None, named.entries(in_named)),
        _EXP_OUT_SHARDINGS: (None, named.entries(out_named)),
        _EXP_PLATFORMS: (None, Vector(list(exp.platforms))),
        _EXP_ORDERED_EFFECTS: (None, Vector([_effect_table(e) for e in exp.ordered_effects])),
        _EXP_UNORDERED_EFFECTS: (None, Vector([_effect_table(e)
                                               for e in exp.unordered_effects])),
        _EXP_DISABLED_CHECKS: (None, Vector([_check_table(c)
                                             for c in exp.disabled_safety_checks])),
        _EXP_MODULE: (None, bytes(exp.mlir_module_serialized)),
        _EXP_CALLING_CONVENTION: (UINT16, exp.calling_convention_version),
        _EXP_KEPT_VAR_IDX: (None, Vector(exp.module_kept_var_idx, UINT16)),
        _EXP_USES_GLOBAL_CONSTANTS: (BOOL, bool(exp.uses_global_constants)),
        _EXP_VJP: (None, vjp),
        _EXP_NR_DEVICES: (UINT32, exp.nr_devices),
        _EXP_UNIQUE_AVALS: (None, Vector([_aval_table(ShapedArray(*k)) for k in unique_avals])),
        _EXP_UNIQUE_MESHES: (None, named.mesh_tables()),
        _EXP_UNIQUE_SHARDINGS: (None, named.named_tables()),
        _EXP_IN_AVALS_IDXS: (None, Vector([index[_aval_key(a)] for a in exp.in_avals], UINT32)),
        _EXP_OUT_AVALS_IDXS: (None, Vector([index[_aval_key(a)] for a in exp.out_avals],
                                           UINT32)),
        _EXP_IN_SHARDINGS_IDXS: (None, named.indices(in_named)),
        _EXP_OUT_SHARDINGS_IDXS: (None, named.indices(out_named)),
    })


def _aval_key(aval) -> tuple:
    return (tuple(aval.shape), aval.dtype)


def _dtype_code(dtype) -> int:
    if isinstance(dtype, dtypes.ExtendedDType):
        code = _KEY_CODES.get(str(dtype), (None,))[0]
    else:
        dtype = np.dtype(dtype)
        code = (_FLOAT0_CODE if dtype == np.dtype(dtypes.float0)
                else _DTYPE_CODES.get(dtype.name))
    if code is None:
        raise NotImplementedError(f"serializing arrays of dtype {dtype}")
    return code


def _dtype_of_code(code: int):
    if code in _DTYPES_BY_CODE:
        return _DTYPES_BY_CODE[code]
    impl = next((impl for c, impl in _KEY_CODES.values() if c == code), None)
    if impl is None:
        raise NotImplementedError(f"deserializing arrays of dtype code {code}")
    from plax_stdlib.random.impls import key_dtype  # only exports of PRNG keys need it
    return key_dtype(impl)


def _aval_table(aval) -> Table:
    return Table({_AVAL_KIND: (INT8, 0),
                  _AVAL_SHAPE: (None, Vector([str(d) for d in aval.shape])),
                  _AVAL_DTYPE: (INT8, _dtype_code(aval.dtype)),
                  _AVAL_MEMORY_SPACE: (INT8, _MEMORY_SPACE_DEVICE)})


def _tree_table(treedef) -> Table:
    node_data = treedef.node_data()
    children = Vector([_tree_table(c) for c in treedef.children()])
    if node_data is None:
        return Table({_TREE_KIND: (INT8, _LEAF)})
    node_type, auxdata = node_data
    if node_type is type(None):
        return Table({_TREE_KIND: (INT8, _NONE)})
    if node_type in (tuple, list):
        return Table({_TREE_KIND: (INT8, _TUPLE if node_type is tuple else _LIST),
                      _TREE_CHILDREN: (None, children)})
    if node_type is dict:
        for key in auxdata:
            if not isinstance(key, str):
                raise TypeError("Serialization is supported only for dictionaries with "
                                f"string keys. Found key {key!r} of type {type(key)}.")
        return Table({_TREE_KIND: (INT8, _DICT), _TREE_CHILDREN: (None, children),
                      _TREE_NAMES: (None, Vector(list(auxdata)))})
    if node_type in _serializers:
        name, serialize_auxdata = _serializers[node_type]
        data = serialize_auxdata(auxdata)
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(f"The custom serialization function for `{node_type}` must "
                             f"return a `bytes` object. It returned a {type(data)}.")
        return Table({_TREE_KIND: (INT8, _CUSTOM), _TREE_CHILDREN: (None, children),
                      _TREE_CUSTOM_NAME: (None, name), _TREE_AUXDATA: (None, bytes(data))})
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type "
                     f"`{node_type}`. Use `export.register_pytree_node_serialization` or "
                     "`export.register_namedtuple_serialization`.")


def _effect_table(effect) -> Table:
    """An effect, by its class (as JAX writes it): the class must make an equal effect
    when called with no arguments, so that a reader can make it again."""
    try:
        replica = type(effect)()
    except Exception:
        raise NotImplementedError(f"Effect {effect} must have a nullary constructor to be "
                                  "serializable") from None
    if replica != effect or hash(replica) != hash(effect):
        raise NotImplementedError(f"Effect {effect} must have a nullary class constructor "
                                  "that produces an equal effect object.")
    return Table({_EFFECT_TYPE_NAME: (None, str(type(effect)))})


def _read_effect(t: fb.TableView):
    """The effect a serialized Exported names by class: one of the `Effect` classes
    this process has defined, called with no arguments."""
    name = t.string(_EFFECT_TYPE_NAME)
    todo = [Effect]
    while todo:
        cls = todo.pop()
        if str(cls) == name:
            try:
                return cls()
            except Exception:
                raise NotImplementedError(f"deserializing effect {name} that does not have "
                                          "a nullary class constructor") from None
        todo.extend(cls.__subclasses__())
    raise NotImplementedError(f"cannot deserialize effect type {name}")


def _check_table(check) -> Table:
    target = check.is_custom_call()
    if target is not None:
        return Table({_CHECK_KIND: (INT8, _CHECK_CUSTOM_CALL), _CHECK_TARGET: (None, target)})
    return Table({_CHECK_KIND: (INT8, _CHECK_PLATFORM)})


# --- reading ---------------------------------------------------------------------------------

def deserialize(blob, make_exported: Callable[..., Any], make_check: Callable[[str], Any]):
    """The fields of the `Exported` serialized in `blob`, given to `make_exported`;
    `make_check(impl)` builds a `DisabledSafetyCheck`."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize expects the bytes of a serialized Exported, got "
                        f"{type(blob).__name__}")
    blob = bytes(blob)
    try:
        return _read_exported(fb.TableView.root(blob), make_exported, make_check)
    except (struct.error, UnicodeDecodeError, IndexError, KeyError) as err:
        raise ValueError(f"the {len(blob)} bytes given to deserialize are not a serialized "
                         f"Exported (or are corrupt): {err!r}") from None


def _read_exported(root: fb.TableView, make_exported, make_check):
    vjp = root.table(_EXP_VJP)
    # As JAX: the dimensions of one deserialized Exported share a new scope (JAX's
    # format keeps no constraints; the module checks them).
    scope = SymbolicScope()
    unique = [_read_aval(t, scope) for t in root.tables(_EXP_UNIQUE_AVALS)]
    in_idxs = root.scalars(_EXP_IN_AVALS_IDXS, "I")
    out_idxs = root.scalars(_EXP_OUT_AVALS_IDXS, "I")
    in_avals = (tuple(unique[i] for i in in_idxs) if in_idxs
                else tuple(_read_aval(t, scope) for t in root.tables(_EXP_IN_AVALS)))
    out_avals = (tuple(unique[i] for i in out_idxs) if out_idxs
                 else tuple(_read_aval(t, scope) for t in root.tables(_EXP_OUT_AVALS)))
    in_named = read_shardings(root, _SHARDING_SLOTS["in"], len(in_avals), "input")
    out_named = read_shardings(root, _SHARDING_SLOTS["out"], len(out_avals), "output")
    if any(isinstance(s, HloSharding) for s in (*in_named, *out_named)):
        # JAX's format before 2026: HloShardings only, no named shardings.
        in_hlo, out_hlo = in_named, out_named
        in_named, out_named = (None,) * len(in_avals), (None,) * len(out_avals)
    else:
        in_hlo, out_hlo = hlo_shardings(in_named, in_avals), hlo_shardings(out_named, out_avals)
    checks = []
    for t in root.tables(_EXP_DISABLED_CHECKS):
        kind = t.scalar(_CHECK_KIND, INT8)
        if kind == _CHECK_CUSTOM_CALL:
            checks.append(make_check(f"custom_call:{t.string(_CHECK_TARGET)}"))
        elif kind == _CHECK_PLATFORM:
            checks.append(make_check("platform"))
        else:
            raise ValueError(f"Cannot deserialize DisabledSafetyCheck with unknown kind: {kind}")
    return make_exported(
        fun_name=root.string(_EXP_NAME) or "",
        in_tree=_read_tree(root.table(_EXP_IN_TREE)),
        in_avals=in_avals,
        out_tree=_read_tree(root.table(_EXP_OUT_TREE)),
        out_avals=out_avals,
        in_shardings_hlo=in_hlo, out_shardings_hlo=out_hlo,
        _in_named_shardings=stated(in_named), _out_named_shardings=stated(out_named),
        nr_devices=(root.scalar(_EXP_NR_DEVICES, UINT32)
                    or root.scalar(_EXP_NR_DEVICES_SHORT, INT16)),
        platforms=tuple(root.strings(_EXP_PLATFORMS)),
        ordered_effects=tuple(_read_effect(t) for t in root.tables(_EXP_ORDERED_EFFECTS)),
        unordered_effects=tuple(_read_effect(t) for t in root.tables(_EXP_UNORDERED_EFFECTS)),
        disabled_safety_checks=tuple(checks),
        mlir_module_serialized=root.bytes(_EXP_MODULE) or b"",
        calling_convention_version=root.scalar(_EXP_CALLING_CONVENTION, UINT16),
        module_kept_var_idx=tuple(root.scalars(_EXP_KEPT_VAR_IDX, "H")),
        uses_global_constants=root.scalar(_EXP_USES_GLOBAL_CONSTANTS, BOOL, False),
        _get_vjp=None if vjp is None else (
            lambda _: _read_exported(vjp, make_exported, make_check)),
    )


def _read_aval(t: fb.TableView, scope: SymbolicScope) -> ShapedArray:
    dtype = _dtype_of_code(t.scalar(_AVAL_DTYPE, INT8))
    return ShapedArray(tuple(parse_dimension(s, scope) for s in t.strings(_AVAL_SHAPE)),
                       dtype)


def _read_tree(t: fb.TableView | None):
    if t is None:
        raise ValueError("the serialized Exported has no pytree")
    kind = t.scalar(_TREE_KIND, INT8)
    if kind == _LEAF:
        return tree_util.tree_structure(0)
    children = [_read_tree(c) for c in t.tables(_TREE_CHILDREN)]
    if kind == _NONE:
        node = (type(None), None)
    elif kind in (_TUPLE, _LIST):
        node = (tuple if kind == _TUPLE else list, None)
    elif kind == _DICT:
        names = t.strings(_TREE_NAMES)
        if len(names) != len(children):
            raise ValueError("a serialized dict node has as many names as children")
        node = (dict, names)
    elif kind == _CUSTOM:
        name = t.string(_TREE_CUSTOM_NAME)
        if name not in _deserializers:
            raise ValueError(f"Cannot deserialize a PyTreeDef containing an unregistered "
                             f"type `{name}`. Use `export.register_pytree_node_serialization`"
                             " or `export.register_namedtuple_serialization`.")
        node_type, deserialize_auxdata = _deserializers[name]
        node = (node_type, deserialize_auxdata(t.bytes(_TREE_AUXDATA) or b""))
    else:
        raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")
    return tree_util.PyTreeDef.from_node_data_and_children(tree_util.registry, node, children)
