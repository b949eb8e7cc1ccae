"""Moving the functions of one MLIR module into another: how an exported module is
inlined into the module that calls it, and how the per-platform lowerings of a
multi-platform export are put side by side."""
from __future__ import annotations

import re

from jaxlib.mlir import ir


def merge_module(dst: ir.Module, dst_symbols: ir.SymbolTable, src: ir.Module,
                 prefix: str) -> tuple[str, ir.FunctionType]:
    """Move `src`'s functions (in `dst`'s context) into `dst`, private and renamed
    apart from `dst`'s symbols: `@main` becomes `prefix`, the others `prefix_name`
    (a Shardy mesh keeps its name where that is free or names the same mesh).
    The name and type of the moved `@main`."""
    src_symbols = ir.SymbolTable(src.operation)
    taken = {ir.StringAttr(op.attributes["sym_name"]).value
             for op in dst.body.operations if "sym_name" in op.attributes}
    existing = {ir.StringAttr(op.attributes["sym_name"]).value: op
                for op in dst.body.operations if "sym_name" in op.attributes}
    renames, duplicates = {}, []
    for op in src.body.operations:
        if "sym_name" not in op.attributes:
            continue
        old = ir.StringAttr(op.attributes["sym_name"]).value
        if op.operation.name == "sdy.mesh":
            # A Shardy mesh equal to one of `dst`'s of the same name is shared; any
            # other is renamed apart like a function (its uses follow).
            if old in existing and str(existing[old].attributes["mesh"]) == str(
                    op.attributes["mesh"]):
                duplicates.append(op)
                continue
            if old not in taken:
                taken.add(old)
                continue
        base = _sanitize(prefix + ("" if old == "main" else f"_{old}"))
        new, k = base, 0
        while new in taken:
            k += 1
            new = f"{base}_{k}"
        taken.add(new)
        renames[old] = new
    for old, new in renames.items():
        if old != new:
            ir.SymbolTable.replace_all_symbol_uses(old, new, src.operation)
            src_symbols.set_symbol_name(src_symbols[old], new)
    main_name, main_type = renames["main"], None
    for op in duplicates:
        op.erase()
    for op in list(src.body.operations):
        named = "sym_name" in op.attributes
        if named and op.operation.name != "sdy.mesh":
            # (an attribute: a public function, such as the reducer of JAX's
            # dynamic_reduce_window, may have no visibility to set)
            op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            if ir.StringAttr(op.attributes["sym_name"]).value == main_name:
                main_type = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        op.detach_from_parent()
        ir.InsertionPoint(dst.body).insert(op)
        if named:
            dst_symbols.insert(op)
    return main_name, main_type


def _sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.$-]", "_", name)
