"""User-defined differentiation rules: `custom_jvp` and `custom_vjp`.

Calling a decorated function traces it once into a closed Jaxpr and binds a
higher-order primitive carrying it, so `make_jaxpr` shows the call and every
transform can treat it as one unit:

* `custom_jvp_call[call_jaxpr, jvp, num_consts, symbolic_zeros]`: evaluating or
  lowering it runs `call_jaxpr`; its jvp rule runs the user's jvp function on the
  primal and tangent values instead of differentiating `call_jaxpr`.
* `custom_vjp_call[call_jaxpr, fwd, bwd, num_consts, symbolic_zeros]`: its jvp rule
  runs the user's `fwd` (primal outputs and residuals) and returns as tangents a
  `custom_lin` of the residuals and input tangents. `custom_lin` is linear in the
  tangents; its transpose runs the user's `bwd`. It cannot be evaluated, so plain
  forward mode of a `custom_vjp` function raises, as in JAX.

Outside `jit` (eager evaluation, or `jvp`/`grad`/`vjp` whose primal values are
concrete) nothing is traced, as in JAX: evaluation calls the function itself, and
differentiation calls the user's rule on the concrete primal values — so Python
control flow on primal values works there. Under `jit` (or `vmap`) the call is
staged as above.

Values the function closes over are hoisted into leading operands (`num_consts`),
so enclosing transforms see them; differentiating with respect to one raises,
since the user's rule does not say how. Arguments in `nondiff_argnums` are static
for the rule (passed first to `jvp`/`bwd`), their tangents are zero.

Batching: the carried Jaxpr is batched with `batching.batch_jaxpr` and the
user's rules are wrapped in `vmap` (an unbatched input's cotangent is summed over
the batch).
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from typing import Any, Callable, Sequence

import numpy as np

from plax.errors import UnexpectedTracerError
from plax.extend import tree_util
from plax.extend.ad import Zero, instantiate, is_differentiable_dtype, tangent_aval, zeros_like_aval
from plax.extend.core import (
    BATCHING,
    EVAL_TRACE,
    JVP,
    TRANSPOSE,
    ClosedJaxpr,
    Jaxpr,
    JaxprDebugInfo,
    Primitive,
    ShapedArray,
    Tracer,
    TracingDebugInfo,
    check_callable,
    current_trace,
    eval_jaxpr,
    get_aval,
    make_tracing_debug_info,
    normalize_argnums,
    resolve_argnums,
    result_paths_from_tree,
    set_current_trace,
    stage_flat,
)
from plax_stdlib.lax.conversion import stop_gradient
from plax_transforms.ad import JVPTrace
from plax_transforms.partial_eval import PartialEvalTrace
from plax_transforms.transpose import TRANSPOSED_WITHOUT_COTANGENTS, backward_pass

# --- what users' rules see -------------------------------------------------------------

class SymbolicZero:
    """A tangent known to be zero, of the abstract value `aval` (JAX's
    `custom_derivatives.SymbolicZero`): it has `shape` and `dtype` but no values."""
    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: int(np.prod(self.aval.shape, dtype=np.int64)))

    def __bool__(self):
        return False

    def __repr__(self):
        return f"SymbolicZero({self.aval.str_short()})"


@dataclasses.dataclass(frozen=True)
class CustomVJPPrimal:
    """What a `custom_vjp` fwd rule defined with `symbolic_zeros=True` receives for
    each argument leaf: its `value`, and whether it is `perturbed` (has a nonzero
    tangent, so that its cotangent matters). One pytree leaf, as in JAX (not a
    tuple: `tree_map` over the fwd rule's arguments sees it whole)."""
    value: Any
    perturbed: bool


def zero_from_primal(x, symbolic_zeros: bool = False):
    """A zero tangent for each leaf of `x`: `SymbolicZero`s, or materialised zeros."""
    def zero(leaf):
        aval = tangent_aval(get_aval(leaf))
        return SymbolicZero(aval) if symbolic_zeros else zeros_like_aval(aval)
    return tree_util.tree_map(zero, x)


# --- tracing a function with its closure as explicit inputs ---------------------------------

def closure_convert_flat(flat_fun: Callable[..., Sequence[Any]], in_avals
                         ) -> tuple[ClosedJaxpr, list[Any]]:
    """Trace `flat_fun` into a Jaxpr whose closed-over values are leading inputs.

    → (ClosedJaxpr without constants taking `consts + args`, consts). Tracers of
    enclosing transforms become operands of the primitive that carries the Jaxpr,
    so those transforms see them (they would be invisible as constants).
    """
    closed = stage_flat(flat_fun, in_avals)
    jaxpr = closed.jaxpr
    hoisted = Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                    jaxpr.effects)
    return ClosedJaxpr(hoisted, []), list(closed.consts)


def named_hoisted(closed: ClosedJaxpr, num_consts: int, dbg: TracingDebugInfo,
                  out_tree) -> ClosedJaxpr:
    """`closed` (from `closure_convert_flat`) with debug info: `const[i]` for the
    hoisted values, then the traced function's argument names and result paths."""
    names = None if dbg.arg_names is None else (
        *(f"const[{i}]" for i in range(num_consts)), *dbg.arg_names)
    info = JaxprDebugInfo(dbg.traced_for, dbg.func_src_info, names,
                                   result_paths_from_tree(out_tree))
    return closed.replace(jaxpr=closed.jaxpr.replace(debug_info=info))


def _avals(leaves, what: str):
    try:
        return [get_aval(x) for x in leaves]
    except TypeError as err:
        raise TypeError(f"{what}: {err}") from None


class _Decorated:
    """What `custom_jvp` and `custom_vjp` share: the wrapped function, its static
    arguments (`nondiff_argnums`, and the positions of the parameters
    `nondiff_argnames` names), and tracing it into a flat closed Jaxpr."""

    api = ""

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        check_callable(fun, type(self).__name__)
        functools.update_wrapper(self, fun)
        self.fun = fun
        nums = normalize_argnums(nondiff_argnums, "nondiff_argnums")
        if nondiff_argnames:
            named, _ = resolve_argnums(fun, None, nondiff_argnames, option="nondiff")
            nums = tuple(sorted({*nums, *named}))
        self.nondiff_argnums = nums

    @property
    def name(self) -> str:
        return getattr(self.fun, "__name__", repr(self.fun))

    def __get__(self, instance, owner=None):
        return self if instance is None else functools.partial(self, instance)

    def _split(self, args, kwargs):
        """→ (static args by position, dynamic args, their positions, all positional
        args)."""
        args = positional_args(self.fun, f"{self.api} function {self.name}", args, kwargs)
        n = len(args)
        static = {}
        for i in self.nondiff_argnums:
            if not -n <= i < n:
                raise ValueError(f"{self.api} function {self.name}: nondiff_argnums {i} is "
                                 f"out of range for a call with {n} positional arguments")
            # Their tangents are zero: the rule treats them as constants.
            static[i % n] = tree_util.tree_map(
                lambda x: stop_gradient(x) if isinstance(x, Tracer) else x, args[i])
        positions = [i for i in range(n) if i not in static]
        return static, tuple(args[i] for i in positions), positions, args

    def __call__(self, *args, **kwargs):
        """Outside `jit`, the function or its rule on concrete values; else staged."""
        self._check_rules()
        trace = current_trace()
        if trace is EVAL_TRACE:  # outside every transformation: the function itself
            return self.fun(*args, **kwargs)
        if isinstance(trace, PartialEvalTrace) and not any(
                map(trace.is_unknown, tree_util.tree_leaves((args, kwargs)))):
            with set_current_trace(trace.parent):  # known values: computed right away
                return self(*args, **kwargs)
        static, dyn, positions, all_args = self._split(args, kwargs)
        trace = self._concrete_jvp_trace(dyn)
        if trace is not None:
            return self._jvp_concretely(trace, static, dyn, positions)
        return self._staged_call(static, dyn, positions, all_args)

    def _concrete_jvp_trace(self, dyn) -> JVPTrace | None:
        """The current trace when it differentiates concrete primal values (outside
        `jit`): the rule then runs on them directly instead of being staged."""
        trace = current_trace()
        if not isinstance(trace, JVPTrace):
            return None
        for leaf in tree_util.tree_leaves(dyn):
            primal = trace.to_primal_tangent(leaf)[0]
            if isinstance(primal, Tracer) and primal.to_concrete_value() is None:
                return None
        return trace

    def _split_primals_tangents(self, trace: JVPTrace, dyn):
        flat, in_tree = tree_util.tree_flatten(dyn)
        pairs = [trace.to_primal_tangent(x) for x in flat]
        return [p for p, _ in pairs], [t for _, t in pairs], in_tree

    @contextlib.contextmanager
    def _on_parent_of(self, trace: JVPTrace):
        """Run on the parent of `trace` with it suspended: a value of `trace` met there
        was closed over by the function, which its rule cannot differentiate."""
        try:
            with trace.suspended(), set_current_trace(trace.parent):
                yield
        except UnexpectedTracerError as err:
            raise UnexpectedTracerError(str(_closure_tangent_error(self.api, self.name))
                                        ) from err

    def _trace(self, static, dyn, positions, all_args):
        """→ (call_jaxpr, consts, flat dynamic leaves, in_tree, out_tree)."""
        flat, in_tree = tree_util.tree_flatten(dyn)
        in_avals = _avals(flat, f"{self.api} function {self.name}")
        dbg = make_tracing_debug_info(self.api, self.fun, all_args, {},
                                               static_argnums=tuple(static))
        out_tree: list = []

        def flat_fun(*leaves):
            out = self.fun(*_merge(static, positions, tree_util.tree_unflatten(in_tree, leaves)))
            out_leaves, tree = tree_util.tree_flatten(out)
            _avals(out_leaves, f"the output of {self.api} function {self.name}")
            out_tree.append(tree)
            return out_leaves

        closed, consts = closure_convert_flat(flat_fun, in_avals)
        closed = named_hoisted(closed, len(consts), dbg, out_tree[0])
        return closed, consts, flat, in_tree, out_tree[0]


def positional_args(fun: Callable, what: str, args: tuple, kwargs: dict) -> tuple:
    """The call's arguments all by position, as JAX resolves them: keywords bound to
    `fun`'s parameters and defaults filled in (so `nondiff_argnums` may name a
    parameter left to its default); a keyword-only argument passed is a TypeError
    naming `what`. A `functools.partial` (or a callable without a signature) takes
    its positional arguments as given."""
    try:
        signature = None if isinstance(fun, functools.partial) else inspect.signature(fun)
    except (TypeError, ValueError):
        signature = None
    if signature is None:
        if kwargs:
            raise TypeError(f"{what} does not support keyword arguments: {sorted(kwargs)}")
        return args
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as err:
        raise TypeError(f"{what}: {err}") from None
    bound.apply_defaults()
    passed = sorted(k for k in bound.kwargs if k in kwargs)
    if passed:
        raise TypeError(f"{what} does not support keyword-only arguments: {passed}")
    return bound.args


def _merge(static: dict, positions, dyn) -> list:
    """The full positional argument list from the static and dynamic ones."""
    args = [None] * (len(static) + len(positions))
    for i, x in static.items():
        args[i] = x
    for i, x in zip(positions, dyn):
        args[i] = x
    return args


def _closure_tangent_error(api: str, name: str) -> TypeError:
    return TypeError(
        f"Detected differentiation of {api} function {name} with respect to a closed-over "
        f"value. That isn't supported because the custom rule only specifies how to "
        "differentiate the function with respect to its explicit arguments; pass the "
        "value as an argument instead.")


def _called(call_jaxpr: ClosedJaxpr) -> str:
    dbg = call_jaxpr.jaxpr.debug_info
    return dbg.func_name if dbg is not None else "<unknown>"


def _type_str(aval) -> str:
    return aval.str_short()


def _same_type(a, b) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype


# --- custom_jvp ---------------------------------------------------------------------------

custom_jvp_call_p = Primitive("plax.custom_jvp_call", multiple_results=True)


class custom_jvp(_Decorated):
    """Wraps `fun` so that its forward-mode derivative is a rule you write.

    Use it to make a derivative numerically stable, cheaper, or defined where
    automatic differentiation would give NaN. Register the rule with
    `f.defjvp(rule)` (usable as a decorator): `rule(primals, tangents)` receives
    two tuples, the arguments and their tangents, and returns
    `(primal_out, tangent_out)`. Reverse mode (`grad`, `vjp`) works too: plax
    transposes the linear part of the rule. `f.defjvps(*partials)` gives one
    function per argument instead.

    Args:
        fun: the function whose derivative is customized; it still computes the
            primal output when not differentiated.
        nondiff_argnums: positions of arguments that are not differentiated
            (Python values, functions); they are passed first to the rule.
        nondiff_argnames: the same, by parameter name.

    Returns:
        A callable `custom_jvp` object that behaves as `fun` and has `defjvp`
        and `defjvps`.

    Raises:
        AttributeError: (when differentiated) no rule was registered.
        TypeError: (when differentiated) the rule's output does not match
            `fun`'s output in structure, shape or dtype.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> @plax.custom_jvp
        ... def softplus(x):
        ...     return jnp.log1p(jnp.exp(x))
        >>> @softplus.defjvp
        ... def softplus_jvp(primals, tangents):
        ...     (x,), (t,) = primals, tangents
        ...     return softplus(x), t * plax.nn.sigmoid(x)
        >>> plax.grad(softplus)(0.0)
        Array(0.5, dtype=float32, weak_type=True)
    """

    api = "custom_jvp"

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Set the rule; with `symbolic_zeros` zero tangents arrive as `SymbolicZero`."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *jvps: Callable | None) -> None:
        """One rule per argument: `jvps[i](g, ans, *primals)` is the output tangent due to
        argument i's tangent `g` (None: the output does not depend on it)."""
        if self.nondiff_argnums:
            raise TypeError("custom_jvp.defjvps is not supported with nondiff_argnums")

        def jvp(primals, tangents):
            ans = self(*primals)
            t_out = None
            for rule, t in zip(jvps, tangents):
                if rule is None:
                    continue
                contrib = rule(t, ans, *primals)
                t_out = contrib if t_out is None else tree_util.tree_map(
                    lambda a, b: a + b, t_out, contrib)
            if t_out is None:
                t_out = tree_util.tree_map(lambda a: zeros_like_aval(tangent_aval(get_aval(a))),
                                           ans)
            return ans, t_out
        self.defjvp(jvp)

    def _check_rules(self) -> None:
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.name} using "
                                 "defjvp.")

    def _staged_call(self, static, dyn, positions, all_args):
        closed, consts, flat, in_tree, out_tree = self._trace(static, dyn, positions, all_args)
        flat_jvp = _flat_jvp(self, static, positions, in_tree, out_tree, closed.out_avals)
        outs = custom_jvp_call_p.bind(*consts, *flat, call_jaxpr=closed, jvp=flat_jvp,
                                      num_consts=len(consts),
                                      symbolic_zeros=self.symbolic_zeros)
        return tree_util.tree_unflatten(out_tree, outs)

    def _jvp_concretely(self, trace: JVPTrace, static, dyn, positions):
        """The user's rule on the concrete primals and the tangents, on the parent trace."""
        primals, tangents, in_tree = self._split_primals_tangents(trace, dyn)
        with self._on_parent_of(trace):
            if all(isinstance(t, Zero) for t in tangents):
                return self(*_merge(static, positions, tree_util.tree_unflatten(in_tree,
                                                                                primals)))
            flat_jvp = _flat_jvp(self, static, positions, in_tree, None, None)
            p_out, t_out = flat_jvp(primals, tangents)
        return tree_util.tree_unflatten(flat_jvp.out_tree[0],
                                        [trace.wrap(p, t) for p, t in zip(p_out, t_out)])


def _flat_jvp(f: custom_jvp, static, positions, in_tree, out_tree, out_avals):
    """The user's jvp on flat primals and tangents (`Zero`s allowed) → flat primal
    outputs and tangents (`Zero` where the rule gave a symbolic zero), checked against
    the function's output structure and types (when known: the function was traced).
    The rule's output structure is left in `flat_jvp.out_tree[0]`."""
    rule = f.jvp
    seen_tree: list = []

    def flat_jvp(primals, tangents):
        if f.symbolic_zeros:
            tangents = [SymbolicZero(t.aval) if isinstance(t, Zero) else t for t in tangents]
        else:
            tangents = [instantiate(t) for t in tangents]
        nondiff = [static[i] for i in sorted(static)]
        out = rule(*nondiff, tree_util.tree_unflatten(in_tree, primals),
                   tree_util.tree_unflatten(in_tree, tangents))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"Custom JVP rule {_fn_name(rule)} for function {f.name} must "
                            "produce a pair (list or tuple of length two) representing "
                            f"primal and tangent outputs, but got {out!r}.")
        p_out, t_out = out
        p_flat, p_tree = tree_util.tree_flatten(p_out)
        # As JAX: None is an empty subtree here (only a bwd rule's None means zero).
        t_flat, t_tree = tree_util.tree_flatten(
            t_out, is_leaf=lambda x: isinstance(x, (SymbolicZero, Zero)))
        seen_tree[:] = [p_tree]
        if out_tree is not None and p_tree != out_tree:
            raise TypeError(f"Custom JVP rule {_fn_name(rule)} for function {f.name} must "
                            "produce primal outputs with the same container (pytree) structure "
                            f"as the function's output {out_tree}, but got {p_tree}.")
        if t_tree != p_tree:
            raise TypeError(f"Custom JVP rule {_fn_name(rule)} for function {f.name} must "
                            "produce primal and tangent outputs with equal container (pytree) "
                            f"structures, but got {p_tree} and {t_tree} respectively.")
        tangents_out = []
        wanted = out_avals if out_avals is not None else [get_aval(p) for p in p_flat]
        for i, (p, t, want) in enumerate(zip(p_flat, t_flat, wanted)):
            p_aval = get_aval(p)
            if not _same_type(p_aval, want):
                raise TypeError(f"Custom JVP rule {_fn_name(rule)} for function {f.name} must "
                                f"produce primal outputs of the function's types: output {i} "
                                f"is {_type_str(p_aval)}, expected {_type_str(want)}.")
            t_want = tangent_aval(want)
            if t is None or isinstance(t, (SymbolicZero, Zero)):
                tangents_out.append(Zero(t_want))
                continue
            t_aval = get_aval(t)
            if t_want.dtype != t_aval.dtype and not \
                    is_differentiable_dtype(want.dtype):
                tangents_out.append(Zero(t_want))  # e.g. zeros given for an int output
                continue
            if not _same_type(t_aval, t_want):
                raise TypeError(f"Custom JVP rule {_fn_name(rule)} for function {f.name} must "
                                "produce primal and tangent outputs with corresponding shapes "
                                f"and dtypes: output {i} has primal {_type_str(p_aval)} and "
                                f"tangent {_type_str(t_aval)} (expected {_type_str(t_want)}).")
            tangents_out.append(t)
        return p_flat, tangents_out

    flat_jvp.__name__ = _fn_name(rule)
    flat_jvp.out_tree = seen_tree
    flat_jvp.__name__ = _fn_name(rule)  # printed as the equation's `jvp=`, as JAX's
    return flat_jvp


def _is_zero_leaf(x) -> bool:
    return x is None or isinstance(x, (SymbolicZero, Zero))


def _fn_name(fn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


@custom_jvp_call_p.def_abstract_eval
def _custom_call_abstract_eval(*avals, call_jaxpr: ClosedJaxpr, **_):
    expected = call_jaxpr.in_avals
    if len(avals) != len(expected) or any(not _same_type(a, b)
                                          for a, b in zip(avals, expected)):
        raise TypeError(f"custom call of {_called(call_jaxpr)} takes "
                        f"{[_type_str(a) for a in expected]}, got {[_type_str(a) for a in avals]}")
    return list(call_jaxpr.out_avals)


def _custom_call_impl(*args, call_jaxpr: ClosedJaxpr, **_):
    return eval_jaxpr(call_jaxpr.jaxpr, call_jaxpr.consts, *args)


def _custom_call_lowering(ctx, *args, call_jaxpr: ClosedJaxpr, **_):
    return ctx.lower_subjaxpr(call_jaxpr, *args, name=_called(call_jaxpr))


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros):
    if any(not isinstance(t, Zero) for t in tangents[:num_consts]):
        raise _closure_tangent_error("custom_jvp", _called(call_jaxpr))
    return jvp(list(primals[num_consts:]), list(tangents[num_consts:]))


def _custom_jvp_call_transpose(cts, *args, call_jaxpr, num_consts, **_):
    # A custom_jvp function applied to tangents (in the user's own jvp rule): its
    # primal implementation is linear there, so transpose that.
    cts_in = backward_pass(call_jaxpr.jaxpr, call_jaxpr.consts, args, list(cts))
    return [None if isinstance(c, Zero) else c for c in cts_in]


custom_jvp_call_p.def_impl(_custom_call_impl)
custom_jvp_call_p.def_lowering(_custom_call_lowering)
custom_jvp_call_p.define_rule("effects", lambda *, call_jaxpr, **_: call_jaxpr.effects)
custom_jvp_call_p.define_rule(JVP, _custom_jvp_call_jvp)
custom_jvp_call_p.define_rule(TRANSPOSE, _custom_jvp_call_transpose)


def _custom_call_pretty_print(eqn, same_names) -> list:
    """JAX's form: `name=` (the function's) first, the rules by their names, and
    `num_consts` only when there are constants."""
    params = {k: getattr(v, "__name__", v) if k in ("jvp", "fwd", "bwd") else v
              for k, v in eqn.params.items() if k != "num_consts" or v}
    debug = eqn.params["call_jaxpr"].jaxpr.debug_info
    return [("name", debug.func_name if debug else "<unknown>"), *sorted(params.items())]


custom_jvp_call_p.define_rule("pretty_print", _custom_call_pretty_print)


# --- custom_vjp ---------------------------------------------------------------------------

custom_vjp_call_p = Primitive("plax.custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("plax.custom_lin", multiple_results=True)


class custom_vjp(_Decorated):
    """Wraps `fun` so that its reverse-mode derivative is a rule you write.

    Register the rule with `f.defvjp(fwd, bwd)`. `fwd(*args)` returns
    `(output, residuals)`, where the residuals are any pytree of arrays the
    backward pass needs; `bwd(residuals, output_cotangent)` (non-differentiated
    arguments first) returns a tuple with one cotangent per argument, `None`
    meaning zero. Forward-mode (`jvp`, `jacfwd`) is not available for such a
    function. With `defvjp(..., symbolic_zeros=True)`, `fwd` receives
    `CustomVJPPrimal`s and `bwd` may receive `SymbolicZero`s.

    Args:
        fun: the function; it computes the output when not differentiated.
        nondiff_argnums: positions of arguments that are not differentiated;
            `bwd` receives them first.
        nondiff_argnames: the same, by parameter name.

    Returns:
        A callable `custom_vjp` object that behaves as `fun` and has `defvjp`.

    Raises:
        TypeError: (when differentiated) `bwd` returns the wrong number of
            cotangents, or cotangents of the wrong shape or dtype.

    Examples:
        Clip the gradient flowing through `x` to [-1, 1]:

        >>> import plax, plax.numpy as jnp
        >>> @plax.custom_vjp
        ... def clip_gradient(x):
        ...     return x
        >>> def fwd(x):
        ...     return x, None
        >>> def bwd(residuals, g):
        ...     return (jnp.clip(g, -1.0, 1.0),)
        >>> clip_gradient.defvjp(fwd, bwd)
        >>> plax.grad(lambda x: 5.0 * clip_gradient(x))(2.0)
        Array(1., dtype=float32, weak_type=True)
    """

    api = "custom_vjp"

    def __init__(self, fun: Callable, nondiff_argnums=(), nondiff_argnames=()):
        super().__init__(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def _check_rules(self) -> None:
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.name} using "
                                 "defvjp.")

    def _staged_call(self, static, dyn, positions, all_args):
        closed, consts, flat, in_tree, out_tree = self._trace(static, dyn, positions, all_args)
        fwd, bwd = _flat_fwd_bwd(self, static, positions, in_tree, out_tree,
                                 closed.in_avals[len(consts):], closed.out_avals)
        outs = custom_vjp_call_p.bind(*consts, *flat, call_jaxpr=closed, fwd=fwd, bwd=bwd,
                                      num_consts=len(consts),
                                      symbolic_zeros=self.symbolic_zeros)
        return tree_util.tree_unflatten(out_tree, outs)

    def _jvp_concretely(self, trace: JVPTrace, static, dyn, positions):
        """The user's fwd on the concrete primals, and a `custom_lin` of the residuals
        and tangents (transposed by bwd), on the parent trace."""
        primals, tangents, in_tree = self._split_primals_tangents(trace, dyn)
        with self._on_parent_of(trace):
            if all(isinstance(t, Zero) for t in tangents):
                return self(*_merge(static, positions, tree_util.tree_unflatten(in_tree,
                                                                                primals)))
            in_avals = [get_aval(p) for p in primals]
            fwd, bwd = _flat_fwd_bwd(self, static, positions, in_tree, None, in_avals, None)
            outs, t_outs = _custom_vjp_call_jvp(primals, tangents, call_jaxpr=None, fwd=fwd,
                                                bwd=bwd, num_consts=0,
                                                symbolic_zeros=self.symbolic_zeros)
        return tree_util.tree_unflatten(fwd.out_tree[0],
                                        [trace.wrap(p, t) for p, t in zip(outs, t_outs)])


def _flat_fwd_bwd(f: custom_vjp, static, positions, in_tree, out_tree, in_avals, out_avals):
    """The user's fwd and bwd on flat values, with their outputs checked.

    `fwd(primals, perturbed) -> (outputs, residual leaves)`; `bwd(residual leaves, cotangents)`
    → one cotangent per input leaf (`Zero` where the rule gave None or a zero)."""
    nondiff = [static[i] for i in sorted(static)]
    res_tree: list = []
    seen_tree: list = []  # the output structure fwd gave (the function's, when traced)

    def fwd(primals, perturbed):
        if f.symbolic_zeros:
            primals = [CustomVJPPrimal(p, bool(t)) for p, t in zip(primals, perturbed)]
        out = f.fwd(*_merge(static, positions, tree_util.tree_unflatten(in_tree, primals)))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"Custom VJP fwd rule {_fn_name(f.fwd)} for function {f.name} "
                            "must produce a pair (list or tuple of length two) where the first "
                            "element represents the primal output and the second the "
                            f"residuals, but got {type(out).__name__}.")
        p_out, res = out
        p_flat, p_tree = tree_util.tree_flatten(p_out)
        seen_tree[:] = [p_tree]
        if out_tree is not None and p_tree != out_tree:
            raise TypeError(f"Custom VJP fwd rule {_fn_name(f.fwd)} for function {f.name} must "
                            "produce primal outputs with the same container (pytree) structure "
                            f"as the function: expected {out_tree}, got {p_tree}.")
        for i, (p, want) in enumerate(zip(p_flat, out_avals or ())):
            if not _same_type(get_aval(p), want):
                raise TypeError(f"Custom VJP fwd rule {_fn_name(f.fwd)} for function {f.name} "
                                f"must produce primal outputs of the function's types: output "
                                f"{i} is {_type_str(get_aval(p))}, expected {_type_str(want)}.")
        res_flat, tree = tree_util.tree_flatten(res)
        _avals(res_flat, f"the residuals of custom_vjp fwd rule {_fn_name(f.fwd)}")
        res_tree[:] = [tree]
        return p_flat, res_flat

    def bwd(res_flat, cts):
        if f.symbolic_zeros:
            cts = [SymbolicZero(c.aval) if isinstance(c, Zero) else c for c in cts]
        else:
            cts = [instantiate(c) for c in cts]
        res = tree_util.tree_unflatten(res_tree[0], res_flat)
        tree = seen_tree[0] if seen_tree else out_tree
        out = f.bwd(*nondiff, res, tree_util.tree_unflatten(tree, cts))
        return _check_bwd_output(f, out, in_tree, in_avals)

    fwd.__name__ = _fn_name(f.fwd)
    fwd.out_tree = seen_tree
    bwd.__name__ = _fn_name(f.bwd)
    fwd.__name__, bwd.__name__ = _fn_name(f.fwd), _fn_name(f.bwd)  # printed, as JAX's
    return fwd, bwd


def _check_bwd_output(f: custom_vjp, out, in_tree, in_avals) -> list:
    name = _fn_name(f.bwd)
    arg_trees = tree_util.tree_unflatten(in_tree, list(range(len(in_avals))))
    n_args = len(arg_trees)
    if not isinstance(out, (tuple, list)) or len(out) != n_args:
        got = (f"a {type(out).__name__} of length {len(out)}"
               if isinstance(out, (tuple, list)) else f"{type(out).__name__}")
        raise TypeError(f"Custom VJP bwd rule {name} for function '{f.name}' must produce a "
                        f"tuple of length {n_args} (one cotangent per differentiated "
                        f"argument), but got {got}.")
    leaves: list = []
    for k, (ct, arg) in enumerate(zip(out, arg_trees)):
        want_tree = tree_util.tree_structure(arg)
        if ct is None:
            leaves.extend(Zero(tangent_aval(in_avals[i]))
                          for i in tree_util.tree_leaves(arg))
            continue
        # As JAX: a None in the cotangent stands for zeros of the whole subtree there
        # (and for an empty one where the argument itself had a None).
        try:
            ct_leaves = tree_util.broadcast_prefix(ct, arg, is_leaf=_is_zero_leaf)
        except ValueError:
            ct_tree = tree_util.tree_structure(ct, is_leaf=_is_zero_leaf)
            raise TypeError(f"Custom VJP bwd rule {name} for function '{f.name}' must produce "
                            f"cotangents with the structure of argument {k}: expected "
                            f"{want_tree}, got {ct_tree}.") from None
        for i, c in zip(tree_util.tree_leaves(arg), ct_leaves):
            want = tangent_aval(in_avals[i])
            if _is_zero_leaf(c) or not is_differentiable_dtype(in_avals[i].dtype):
                leaves.append(Zero(want))
                continue
            got = get_aval(c)
            if not _same_type(got, want):
                raise ValueError(f"Custom VJP bwd rule {name} for function '{f.name}' must "
                                 f"produce cotangents of the argument's shape and dtype: for "
                                 f"argument {k} it gave {_type_str(got)}, expected "
                                 f"{_type_str(want)}.")
            leaves.append(c)
    return leaves


custom_vjp_call_p.def_abstract_eval(_custom_call_abstract_eval)
custom_vjp_call_p.def_impl(_custom_call_impl)
custom_vjp_call_p.def_lowering(_custom_call_lowering)
custom_vjp_call_p.define_rule("effects", lambda *, call_jaxpr, **_: call_jaxpr.effects)


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts,
                         symbolic_zeros):
    if any(not isinstance(t, Zero) for t in tangents[:num_consts]):
        raise _closure_tangent_error("custom_vjp", _called(call_jaxpr))
    tangents = tangents[num_consts:]
    nonzeros = tuple(not isinstance(t, Zero) for t in tangents)
    outs, res = fwd(list(primals[num_consts:]), nonzeros)
    out_avals = tuple(get_aval(o) for o in outs)
    diff_out = [is_differentiable_dtype(a.dtype) for a in out_avals]
    lin_outs = iter(custom_lin_p.bind(
        *res, *(t for t in tangents if not isinstance(t, Zero)), num_res=len(res), bwd=bwd,
        out_avals=out_avals, in_avals=tuple(t.aval if isinstance(t, Zero) else
                                            tangent_aval(get_aval(t)) for t in tangents),
        nonzeros=nonzeros))
    return outs, [next(lin_outs) if d else Zero(tangent_aval(a))
                  for d, a in zip(diff_out, out_avals)]


custom_vjp_call_p.define_rule(JVP, _custom_vjp_call_jvp)


@custom_lin_p.def_abstract_eval
def _custom_lin_abstract_eval(*avals, out_avals, **_):
    return [tangent_aval(a) for a in out_avals if is_differentiable_dtype(a.dtype)]


def _custom_lin_forward_error(*_, **__):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p.def_impl(_custom_lin_forward_error)
custom_lin_p.def_lowering(lambda ctx, *args, **params: _custom_lin_forward_error(**params))
custom_lin_p.define_rule(JVP, lambda primals, tangents, **params:
                         _custom_lin_forward_error(**params))
# Evaluating custom_lin under vmap is forward mode too (jacfwd pushes batched tangents).
custom_lin_p.define_rule(BATCHING, lambda axis_data, args, dims, **params:
                         _custom_lin_forward_error(**params))


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, in_avals, nonzeros):
    cts = iter(cts)
    full = [next(cts) if is_differentiable_dtype(a.dtype) else Zero(tangent_aval(a))
            for a in out_avals]
    cts_in = bwd(list(args[:num_res]), full)
    return [None] * num_res + [c for c, nz in zip(cts_in, nonzeros) if nz]


custom_lin_p.define_rule(TRANSPOSE, _custom_lin_transpose)
TRANSPOSED_WITHOUT_COTANGENTS.add(custom_lin_p)  # the user's bwd runs, as in JAX


# --- batching: the call's Jaxpr is batched, the user's rules are vmapped -------------------

def _batched_at_front(axis_data, args, dims):
    """Batched args moved to dimension 0; → (args, dims of 0 or None)."""
    from plax.extend.batching import moveaxis
    return ([a if d is None else moveaxis(a, d, 0) for a, d in zip(args, dims)],
            [None if d is None else 0 for d in dims])


def _unbatched_aval(x, dim):
    aval = tangent_aval(get_aval(x))
    return aval if dim is None else aval.update(shape=aval.shape[1:])


def _vmapped(fun, axis_data, in_axes, out_axes=0):
    from plax_transforms.vmap_api import vmap
    return vmap(fun, in_axes=tuple(in_axes), out_axes=out_axes, axis_name=axis_data.name,
                axis_size=axis_data.size)


def _custom_jvp_call_batching(axis_data, args, dims, *, call_jaxpr, jvp, num_consts,
                              symbolic_zeros):
    from plax_transforms.batching import batch_jaxpr
    args, dims = _batched_at_front(axis_data, args, dims)
    batched, out_dims = batch_jaxpr(call_jaxpr, axis_data, dims, True)
    arg_dims = dims[num_consts:]

    def batched_jvp(primals, tangents):
        nonzero = [not isinstance(t, Zero) for t in tangents]

        def per_example(*xs):
            ps, ts = list(xs[:len(primals)]), iter(xs[len(primals):])
            full = [next(ts) if nz else Zero(_unbatched_aval(p, d))
                    for p, nz, d in zip(primals, nonzero, arg_dims)]
            outs, t_outs = jvp(ps, full)
            return list(outs), [instantiate(t) for t in t_outs]
        nz_dims = [d for d, nz in zip(arg_dims, nonzero) if nz]
        outs, t_outs = _vmapped(per_example, axis_data, [*arg_dims, *nz_dims])(
            *primals, *(t for t in tangents if not isinstance(t, Zero)))
        return outs, t_outs

    batched_jvp.__name__ = _fn_name(jvp)  # (JAX keeps the rule's name)
    outs = custom_jvp_call_p.bind(*args, call_jaxpr=batched, jvp=batched_jvp,
                                  num_consts=num_consts, symbolic_zeros=symbolic_zeros)
    return outs, out_dims


def _custom_vjp_call_batching(axis_data, args, dims, *, call_jaxpr, fwd, bwd, num_consts,
                              symbolic_zeros):
    from plax_stdlib.lax.reductions import reduce_sum
    from plax_transforms.batching import batch_jaxpr
    args, dims = _batched_at_front(axis_data, args, dims)
    batched, out_dims = batch_jaxpr(call_jaxpr, axis_data, dims, True)
    arg_dims = dims[num_consts:]

    def batched_fwd(primals, perturbed):
        return _vmapped(lambda *ps: fwd(list(ps), perturbed), axis_data, arg_dims)(*primals)

    def batched_bwd(res, cts):
        def per_example(res, cts):
            return [instantiate(c) for c in bwd(res, cts)]
        cts_in = _vmapped(per_example, axis_data, [0, 0])(list(res), [instantiate(c)
                                                                        for c in cts])
        # An unbatched input's cotangent sums the examples' contributions.
        return [c if d is not None or not is_differentiable_dtype(get_aval(c).dtype)
                else reduce_sum(c, (0,)) for c, d in zip(cts_in, arg_dims)]

    batched_fwd.__name__ = f"vmap({_fn_name(fwd)})"
    batched_bwd.__name__ = f"vmap({_fn_name(bwd)})"
    outs = custom_vjp_call_p.bind(*args, call_jaxpr=batched, fwd=batched_fwd,
                                  bwd=batched_bwd, num_consts=num_consts,
                                  symbolic_zeros=symbolic_zeros)
    return outs, out_dims


custom_jvp_call_p.define_rule(BATCHING, _custom_jvp_call_batching)
custom_vjp_call_p.define_rule(BATCHING, _custom_vjp_call_batching)


custom_vjp_call_p.define_rule("pretty_print", _custom_call_pretty_print)
