"""Forward-mode differentiation: the JVP trace, and the jvp of a Jaxpr.

A `JVPTracer` carries a primal value and its tangent (possibly the symbolic
`Zero`). Applying a primitive to one asks the primitive's `jvp` rule
`(primals, tangents, **params) -> (primal_out, tangent_out)`, run with the parent
trace current, so primal and tangent computations go to whatever trace encloses
this one (eager execution, staging, another JVP...). Values of other traces met
here are constants: their tangent is zero for this trace.

A primitive applied to values that all have zero tangents is applied as it is; a
primitive without a jvp rule applied to one with a tangent raises JAX's
`NotImplementedError`, whatever its outputs' dtypes: primitives whose outputs have no
tangents (comparisons, integer results) say so with a rule, as JAX's `defjvp_zero`.
A `float0` tangent (an integer's) is a zero, as a `Zero` is: values holding one are
not traced.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from plax.extend import ad as ad_rules
from plax.extend.ad import Zero, tangent_aval
from plax.extend.dtypes import float0
from plax.extend.core import (
    JVP,
    ClosedJaxpr,
    Trace,
    Tracer,
    check_no_leaks,
    current_trace,
    derived_debug_info,
    eval_jaxpr,
    get_aval,
    set_current_trace,
    stage_flat,
    tangent_name,
)
from plax_transforms.ref_discharge import apply_with_refs, has_cells


class DualTracer(Tracer):
    """A primal value with its tangent."""
    __slots__ = ("primal", "tangent")

    def __init__(self, trace: "JVPTrace", primal, tangent):
        super().__init__(trace)
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self):
        return get_aval(self.primal)

    def to_concrete_value(self):
        p = self.primal
        return p.to_concrete_value() if isinstance(p, Tracer) else p


class JVPTracer(DualTracer):
    """`jvp`'s, whose tangent is a value."""
    __slots__ = ()

    def __repr__(self):
        return f"JVPTracer(primal={self.primal!s}, tangent={self.tangent!s})"


class LinearizeTracer(DualTracer):
    """`grad`'s, `vjp`'s and `linearize`'s, whose tangent is being staged (an unknown
    of partial evaluation): shown as JAX's, by the tangent's type only. A class of its
    own, not a JVPTracer, as JAX's, since code tells them apart by class."""
    __slots__ = ()

    def __repr__(self):
        return (f"GradTracer(primal={self.primal!s}, "
                f"typeof(tangent)={get_aval(self.tangent).str_short()})")


class JVPTrace(Trace):
    """Differentiates forward; computes on `parent`."""
    tracer_type: type[DualTracer] = JVPTracer

    def __init__(self, parent: Trace | None = None):
        super().__init__()
        self.parent = current_trace() if parent is None else parent

    def describe(self):
        return "jvp"

    def to_primal_tangent(self, x):
        if isinstance(x, DualTracer) and x._trace is self:
            return x.primal, x.tangent
        return x, Zero(tangent_aval(get_aval(x)))

    def wrap(self, primal, tangent):
        """`primal` traced with `tangent`; `primal` itself where the tangent is zero: a
        `Zero`, or float0 zeros (a rule's tangent of an integer), as JAX's."""
        if isinstance(tangent, Zero) or getattr(get_aval(tangent), "dtype", None) == float0:
            return primal
        return self.tracer_type(self, primal, tangent)

    def new_input(self, primal, tangent):
        """An input of the differentiated function (a Python scalar stays one, as in
        JAX: promotion makes it an array where an operation needs one)."""
        return self.wrap(primal, tangent)

    def process_primitive(self, primitive, args, params):
        if has_cells(args, self):  # a reference cell made under this jvp, used by control flow
            return apply_with_refs(primitive, args, params)
        primals, tangents = zip(*map(self.to_primal_tangent, args)) if args else ((), ())
        with set_current_trace(self.parent):
            if all(isinstance(t, Zero) for t in tangents):
                return primitive.bind(*primals, **params)
            rule = primitive.get_rule(JVP)
            if rule is None:
                raise NotImplementedError(
                    f"Differentiation rule for '{primitive.name}' not implemented")
            out, t_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            return [self.wrap(o, t) for o, t in zip(out, t_out)]
        if isinstance(out, (list, tuple)) or isinstance(t_out, (list, tuple)):
            raise TypeError(
                f"the jvp rule of primitive '{primitive.id}' returned ({type(out).__name__}, "
                f"{type(t_out).__name__}); a primitive with one output returns (output, "
                "tangent), each one value, not a list (lists are for multiple_results=True)")
        return self.wrap(out, t_out)


class LinearizeTrace(JVPTrace):
    """A JVP whose tangents are staged on a `PartialEvalTrace` parent (grad, vjp,
    linearize)."""
    tracer_type = LinearizeTracer


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any], instantiate_zeros: bool = True):
    """Run flat `fun` on JVP tracers; → (primal outputs, tangent outputs).

    `tangents` may hold `Zero`s; output tangents are instantiated if asked.
    """
    trace = JVPTrace()
    tracers = [trace.new_input(p, t) for p, t in zip(primals, tangents)]
    try:
        with set_current_trace(trace):
            outs = fun(*tracers)
        pts = [trace.to_primal_tangent(o) for o in outs]
    finally:
        trace.invalidate()
    del tracers, outs  # so that only leaked tracers stay alive
    check_no_leaks(trace)
    out_primals = [p for p, _ in pts]
    out_tangents = [ad_rules.instantiate(t) if instantiate_zeros else t for _, t in pts]
    return out_primals, out_tangents


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[ClosedJaxpr, list[bool]]:
    """The jvp of `closed`: inputs are its inputs then the tangents where `nonzeros`;
    outputs its outputs then the tangents that are not known to be zero (or are
    instantiated). → (Jaxpr, which output tangents it has)."""
    jaxpr = closed.jaxpr
    n_out = len(jaxpr.outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    out_nonzeros: list[bool] = []

    def fun(*args):
        primals, nz_tangents = args[:len(nonzeros)], iter(args[len(nonzeros):])
        tangents = [next(nz_tangents) if nz else Zero(tangent_aval(a))
                    for nz, a in zip(nonzeros, closed.in_avals)]
        outs, t_outs = jvp_flat(lambda *xs: eval_jaxpr(jaxpr, closed.consts, *xs),
                                primals, tangents, instantiate_zeros=False)
        out_nonzeros[:] = [not isinstance(t, Zero) or i for t, i in zip(t_outs, inst)]
        return [*outs, *(ad_rules.instantiate(t) for t, nz in zip(t_outs, out_nonzeros) if nz)]

    in_avals = [*closed.in_avals, *(tangent_aval(a) for a, nz in zip(closed.in_avals, nonzeros)
                                     if nz)]
    staged = stage_flat(fun, in_avals)
    dbg = jaxpr.debug_info
    if dbg is not None:
        names = paths = None
        if dbg.arg_names is not None:
            names = [*dbg.arg_names, *(tangent_name(n) for n, nz in zip(dbg.arg_names, nonzeros)
                                       if nz)]
        if dbg.result_paths is not None:
            paths = [*dbg.result_paths, *(tangent_name(p) for p, nz in
                                          zip(dbg.result_paths, out_nonzeros) if nz)]
        staged = staged.replace(jaxpr=staged.jaxpr.replace(
            debug_info=derived_debug_info(dbg, names, paths)))
    return staged, list(out_nonzeros)
