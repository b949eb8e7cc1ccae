"""The public differentiation API: `jvp`, `linearize`, `vjp`, `grad`,
`value_and_grad`, `jacfwd`, `jacrev`, `hessian`, `linear_transpose`.

Reverse mode is linearize-then-transpose: `linearize_flat` runs the function on JVP
tracers whose tangents live in a `PartialEvalTrace`, so primal values are computed
right away (on the enclosing trace) and only the tangent computation is recorded,
as a linear Jaxpr whose constants are the residuals. `vjp` transposes that Jaxpr.

`jacfwd`/`jacrev` push the whole standard basis through one `vmap`ped `jvp` or
transposed linearization, as JAX does.
"""
from __future__ import annotations

import functools
import itertools
from typing import Any, Callable, Sequence

import numpy as np

from plax.extend import dtypes, tree_util
from plax.extend.traceback_util import api_boundary
from plax.extend.ad import (
    UndefinedPrimal,
    Zero,
    instantiate,
    is_differentiable_dtype,
    tangent_aval,
    zeros_like_aval,
)
from plax.extend.core import (
    EVAL_TRACE,
    AbstractToken,
    ClosedJaxpr,
    JaxprDebugInfo,
    StagingTrace,
    TracingDebugInfo,
    check_callable,
    check_no_leaks,
    current_trace,
    dce_closed_jaxpr,
    eval_jaxpr,
    fun_sourceinfo,
    get_aval,
    make_tracing_debug_info,
    normalize_argnums,
    result_paths_from_tree,
    set_current_trace,
    tangent_name,
    trace_to_jaxpr,
)
from plax_stdlib import numpy as plax_numpy
from plax_stdlib.lax.conversion import convert_with_weak_type, folded_on_host, staged_constant
from plax_stdlib.lax.shape_ops import keeping_identity_broadcasts
from plax_transforms.ad import DualTracer, JVPTrace, LinearizeTrace, jvp_flat
from plax_transforms.partial_eval import PartialEvalTrace
from plax_transforms.transpose import backward_pass

# --- argument checks ---------------------------------------------------------------------

def _avals_of(leaves, api: str, what: str = "argument"):
    avals = []
    for x in leaves:
        try:
            avals.append(get_aval(x))
        except TypeError:
            raise TypeError(f"{api}: {what} {x!r} of type {type(x).__name__} is not a valid "
                            "plax type (expected arrays or scalars)") from None
    return avals


def _check_tangent(primal_aval, t, api: str, dtype_error: type[Exception] = TypeError):
    """A tangent of another dtype is a `dtype_error` (JAX's classes: a TypeError for
    jvp, a ValueError for vjp and linearize), checked before the shape, as JAX does;
    one of another shape a ValueError."""
    want = tangent_aval(primal_aval)
    aval = get_aval(t)
    if aval.shape != want.shape or aval.dtype != want.dtype:  # key dtypes are no np.dtype
        error = dtype_error if aval.dtype != want.dtype else ValueError
        raise error(f"{api}: tangent of type {aval.str_short()} does not match the primal "
                    f"of type {primal_aval.str_short()} (expected tangent type "
                    f"{want.str_short()})")


def _as_tangent(t):
    """A user's float0 tangent is a symbolic zero."""
    return t if isinstance(t, Zero) or get_aval(t).dtype != dtypes.float0 else Zero(get_aval(t))


# --- jvp ---------------------------------------------------------------------------------

@api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """Evaluates `fun` and its directional derivative (forward mode) at one point.

    The derivative is pushed forward alongside the computation, so one call costs
    about as much as two evaluations of `fun`, whatever the number of inputs.

    Args:
        fun: the function to differentiate; its arguments and results are pytrees
            of arrays.
        primals: a tuple (or list) of the arguments, one entry per positional
            parameter of `fun`.
        tangents: the direction: a tuple of the same structure as `primals`, each
            leaf of the same shape as its primal (and its tangent dtype: `float0`
            for integer and boolean primals).
        has_aux: `fun` returns `(output, aux)`; `aux` is returned as it is, not
            differentiated.

    Returns:
        `(primals_out, tangents_out)`, the outputs of `fun` and their derivatives
        along `tangents`; `(primals_out, tangents_out, aux)` with `has_aux`.

    Raises:
        TypeError: `primals` and `tangents` are not tuples or lists of the same
            structure, or a tangent's shape or dtype does not match its primal.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> y, dy = plax.jvp(jnp.sin, (0.0,), (2.0,))
        >>> float(y), float(dy)
        (0.0, 2.0)
    """
    check_callable(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primal and tangent arguments must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    flat_p, tree_p = tree_util.tree_flatten(primals)
    flat_t, tree_t = tree_util.tree_flatten(tangents)
    if tree_p != tree_t:
        raise TypeError(f"jvp: primal and tangent arguments must have the same tree "
                        f"structure; got {tree_p} and {tree_t}")
    for aval, t in zip(_avals_of(flat_p, "jvp", "primal"), flat_t):
        _check_tangent(aval, t, "jvp")
    out_tree = []

    def flat_fun(*xs):
        out = fun(*tree_util.tree_unflatten(tree_p, xs))
        out, aux = _split_aux(out, has_aux, "jvp")
        leaves, tree = tree_util.tree_flatten(out)
        out_tree.append((tree, aux))
        return leaves

    out_p, out_t = jvp_flat(flat_fun, flat_p, [_as_tangent(t) for t in flat_t])
    tree, aux = out_tree[0]
    result = (tree_util.tree_unflatten(tree, out_p), tree_util.tree_unflatten(tree, out_t))
    return (*result, _rebuilt(aux)) if has_aux else result


def _split_aux(out, has_aux: bool, api: str):
    """`(output, aux)` → (output, the aux's leaves and structure, or None)."""
    if not has_aux:
        return out, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{api} with has_aux=True requires the function to return a pair "
                        f"(output, auxiliary data), got {type(out).__name__}")
    return out[0], _primal_leaves(out[1])


def _primal_leaves(tree) -> tuple[list, Any]:
    """The leaves of `tree`, the current JVP trace's tracers replaced by their primals
    (a function's auxiliary output is returned, not differentiated), and its
    structure: `_rebuilt` makes the tree again once the transformation is over, as JAX
    does, so that objects its unflattening makes (flax's Variables, which remember the
    trace they were made under) belong to the caller."""
    leaves, tree = tree_util.tree_flatten(tree)
    trace = current_trace()
    if isinstance(trace, JVPTrace):
        leaves = [x.primal if isinstance(x, DualTracer) and x._trace is trace else x
                  for x in leaves]
    return leaves, tree


def _rebuilt(aux):
    """The auxiliary output `_split_aux` took apart (None without one)."""
    return None if aux is None else tree_util.tree_unflatten(aux[1], aux[0])


# --- linearize ---------------------------------------------------------------------------

class Linearized:
    """The linear map of a linearized function: a Jaxpr from input to output
    tangents (outputs known to be zero left out), with its residuals as constants."""

    def __init__(self, jaxpr: ClosedJaxpr, in_avals, out_avals, out_nonzero: list[bool]):
        self.jaxpr = jaxpr
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.out_nonzero = out_nonzero

    def apply(self, tangents: Sequence[Any]) -> list[Any]:
        outs = iter(eval_jaxpr(self.jaxpr.jaxpr, self.jaxpr.consts, *tangents))
        return [next(outs) if nz else zeros_like_aval(tangent_aval(a))
                for nz, a in zip(self.out_nonzero, self.out_avals)]

    def split(self) -> tuple[Callable[[list], "Linearized"], list]:
        """(a function of residuals making this map with them, its residuals): what
        the pytree functions `linearize` and `vjp` return hold, the residuals as leaves
        and no values in the closure (so they can leave a `jit` or `vmap`)."""
        jaxpr, in_avals, out_avals, out_nonzero = (self.jaxpr.jaxpr, self.in_avals,
                                                   self.out_avals, self.out_nonzero)

        def with_residuals(residuals):
            return Linearized(ClosedJaxpr(jaxpr, residuals), in_avals, out_avals, out_nonzero)
        return with_residuals, list(self.jaxpr.consts)

    def transpose(self, cts_out: Sequence[Any]) -> list[Any]:
        cts = [ct for ct, nz in zip(cts_out, self.out_nonzero) if nz]
        cts_in = backward_pass(self.jaxpr.jaxpr, self.jaxpr.consts,
                               [UndefinedPrimal(tangent_aval(a)) for a in self.in_avals], cts)
        return [instantiate(ct) for ct in cts_in]


def linearize_flat(flat_fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
                   debug_info: TracingDebugInfo | None = None):
    """→ (primal outputs, `Linearized`, extra) where `flat_fun` returns (outputs, extra)."""
    in_avals = [get_aval(p) for p in primals]
    pe = PartialEvalTrace()
    jvp_trace = LinearizeTrace(parent=pe)
    tangents = [pe.new_arg(tangent_aval(a)) for a in in_avals]
    tracers = [jvp_trace.new_input(p, t if is_differentiable_dtype(a.dtype) else Zero(t.aval))
               for p, t, a in zip(primals, tangents, in_avals)]
    try:
        with set_current_trace(jvp_trace):
            outs, extra = flat_fun(*tracers)
        pts = [jvp_trace.to_primal_tangent(o) for o in outs]
        out_primals = [p for p, _ in pts]
        out_nonzero = [not isinstance(t, Zero) for _, t in pts]
        dbg = None
        if debug_info is not None:
            names = [tangent_name(n) for n in debug_info.arg_names] \
                if debug_info.arg_names is not None else None
            paths = extra.get("result_paths")
            dbg = JaxprDebugInfo(
                debug_info.traced_for, debug_info.func_src_info,
                None if names is None else tuple(names),
                None if paths is None else tuple(tangent_name(p) for p, nz
                                                 in zip(paths, out_nonzero) if nz))
        closed = pe.to_closed_jaxpr([t for _, t in pts if not isinstance(t, Zero)], dbg)
        # (without what no tangent output needs, as JAX's: a scan's unused ys)
        closed, _ = dce_closed_jaxpr(closed, [True] * len(closed.jaxpr.outvars),
                                     instantiate=True)
    finally:
        jvp_trace.invalidate()
        pe.invalidate()
    del tracers, tangents, outs, pts  # so that only leaked tracers stay alive
    check_no_leaks(jvp_trace)
    check_no_leaks(pe)
    out_avals = [get_aval(p) for p in out_primals]
    return out_primals, Linearized(closed, in_avals, out_avals, out_nonzero), extra


def _flat_traced(fun: Callable, in_tree, has_aux: bool, api: str):
    """`fun` as a flat function returning (leaves, {tree, aux, result_paths})."""
    def flat_fun(*leaves):
        out = fun(*tree_util.tree_unflatten(in_tree, leaves))
        out, aux = _split_aux(out, has_aux, api)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        return out_leaves, {"tree": out_tree, "aux": aux,
                            "result_paths": result_paths_from_tree(out_tree)}
    return flat_fun


@api_boundary
def linearize(fun: Callable, *primals, has_aux: bool = False):
    """Evaluates `fun` at `primals` and returns its linear approximation there.

    `linearize` runs `fun` once, keeping what the derivative needs, and returns a
    function `f_jvp` that maps input tangents to the output tangent (the
    Jacobian-vector product at `primals`) without running `fun` again. Use it
    when you need the same derivative for many tangents; for one tangent,
    `plax.jvp` is cheaper.

    Args:
        fun: a function of arrays (pytrees of arrays) to differentiate.
        *primals: the point to linearize at, one value per positional argument
            of `fun`.
        has_aux: `fun` returns `(output, aux)`; `aux` is returned as a third
            result and not differentiated.

    Returns:
        `(fun(*primals), f_jvp)` (and `aux` last with `has_aux`), where
        `f_jvp(*tangents)` takes tangents shaped like `primals` and returns the
        tangent of the output.

    Raises:
        ValueError: (when `f_jvp` is called) a tangent's shape or dtype does not
            match its primal's tangent type.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> y, f_jvp = plax.linearize(jnp.sin, 0.0)
        >>> y
        Array(0., dtype=float32, weak_type=True)
        >>> f_jvp(2.0)  # cos(0) * 2
        Array(2., dtype=float32, weak_type=True)
    """
    check_callable(fun, "linearize")
    flat, in_tree = tree_util.tree_flatten(primals)
    in_avals = _avals_of(flat, "linearize")
    dbg = make_tracing_debug_info("linearize", fun, primals, {})
    outs, lin, extra = linearize_flat(_flat_traced(fun, in_tree, has_aux, "linearize"),
                                      flat, dbg)
    out_tree = extra["tree"]
    linear_map, residuals = lin.split()

    @api_boundary
    def jvp_fun(residuals, *tangents):
        flat_t, tree_t = tree_util.tree_flatten(tangents)
        if tree_t != in_tree:
            raise TypeError(f"linearized function expects tangents of structure {in_tree}, "
                            f"got {tree_t}")
        for aval, t in zip(in_avals, flat_t):
            _check_tangent(aval, t, "linearize", dtype_error=ValueError)
        return tree_util.tree_unflatten(out_tree, linear_map(residuals).apply(flat_t))

    # As JAX's (and vjp's): a pytree of the residuals, so it can leave a `jit` or `vmap`.
    f_jvp = tree_util.Partial(jvp_fun, residuals)
    out = tree_util.tree_unflatten(out_tree, outs)
    return (out, f_jvp, _rebuilt(extra["aux"])) if has_aux else (out, f_jvp)


# --- vjp ---------------------------------------------------------------------------------

@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
    """Evaluates `fun` and returns a function pulling cotangents back (reverse mode).

    Args:
        fun: the function; arguments and outputs are pytrees of arrays.
        *primals: the arguments at which to evaluate and linearize `fun`.
        has_aux: `fun` returns `(output, aux)`; `aux` is returned third.

    Returns:
        `(output, f_vjp)`, or `(output, f_vjp, aux)` with `has_aux`. `f_vjp(ct)`
        takes a cotangent with the structure, shapes and dtypes of `output` and
        returns a tuple with one cotangent per primal. `f_vjp` is a pytree (its
        leaves are the saved residuals), so it can be passed through `jit`.

    Raises:
        ValueError: (from `f_vjp`) the cotangent's structure, shape or dtype does
            not match the output's.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> y, f_vjp = plax.vjp(jnp.multiply, 2.0, 3.0)
        >>> f_vjp(1.0)
        (Array(3., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True))
    """
    check_callable(fun, "vjp")
    flat, in_tree = tree_util.tree_flatten(primals)
    _avals_of(flat, "vjp")
    dbg = make_tracing_debug_info("vjp", fun, primals, {})
    outs, lin, extra = linearize_flat(_flat_traced(fun, in_tree, has_aux, "vjp"), flat, dbg)
    out_tree = extra["tree"]
    linear_map, residuals = lin.split()
    leaves, where = _vjp_leaves(flat, residuals)
    out_avals = lin.out_avals

    @api_boundary
    def vjp_fun(leaves, ct):
        flat_ct, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != out_tree:
            raise ValueError(f"vjp: the cotangent's tree structure {ct_tree} does not match "
                             f"the output's {out_tree}")
        for aval, c in zip(out_avals, flat_ct):
            if isinstance(aval, AbstractToken):
                continue  # a token's cotangent (any token) orders nothing here
            if get_aval(c).shape != aval.shape or is_differentiable_dtype(aval.dtype):
                _check_tangent(aval, c, "vjp", dtype_error=ValueError)
        # Integer and boolean outputs have no cotangent: whatever is given counts as zero.
        flat_ct = [Zero(aval) if isinstance(aval, AbstractToken) else
                   c if is_differentiable_dtype(aval.dtype)
                   else np.zeros(aval.shape, dtypes.float0) for aval, c in zip(out_avals, flat_ct)]
        cts = linear_map([leaves[i] for i in where]).transpose(
            [_as_tangent(c) for c in flat_ct])
        return tuple(tree_util.tree_unflatten(in_tree, cts))

    # A pytree whose leaves are the residuals, so it can be passed through `jit`.
    f_vjp = tree_util.Partial(vjp_fun, leaves)
    out = tree_util.tree_unflatten(out_tree, outs)
    return (out, f_vjp, _rebuilt(extra["aux"])) if has_aux else (out, f_vjp)


def _vjp_leaves(primals: Sequence[Any], residuals: Sequence[Any]) -> tuple[list, list[int]]:
    """The residuals in JAX's order, as the leaves of the function `vjp` returns (what
    `make_jaxpr` of a `vjp` shows as outputs): the primal inputs that are residuals
    first, in argument order (every input that is one of them), then the values
    computed, in the linear map's order. → (the leaves, each residual's leaf index)."""
    primal_ids = {id(p) for p in primals}
    used = {id(r) for r in residuals} & primal_ids
    leaves = [p for p in primals if id(p) in used]
    leaf_of = {id(p): i for i, p in enumerate(leaves)}
    computed = itertools.count(len(leaves))
    where = [leaf_of[id(r)] if id(r) in used else next(computed) for r in residuals]
    return leaves + [r for r in residuals if id(r) not in used], where


# --- grad --------------------------------------------------------------------------------

def _check_reverse_input(dt, api: str, allow_int: bool, holomorphic: bool) -> bool:
    """JAX's check of an input that reverse mode (grad, jacrev) differentiates: real or
    complex (complex only, with holomorphic=True), booleans and integers only with
    allow_int. Whether it takes part in differentiation (not an allowed integer)."""
    if dt == dtypes.float0:  # the type of integers' tangents, never of a primal
        raise TypeError(f"{api} requires numerical-valued inputs (input dtype that is a "
                        "sub-dtype of np.bool_ or np.number), but got float0.")
    if holomorphic and not dtypes.issubdtype(dt, np.complexfloating):
        raise TypeError(f"{api} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dt.name}.")
    if not is_differentiable_dtype(dt) and not allow_int:
        raise TypeError(f"{api} requires real- or complex-valued inputs (input dtype that "
                        f"is a sub-dtype of np.inexact), but got {dt.name}. If you want "
                        "to use Boolean- or integer-valued inputs, use vjp or set "
                        "allow_int to True.")
    return is_differentiable_dtype(dt)


def _check_scalar_output(out, api: str, holomorphic: bool):
    aval = _avals_of([out], api, "output")[0]
    if aval.shape:
        raise TypeError(f"{api} requires scalar-output functions: gradient only defined for "
                        f"scalar-output functions. Output had shape: {aval.shape}.")
    dt = aval.dtype
    if holomorphic:
        if not dtypes.issubdtype(dt, np.complexfloating):
            raise TypeError(f"{api} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dt.name}.")
    elif not dtypes.issubdtype(dt, np.floating) or dt == dtypes.float0:
        raise TypeError(f"{api} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                        "differentiation, pass holomorphic=True.")


def dyn_args(fun, args, argnums: tuple[int, ...], api: str):
    for i in argnums:
        if not -len(args) <= i < len(args):
            # JAX's classes: too few arguments for grad is a TypeError (as a call with
            # missing arguments); an index out of range otherwise a ValueError.
            error = TypeError if i >= 0 and api in ("grad", "value_and_grad") else ValueError
            raise error(f"{api}: argnums {argnums} out of range for a call with "
                        f"{len(args)} positional argument(s) to {fun_sourceinfo(fun)}")
    positions = [i % len(args) for i in argnums]
    if len(set(positions)) != len(positions):
        # JAX has no answer here (it calls `fun` with None in a repeated position, a
        # TypeError in the user's code); differentiating twice by one argument is
        # a mistake worth saying.
        raise TypeError(f"{api}: argnums {argnums} name an argument more than once (a "
                        f"call with {len(args)} positional argument(s) to "
                        f"{fun_sourceinfo(fun)})")
    return tuple(args[i] for i in argnums)


def with_dyn(fun, args, kwargs, argnums):
    positions = [i % len(args) for i in argnums]

    def f(*dyn):
        full = list(args)
        for i, d in zip(positions, dyn):
            full[i] = d
        return fun(*full, **kwargs)
    return f


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
    """Like `grad`, but the function it makes returns `fun`'s value too.

    Computing both costs the same as the gradient alone: the value is a by-product
    of the forward pass.

    Args:
        fun: a function returning a scalar (a 0-d float or complex array).
        argnums: which positional argument(s) to differentiate with respect to: an
            int, or a tuple of ints for a tuple of gradients.
        has_aux: `fun` returns `(value, aux)`; `aux` is passed through.
        holomorphic: `fun` is complex-differentiable in complex arguments.
        allow_int: allow integer arguments (their gradients are `float0` zeros).
        reduce_axes: accepted for compatibility; unused, as in JAX 0.10.

    Returns:
        A function with `fun`'s parameters returning `(value, gradient)`, or
        `((value, aux), gradient)` with `has_aux`. Each gradient has the structure,
        shapes and dtypes of its argument.

    Raises:
        TypeError: `fun`'s output is not a real (or, with `holomorphic`, complex)
            scalar, or an argument to differentiate is not of a float type.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> value, g = plax.value_and_grad(lambda x: jnp.sum(x ** 2))(jnp.array([1.0, 2.0]))
        >>> float(value), g
        (5.0, Array([2., 4.], dtype=float32))
    """
    check_callable(fun, "value_and_grad")
    single = isinstance(argnums, int)
    nums = normalize_argnums(argnums, "argnums")

    @api_boundary
    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        dyn = dyn_args(fun, args, nums, "grad")
        for aval in _avals_of(tree_util.tree_leaves(dyn), "grad"):
            _check_reverse_input(aval.dtype, "grad", allow_int, holomorphic)
        out, f_vjp, *aux = vjp(with_dyn(fun, args, kwargs, nums), *dyn, has_aux=has_aux)
        _check_scalar_output(out, "grad", holomorphic)
        g = f_vjp(_ones_like(out))
        g = g[0] if single else g
        return ((out, aux[0]), g) if has_aux else (out, g)

    return value_and_grad_f


def _ones_like(x):
    """The seed cotangent, as JAX's: a concrete array of `x`'s type (weak for the output
    of Python scalars, so that the transposes make gradients as weak as JAX's); where a
    Jaxpr is traced, a tracer holding a literal, so that a staged grad shows `1.0:f32[]`
    (which a transposed conversion folds) rather than an equation making it."""
    aval = get_aval(x)
    one = np.ones((), aval.dtype)[()]
    trace = current_trace()
    folded = folded_on_host(one, aval.dtype, aval.weak_type)
    if type(trace) is StagingTrace and folded is not None:
        return staged_constant(trace, folded)
    with set_current_trace(EVAL_TRACE):  # a constant, whatever trace `x` is on
        return convert_with_weak_type(one, aval.dtype, aval.weak_type)


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
    """Makes a function computing the gradient of scalar-valued `fun` (reverse mode).

    The gradient is computed by one forward pass and one backward pass, so it costs
    a small multiple of evaluating `fun`, however many inputs there are.

    Args:
        fun: a function returning a scalar (a 0-d float array, or complex with
            `holomorphic`); its arguments may be pytrees of arrays.
        argnums: the positional argument(s) to differentiate with respect to: an
            int (a single gradient) or a tuple of ints (a tuple of gradients).
        has_aux: `fun` returns `(value, aux)`; the function made returns
            `(gradient, aux)`.
        holomorphic: `fun` is complex-differentiable in complex arguments.
        allow_int: allow integer arguments, whose gradients are `float0` zeros.
        reduce_axes: accepted for compatibility; unused, as in JAX 0.10.

    Returns:
        A function with `fun`'s parameters returning the gradient, with the
        structure, shapes and dtypes of the argument(s) `argnums` names.

    Raises:
        TypeError: (when the function made is called) `fun`'s output is not a
            scalar, or an argument to differentiate is an integer without
            `allow_int`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.grad(lambda x: x ** 3)(2.0)
        Array(12., dtype=float32, weak_type=True)
        >>> loss = lambda w, b, x: jnp.sum((x @ w + b) ** 2)
        >>> gw, gb = plax.grad(loss, argnums=(0, 1))(jnp.ones((2, 1)), 0.5, jnp.ones((3, 2)))
        >>> gw.shape, gb.shape
        ((2, 1), ())
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @api_boundary
    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return grad_f


# --- Jacobians ---------------------------------------------------------------------------
#
# Both push the whole standard basis through one batched call: `jacfwd` vmaps `jvp`
# over the input basis, `jacrev` vmaps the transposed linearization over the output
# basis. The primal computation is not batched (it does not depend on the basis).

def _check_jac_dtype(dt, api: str, what: str, holomorphic: bool) -> None:
    """JAX's check of jacfwd's inputs and outputs and of jacrev's outputs: real, or
    complex with holomorphic=True (only)."""
    if holomorphic:
        if not dtypes.issubdtype(dt, np.complexfloating):
            raise TypeError(f"{api} with holomorphic=True requires {what}s with complex "
                            f"dtype, but got {dt.name}.")
        return
    if dtypes.issubdtype(dt, np.floating) and dt != dtypes.float0:
        return
    if dtypes.issubdtype(dt, np.complexfloating):
        hint = (" For holomorphic differentiation, pass holomorphic=True. For "
                f"differentiation of non-holomorphic functions involving complex {what}s, "
                f"use plax.{'jvp' if api == 'jacfwd' else 'vjp'} directly.")
    else:
        hint = ""
    raise TypeError(f"{api} requires real-valued {what}s ({what} dtype that is a sub-dtype "
                    f"of np.floating), but got {dt.name}.{hint}")


def _std_basis(avals) -> list:
    """The standard basis of the flattened leaves `avals`, one array per leaf of shape
    (total size,) + leaf shape: row k is the k-th unit vector of the whole tuple. Made
    as JAX's: a traced `eye` of the leaves' common dtype, unravelled per leaf."""
    sizes = [a.size for a in avals]
    eye = plax_numpy.eye(sum(sizes), dtype=dtypes.result_type(*avals))
    return _unravel(eye, 1, avals, list(avals), always_cast=True)


def _unravel(x, axis: int, avals, examples, always_cast: bool = False) -> list:
    """`x`'s dimension `axis`, of the total size of `avals`, cut by a `split` into one
    block per aval, each reshaped with the aval's shape in place of that dimension and
    cast to its example's dtype and weak type (a complex block to a real example loses
    its imaginary part). Only a dtype change casts, except with `always_cast` (JAX's
    basis always passes through a convert)."""
    from plax_stdlib.lax import conversion, elementwise, shape_ops, stacking
    shape = get_aval(x).shape
    sizes = np.diff([0, *np.cumsum([a.size for a in avals])])
    blocks = []
    for block, a, example in zip(stacking.split(x, tuple(sizes), axis), avals, examples):
        block = shape_ops.reshape(block, shape[:axis] + a.shape + shape[axis + 1:])
        if (dtypes.issubdtype(get_aval(block).dtype, np.complexfloating)
                and not dtypes.issubdtype(example.dtype, np.complexfloating)):
            block = elementwise.real(block)
        blocks.append(conversion.convert_element_type_p.bind(
            block, new_dtype=example.dtype, weak_type=example.weak_type, sharding=None)
            if always_cast else convert_with_weak_type(block, example.dtype, example.weak_type))
    return blocks


def _zeros_block(shape: tuple[int, ...], dtype) -> np.ndarray:
    """The Jacobian block of an input that allow_int lets through: zeros in its dtype,
    as JAX's (it casts the float0 cotangents to it); float0 for extended dtypes."""
    return np.zeros(shape, dtype if isinstance(dtype, np.dtype) else dtypes.float0)


def _jac_tree(out_tree, in_tree, blocks):
    """blocks[o][i] → pytree of outputs, each a pytree of inputs."""
    return tree_util.tree_unflatten(out_tree, [tree_util.tree_unflatten(in_tree, row)
                                               for row in blocks])


def _map_over_inputs(in_tree, in_avals, check) -> None:
    """`check` each input, mapped over the arguments' pytree as JAX's jacfwd/jacrev
    map their input check (`tree_map`), which rebuilds the pytree from the checks'
    results (None): a pytree class whose unflatten validates its leaves (calls
    `jnp.asarray` on them) fails there with JAX's error (a ValueError for None)."""
    tree_util.tree_unflatten(in_tree, [(check(a), None)[1] for a in in_avals])


def _jac_setup(fun, args, kwargs, argnums, api: str):
    """→ (flat dynamic args, their tree, their avals, `g(flat) -> fun(...)` on them)."""
    single = isinstance(argnums, int)
    nums = normalize_argnums(argnums, "argnums")
    dyn = dyn_args(fun, args, nums, api)
    dyn = dyn[0] if single else dyn
    flat, in_tree = tree_util.tree_flatten(dyn)
    f = with_dyn(fun, args, kwargs, nums)
    g = (lambda d: f(d)) if single else (lambda d: f(*d))
    return flat, in_tree, _avals_of(flat, api), g, tree_util.tree_structure((dyn,))


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Makes a function computing the Jacobian of `fun` by forward mode.

    One `jvp` is batched (with `vmap`) over the standard basis of the inputs, so it
    suits functions with fewer inputs than outputs ("tall" Jacobians); `jacrev`
    suits the opposite.

    Args:
        fun: the function; arguments and outputs are pytrees of arrays.
        argnums: the positional argument(s) to differentiate with respect to.
        has_aux: `fun` returns `(output, aux)`; the function made returns
            `(jacobian, aux)`.
        holomorphic: `fun` is complex-differentiable in complex arguments.

    Returns:
        A function with `fun`'s parameters returning the Jacobian: for each output
        leaf and each differentiated input leaf, an array of shape
        `output.shape + input.shape`, nested as the output's pytree of the input's.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.jacfwd(lambda x: x ** 2)(jnp.array([1.0, 2.0]))
        Array([[2., 0.],
               [0., 4.]], dtype=float32)
    """
    check_callable(fun, "jacfwd")
    from plax_transforms.vmap_api import vmap
    normalize_argnums(argnums, "argnums")

    @api_boundary
    @functools.wraps(fun)
    def jacfwd_f(*args, **kwargs):
        flat, in_tree, in_avals, g, call_tree = _jac_setup(fun, args, kwargs, argnums,
                                                           "jacfwd")
        _map_over_inputs(in_tree, in_avals,
                         lambda a: _check_jac_dtype(a.dtype, "jacfwd", "input", holomorphic))
        flat_fun = _flat_traced(g, call_tree, has_aux, "jacfwd")
        info = {}

        def pushfwd(*basis):
            def leaves_only(*xs):
                out, extra = flat_fun(*xs)
                info.update(extra)
                return out
            outs, tangents = jvp_flat(leaves_only, flat, basis)
            diff = [is_differentiable_dtype(get_aval(o).dtype) for o in outs]
            info["diff"] = diff
            return outs, [t for t, d in zip(tangents, diff) if d], _rebuilt(info["aux"])

        outs, jac_cols, aux = vmap(pushfwd, out_axes=(None, -1, None))(*_std_basis(in_avals))
        cols = iter(jac_cols)
        blocks = []
        for out, d in zip(outs, info["diff"]):
            shape = get_aval(out).shape
            if holomorphic:
                _check_jac_dtype(get_aval(out).dtype, "jacfwd", "output", True)
            dtype = get_aval(out).dtype  # integer outputs get zeros of their dtype, as in JAX
            blocks.append(_unravel(next(cols), len(shape), in_avals, [get_aval(out)] * len(
                in_avals)) if d else [np.zeros(shape + a.shape, dtype) for a in in_avals])
        jac = _jac_tree(info["tree"], in_tree, blocks)
        return (jac, aux) if has_aux else jac

    return jacfwd_f


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """Makes a function computing the Jacobian of `fun` by reverse mode.

    `fun` is linearized once and the transposed linearization is batched over the
    standard basis of the outputs, so it suits functions with fewer outputs than
    inputs ("wide" Jacobians). `plax.jacobian` is the same function.

    Args:
        fun, argnums, has_aux, holomorphic: as for `jacfwd`.
        allow_int: allow integer arguments (their blocks are zeros of their dtype).

    Returns:
        A function returning, for each output leaf and differentiated input leaf,
        an array of shape `output.shape + input.shape` (the same layout as
        `jacfwd`'s).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> jac = plax.jacrev(lambda x: jnp.array([x[0] * x[1], x[1]]))
        >>> jac(jnp.array([2.0, 3.0]))
        Array([[3., 2.],
               [0., 1.]], dtype=float32)
    """
    check_callable(fun, "jacrev")
    from plax_transforms.vmap_api import vmap
    normalize_argnums(argnums, "argnums")

    @api_boundary
    @functools.wraps(fun)
    def jacrev_f(*args, **kwargs):
        flat, in_tree, in_avals, g, call_tree = _jac_setup(fun, args, kwargs, argnums,
                                                           "jacrev")
        # as grad's: complex inputs are differentiated too (to real outputs)
        _map_over_inputs(in_tree, in_avals, lambda a: _check_reverse_input(
            a.dtype, "jacrev", allow_int, holomorphic))
        outs, lin, extra = linearize_flat(_flat_traced(g, call_tree, has_aux, "jacrev"),
                                          flat)
        diff_in = [is_differentiable_dtype(a.dtype) for a in in_avals]
        out_avals = lin.out_avals
        for a in out_avals:
            _check_jac_dtype(a.dtype, "jacrev", "output", holomorphic)

        def pullback(*cts):
            return [c for c, d in zip(lin.transpose(list(cts)), diff_in) if d]

        rows = iter(vmap(pullback)(*_std_basis(out_avals)))
        per_input = [_unravel(next(rows), 0, out_avals, [a] * len(out_avals)) if d
                     else [_zeros_block(o.shape + a.shape, a.dtype) for o in out_avals]
                     for a, d in zip(in_avals, diff_in)]
        blocks = [list(row) for row in zip(*per_input)] if per_input else [[] for _ in outs]
        jac = _jac_tree(extra["tree"], in_tree, blocks)
        return (jac, _rebuilt(extra["aux"])) if has_aux else jac

    return jacrev_f


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Makes a function computing the Hessian (the matrix of second derivatives) of
    scalar-valued `fun`.

    It is `jacfwd(jacrev(fun))`: reverse mode for the gradient, forward mode over
    it, the cheapest order for a scalar function.

    Args:
        fun: a function returning a scalar.
        argnums: the positional argument(s) to differentiate with respect to.
        has_aux: `fun` returns `(value, aux)`; the function made returns
            `(hessian, aux)`.
        holomorphic: `fun` is complex-differentiable in complex arguments.

    Returns:
        A function returning, for an argument of shape `s`, an array of shape
        `s + s` (blocks nested by input pair for pytrees or several `argnums`).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.hessian(lambda x: jnp.sum(x ** 3))(jnp.array([1.0, 2.0]))
        Array([[ 6.,  0.],
               [ 0., 12.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


# --- linear_transpose ----------------------------------------------------------------------

@api_boundary
def linear_transpose(fun: Callable, *primals, reduce_axes=()):
    """Makes the transpose of a linear function: the map from output cotangents back
    to input cotangents.

    If `fun` computes `y = A @ x` for some matrix `A` (implicitly), the function
    returned computes `A.T @ ct`. `fun` must be linear in its arguments (sums,
    scalings, slicing, reshapes, dot products with constants...); the result
    for a function that is not is meaningless, and not always detected.

    Args:
        fun: a linear function of arrays.
        *primals: example arguments of `fun`; only their shapes and dtypes are
            used.
        reduce_axes: accepted for compatibility with older JAX; must be empty.

    Returns:
        A function taking one cotangent shaped like `fun`'s output and returning
        a tuple with one cotangent per argument of `fun`, shaped like `primals`.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> total = lambda x: x.sum()
        >>> plax.linear_transpose(total, jnp.zeros(3))(jnp.float32(2.0))
        (Array([2., 2., 2.], dtype=float32),)
    """
    check_callable(fun, "linear_transpose")
    flat, in_tree = tree_util.tree_flatten(primals)
    in_avals = _avals_of(flat, "linear_transpose")
    for a in in_avals:
        if not is_differentiable_dtype(a.dtype):
            raise TypeError(f"linear_transpose only supports floating and complex inputs, "
                            f"got {a.dtype.name}")
    # As JAX's: `fun` itself is traced and each primitive transposed by its own rule
    # (not the transpose of `fun`'s derivative, which primitives' jvp rules define).
    with keeping_identity_broadcasts():
        closed, out_tree = trace_to_jaxpr(
            fun, tree_util.tree_structure((primals, {})), in_avals,
            make_tracing_debug_info("linear_transpose", fun, primals, {}))
    lin = Linearized(closed, in_avals, closed.out_avals, [True] * len(closed.out_avals))

    @api_boundary
    def transposed(*cts):
        ct = cts[0] if len(cts) == 1 else cts
        flat_ct, ct_tree = tree_util.tree_flatten(ct)
        if ct_tree != out_tree:
            raise TypeError(f"linear_transpose: cotangent structure {ct_tree} does not match "
                            f"the output's {out_tree}")
        return tuple(tree_util.tree_unflatten(in_tree, lin.transpose(flat_ct)))

    return transposed
