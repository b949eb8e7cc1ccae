"""Shardy sharding rules of custom-partitioned functions: `SdyShardingRule` and the
einsum-like strings that spell one (`"... i, i j -> ... j"`).

A rule names a *factor* for each dimension of each operand and result. Dimensions
that share a factor are split alike by Shardy's propagation; a dimension may be a
`CompoundFactor` (several factors, major first, whose sizes multiply to its size), and
a leading `BATCHING` (`...` in strings, optionally numbered: `...1`) stands for any
number of leading dimensions, the same count wherever the same group appears.
Factors are passthrough unless declared reduction (summed over: the result needs an
all-reduce when it is split), need-replication or permutation factors.

`rule_attribute` checks a rule against the operand and result shapes and builds
Shardy's `#sdy.op_sharding_rule` attribute (marked `custom`) for the custom call.
"""
from __future__ import annotations

import re
from typing import Sequence

from jaxlib.mlir.dialects import sdy

BATCHING: str = "\u2026"  # one character for `...`, which parsing replaces by it

_BATCHING_GROUP = re.compile(BATCHING + r"[0-9]*\Z")


def _is_batching(name: str) -> bool:
    return isinstance(name, str) and _BATCHING_GROUP.match(name) is not None


def _batching_group(name: str) -> str:
    return str(int(name[1:])) if len(name) > 1 else "0"


def _check_factor_name(name: str) -> None:
    if not name[:1].isalpha():
        raise ValueError(f"Factor names have to start with a letter, but got '{name[:1]}'")
    bad = next((c for c in name if not (c.isalnum() or c == "_")), None)
    if bad is not None:
        raise ValueError(f"Unknown character '{bad}'")


class CompoundFactor(tuple):
    """One dimension made of two or more factors, major first: `CompoundFactor('b', 'c')`."""

    def __new__(cls, *factors):
        if len(factors) < 2:
            raise ValueError("A compound factor should contain at least two factors")
        for factor in factors:
            if not isinstance(factor, str):
                raise ValueError(f"Each element of CompoundFactor must be a str, but got "
                                 f"{type(factor)}")
            if _is_batching(factor):
                raise ValueError("Ellipsis can't be used in a compound factor")
            _check_factor_name(factor)
        return super().__new__(cls, factors)


class ArrayMapping(tuple):
    """The factors of one operand or result, a factor or `CompoundFactor` per dimension,
    optionally led by `BATCHING`: `ArrayMapping(BATCHING, 'i', CompoundFactor('j', 'k'))`."""

    def __new__(cls, *dims):
        for i, dim in enumerate(dims):
            if isinstance(dim, CompoundFactor):
                continue
            if not isinstance(dim, str):
                raise ValueError("Each element of ArrayMapping must be a str or "
                                 f"CompoundFactor, but got {type(dim)}")
            if _is_batching(dim):
                if i:
                    raise ValueError("Ellipsis can only be used at the beginning of a "
                                     "dimension")
            else:
                _check_factor_name(dim)
        return super().__new__(cls, dims)


class SdyShardingRule:
    """A Shardy sharding rule: an `ArrayMapping` per operand and per result, the kinds
    of the special factors, and the sizes of factors used only inside compound factors
    (which no whole dimension gives)."""

    def __init__(self, operand_mappings: tuple[ArrayMapping, ...],
                 result_mappings: tuple[ArrayMapping, ...], *,
                 reduction_factors: tuple[str, ...] = (),
                 need_replication_factors: tuple[str, ...] = (),
                 permutation_factors: tuple[str, ...] = (), **factor_sizes: int):
        whole: dict[str, bool] = {}  # factor -> whether some dimension is just it
        for mapping in (*operand_mappings, *result_mappings):
            for dim in mapping:
                if isinstance(dim, CompoundFactor):
                    for factor in dim:
                        whole.setdefault(factor, False)
                else:
                    whole[dim] = True
        for factor in factor_sizes:
            if factor not in whole:
                raise ValueError(f"Factor {factor} is not used in the rule, but size is "
                                 "provided")
        for factor, is_whole in whole.items():
            if is_whole and factor in factor_sizes:
                raise ValueError(f"Factor {factor} represents a whole dimension; do not "
                                 "specify its size")
            if not is_whole and factor not in factor_sizes:
                raise ValueError(f"Factor {factor} is only used in compound factors; must "
                                 "specify its size")
        special: set[str] = set()
        for kind, factors in (("reduction_factors", reduction_factors),
                              ("need_replication_factors", need_replication_factors),
                              ("permutation_factors", permutation_factors)):
            if not isinstance(factors, tuple):
                raise ValueError(f"{kind} must be a tuple of factors")
            if len(set(factors)) != len(factors):
                raise ValueError(f"{kind} contains duplicated factors")
            for factor in factors:
                if factor not in whole:
                    raise ValueError(f"Factor {factor} in {kind} is not used in the rule")
                if factor in special:
                    raise ValueError(f"Factor {factor} can only be in one of the reduction, "
                                     "need replication, or permutation factor sets.")
                special.add(factor)
        self.operand_mappings = tuple(operand_mappings)
        self.result_mappings = tuple(result_mappings)
        self.factor_sizes = factor_sizes
        self.reduction_factors = reduction_factors
        self.need_replication_factors = need_replication_factors
        self.permutation_factors = permutation_factors

    def __str__(self):
        kinds = "".join(f" {kind}={factors}" for kind, factors in (
            ("reduction_factors", self.reduction_factors),
            ("need_replication_factors", self.need_replication_factors),
            ("permutation_factors", self.permutation_factors)) if factors)
        return (f"SdyShardingRule({self.operand_mappings}, {self.result_mappings}, "
                f"{self.factor_sizes}{kinds})")

    __repr__ = __str__


# --- the einsum-like string ---------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(" + BATCHING + r"[0-9]*)|(\w+)|([(),])|(\S))")


def _parse_side(text: str) -> tuple[ArrayMapping, ...]:
    """The mappings of one side of `->`: comma-separated values, each a list of factor
    names, `(compound factors)` and a leading batching group. An empty side is one
    scalar."""
    values: list[ArrayMapping] = []
    dims: list = []
    compound: list[str] | None = None
    for match in _TOKEN.finditer(text):
        batching, name, punct, other = match.groups()
        if other is not None:
            raise ValueError(f"Unknown character '{other}'")
        if batching is not None:
            if dims or compound is not None:
                raise ValueError("Ellipsis can only be used at the beginning of a dimension")
            dims.append(BATCHING + _batching_group(batching))
        elif name is not None:
            if name[0].isdigit():
                raise ValueError(f"Factor names have to start with a letter, but got "
                                 f"'{name[0]}'")
            (dims if compound is None else compound).append(name)
        elif punct == "(":
            if compound is not None:
                raise ValueError("Compound factors should be one level, nested brackets "
                                 "are not allowed")
            compound = []
        elif punct == ")":
            if compound is None:
                raise ValueError("Brackets are not balanced")
            if len(compound) < 2:
                raise ValueError("Brackets should contain at least two factors")
            dims.append(CompoundFactor(*compound))
            compound = None
        else:  # ","
            if compound is not None:
                raise ValueError(f"Brackets are not balanced in rule: '{text.strip()}'")
            values.append(ArrayMapping(*dims))
            dims = []
    if compound is not None:
        raise ValueError(f"Brackets are not balanced in rule: '{text.strip()}'")
    values.append(ArrayMapping(*dims))
    return tuple(values)


def str_to_sdy_sharding_rule(rule: str, *, reduction_factors: tuple[str, ...] = (),
                             need_replication_factors: tuple[str, ...] = (),
                             permutation_factors: tuple[str, ...] = (),
                             **factor_sizes: int) -> SdyShardingRule:
    """The `SdyShardingRule` an einsum-like string spells (`"i j, j k -> i k"`)."""
    if not isinstance(rule, str):
        raise TypeError(f"rule must be a str, but got {type(rule)}")
    if not all(isinstance(size, int) for size in factor_sizes.values()):
        raise TypeError(f"factor_sizes must be a dict of str to int, but got {factor_sizes}")
    if BATCHING in rule:
        raise ValueError(f"Unknown character '{BATCHING}'")
    rule = rule.replace("...", BATCHING)
    if "." in rule:
        raise ValueError("Character '.' must be used inside ellipsis '...'")
    sides = rule.split("->")
    if len(sides) != 2:
        raise ValueError(f"There is no -> in rule: '{rule}'" if len(sides) == 1 else
                         f"The rule has more than one ->: '{rule}'")
    return SdyShardingRule(_parse_side(sides[0]), _parse_side(sides[1]),
                           reduction_factors=reduction_factors,
                           need_replication_factors=need_replication_factors,
                           permutation_factors=permutation_factors, **factor_sizes)


# --- the attribute ----------------------------------------------------------------------

def _value_name(i: int, n_operands: int) -> str:
    return f"{i}th operand" if i < n_operands else f"{i - n_operands}th result"


def rule_attribute(rule: SdyShardingRule, operand_shapes: Sequence[tuple[int, ...]],
                   result_shapes: Sequence[tuple[int, ...]]):
    """Shardy's `#sdy.op_sharding_rule` for an op of these operand and result shapes; a
    ValueError where the rule does not fit them."""
    n_in = len(operand_shapes)
    for what, mappings, shapes in (("operands", rule.operand_mappings, operand_shapes),
                                   ("results", rule.result_mappings, result_shapes)):
        if len(mappings) != len(shapes):
            raise ValueError(f"Sharding rule has {len(mappings)} {what}, but the "
                             f"operation has {len(shapes)} {what}")
    mappings = (*rule.operand_mappings, *rule.result_mappings)
    shapes = [tuple(s) for s in (*operand_shapes, *result_shapes)]

    # Each value's dimensions as factor lists, with its batching group expanded into
    # one factor per leading dimension (named so that no user factor can clash).
    group_ranks: dict[str, int] = {}
    expanded: list[list[tuple[str, ...]]] = []
    for i, (mapping, shape) in enumerate(zip(mappings, shapes)):
        dims = list(mapping)
        group = _batching_group(dims.pop(0)) if dims and _is_batching(dims[0]) else None
        n_batch = max(len(shape) - len(dims), 0) if group is not None else 0
        if group is not None:
            known = group_ranks.setdefault(group, n_batch)
            if known != n_batch:
                raise ValueError(f"Ellipsis represents different number of leading "
                                 f"dimensions {known} and {n_batch}")
        if len(dims) + n_batch != len(shape):
            name = _value_name(i, n_in)
            raise ValueError(f"Sharding rule {name} has rank {len(dims) + n_batch}, but "
                             f"the operation {name} has rank {len(shape)}")
        expanded.append([(f"?{group}_{j}",) for j in range(n_batch)]
                        + [tuple(d) if isinstance(d, CompoundFactor) else (d,) for d in dims])

    sizes: dict[str, int | None] = {}  # in order of first use; None: not known yet
    for dims, shape in zip(expanded, shapes):
        for factors, size in zip(dims, shape):
            if len(factors) > 1:
                for f in factors:
                    sizes.setdefault(f, rule.factor_sizes.get(f))
                continue
            (f,) = factors
            known = sizes.get(f)
            if known is not None and known != size and f.startswith("?"):
                raise ValueError(f"Batching dimension {f[1:]} corresponds to two sizes: "
                                 f"{known} and {size}")
            sizes[f] = size if known is None else min(known, size)
    index = {f: i for i, f in enumerate(sizes)}

    tensor_mappings = []
    for i, (dims, shape) in enumerate(zip(expanded, shapes)):
        dim_attrs = []
        for factors, size in zip(dims, shape):
            if len(factors) > 1:
                product = 1
                for f in factors:
                    product *= sizes[f]
                if product != size:
                    raise ValueError(f"{_value_name(i, n_in)} actual size {size} doesn't "
                                     f"match the size {product} derived from the compound "
                                     f"factors {CompoundFactor(*factors)}")
            dim_attrs.append(sdy.DimMappingAttr.get(factor_indices=[index[f] for f in factors]))
        tensor_mappings.append(sdy.TensorMappingAttr.get(dim_mappings=dim_attrs))
    return sdy.OpShardingRuleAttr.get(
        factor_sizes=list(sizes.values()), operand_mappings=tensor_mappings[:n_in],
        result_mappings=tensor_mappings[n_in:], is_custom=True,
        reduction_factors=[index[f] for f in rule.reduction_factors],
        need_replication_factors=[index[f] for f in rule.need_replication_factors],
        permutation_factors=[index[f] for f in rule.permutation_factors])
