"""`jit`: trace a function once per signature, compile once per device, and dispatch
cached calls on a short path.

A call of a jitted function

* outside every transformation, looks its *signature* up in the wrapper's fast
  cache — pytree structure, static values, per-leaf (shape, dtype, weak type,
  sharding and commitment of device arrays), the trace-affecting config and the
  mesh in context — and runs the cached executable; a miss takes the slow path
  below and fills the entry;
* inside another trace (an outer `jit`, `make_jaxpr`...), binds `jit_p` so the
  outer Jaxpr shows `jit[name=f ...]` (with `inline=True` the equations are
  inlined instead; under eager vmap, jvp or grad the call runs transformed and
  compiled, as JAX's: plax_transforms.jit_primitive).

Both paths get the Jaxpr from the *tracing cache*, keyed weakly on the function
and on (jit options, pytree structure, avals, static values, trace context), so
inner jits re-traced inside an outer function are traced once; it is bounded by
entries and bytes (of the Jaxprs' constants), and a dropped function's traces go
with it. No device enters that key: `in_shardings`/`out_shardings` are resolved
per call (a bare `PartitionSpec` against the mesh in context) and given to
`executing`, whose lowerings are keyed by abstract layouts and whose executables by
device assignment.
"""
from __future__ import annotations

import functools
import inspect
import logging
import types
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np

from plax.extend import config, dtypes, tree_util
from plax.extend.core import (
    EVAL_TRACE,
    ClosedJaxpr,
    Jaxpr,
    Tracer,
    TracingDebugInfo,
    bind_static,
    check_callable,
    current_trace,
    escaped_tracer_error,
    fun_sourceinfo,
    get_aval,
    make_tracing_debug_info,
    register_cache,
    register_cache_owner,
    resolve_argnums,
    result_paths_from_tree,
    split_static,
    trace_to_jaxpr,
)
from plax.extend.monitoring import JAXPR_TRACE_EVENT, timed_event
from plax.extend.traceback_util import api_boundary
from plax.extend.sharding import Sharding, sharding_from_spec
from plax_runtime import backends
from plax_runtime.layouts import Format, Layout, check_format
from plax_transforms import debug_nans, executing, explain, fastpath, key_reuse
from plax_runtime.caches import BoundedCache, nbytes_of
from plax_transforms.jit_primitive import jit_p, jit_params
from plax_transforms.ref_discharge import RefPlan, check_unaliased, prepare_call, uses_refs
from plax_transforms.refs import AbstractRef
from plax_transforms.signature import trace_context
from plax_transforms.stages import (CompilerOptions, Lowered, StagedCall, Traced,
                                    compiler_option_pairs, out_info)

logger = logging.getLogger(__name__)

_FAST_CACHE_SIZE = 4096


class JitInfo(NamedTuple):
    """The options of one `jit(...)` that shape tracing and compilation (hashable)."""
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]
    donate_argnums: tuple[int, ...]
    donate_argnames: tuple[str, ...]
    keep_unused: bool
    inline: bool
    sharding: Sharding | None  # from `device=`/`backend=`: where every call runs
    in_shardings: ShardingTree | None = None  # as given to jit (None: not given)
    out_shardings: ShardingTree | None = None
    compiler_options: tuple = ()  # XLA options as sorted (name, value) pairs


class ShardingTree(NamedTuple):
    """A pytree of shardings as given to jit (Shardings, PartitionSpecs, None), kept
    hashable: its leaves and structure."""
    leaves: tuple
    treedef: Any

    @classmethod
    def of(cls, tree: Any, option: str) -> ShardingTree:
        leaves, treedef = tree_util.tree_flatten(tree, is_leaf=_is_sharding_leaf)
        for leaf in leaves:
            if leaf is not None and not isinstance(leaf, Sharding):
                try:
                    hash(leaf)
                except TypeError:
                    raise TypeError(f"jit: {option} must be a pytree of Shardings, "
                                    f"PartitionSpecs or None; got {leaf!r}") from None
        return cls(tuple(leaves), treedef)

    def flat_for(self, tree: Any, option: str, fun_name: str) -> list:
        """One resolved sharding (or None) per leaf of `tree`, which this one prefixes."""
        prefix = self.treedef.unflatten(self.leaves)
        try:
            leaves = tree_util.broadcast_prefix(prefix, tree, is_leaf=_is_sharding_leaf)
        except ValueError as err:
            raise ValueError(f"jit of {fun_name}: {option} must be a pytree prefix of the "
                             f"{'arguments' if option == 'in_shardings' else 'outputs'}: "
                             f"{err}") from None
        return [leaf if leaf is None or isinstance(leaf, Format)  # resolved with the avals
                else sharding_from_spec(leaf, f"jit's {option}") for leaf in leaves]


def _formats_checked(shardings: tuple, aval_of, what: str) -> tuple:
    """`shardings`, each `Format`'s layout checked against the aval `aval_of(i)` of
    entry i (the layouts reach the module through the call's placement)."""
    for i, s in enumerate(shardings):
        if isinstance(s, Format):
            check_format(s, aval_of(i), what)
    return shardings


def _without_layouts(shardings: tuple, what: str) -> tuple:
    """`shardings` with each `Format` replaced by its sharding, for a call staged into
    another computation, whose layouts are the outer one's."""
    for s in shardings:
        if isinstance(s, Format) and isinstance(s.layout, Layout):
            raise NotImplementedError(f"{what}: a layout ({s.layout}) for a jit call inside "
                                      "another traced computation is not supported")
    return tuple(s.sharding if isinstance(s, Format) else s for s in shardings)


def _is_sharding_leaf(x) -> bool:
    """None stands for "unspecified" (Shardings and PartitionSpecs are leaves anyway)."""
    return x is None


class TraceResult:
    """A traced call: the Jaxpr, the output structure and the `jit_p` parameters.

    `extra_args` are traced values of enclosing traces the function closed over;
    they are passed to `jit_p` ahead of the call's own arguments. A function using
    mutable references is traced to a pure Jaxpr (`ref_discharge`) and runs by its
    `ref_plan`: references are read before the call and written after it.
    """

    def __init__(self, closed: ClosedJaxpr, out_tree, name: str, info: JitInfo,
                 donated_invars: tuple[bool, ...], extra_args: tuple = (),
                 ref_plan: RefPlan | None = None):
        self.closed = closed
        self.out_tree = out_tree
        self.extra_args = extra_args
        self.ref_plan = ref_plan
        # Inputs passed ahead of the call's own: closed-over references, then tracers.
        self.leading = extra_args if ref_plan is None else (*ref_plan.ref_consts,
                                                            *extra_args)
        self.params = jit_params(closed, name, donated_invars=donated_invars,
                                 keep_unused=info.keep_unused, inline=info.inline)
        # A top-level run donates each reference's value to its final value.
        self.aliases = () if ref_plan is None else ref_plan.aliases(
            len(closed.jaxpr.invars), len(closed.jaxpr.outvars))


# Keys: (id(function), trace context, jit options, pytree structure, avals, statics,
# the avals' manual axis types).
_traces = BoundedCache("traces", max_entries=8192, max_bytes=1 << 30)
_BYTES_PER_EQUATION = 512  # a rough size of an equation and its variables
register_cache(_traces.clear)


def _manual_axis_types(avals: tuple) -> tuple:
    """The mesh axes each argument varies over in a `shard_map` body, which avals'
    equality ignores but a trace depends on: the same function traced for an argument
    varying over `x` and over `y` inserts different `pvary`s."""
    return tuple(getattr(a, "manual_axis_type", None) for a in avals)


class JitWrapped(fastpath.JitCache):
    """A jitted function: call it, or stage it with `.trace`, `.lower`, `.eval_shape`.

    Calling it runs the C++ fast path of its base class: a cached call's key is its
    pytree structure, static values, each leaf's signature (device arrays with their
    sharding and committed flag, which fix where the call runs), the trace-affecting
    config (default device included) and the concrete mesh in context. Every other
    call comes to `_call_python`.
    """

    def __init__(self, fun: Callable, info: JitInfo):
        self._has_statics = bool(info.static_argnums or info.static_argnames)
        super().__init__(getattr(fun, "__name__", "fun"), info.static_argnums,
                         frozenset(info.static_argnames), _FAST_CACHE_SIZE)
        self._fun = fun
        self._info = info
        try:
            weakref.ref(fun)
            self._cache_key_fun = fun
        except TypeError:  # e.g. NumPy ufuncs: key the tracing cache on a stand-in
            self._cache_key_fun = functools.partial(fun)
        # `updated=()`: copying a wrapped jit's __dict__ would overwrite our own fields.
        functools.update_wrapper(self, fun, updated=())
        register_cache_owner(self)

    def __repr__(self):
        # JAX's form: libraries recognise a jitted function by it (chex's is_traceable)
        return f"<PjitFunction of {self._fun!r}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else types.MethodType(self, obj)

    # --- calls ------------------------------------------------------------------

    @api_boundary
    def _call_python(self, *args, **kwargs):
        """Every call the C++ fast path does not take (it counts why)."""
        if config.disable_jit.value:
            return self._fun(*args, **kwargs)
        if current_trace() is not EVAL_TRACE:
            return self._call_staged(args, kwargs)
        return self._call_slow(args, kwargs)

    def _split(self, args, kwargs):
        info = self._info
        dyn_args, dyn_kwargs, static_args, static_kwargs = split_static(
            args, kwargs, info.static_argnums, info.static_argnames)
        return tuple(dyn_args), dyn_kwargs, static_args, static_kwargs

    def _shardings(self, flat, in_tree, result: TraceResult) -> tuple[tuple, tuple]:
        """This call's in/out shardings, one per flat input (ahead of them, None for
        the closed-over values of `result.extra_args`) and per flat output; bare
        PartitionSpecs are resolved against the mesh in context."""
        info = self._info
        n_extra = len(result.leading)
        name = result.params["name"]
        if info.in_shardings is not None:
            dyn_args, dyn_kwargs = in_tree.unflatten([0] * len(flat))
            if dyn_kwargs:
                raise ValueError(f"jit of {name}: keyword arguments ({sorted(dyn_kwargs)}) "
                                 "cannot be passed when in_shardings is given; pass them "
                                 "positionally")
            ins = tuple(info.in_shardings.flat_for(tuple(dyn_args), "in_shardings", name))
        elif info.sharding is not None:
            ins = (info.sharding,) * len(flat)
        else:
            ins = ()
        if ins:
            ins = (None,) * n_extra + _formats_checked(
                ins, lambda i: get_aval(flat[i]), "jit arguments")
        if info.out_shardings is not None:
            out_tree = result.out_tree
            outs = _formats_checked(tuple(info.out_shardings.flat_for(
                out_tree.unflatten([0] * out_tree.num_leaves), "out_shardings", name)),
                lambda i: result.closed.out_avals[i], "jit outputs")
        else:
            outs = ()
        return ins, outs

    def _describer(self, args, kwargs, flat):
        """`describe(i)` naming flat argument i for errors (debug info made lazily)."""
        def describe(i: int) -> str:
            dbg = self._debug_info(args, kwargs)
            name = dbg.safe_arg_name(i) or f"args[{i}]"
            try:
                shape = str(get_aval(flat[i])).lstrip("~")  # JAX's long dtype names
            except TypeError:
                shape = "?"
            return f"argument {name} of {dbg.func_name or 'fun'} with shape {shape}"
        return describe

    def _call_slow(self, args, kwargs):
        flat, in_tree, result = self._infer(args, kwargs)
        if result.ref_plan is not None:
            return self._call_with_refs(args, kwargs, flat, in_tree, result, self._run_eagerly,
                                        consume=True)
        ins, outs = self._shardings(flat, in_tree, result)
        compiled, committed = executing.compiled_for_call(
            result.closed, result.params["name"], flat,
            donated_invars=result.params["donated_invars"],
            keep_unused=self._info.keep_unused, in_shardings=ins, out_shardings=outs,
            compiler_options=self._info.compiler_options,
            describe=self._describer(args, kwargs, flat))
        name = result.params["name"]
        try:
            _, key = self._fast_key(args, kwargs)
        except TypeError as err:  # arguments the fast path cannot describe
            key = None
            logger.debug("jit(%s): calls like this one cannot use the fast path: %s", name, err)
        call = compiled.caller_for(flat, committed)
        if debug_nans.enabled():  # each call can run de-optimized on its own arguments
            key = None
            call = debug_nans.checked_jit(call, result.closed, name,
                                          lambda: self._fun(*args, **kwargs))
        if key_reuse.enabled():  # the same: the option is in the trace context
            call = key_reuse.checked_jit(call, result.closed)
        outs = call(flat)
        if key is not None:
            self._fast_insert(key, call, result.out_tree)
            if isinstance(call, executing.ProfiledCaller):  # swapped out after PGLE
                call.held_by(self, key, result.out_tree)
        return tree_util.tree_unflatten(result.out_tree, outs)

    def _run_eagerly(self, all_args, in_tree, result: TraceResult, describe) -> list:
        """Run the traced call on all its inputs (leading ones included)."""
        ins, outs = self._shardings(all_args[len(result.leading):], in_tree, result)
        compiled, committed = executing.compiled_for_call(
            result.closed, result.params["name"], all_args,
            donated_invars=result.params["donated_invars"],
            keep_unused=self._info.keep_unused, in_shardings=ins, out_shardings=outs,
            compiler_options=self._info.compiler_options, describe=describe, aliases=result.aliases)
        return compiled(all_args, committed)

    def _call_with_refs(self, args, kwargs, flat, in_tree, result: TraceResult, run,
                        consume: bool = False):
        """A call of a function using references: their values in, final values back
        (`consume`: a top-level run, donating the values' buffers)."""
        plan = result.ref_plan
        all_args = (*result.leading, *flat)
        describe = self._describer(args, kwargs, flat)
        values = plan.read(all_args, self._ref_namer(args, kwargs, result), consume)
        outs = plan.write_back(all_args, run(values, in_tree, result, describe), consume)
        return tree_util.tree_unflatten(result.out_tree, outs)

    def _ref_namer(self, args, kwargs, result: TraceResult) -> Callable[[int], str]:
        """Names of the call's inputs (leading ones included) in reference errors."""
        n_lead = len(result.leading)

        def name(i: int) -> str:
            if i < 0:
                return f"{fun_sourceinfo(self._fun)} for jit"
            if i < n_lead:
                return "a closed-over value"
            return self._debug_info(args, kwargs).safe_arg_name(i - n_lead) or f"args[{i}]"
        return name

    def _bind_staged(self, all_args, in_tree, result: TraceResult, describe=None) -> list:
        """Bind `jit_p` on all the call's inputs (an `inline` one puts its equations in
        a Jaxpr being traced)."""
        params = result.params
        ins, outs = self._shardings(all_args[len(result.leading):], in_tree, result)
        if ins or outs:
            params = dict(params, **jit_params(
                result.closed, params["name"], donated_invars=params["donated_invars"],
                keep_unused=params["keep_unused"], inline=False,
                in_shardings=_without_layouts(ins, "jit arguments"),
                out_shardings=_without_layouts(outs, "jit outputs")))
        return jit_p.bind(*all_args, **params)

    def _call_staged(self, args, kwargs):
        flat, in_tree, result = self._infer(args, kwargs)
        if result.ref_plan is not None:
            return self._call_with_refs(args, kwargs, flat, in_tree, result, self._bind_staged)
        outs = self._bind_staged((*result.extra_args, *flat), in_tree, result)
        return tree_util.tree_unflatten(result.out_tree, outs)

    # --- tracing ------------------------------------------------------------------

    def _infer(self, args, kwargs) -> tuple[list, Any, TraceResult]:
        """Flatten the call, then trace it or take the Jaxpr from the tracing cache."""
        info = self._info
        if self._has_statics:
            dyn_args, dyn_kwargs, static_args, static_kwargs = self._split(args, kwargs)
            self._check_hashable(static_args, static_kwargs)
        else:
            dyn_args, dyn_kwargs, static_args, static_kwargs = tuple(args), kwargs, (), ()
        flat, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        in_avals = tuple(self._aval(x, i, args, kwargs) for i, x in enumerate(flat))
        key = (id(self._cache_key_fun), trace_context(), info, in_tree, in_avals,
               static_args, static_kwargs, _manual_axis_types(in_avals))
        result = _traces.get(key)
        if result is not None:
            return flat, in_tree, result
        dbg = self._debug_info(args, kwargs)
        if config.explain_cache_misses.value:
            self._explain(dbg, key)
        if current_trace() is EVAL_TRACE:  # JAX records top-level traces only
            with timed_event(JAXPR_TRACE_EVENT, dbg.func_name or "fun",
                             "Finished tracing {fun_name} for jit in {elapsed_time:.9f} sec",
                             logger, executing._log_level):
                result = self._trace(dbg, in_tree, in_avals, dyn_args, dyn_kwargs,
                                     static_args, static_kwargs)
        else:
            result = self._trace(dbg, in_tree, in_avals, dyn_args, dyn_kwargs, static_args,
                                 static_kwargs)
        if not result.extra_args:  # a Jaxpr closing over tracers belongs to one trace
            closed = result.closed
            n_eqns = len(closed.jaxpr.eqns)
            if result.ref_plan is not None:  # the Jaxpr as traced is kept too
                n_eqns += len(result.ref_plan.traced.jaxpr.eqns)
            nbytes = nbytes_of(closed.consts) + _BYTES_PER_EQUATION * (1 + n_eqns)
            _traces.put(key, result, nbytes=nbytes, owners=(self._cache_key_fun,))
        return flat, in_tree, result

    def _debug_info(self, args, kwargs) -> TracingDebugInfo:
        info = self._info
        return make_tracing_debug_info("jit", self._fun, args, kwargs,
                                                static_argnums=info.static_argnums,
                                                static_argnames=info.static_argnames)

    def _aval(self, x, i: int, args, kwargs):
        if isinstance(x, Tracer) and not x._trace.is_valid():
            raise escaped_tracer_error(x)
        try:
            if isinstance(x, np.ndarray):  # (a structured or string one too, as JAX's)
                dtypes.check_valid_dtype(x.dtype)
            return get_aval(x)
        except TypeError:
            if hasattr(x, "__jax_array__"):  # an object standing for an array, as in JAX
                return get_aval(x.__jax_array__())
            name = self._debug_info(args, kwargs).safe_arg_name(i) or f"argument {i}"
            raise TypeError(
                f"Error interpreting argument to {fun_sourceinfo(self._fun)} as an "
                f"abstract array. The problematic value is of type {type(x)} and was passed "
                f"to the function at path {name}. Arguments of jitted functions must be "
                "arrays, scalars, or pytrees of them; mark other arguments static with "
                "static_argnums/static_argnames.") from None

    def _check_hashable(self, static_args, static_kwargs) -> None:
        for where, value in [*static_args, *static_kwargs]:
            try:
                hash(value)
            except TypeError as err:
                name = where if isinstance(where, str) else _positional_name(self._fun, where)
                raise ValueError(
                    f"Non-hashable static arguments are not supported. An error occurred "
                    f"while trying to hash the static argument {name!r} of "
                    f"{fun_sourceinfo(self._fun)}, an object of type "
                    f"{type(value)}: {value!r}. The error was: TypeError: {err}") from None

    def _trace(self, dbg, in_tree, in_avals, dyn_args, dyn_kwargs, static_args,
               static_kwargs) -> TraceResult:
        if any(isinstance(a, AbstractRef) for a in in_avals):
            check_unaliased(tree_util.tree_leaves((dyn_args, dyn_kwargs)),
                            lambda i: (f"{fun_sourceinfo(self._fun)} for jit" if i < 0 else
                                       dbg.safe_arg_name(i) or f"args[{i}]"))
        fun = bind_static(self._fun, static_args, static_kwargs)
        closed, out_tree = trace_to_jaxpr(fun, in_tree, in_avals, dbg)
        if key_reuse.enabled():
            key_reuse.check_traced(closed)
        closed, extra_args = traced_consts_as_args(closed)
        ref_plan = None
        if uses_refs(closed):
            n_extra = len(extra_args)
            paths = result_paths_from_tree(out_tree) or ()
            closed, ref_plan = prepare_call(
                closed, f"{fun_sourceinfo(self._fun)} traced for jit",
                lambda i: ("a closed-over value" if i < n_extra else
                           dbg.safe_arg_name(i - n_extra) or f"args[{i - n_extra}]"),
                lambda k: paths[k] if k < len(paths) else "")
        donated = self._donated_invars(in_tree, len(dyn_args) + len(static_args),
                                       static_args, dyn_kwargs)
        n_lead = len(extra_args) + (len(ref_plan.ref_consts) if ref_plan else 0)
        donated = (False,) * n_lead + donated
        name = dbg.func_name or "fun"
        return TraceResult(closed, out_tree, name, self._info, donated, extra_args, ref_plan)

    def _donated_invars(self, in_tree, n_positional: int, static_args,
                        dyn_kwargs) -> tuple[bool, ...]:
        info = self._info
        if not info.donate_argnums and not info.donate_argnames:
            return (False,) * in_tree.num_leaves
        args_tree, kwargs_tree = tree_util.treedef_children(in_tree)
        statics = {i for i, _ in static_args}
        positions = [i for i in range(n_positional) if i not in statics]
        flags: list[bool] = []
        for i, t in zip(positions, tree_util.treedef_children(args_tree)):
            flags += [i in info.donate_argnums] * t.num_leaves
        for name, t in zip(sorted(dyn_kwargs), tree_util.treedef_children(kwargs_tree)):
            flags += [name in info.donate_argnames] * t.num_leaves
        return tuple(flags)

    def _explain(self, dbg, key: tuple) -> None:
        fun_id, _, info, *_ = key
        new = explain.TraceKey(key[1], *key[3:])
        previous = [explain.TraceKey(k[1], *k[3:]) for k in _traces.keys()
                    if k[0] == fun_id and k[2] == info]
        explain.explain_trace_miss(dbg, new, previous)

    # --- ahead-of-time stages -------------------------------------------------------

    @api_boundary
    def trace(self, *args, **kwargs) -> Traced:
        """Trace the call (arguments may be `ShapeDtypeStruct`s)."""
        flat, in_tree, result = self._infer(args, kwargs)
        describe = self._describer(args, kwargs, flat)
        plan = result.ref_plan
        call = StagedCall(result.closed if plan is None else plan.traced, in_tree,
                          result.out_tree, result.params["donated_invars"],
                          result.params["name"], lowered=result.closed, ref_plan=plan,
                          leading=result.leading,
                          ref_namer=self._ref_namer(args, kwargs, result))
        return Traced(call, lambda platform: self._lower(call, flat, result, describe,
                                                         platform))

    @api_boundary
    def lower(self, *args, **kwargs) -> Lowered:
        """Trace and lower the call to StableHLO for the device its arguments decide."""
        return self.trace(*args, **kwargs).lower()

    def _lower(self, call: StagedCall, flat, result: TraceResult, describe,
               platform: str | None = None) -> Lowered:
        ins, outs = self._shardings(flat, call.in_tree, result)
        if result.ref_plan is not None:  # placed by the references' values
            flat = call.values(flat)
        placement = executing.place_call(flat, ins, outs, jaxpr=result.closed.jaxpr,
                                         keep_unused=self._info.keep_unused,
                                         aliases=result.aliases, describe=describe)
        platform = platform or executing.lowering_platform(placement.devices[0])
        lowering = executing.lower_jaxpr(
            result.closed, result.params["name"], platform=platform,
            donated_invars=result.params["donated_invars"],
            keep_unused=self._info.keep_unused, placement=placement,
            aliases=result.aliases)
        return Lowered(lowering, call, placement, self._info.compiler_options, platform)

    @api_boundary
    def eval_shape(self, *args, **kwargs) -> Any:
        """The output's shapes and dtypes, as a pytree of `ShapeDtypeStruct`s."""
        _, _, result = self._infer(args, kwargs)
        return out_info(result.closed.out_avals, result.out_tree)

    def clear_cache(self) -> None:
        """Forget this function's traces and fast-path entries."""
        self._fast_clear()
        fun_id = id(self._cache_key_fun)
        _traces.evict(lambda key: key[0] == fun_id)


# Shown by JAX's name, as `type(jax.jit(f))` is: libraries recognise a jitted function by
# its type's name (chex's is_traceable); found under both names here (pickle's lookup).
JitWrapped.__name__ = JitWrapped.__qualname__ = "PjitFunction"
PjitFunction = JitWrapped


def _positional_name(fun: Callable, index: int) -> str:
    try:
        params = list(inspect.signature(fun).parameters)
        return params[index] if index < len(params) else f"args[{index}]"
    except (TypeError, ValueError):
        return f"args[{index}]"


def traced_consts_as_args(closed: ClosedJaxpr, *, every: bool = False
                          ) -> tuple[ClosedJaxpr, tuple]:
    """Turn constants that are tracers of enclosing traces into leading inputs; with
    `every`, all constants (what shard_map does with the values its body closes over,
    as JAX's: they reach the body as replicated operands)."""
    traced = [every or isinstance(c, Tracer) for c in closed.consts]
    if not any(traced):
        return closed, ()
    jaxpr = closed.jaxpr
    moved = [v for v, t in zip(jaxpr.constvars, traced) if t]
    dbg = jaxpr.debug_info
    if dbg is not None and dbg.arg_names is not None:
        dbg = dbg.with_arg_names(("",) * len(moved) + dbg.arg_names)
    new = Jaxpr([v for v, t in zip(jaxpr.constvars, traced) if not t], moved + jaxpr.invars,
                jaxpr.outvars, jaxpr.eqns, jaxpr.effects, dbg)
    consts = [c for c, t in zip(closed.consts, traced) if not t]
    return ClosedJaxpr(new, consts), tuple(c for c, t in zip(closed.consts, traced) if t)


# --- the public functions ------------------------------------------------------------

def jit(fun: Callable | None = None, *, in_shardings=None, out_shardings=None,
        static_argnums=None, static_argnames=None, donate_argnums=None,
        donate_argnames=None, keep_unused: bool = False, device=None, backend=None,
        inline: bool = False, compiler_options: CompilerOptions | None = None):
    """Compiles `fun` with XLA: the function returned runs it as one compiled program.

    The first call with a new argument signature (the pytree structure, and each
    array's shape, dtype, weak type and sharding; the values of static arguments)
    traces `fun` on abstract values to a Jaxpr, lowers it to StableHLO and compiles
    it; later calls with that signature skip all of it and take the C++ fast path.
    Python control flow inside `fun` therefore sees tracers, not values: branch on
    values with `lax.cond`/`jnp.where`, or make the argument static.

    Args:
        fun: the function to compile; arguments and results are pytrees of arrays
            (and scalars). Without it, `jit(**options)` returns a decorator.
        in_shardings: where to place the positional arguments: a pytree prefix of
            them whose leaves are Shardings, bare PartitionSpecs (resolved against
            the mesh of `plax.set_mesh` at each call) or None (the compiler
            chooses).
        out_shardings: the same for the outputs.
        static_argnums: positional arguments that are Python values fixed at trace
            time (hashable); each new value traces and compiles again.
        static_argnames: the same by parameter name.
        donate_argnums: positional arguments whose device buffers an output of the
            same shape and dtype may reuse; a donated array is deleted by the call.
        donate_argnames: the same by parameter name.
        keep_unused: keep arguments the computation does not use as parameters of
            the compiled program (by default they are pruned).
        device: a Device to run on (not with the shardings).
        backend: a platform name (`"cpu"`, `"tpu"`...) to run on.
        inline: inline `fun`'s Jaxpr into an enclosing trace instead of keeping a
            nested call.
        compiler_options: XLA options by name, for every compilation of `fun`.

    Returns:
        The compiled function, with `fun`'s signature; it also has `.lower(*args)`,
        `.trace(*args)` and `.eval_shape(*args)` for ahead-of-time use, and
        `.clear_cache()`.

    Raises:
        ValueError: conflicting options (both `device` and `backend`; a device with
            shardings; an argument both static and donated).
        TypeError: (at call time) a traced value used where Python needs a concrete
            one, e.g. `if x > 0:` (`plax.errors.TracerBoolConversionError`).

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> @plax.jit
        ... def selu(x, alpha=1.67, scale=1.05):
        ...     return scale * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)
        >>> selu(jnp.array([-1.0, 0.0, 2.0]))
        Array([-1.108..., 0. , 2.1 ], dtype=float32)

        A static argument is a Python value, so Python code may branch on it:

        >>> power = plax.jit(lambda x, n: x ** n if n > 1 else x, static_argnums=1)
        >>> power(jnp.float32(3.0), 2)
        Array(9., dtype=float32)
    """
    options = dict(in_shardings=in_shardings, out_shardings=out_shardings,
                   static_argnums=static_argnums, static_argnames=static_argnames,
                   donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                   keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                   compiler_options=compiler_options)
    if fun is None:
        return lambda f: jit(f, **options)
    check_callable(fun, "jit")
    xla_options = compiler_option_pairs(compiler_options, "jit")
    if device is not None and backend is not None:
        raise ValueError("can't specify both a device and a backend for jit, got "
                         f"device={device!r} and backend={backend!r}")
    if (device is not None or backend is not None) and (
            in_shardings is not None or out_shardings is not None):
        raise ValueError("jit: device/backend cannot be combined with in_shardings or "
                         "out_shardings; the shardings already say where to run")
    if isinstance(in_shardings, list):  # the arguments are a tuple
        in_shardings = tuple(in_shardings)
    shardings = [None if tree is None else ShardingTree.of(tree, option)
                 for option, tree in (("in_shardings", in_shardings),
                                      ("out_shardings", out_shardings))]
    static_argnums, static_argnames = resolve_argnums(fun, static_argnums,
                                                               static_argnames)
    donate_argnums, donate_argnames = resolve_argnums(fun, donate_argnums,
                                                               donate_argnames, option="donate")
    for kind, static, donated in (("argnums", static_argnums, donate_argnums),
                                  ("argnames", static_argnames, donate_argnames)):
        both = set(static) & set(donated)
        if both:
            raise ValueError(f"jit: static_{kind} and donate_{kind} cannot intersect; both "
                             f"contain {sorted(both)}")
    info = JitInfo(static_argnums, static_argnames, donate_argnums, donate_argnames,
                   bool(keep_unused), bool(inline), _placement(device, backend), *shardings,
                   compiler_options=xla_options)
    return JitWrapped(fun, info)


def _placement(device, backend) -> Sharding | None:
    if device is not None:
        if not hasattr(device, "platform") or not hasattr(device, "id"):
            raise TypeError(f"jit: device must be a Device, got {device!r}")
        return executing.device_sharding(device)
    if backend is not None:
        return executing.device_sharding(backends.get_backend(backend).local_devices()[0])
    return None


@api_boundary
def eval_shape(fun: Callable, *args, **kwargs) -> Any:
    """Computes the shapes and dtypes of `fun(*args, **kwargs)` without running it.

    `fun` is traced on abstract values only: nothing is compiled or computed, so it
    is cheap even for large models (e.g. to size parameters before allocating).

    Args:
        fun: the function.
        *args: its arguments: arrays, scalars or `ShapeDtypeStruct`s, in pytrees.
        **kwargs: its keyword arguments, likewise.

    Returns:
        A pytree of `ShapeDtypeStruct`s with `fun`'s output structure.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> plax.eval_shape(lambda x, y: x @ y, jnp.ones((3, 4)),
        ...                 plax.ShapeDtypeStruct((4, 5), jnp.float32))
        ShapeDtypeStruct(shape=(3, 5), dtype=float32)
    """
    return jit(fun).eval_shape(*args, **kwargs)
