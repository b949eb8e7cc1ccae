"""Staging: tracing a Python function into a Jaxpr.

`StagingTrace` records one equation per primitive applied to its tracers. Values it
does not own become inputs of the Jaxpr it builds: Python and NumPy scalars and 0-d
arrays are written inline as `Literal`s, other arrays (and tracers of enclosing traces) are
hoisted into constvars. `trace_to_jaxpr` runs a function under a fresh staging
trace and returns a `ClosedJaxpr` whose debug info names every input and output.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from plax._src import config
from plax._src import debug_info as dbg_util
from plax._src import tree_util
from plax._src.abstract import AbstractValue, SymbolicDimension
from plax._src.checking import check_jaxpr
from plax._src.debug_info import JaxprDebugInfo, TracingDebugInfo
from plax._src.frontend_attributes import current_frontend_attributes
from plax._src.ir import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Var
from plax._src.manual_axis_type import vma_rule
from plax._src.name_stack import current_name_stack, current_source_info, fresh_name_stack
from plax._src.tracing import (Trace, Tracer, check_no_leaks, escaped_tracer_error, get_aval,
                               set_current_trace)

if TYPE_CHECKING:
    from plax._src.primitive import Primitive


_NO_EFFECTS = frozenset()


class TracedLiteral(Literal):
    """A constant that tracing computed (an instantiated zero tangent), held by a tracer:
    as JAX's, linearization passes it to the staged side as a residual, not inline."""


class StagingTracer(Tracer):
    """A value being staged into a Jaxpr: it stands for one `Var` of the Jaxpr the
    `StagingTrace` builds, or a `Literal` (a constant folded where the Jaxpr is traced,
    as JAX's tracers holding literals)."""
    __slots__ = ("_var",)  # not `var`: tracers have a NumPy-style `.var()` method

    def __init__(self, trace: "StagingTrace", var: Var):
        super().__init__(trace)
        self._var = var

    aval = property(lambda self: self._var.aval)


class StagingTrace(Trace):
    """Records primitives applied to its tracers as Jaxpr equations."""
    inlines_arrays = True  # a 0-d Array read is a literal (linearize keeps it a residual)
    tracer_type = StagingTracer  # a subclass's tracers may name what they stand for

    def __init__(self, debug_info: TracingDebugInfo | None = None):
        super().__init__()
        self.debug_info = debug_info
        self.invars: list[Var] = []
        self.eqns: list[JaxprEqn] = []
        self._consts: dict[int, tuple[Var, Any]] = {}  # id(value) → (constvar, value)

    def describe(self):
        if self.debug_info is None:
            return "a staged function"
        return f"the function {self.debug_info.func_src_info} for {self.debug_info.traced_for}"

    def new_arg(self, aval: AbstractValue) -> StagingTracer:
        var = Var(aval)
        self.invars.append(var)
        return self.tracer_type(self, var)

    def to_atom(self, x) -> Var | Literal:
        if isinstance(x, StagingTracer) and x._trace is self:
            return x._var
        if isinstance(x, Tracer) and not x._trace.is_valid():
            raise escaped_tracer_error(x)
        if isinstance(x, SymbolicDimension):  # export: the size computed as a value
            with set_current_trace(self):
                return self.to_atom(x.as_value())
        aval = get_aval(x)
        if isinstance(x, Tracer):  # of an enclosing trace: a constant of this one
            pass
        elif type(x) in (bool, int, float, complex) or isinstance(x, np.generic):
            return Literal(np.asarray(x, aval.dtype)[()] if isinstance(x, np.generic) else x,
                           aval)
        elif (getattr(aval, "shape", None) == () and isinstance(aval.dtype, np.dtype)
                and (isinstance(x, np.ndarray)
                     or self.inlines_arrays and hasattr(x, "addressable_shards"))):
            # a 0-d array is inline too, as JAX's: an Array as it is (values read from the
            # Jaxpr, such as the residuals a custom_vjp's bwd gets, stay Arrays)
            return Literal(x if hasattr(x, "addressable_shards") else np.asarray(x)[()], aval)
        entry = self._consts.get(id(x))
        if entry is None:
            entry = self._consts[id(x)] = (Var(aval), x)
        return entry[0]

    def process_primitive(self, primitive: Primitive, args, params):
        if not self._valid:
            raise escaped_tracer_error(next(a for a in args if isinstance(a, Tracer)), primitive)
        return self.stage_atoms(primitive, self.atoms_of(args), params)

    def atoms_of(self, args) -> list:
        """`args` as atoms of this Jaxpr (the per-equation cost of tracing: this trace's
        own tracers take the short way)."""
        return [a._var if type(a) is self.tracer_type and a._trace is self else self.to_atom(a)
                for a in args]

    def stage_atoms(self, primitive: Primitive, atoms: list, params, out_avals=None):
        """`primitive` applied to `atoms` (this Jaxpr's `Var`s and `Literal`s) as an
        equation: its result tracer(s). `out_avals`, if given, are the results' types
        (an equation of a Jaxpr staged again on atoms of its inputs' types)."""
        if out_avals is None:
            out_avals = primitive.abstract_eval(*[a.aval for a in atoms], **params)
        if (vma := vma_rule()) is not None:  # in a shard_map body: type the varying axes
            atoms, out_avals = vma(self, primitive, params, atoms, out_avals)
        effects = primitive.get_rule("effects")
        effects = frozenset(effects(**params)) if effects else _NO_EFFECTS
        many = primitive.multiple_results
        outvars = [Var(a) for a in out_avals] if many else [Var(out_avals)]
        self.eqns.append(JaxprEqn(atoms, outvars, primitive, params, effects,
                                  current_source_info(), current_name_stack(),
                                  current_frontend_attributes()))
        return [self.tracer_type(self, v) for v in outvars] if many else \
            self.tracer_type(self, outvars[0])

    def to_closed_jaxpr(self, outs: Sequence[Any],
                        debug_info: JaxprDebugInfo | None) -> ClosedJaxpr:
        outvars = [self.to_atom(x) for x in outs]
        constvars = [var for var, _ in self._consts.values()]
        consts = [value for _, value in self._consts.values()]
        effects = frozenset().union(*(e.effects for e in self.eqns))
        jaxpr = Jaxpr(constvars, self.invars, outvars, self.eqns, effects, debug_info)
        return ClosedJaxpr(jaxpr, consts)

    def value_origin(self, tracer) -> str:
        names = self._arg_names_feeding(tracer)
        if not names:
            return ""
        plural = "s" if len(names) > 1 else ""
        return (f"It is abstract because it depends on the value of the argument{plural} "
                + ", ".join(names) + ".")

    def _arg_names_feeding(self, tracer) -> list[str]:
        """User names of the inputs that `tracer`'s value was computed from."""
        if not isinstance(tracer, StagingTracer) or self.debug_info is None:
            return []
        needed = {id(tracer._var)}
        for eqn in reversed(self.eqns):
            if any(id(v) in needed for v in eqn.outvars):
                needed.update(id(v) for v in eqn.invars if isinstance(v, Var))
        names = self.debug_info.arg_names or ()
        return [names[i] for i, v in enumerate(self.invars)
                if id(v) in needed and i < len(names) and names[i]]


def trace_to_jaxpr(fun: Callable, in_tree, in_avals: Sequence[AbstractValue],
                   debug_info: TracingDebugInfo | None):
    """Trace `fun(*args, **kwargs)`, whose flattened inputs have `in_avals`.

    `in_tree` is the treedef of `(args, kwargs)`. Returns the ClosedJaxpr and the
    treedef of the output. Raises under `jax_no_tracing`; with `jax_enable_checks`,
    the Jaxpr is type-checked.
    """
    if config.no_tracing.value:
        what = debug_info.func_src_info if debug_info is not None else repr(fun)
        raise RuntimeError(f"re-tracing function {what} for `jit`, but 'no_tracing' is set")
    trace = StagingTrace(debug_info)
    tracers = [trace.new_arg(aval) for aval in in_avals]
    try:
        with set_current_trace(trace), fresh_name_stack():
            args, kwargs = tree_util.tree_unflatten(in_tree, tracers)
            out = fun(*args, **kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        final_dbg = None
        if debug_info is not None:
            final_dbg = dbg_util.finalize(debug_info, dbg_util.result_paths_from_tree(out))
        _check_output_leaves(out_leaves, trace)
        closed = trace.to_closed_jaxpr(out_leaves, final_dbg)
    finally:
        trace.invalidate()
    del tracers, args, kwargs, out, out_leaves  # so that only leaked tracers stay alive
    check_no_leaks(trace)
    if config.enable_checks.value:
        check_jaxpr(closed)
    return closed, out_tree


def stage_flat(fun: Callable[..., Sequence[Any]], in_avals: Sequence[AbstractValue],
               debug_info: JaxprDebugInfo | None = None) -> ClosedJaxpr:
    """Trace flat `fun` (a list of inputs to a list of outputs) on `in_avals` into a
    ClosedJaxpr carrying `debug_info`: how Jaxpr-to-Jaxpr transformations and the
    rules of higher-order primitives build new Jaxprs (checked under `jax_enable_checks`)."""
    trace = StagingTrace()
    tracers = [trace.new_arg(a) for a in in_avals]
    try:
        with set_current_trace(trace), fresh_name_stack():
            outs = fun(*tracers)
        closed = trace.to_closed_jaxpr(list(outs), None)
    finally:
        trace.invalidate()
    if debug_info is not None:
        closed = closed.replace(jaxpr=closed.jaxpr.replace(debug_info=debug_info))
    if config.enable_checks.value:
        check_jaxpr(closed)
    return closed


def _check_output_leaves(leaves, trace: StagingTrace) -> None:
    for leaf in leaves:
        try:
            get_aval(leaf)
        except TypeError:
            where = f" of {trace.debug_info.func_src_info}" if trace.debug_info else ""
            raise TypeError(f"The output{where} contains {leaf!r} of type "
                            f"{type(leaf).__name__}, which is not a valid plax type") from None
