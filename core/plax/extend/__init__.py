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
    """The ids of every registered primitive: plax's own and those of installed plugins
    (whose `plax.primitives` and `plax.lowering` entry points are loaded first).

    Returns:
        A list of ids, `"<namespace>.<name>"`.

    Examples:
        >>> ids = plax.extend.list_primitives()
        >>> "lax.sin" in ids, "lax.scan" in ids
        (True, True)
    """
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
    """The name of the installed distribution (pip package) that ships `module`, found
    from its top-level package; the top-level name itself where none is known.

    Args:
        module: a dotted module name.

    Returns:
        A distribution name.

    Examples:
        >>> plax.extend.distribution_of("plax_stdlib.lax")
        'plax-stdlib'
    """
    top = module.split(".")[0]
    return _distributions().get(top, top)


def rules_of(primitive: Primitive | str) -> dict[str, str]:
    """Which rules a primitive has, and which distribution registered each.

    Args:
        primitive: a `Primitive`, or its id (or its name, if unambiguous).

    Returns:
        `{kind: distribution}`; platform-specific lowering rules appear as
        `"lowering:<platform>"`.

    Raises:
        ValueError: no primitive (or several) has that id or name.

    Examples:
        >>> plax.extend.rules_of("lax.sin")
        {'abstract_eval': 'plax-stdlib', 'lowering': 'plax-stdlib', 'jvp': 'plax-stdlib',
         'batching': 'plax-stdlib'}
    """
    prim = _resolve(primitive)
    return {(r.kind if r.platform is None else f"{r.kind}:{r.platform}"):
            distribution_of(r.module) for r in prim.rules()}


def rule_modules(primitive: Primitive | str) -> dict[str, str]:
    """Which module registered each rule of a primitive: like `rules_of`, with module
    names instead of distributions (to find the code of a rule).

    Args:
        primitive: a `Primitive`, or its id (or name).

    Returns:
        `{kind[:platform]: module name}`.

    Raises:
        ValueError: no primitive (or several) has that id or name.

    Examples:
        >>> plax.extend.rule_modules("lax.sin")["jvp"]
        'plax_stdlib.lax.elementwise'
    """
    prim = _resolve(primitive)
    return {(r.kind if r.platform is None else f"{r.kind}:{r.platform}"): r.module
            for r in prim.rules()}


def supported_transforms(primitive: Primitive | str) -> list[str]:
    """Which of eager evaluation, `jit`, `jvp`, `vjp` and `vmap` a primitive's rules make
    possible: eager needs an impl or a lowering rule, jit a lowering rule, jvp a jvp
    rule, vjp a jvp rule plus a transpose rule (or a jvp written with other
    primitives), vmap a batching rule.

    Args:
        primitive: a `Primitive`, or its id (or name).

    Returns:
        A list, from `["eager", "jit", "jvp", "vjp", "vmap"]`.

    Raises:
        ValueError: no primitive (or several) has that id or name.

    Examples:
        >>> plax.extend.supported_transforms("lax.sin")
        ['eager', 'jit', 'jvp', 'vjp', 'vmap']
    """
    prim = _resolve(primitive)
    kinds = {r.kind for r in prim.rules()}
    jvp = prim.get_rule("jvp")
    if jvp is not None and not getattr(jvp, "linear", False):
        kinds.add("nonlinear")  # its tangent is computed by other primitives
    return [name for name, needs in _TRANSFORM_NEEDS.items()
            if all(any(k in kinds for k in alternatives) for alternatives in needs)]


def coverage() -> str:
    """A text table of every registered primitive: the distribution that defines it, the
    modules its rules come from, which rule kinds it has (`x` where the defining
    distribution gave the rule, else the distribution that did), and the transforms
    that work on it. `python -m plax.extend` prints it.

    Returns:
        The table, as one string.

    Examples:
        >>> table = plax.extend.coverage()
        >>> table.split()[:3]
        ['primitive', 'defined', 'by']
        >>> row = next(line for line in table.splitlines() if line.startswith("lax.sin "))
        >>> row.split()[-5:]
        ['eager', 'jit', 'jvp', 'vjp', 'vmap']
    """
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
