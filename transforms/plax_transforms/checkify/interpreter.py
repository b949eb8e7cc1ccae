"""`checkify`: turn the checks of a function into an error value it returns.

The function is traced to a Jaxpr, which is then evaluated equation by equation
(eagerly, or under whatever transformations surround the call) while an error
state is threaded along: a user's `check` updates it, and so do the automatic
checks that `errors` selects — NaNs in the outputs of floating-point operations,
division by zero, out-of-bounds indices of gathers, slices and scatters. Control
flow carries the state too: `cond` branches take and return it, `while_loop` and
`scan` carry it. Other higher-order primitives (jit, checkpoint, custom rules) are
evaluated inline when they contain checks, and bound unchanged when they do not.
The state has one slot per kind of error found anywhere in the function, so its
structure is the same in every branch and loop body.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.core import (ClosedJaxpr, JaxprEqn, PrimitiveIdError, check_callable, get_aval,
                              make_tracing_debug_info, primitive_by_id, subjaxprs,
                              trace_to_jaxpr)
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.lax.control_flow.cond import cond_p
from plax_stdlib.lax.control_flow.loops import while_p
from plax_stdlib.lax.control_flow.scan import scan_p
from plax_stdlib.lax.scatters import window_sizes
from plax_transforms.checkify.check import (check_error_p, check_p, describe_check,
                                            functionalizing)
from plax_transforms.checkify.errors import (
    OOB_KIND, DivisionByZeroError, Error, FailedCheckError, Kind, NaNError, OOBError, Site,
    all_checks, initial_state, new_code, payload_kind, record, user_checks)
from plax_transforms.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from plax_transforms.interpreting import interpret
from plax_transforms.jit_primitive import jit_p
from plax_transforms.remat import checkpoint_p

# Operations whose outputs are checked for NaNs (JAX's list, as plax names them).
_NAN_PRIMITIVE_IDS = (
    "acos", "acosh", "add", "asin", "asinh", "atan2", "atan", "atanh", "bessel_i0e",
    "bessel_i1e", "cbrt", "conv_general_dilated", "cos", "cosh", "cumlogsumexp", "cummax",
    "cummin", "cumprod", "cumsum", "digamma", "div", "dot_general", "erf_inv", "erf", "erfc",
    "exp", "expm1", "fft", "igamma_grad_a", "igamma", "igammac", "integer_pow", "lgamma",
    "custom_linear_solve", "log1p", "log", "logistic", "mul", "pad", "pow", "psum", "reduce",
    "reduce_prod", "reduce_sum", "reduce_window", "reduce_window_sum",
    "regularized_incomplete_beta", "rem", "rng_uniform", "rsqrt", "sin", "sinh", "sqrt",
    "sub", "tan", "tanh")
_OOB_PRIMITIVE_IDS = ("gather", "dynamic_slice", "dynamic_update_slice", "scatter",
                      "scatter-add", "scatter-mul", "scatter-min", "scatter-max")
# Higher-order primitives evaluated inline (the Jaxpr parameter holding the body).
_INLINED = {jit_p: "jaxpr", checkpoint_p: "jaxpr", custom_jvp_call_p: "call_jaxpr",
            custom_vjp_call_p: "call_jaxpr"}


@functools.cache
def _primitives(ids: tuple[str, ...]) -> frozenset:
    found = set()
    for name in ids:
        try:
            found.add(primitive_by_id(f"lax.{name}"))
        except PrimitiveIdError:
            pass  # a primitive plax does not have (yet)
    return frozenset(found)


def _is_inexact(aval) -> bool:
    return dtypes.issubdtype(getattr(aval, "dtype", np.bool_), np.inexact)


class _Checker:
    """Evaluates Jaxprs threading the error state, for one checkified call."""

    def __init__(self, enabled: frozenset):
        self.enabled = enabled
        self.sites: dict[int, Site] = {}
        self._kinds_of_jaxpr: dict[int, frozenset] = {}
        self.slots: dict[Kind, int] = {}

    # --- which kinds of error a Jaxpr can raise ------------------------------------

    def kinds(self, jaxpr) -> frozenset:
        found = self._kinds_of_jaxpr.get(id(jaxpr))
        if found is None:
            found = set()
            for eqn in jaxpr.eqns:
                found.update(self._eqn_kinds(eqn))
            found = self._kinds_of_jaxpr[id(jaxpr)] = frozenset(found)
        return found

    def _eqn_kinds(self, eqn: JaxprEqn):
        prim = eqn.primitive
        if prim is check_p:
            if FailedCheckError in self.enabled:
                yield payload_kind(FailedCheckError, [v.aval for v in eqn.invars[1:]])
        elif prim is check_error_p:
            yield from tree_util.tree_unflatten(eqn.params["error_tree"], eqn.invars)._kinds
        elif prim in _INLINED or prim in (cond_p, while_p, scan_p):
            for sub in subjaxprs(eqn):
                yield from self.kinds(sub)
        else:
            if prim.name == "div" and DivisionByZeroError in self.enabled:
                yield Kind(DivisionByZeroError)
            if (NaNError in self.enabled and prim in _primitives(_NAN_PRIMITIVE_IDS)
                    and any(_is_inexact(v.aval) for v in eqn.outvars)):
                yield Kind(NaNError)
            if OOBError in self.enabled and prim in _primitives(_OOB_PRIMITIVE_IDS):
                yield OOB_KIND

    # --- evaluation ------------------------------------------------------------------

    def run(self, closed: ClosedJaxpr, state: list, args: Sequence[Any]) -> tuple[list, list]:
        current = [state]

        def apply(eqn, invals):
            current[0], outs = self._apply(eqn, current[0], invals)
            return outs
        outs = interpret(closed, args, apply)
        return current[0], outs

    def report(self, state: list, kind: Kind, failed, site: Site, payload=()) -> list:
        code = new_code()
        self.sites[code] = site
        return record(state, self.slots[kind], failed, code, payload)

    def _apply(self, eqn: JaxprEqn, state: list, args: list) -> tuple[list, list]:
        prim, params = eqn.primitive, eqn.params
        if prim is check_p:
            return self._user_check(state, args, **params), []
        if prim is check_error_p:
            return self._merge(state, args, **params), []
        if prim in _INLINED or prim in (cond_p, while_p, scan_p):
            if any(self.kinds(sub) for sub in subjaxprs(eqn)):
                return _CONTROL_FLOW.get(prim, _inline)(self, state, args, **params)
            return state, _bind(prim, args, params)
        name = prim.name
        if name == "div" and DivisionByZeroError in self.enabled:
            state = self.report(state, Kind(DivisionByZeroError), jnp.any(args[1] == 0),
                                Site(DivisionByZeroError, lambda _: "division by zero"))
        if OOBError in self.enabled and prim in _primitives(_OOB_PRIMITIVE_IDS):
            state = self._index_check(state, name, args, params)
        outs = _bind(prim, args, params)
        if NaNError in self.enabled and prim in _primitives(_NAN_PRIMITIVE_IDS):
            inexact = [o for o in outs if _is_inexact(get_aval(o))]
            if inexact:
                failed = functools.reduce(jnp.logical_or, [jnp.any(jnp.isnan(o))
                                                           for o in inexact])
                state = self.report(state, Kind(NaNError), failed, Site(
                    NaNError, lambda _, name=name: f"nan generated by primitive: {name}."))
        return state, outs

    def _user_check(self, state, args, *, fmt, fmt_tree):
        if FailedCheckError not in self.enabled:
            return state
        pred, *values = args
        kind = payload_kind(FailedCheckError, values)
        describe = functools.partial(describe_check, fmt, fmt_tree)
        return self.report(state, kind, jnp.logical_not(pred),
                           Site(FailedCheckError, describe), values)

    def _merge(self, state, leaves, *, error_tree):
        error = tree_util.tree_unflatten(error_tree, list(leaves))
        self.sites.update(error._sites)
        for kind, (failed, code, payload) in zip(error._kinds, error._state):
            state = record(state, self.slots[kind], failed, code, payload)
        return state

    def _index_check(self, state, name, args, params):
        operand = get_aval(args[0])
        if name == "gather":
            dnums = params["dimension_numbers"]
            axes = dnums.start_index_map
            indices = args[1]
            bounds = [operand.shape[a] - params["slice_sizes"][a] for a in axes]
        elif name in ("dynamic_slice", "dynamic_update_slice"):
            starts = args[1:] if name == "dynamic_slice" else args[2:]
            sizes = (params["slice_sizes"] if name == "dynamic_slice"
                     else get_aval(args[1]).shape)
            axes = tuple(range(operand.ndim))
            indices = jnp.stack([jnp.asarray(s) for s in starts]) if starts else None
            bounds = [operand.shape[a] - sizes[a] for a in axes]
        else:  # the scatters
            dnums = params["dimension_numbers"]
            axes = dnums.scatter_dims_to_operand_dims
            window = window_sizes(operand.ndim, get_aval(args[2]).shape, dnums)
            indices = args[1]
            bounds = [operand.shape[a] - window[a] for a in axes]
        if indices is None or not axes:
            return state
        failed, payload = _out_of_bounds(indices, np.array(bounds), np.array(axes),
                                         np.array(operand.shape))
        shape = operand.shape
        return self.report(state, OOB_KIND, failed, Site(OOBError, lambda p: (
            f"out-of-bounds indexing for array of shape {shape}: index {int(p[0][0])} is out "
            f"of bounds for axis {int(p[0][1])} with size {int(p[0][2])}. ")), [payload])


def _bind(prim, args, params) -> list:
    outs = prim.bind(*args, **params)
    return list(outs) if prim.multiple_results else [outs]


def _out_of_bounds(indices, bounds, axes, shape):
    """Whether an index vector (the last dimension of `indices`) leaves [0, bounds],
    and the first offender as [index, axis, axis size]."""
    indices = jnp.asarray(indices)
    mask = (indices < 0) | (indices > bounds.astype(indices.dtype))
    flat = jnp.argmax(jnp.ravel(mask))
    column = flat % len(axes)
    payload = jnp.stack([jnp.ravel(indices)[flat].astype(np.int32),
                         jnp.asarray(axes, np.int32)[column],
                         jnp.asarray(shape, np.int32)[jnp.asarray(axes)][column]])
    return jnp.any(mask), payload


# --- control flow --------------------------------------------------------------------

def _inline(checker: _Checker, state, args, **params):
    closed = next(v for k, v in params.items() if isinstance(v, ClosedJaxpr)
                  and k in ("jaxpr", "call_jaxpr"))
    return checker.run(closed, state, args)


def _cond(checker: _Checker, state, args, *, branches, **_):
    index, *operands = args
    functions = [functools.partial(lambda branch, st, ops: tuple(checker.run(branch, st, ops)),
                                   branch) for branch in branches]
    state, outs = lax.switch(index, functions, state, list(operands))
    return state, outs


def _while(checker: _Checker, state, args, *, cond_jaxpr, body_jaxpr, cond_nconsts,
           body_nconsts):
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    init = args[cond_nconsts + body_nconsts:]

    def test(st, carry):  # the loop condition, checked too
        st, (keep_going,) = checker.run(cond_jaxpr, st, [*cond_consts, *carry])
        return st, keep_going

    def body(loop):
        st, _, carry = loop
        st, carry = checker.run(body_jaxpr, st, [*body_consts, *carry])
        st, keep_going = test(st, carry)
        return st, keep_going, carry

    state, keep_going = test(state, list(init))
    state, _, carry = lax.while_loop(lambda loop: loop[1], body, (state, keep_going, list(init)))
    return state, carry


def _scan(checker: _Checker, state, args, *, jaxpr, length, reverse, unroll, num_consts,
          num_carry, **_):
    consts, init, xs = args[:num_consts], args[num_consts:num_consts + num_carry], \
        args[num_consts + num_carry:]

    def body(loop, x):
        st, carry = loop
        st, outs = checker.run(jaxpr, st, [*consts, *carry, *x])
        return (st, outs[:num_carry]), outs[num_carry:]

    (state, carry), ys = lax.scan(body, (state, list(init)), list(xs), length=length,
                                  reverse=reverse, unroll=unroll)
    return state, [*carry, *ys]


_CONTROL_FLOW: dict[Any, Callable] = {cond_p: _cond, while_p: _while, scan_p: _scan}


# --- the transformation -----------------------------------------------------------------

def checkify(f: Callable, errors: frozenset = user_checks) -> Callable:
    """`f` returning `(error, out)`: `error` is an `Error` holding the first check that
    failed (user checks, and the automatic checks in `errors`), `out` what `f` returns."""
    check_callable(f, "checkify")
    enabled = frozenset(errors)
    unknown = enabled - all_checks
    if unknown:
        raise ValueError(f"checkify: errors must be a set of the error categories "
                         f"FailedCheckError, NaNError, DivisionByZeroError and OOBError "
                         f"(e.g. checkify.all_checks), got {sorted(map(str, unknown))}")

    @functools.wraps(f)
    def checked(*args, **kwargs):
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        debug_info = make_tracing_debug_info("checkify", f, args, kwargs)
        with functionalizing():
            closed, out_tree = trace_to_jaxpr(f, in_tree, [get_aval(x) for x in flat],
                                              debug_info)
        checker = _Checker(enabled)
        kinds = sorted(checker.kinds(closed.jaxpr), key=Kind.sort_key)
        checker.slots = {kind: i for i, kind in enumerate(kinds)}
        state, outs = checker.run(closed, initial_state(kinds), flat)
        return Error(kinds, state, checker.sites), tree_util.tree_unflatten(out_tree, outs)

    return checked
