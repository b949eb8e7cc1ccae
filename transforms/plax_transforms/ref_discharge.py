"""Removing references from a Jaxpr: state made explicit.

`discharge(closed, is_ref)` re-traces `closed` into a pure Jaxpr. Each input
marked in `is_ref` (a reference) becomes an input of its inner type, its final
value an extra output (after the original outputs). An interpreter walks the
equations with a `Cell` (the current value) for each reference: `ref.get` reads
it, `ref.swap`/`ref.addupdate` write it, `ref.new_ref` makes a cell, `ref.freeze`
reads it. An equation whose operands include references (or whose Jaxprs use
them) is rewritten by its kind: a call (`jit`, `checkpoint`) is
interpreted inline with the same cells; `scan` and `while` carry the values of
the references they use; `cond` passes them in and out of every branch — each
through the public `lax` function, so the result is ordinary control flow.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from plax.extend.core import (EVAL_TRACE, ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Tracer, Var,
                              eval_jaxpr, get_aval, stage_flat, user_frame)
from plax_stdlib.lax.control_flow.cond import cond_p, switch
from plax_stdlib.lax.control_flow.loops import while_loop, while_p
from plax_stdlib.lax.control_flow.scan import scan, scan_p
from plax_transforms import refs
from plax_transforms.refs import REF_EFFECT, AbstractRef


class Cell:
    """A reference's current value while a Jaxpr is interpreted."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def uses_refs(closed: ClosedJaxpr) -> bool:
    """Whether `closed` reads, writes or creates references (at any depth)."""
    return (REF_EFFECT in closed.jaxpr.effects
            or any(isinstance(a, AbstractRef) for a in closed.in_avals)
            or any(refs.is_ref_object(c) for c in closed.consts))


def discharge(closed: ClosedJaxpr, is_ref: Sequence[bool]) -> ClosedJaxpr:
    """The pure form of `closed` (see the module docstring); its constants must not be
    references."""
    in_avals = [a.inner_aval if r else a for a, r in zip(closed.in_avals, is_ref)]

    def pure(*values):
        args = [Cell(v) if r else v for v, r in zip(values, is_ref)]
        outs = interpret(closed.jaxpr, closed.consts, args)
        return [*outs, *(a.value for a, r in zip(args, is_ref) if r)]

    out = stage_flat(pure, in_avals)
    dbg = closed.jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None and dbg.result_paths is not None:
        finals = tuple(f"{n}[final]" for n, r in zip(dbg.arg_names, is_ref) if r)
        out = out.replace(jaxpr=out.jaxpr.replace(
            debug_info=dbg._replace(result_paths=dbg.result_paths + finals)))
    return out


def interpret(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list:
    """Evaluate `jaxpr` on the current trace, references given as `Cell`s."""
    env: dict[int, Any] = {}

    def read(atom):
        return atom.val if isinstance(atom, Literal) else env[id(atom)]

    for v, x in zip(jaxpr.constvars, consts):
        if refs.is_ref_object(x):
            raise NotImplementedError("a reference captured as a constant of a nested "
                                      "Jaxpr; pass it as an operand")
        env[id(v)] = x
    for v, x in zip(jaxpr.invars, args):
        env[id(v)] = x
    for eqn in jaxpr.eqns:
        ins = [read(a) for a in eqn.invars]
        if REF_EFFECT in eqn.effects or any(isinstance(x, Cell) for x in ins):
            outs = _rule(eqn)(eqn, ins)
        else:
            outs = eqn.primitive.bind(*ins, **eqn.params)
            outs = outs if eqn.primitive.multiple_results else [outs]
        for v, x in zip(eqn.outvars, outs):
            env[id(v)] = x
    return [read(a) for a in jaxpr.outvars]


def _rule(eqn: JaxprEqn) -> Callable:
    rule = _RULES.get(eqn.primitive)
    if rule is not None:
        return rule
    # Calls whose meaning is their Jaxpr's. (A custom rule's call is not: inlining it
    # would drop the rule.)
    if eqn.primitive.id in _PLAIN_CALLS:
        return _inline
    raise NotImplementedError(
        f"mutable array references used inside {eqn.primitive.name} are not supported "
        "(they are inside jit, checkpoint, scan, fori_loop, while_loop and cond; a custom "
        "rule's function must not read or write them)")


def _called_jaxpr(eqn: JaxprEqn) -> ClosedJaxpr | None:
    jaxprs = [p for p in eqn.params.values() if isinstance(p, ClosedJaxpr)]
    if len(jaxprs) == 1 and len(jaxprs[0].jaxpr.invars) == len(eqn.invars) \
            and len(jaxprs[0].jaxpr.outvars) == len(eqn.outvars):
        return jaxprs[0]
    return None


def _inline(eqn: JaxprEqn, ins: list) -> list:
    called = _called_jaxpr(eqn)
    return interpret(called.jaxpr, called.consts, ins)


# --- the reference primitives -----------------------------------------------------------

def _new(eqn, ins):
    return [Cell(ins[0])]


def _get(eqn, ins):
    return [refs.read_value(ins[0].value, eqn.params["spec"], ins[1:])]


def _swap(eqn, ins):
    cell, value, dynamic, spec = ins[0], ins[1], ins[2:], eqn.params["spec"]
    old = refs.read_value(cell.value, spec, dynamic)
    cell.value = refs.written_value(cell.value, spec, dynamic, value)
    return [old]


def _addupdate(eqn, ins):
    cell, value, dynamic, spec = ins[0], ins[1], ins[2:], eqn.params["spec"]
    cell.value = refs.written_value(cell.value, spec, dynamic, value, accumulate=True)
    return []


def _freeze(eqn, ins):
    return [ins[0].value]


# --- control flow: the references' values are carried ----------------------------------

def _unique_cells(values, jaxprs: Sequence[ClosedJaxpr]) -> list[Cell]:
    """The references among `values` that the loop or branches must carry: none if
    no Jaxpr of `jaxprs` writes a reference (then they read the values as they are,
    and a batched loop or branch does not turn a value it only read into a batched
    final value)."""
    if not any(_writes(j.jaxpr) for j in jaxprs):
        return []
    seen: dict[int, Cell] = {}
    for x in values:
        if isinstance(x, Cell):
            seen.setdefault(id(x), x)
    return list(seen.values())


def _writes(jaxpr: Jaxpr) -> bool:
    """Whether `jaxpr` writes a reference, at any depth."""
    for eqn in jaxpr.eqns:
        if eqn.primitive in _WRITERS:
            return True
        for param in eqn.params.values():
            for sub in (param if isinstance(param, (tuple, list)) else (param,)):
                inner = getattr(sub, "jaxpr", sub)
                if isinstance(inner, Jaxpr) and _writes(inner):
                    return True
    return False


def _with_cells(values, cells: list[Cell], current: Sequence[Any]) -> tuple[list, list[Cell]]:
    """`values` with each of `cells` replaced by a fresh cell holding `current`'s value."""
    fresh = {id(c): Cell(v) for c, v in zip(cells, current)}
    return [fresh.get(id(x), x) if isinstance(x, Cell) else x for x in values], \
        [fresh[id(c)] for c in cells]


def _scan(eqn, ins):
    p = eqn.params
    body: ClosedJaxpr = p["jaxpr"]
    nc, nk = p["num_consts"], p["num_carry"]
    consts, init, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    cells = _unique_cells(consts, [body])

    def step(carry, x):
        ref_values, c = carry
        local, fresh = _with_cells(consts, cells, ref_values)
        outs = interpret(body.jaxpr, body.consts, [*local, *c, *x])
        return ([f.value for f in fresh], outs[:nk]), outs[nk:]

    (finals, carry), ys = scan(step, ([c.value for c in cells], list(init)), list(xs),
                               length=p["length"], reverse=p["reverse"], unroll=p["unroll"])
    for c, v in zip(cells, finals):
        c.value = v
    return [*carry, *ys]


def _while(eqn, ins):
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, init = ins[:ncc], ins[ncc:ncc + nbc], ins[ncc + nbc:]
    cond_j, body_j = p["cond_jaxpr"], p["body_jaxpr"]
    cells = _unique_cells([*cconsts, *bconsts], [cond_j, body_j])

    def cond_fun(carry):
        ref_values, c = carry
        local, _ = _with_cells(cconsts, cells, ref_values)
        return interpret(cond_j.jaxpr, cond_j.consts, [*local, *c])[0]

    def body_fun(carry):
        ref_values, c = carry
        local, fresh = _with_cells(bconsts, cells, ref_values)
        outs = interpret(body_j.jaxpr, body_j.consts, [*local, *c])
        return [f.value for f in fresh], outs

    finals, outs = while_loop(cond_fun, body_fun, ([c.value for c in cells], list(init)))
    for c, v in zip(cells, finals):
        c.value = v
    return outs


def _cond(eqn, ins):
    index, operands = ins[0], ins[1:]
    cells = _unique_cells(operands, eqn.params["branches"])
    is_cell = [isinstance(x, Cell) for x in operands]

    def branch_fn(branch: ClosedJaxpr):
        def run(ref_values, arrays):
            it = iter(arrays)
            local, fresh = _with_cells([x if c else next(it) for x, c in zip(operands, is_cell)],
                                       cells, ref_values)
            return interpret(branch.jaxpr, branch.consts, local), [f.value for f in fresh]
        return run

    outs, finals = switch(index, [branch_fn(b) for b in eqn.params["branches"]],
                          [c.value for c in cells],
                          [x for x, c in zip(operands, is_cell) if not c])
    for c, v in zip(cells, finals):
        c.value = v
    return outs


_RULES: dict = {
    refs.new_ref_p: _new, refs.get_p: _get, refs.swap_p: _swap,
    refs.addupdate_p: _addupdate, refs.freeze_p: _freeze,
    scan_p: _scan, while_p: _while, cond_p: _cond,
}
_PLAIN_CALLS = frozenset({"plax.jit", "plax.remat2"})
_WRITERS = {refs.swap_p, refs.addupdate_p}  # primitives that write a reference operand


def register_discharge_rule(primitive, rule: Callable, *, writes: bool) -> None:
    """How another package's primitive on references is discharged: `rule(eqn, ins)`
    gets its operands (references as `Cell`s, whose `value` it reads and replaces) and
    returns its results; `writes` says whether it writes a reference (so that loops and
    branches around it carry the references' values)."""
    _RULES[primitive] = rule
    if writes:
        _WRITERS.add(primitive)


# --- at a jit boundary --------------------------------------------------------------------

class RefPlan:
    """How a traced call with references runs: `ref_consts` (references it closed over)
    are passed first; the inputs at `positions` (of all inputs) are references, read
    before the call; the call's last `len(positions)` outputs are written back.
    `traced` is the Jaxpr as traced, references and all (what `jit(f).trace` shows)."""
    __slots__ = ("ref_consts", "positions", "traced")

    def __init__(self, ref_consts: tuple, positions: tuple[int, ...], traced: ClosedJaxpr):
        self.ref_consts, self.positions, self.traced = ref_consts, positions, traced

    def aliases(self, num_inputs: int, num_outputs: int) -> tuple[int | None, ...]:
        """Per input of the pure Jaxpr, the output its buffer is donated to: each
        reference's value to its final value (as JAX lowers references)."""
        first = num_outputs - len(self.positions)
        out = dict(zip(self.positions, range(first, num_outputs)))
        return tuple(out.get(i) for i in range(num_inputs))

    def read(self, all_args: Sequence[Any], describe: Callable[[int], str],
             consume: bool = False) -> list:
        """The inputs with each reference replaced by its current value (after checking
        that no reference is passed twice); `consume`: for a top-level call that
        donates the values' buffers."""
        check_unaliased(all_args, describe, len(self.ref_consts))
        values = list(all_args)
        for i in self.positions:
            ref = all_args[i]
            values[i] = ref._consume() if consume and _top_level(ref) else refs.get(ref)
        return values

    def write_back(self, all_args: Sequence[Any], outs: Sequence[Any],
                   consume: bool = False) -> list:
        """Write the final values to the references; → the call's own outputs."""
        n = len(self.positions)
        for i, value in zip(self.positions, outs[len(outs) - n:]):
            ref = all_args[i]
            if consume and _top_level(ref):
                ref._store(value, exclusive=True)  # a fresh output buffer
            else:
                refs.set(ref, None, value)
        return list(outs[:len(outs) - n])


def _top_level(ref) -> bool:
    return refs.is_ref_object(ref) and ref._home is EVAL_TRACE


def check_unaliased(args: Sequence[Any], describe: Callable[[int], str],
                    n_closed: int = 0) -> None:
    """JAX's errors for a reference passed twice, or passed and closed over (the first
    `n_closed` of `args`); `describe(i)` names argument i, `describe(-1)` the function."""
    seen: dict[int, int] = {}
    for i, x in enumerate(args):
        if not refs.is_ref(x):
            continue
        j = seen.setdefault(id(x), i)
        if j < n_closed <= i:
            raise ValueError(
                f"when tracing {describe(-1)}, a mutable array reference of type "
                f"{refs.get_aval_str(x)} was both closed over and passed as the argument "
                f"{describe(i)}")
        if j != i:
            raise ValueError(
                "only one reference to a mutable array may be passed as an argument to a "
                f"function, but when tracing {describe(-1)} the mutable array reference of "
                f"type {refs.get_aval_str(x)} appeared at both {describe(j)} and "
                f"{describe(i)}.")


def prepare_call(closed: ClosedJaxpr, where: str, arg_name: Callable[[int], str],
                 result_path: Callable[[int], str]) -> tuple[ClosedJaxpr, RefPlan]:
    """`closed` (a traced function using references) as a pure Jaxpr taking the
    closed-over references first, and its plan; a reference among the outputs is
    JAX's error."""
    jaxpr = closed.jaxpr
    for k, (v, aval) in enumerate(zip(jaxpr.outvars, closed.out_avals)):
        if isinstance(aval, AbstractRef):
            path = result_path(k)
            at = f" at output tree path {path}" if path not in ("", "result") else ""
            raise ValueError(
                f"function {where} returned a mutable array reference of type "
                f"{aval!r}{at}, but "
                "mutable array references cannot be returned.\n\n"
                f"The returned mutable array was {_origin(jaxpr, v, arg_name)}.")
    is_ref_const = [refs.is_ref_object(c) for c in closed.consts]
    ref_consts = tuple(c for c, r in zip(closed.consts, is_ref_const) if r)
    moved = [v for v, r in zip(jaxpr.constvars, is_ref_const) if r]
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None:
        dbg = dbg.with_arg_names(("",) * len(moved) + dbg.arg_names)
    hoisted = ClosedJaxpr(
        Jaxpr([v for v, r in zip(jaxpr.constvars, is_ref_const) if not r],
              moved + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns, jaxpr.effects, dbg),
        [c for c, r in zip(closed.consts, is_ref_const) if not r])
    is_ref = [isinstance(a, AbstractRef) for a in hoisted.in_avals]
    positions = tuple(i for i, r in enumerate(is_ref) if r)
    return discharge(hoisted, is_ref), RefPlan(ref_consts, positions, closed)


def _origin(jaxpr: Jaxpr, var, arg_name: Callable[[int], str]) -> str:
    for i, v in enumerate(jaxpr.invars):
        if v is var:
            return f"passed in as the argument {arg_name(i)}"
    for eqn in jaxpr.eqns:
        if any(o is var for o in eqn.outvars):
            where = user_frame(eqn.source_info)
            return f"created on line {where}" if where else "created inside the function"
    return "closed over by the function"


# --- a primitive applied to references on an interpreting trace ----------------------------

def has_cells(args: Sequence[Any], trace) -> bool:
    """Whether any operand is a `Ref` cell made by `trace` (rather than a staged
    reference, or a cell of another trace, whose writes its rules refuse)."""
    return any(refs.is_ref_object(a) and a._home is trace for a in args)


def mixes_refs_and_tracers(primitive, args: Sequence[Any], trace) -> bool:
    """Whether control flow (not a reference primitive) gets references together with
    values of `trace`: a `cond` under vmap with a batched predicate, say, must not run
    both branches' writes, so it is discharged first (`apply_with_refs`)."""
    return (primitive not in refs.REF_PRIMITIVES and any(map(refs.is_ref, args))
            and any(isinstance(a, Tracer) and a._trace is trace for a in args))


def apply_with_refs(primitive, args: Sequence[Any], params: dict):
    """`primitive(*args)` on the current trace where some operands are references (a
    `scan` or `cond` whose body uses one, applied eagerly or inside grad/vmap): the
    equation is discharged, its pure form evaluated on the current trace, and each
    reference written its final value where that changed. A reference passed twice
    is one reference."""
    invars: list = []
    by_ref: dict[int, Any] = {}
    ref_args: list = []
    for a in args:
        if refs.is_ref(a):
            var = by_ref.get(id(a))
            if var is None:
                var = by_ref[id(a)] = Var(get_aval(a))
                ref_args.append(a)
            invars.append(var)
        else:
            invars.append(Var(get_aval(a)))
    unique = list(dict.fromkeys(invars))
    out = primitive.abstract_eval(*(v.aval for v in invars), **params)
    outvars = [Var(a) for a in (out if primitive.multiple_results else [out])]
    effects = primitive.get_rule("effects")
    effects = frozenset(effects(**params)) if effects else frozenset()
    eqn = JaxprEqn(invars, outvars, primitive, params, effects)
    closed = ClosedJaxpr(Jaxpr([], unique, outvars, [eqn], effects), [])
    is_ref = [isinstance(v.aval, AbstractRef) for v in unique]
    pure = discharge(closed, is_ref)
    values = {id(v): a for v, a in zip(invars, args)}
    initial = [refs.get(a) for a in ref_args]
    it = iter(initial)
    outs = eval_jaxpr(pure.jaxpr, pure.consts,
                      *(next(it) if r else values[id(v)] for v, r in zip(unique, is_ref)))
    for ref, before, after in zip(ref_args, initial, outs[len(outvars):]):
        if after is not before:
            refs.set(ref, None, after)
    outs = outs[:len(outvars)]
    return outs if primitive.multiple_results else outs[0]
