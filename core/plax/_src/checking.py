"""The Jaxpr checker: scoping, types against each primitive's abstract evaluation,
and one debug-info name per input and output. The tests of every transformation
run it on the Jaxprs they produce."""
from __future__ import annotations

from plax._src.abstract import ShapedArray
from plax._src.debug_info import check_debug_info_counts
from plax._src.ir import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, subjaxprs


class JaxprTypeError(TypeError):
    """A Jaxpr is ill-formed or its types do not agree with its primitives' rules."""


def _types_agree(expected, actual) -> bool:
    if isinstance(expected, ShapedArray) and isinstance(actual, ShapedArray):
        return expected.shape == actual.shape and expected.dtype == actual.dtype
    return expected == actual


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Check scoping, types against abstract evaluation, and debug-info counts."""
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    defined: set[int] = set()

    def define(var: Var, where: str):
        if id(var) in defined:
            raise JaxprTypeError(f"variable {var!r} is defined twice ({where})")
        defined.add(id(var))

    def use(atom, where: str):
        if isinstance(atom, Literal):
            return
        if id(atom) not in defined:
            raise JaxprTypeError(f"variable {atom!r} is used before it is defined ({where})")

    for v in jaxpr.constvars:
        define(v, "constvar")
    for v in jaxpr.invars:
        define(v, "invar")
    for i, eqn in enumerate(jaxpr.eqns):
        where = f"equation {i}: {eqn.primitive.name}"
        for atom in eqn.invars:
            use(atom, where)
        _check_eqn_types(eqn, where)
        for sub in subjaxprs(eqn):
            check_jaxpr(sub)
        for v in eqn.outvars:
            if not isinstance(v, DropVar):
                define(v, where)
    for atom in jaxpr.outvars:
        use(atom, "outputs")
    if jaxpr.debug_info is not None:
        check_debug_info_counts(jaxpr.debug_info, len(jaxpr.invars), len(jaxpr.outvars))


def _check_eqn_types(eqn: JaxprEqn, where: str) -> None:
    try:
        out = eqn.primitive.abstract_eval(*(a.aval for a in eqn.invars), **eqn.params)
    except (TypeError, ValueError) as err:
        raise JaxprTypeError(f"{where} fails abstract evaluation: {err}") from err
    outs = out if eqn.primitive.multiple_results else (out,)
    if len(outs) != len(eqn.outvars):
        raise JaxprTypeError(f"{where} produces {len(outs)} values but binds "
                             f"{len(eqn.outvars)} variables")
    for expected, var in zip(outs, eqn.outvars):
        if not _types_agree(expected, var.aval):
            raise JaxprTypeError(f"{where} produces {expected.str_short()} but its output "
                                 f"variable has type {var.aval.str_short()}")
