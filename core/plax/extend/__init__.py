"""`plax.extend`: the contract by which packages add primitives to plax.

plax-stdlib defines every standard primitive (`lax.sin`, `lax.scan`...) with this API
and nothing else, so a third-party package adds its own exactly the same way: create
a `Primitive("mypkg.op")`, register its rules (abstract eval, jvp, transpose,
batching, lowering...), and announce the defining module in the `plax.primitives`
entry-point group. `docs/extend.md` walks through it; `examples/softclip` is a
complete package.

Modules:

* `plax.extend.core` — IR, avals, traces and tracers, staging, `Primitive`, debug info;
* `plax.extend.ad` — symbolic zeros, jvp/transpose helpers, `jvp_jaxpr`,
  `partial_eval_jaxpr`, `transpose_jaxpr`;
* `plax.extend.batching` — batching helpers, named axes, `batch_jaxpr`;
* `plax.extend.mlir` — MLIR modules and builders for lowering rules;
* `plax.extend.dtypes`, `plax.extend.config`, `plax.extend.tree_util`,
  `plax.extend.sharding`, `plax.extend.registry`;
* `plax.extend.traceback_util` — `api_boundary`: errors shown from the caller's line;
* `plax.extend.random` (from plax-stdlib) — the key-reuse signatures of primitives
  that take or make PRNG keys.

This module itself lists what is registered: `list_primitives()`, `rules_of(prim)`,
and `coverage()` (also `python -m plax.extend`), the table of which rules each
primitive has, which distribution gave each, and so which transforms work on it.
"""
from __future__ import annotations

import functools
import importlib.metadata as metadata

from plax._src import plugins
from plax._src.abstract import ShapedArray
from plax._src.primitive import RULE_KINDS, Primitive, all_primitives, lookup

# Which rules each transform needs (one of each inner tuple).
_TRANSFORM_NEEDS = {
    "eager": (("impl", "lowering"),),
    "jit": (("lowering",),),
    "jvp": (("jvp",),),
    "vjp": (("jvp",), ("transpose", "nonlinear")),
    "vmap": (("batching",),),
}


def _load_everything() -> None:
    plugins.load_group("plax.primitives")
    plugins.load_group("plax.lowering")


def list_primitives() -> list[str]:
    """The ids of all primitives defined by plax and by installed plugins."""
    _load_everything()
    return [p.id for p in all_primitives()]


def _resolve(primitive: Primitive | str) -> Primitive:
    _load_everything()
    if isinstance(primitive, Primitive):
        return primitive
    by_name = [p for p in all_primitives() if primitive in (p.id, p.name)]
    if len(by_name) != 1:
        raise ValueError(f"no primitive with id {primitive!r}; known: {list_primitives()}"
                         if not by_name else
                         f"{primitive!r} names several primitives: {[p.id for p in by_name]}")
    return by_name[0]


@functools.cache
def _distributions() -> dict[str, str]:
    return {pkg: dists[0] for pkg, dists in metadata.packages_distributions().items()}


def distribution_of(module: str) -> str:
    """The installed distribution that ships `module` (its top-level package)."""
    top = module.split(".")[0]
    return _distributions().get(top, top)


def rules_of(primitive: Primitive | str) -> dict[str, str]:
    """`{rule kind[:platform]: providing distribution}` for a primitive or its id."""
    prim = _resolve(primitive)
    return {(r.kind if r.platform is None else f"{r.kind}:{r.platform}"):
            distribution_of(r.module) for r in prim.rules()}


def rule_modules(primitive: Primitive | str) -> dict[str, str]:
    """`{rule kind[:platform]: the module that registered it}`."""
    prim = _resolve(primitive)
    return {(r.kind if r.platform is None else f"{r.kind}:{r.platform}"): r.module
            for r in prim.rules()}


def supported_transforms(primitive: Primitive | str) -> list[str]:
    """Which of eager evaluation, jit, jvp, vjp and vmap the rules make possible."""
    prim = _resolve(primitive)
    kinds = {r.kind for r in prim.rules()}
    jvp = prim.get_rule("jvp")
    if jvp is not None and not getattr(jvp, "linear", False):
        kinds.add("nonlinear")  # its tangent is computed by other primitives
    return [name for name, needs in _TRANSFORM_NEEDS.items()
            if all(any(k in kinds for k in alternatives) for alternatives in needs)]


def coverage() -> str:
    """A table: for every registered primitive, its defining distribution, the
    module(s) its rules were registered in, which rule kinds it has (and from which
    distribution, where another one gave them), and the transforms that work on it."""
    _load_everything()
    kinds = [k for k in RULE_KINDS if k != "abstract_eval"]
    header = ["primitive", "defined by", "rules from", *kinds, "transforms"]
    rows = []
    for prim in all_primitives():
        home = distribution_of(prim.module)
        cells = []
        for kind in kinds:
            owners = sorted({distribution_of(r.module) + (f":{r.platform}" if r.platform else "")
                             for r in prim.rules() if r.kind == kind})
            cells.append(",".join("x" if o == home else o for o in owners))
        modules = ",".join(sorted({r.module for r in prim.rules()}))
        rows.append([prim.id, home, modules, *cells, " ".join(supported_transforms(prim))])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines + ["", "x: a rule from the defining distribution"])


__all__ = ["Primitive", "ShapedArray", "coverage", "distribution_of", "list_primitives",
           "lookup", "rule_modules", "rules_of", "supported_transforms"]
