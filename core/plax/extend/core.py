"""The kernel's building blocks for defining primitives and interpreters: the IR,
abstract values, traces and tracers, staging, the primitive and its rule table,
debug info, and the argument helpers the APIs share.

Everything plax-stdlib's `lax` and `numpy` use of the kernel comes from here (or
from the other `plax.extend` modules); a third-party package uses the same names.
"""
from plax._src.abstract import (AbstractToken, AbstractValue, InconclusiveDimensionOperation,
                                ShapeDtypeStruct, ShapedArray, SymbolicDimension, Token,
                                abstract_token, canonical_dim, decided, max_dim, min_dim,
                                physical_aval, short_dtype_name)
from plax._src.arguments import bind_static, check_callable, normalize_argnums, split_static
from plax._src.array_methods import install as install_array_methods
from plax._src.caches import clear_caches, register_cache, register_cache_owner
from plax._src.checking import JaxprTypeError, check_jaxpr
from plax._src.dce import dce_closed_jaxpr, dce_jaxpr
from plax._src.effects import Effect, ordered_effects
from plax._src.debug_info import (JaxprDebugInfo, TracingDebugInfo, check_debug_info_counts,
                                  derived_debug_info,
                                  finalize as finalize_debug_info, fun_sourceinfo,
                                  make_tracing_debug_info, resolve_argnums, residual_name,
                                  result_paths_from_tree, tangent_name)
from plax._src.evaluation import eval_jaxpr, jaxpr_as_fun
from plax._src.frontend_attributes import (current_frontend_attributes, frontend_attributes,
                                          reapplied_frontend_attributes)
from plax._src.plugins import seam as _seam
from plax._src.ir import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Var, pp_jaxpr, subjaxprs
from plax._src.name_stack import (current_name_stack, current_source_info, extend_name_stack,
                                  swap_source_info)
from plax._src.primitive import (ABSTRACT_EVAL, AXIS_NAMES, BATCHING, DCE, EFFECTS, IMPL, JVP,
                                 LOWERING, PARTIAL_EVAL, PARTIAL_EVAL_JAXPR, RULE_KINDS, TRANSPOSE,
                                 Primitive, PrimitiveIdError, Rule, RuleAlreadyDefinedError,
                                 all_primitives, lookup as primitive_by_id)
from plax._src.staging import StagingTrace, StagingTracer, TracedLiteral, stage_flat, trace_to_jaxpr
from plax._src.tracing import (EVAL_TRACE, EvalTrace, Trace, Tracer, check_no_leaks,
                               current_trace, escaped_tracer_error, get_aval, is_python_scalar,
                               reject_masked, set_current_trace, user_frame)

_implicit_device_put = _seam("implicit_device_put")


def implicit_device_put(x, device=None):
    """`device_put` done by library code on the user's behalf (`plax.numpy.asarray` of
    a NumPy array): the transfer guard counts it as an implicit transfer, as JAX does,
    where `plax.device_put` is an explicit one."""
    return _implicit_device_put(x, device)


__all__ = [
    "clear_caches", "implicit_device_put", "register_cache", "register_cache_owner",
    "ABSTRACT_EVAL", "AXIS_NAMES", "AbstractToken", "AbstractValue", "BATCHING", "ClosedJaxpr",
    "DCE", "DropVar", "EFFECTS", "EVAL_TRACE", "Effect", "EvalTrace", "IMPL",
    "InconclusiveDimensionOperation", "JVP", "Jaxpr",
    "JaxprDebugInfo", "JaxprEqn", "JaxprTypeError", "LOWERING", "Literal", "PARTIAL_EVAL",
    "PARTIAL_EVAL_JAXPR", "Primitive", "PrimitiveIdError", "RULE_KINDS", "Rule",
    "RuleAlreadyDefinedError", "ShapeDtypeStruct", "ShapedArray", "StagingTrace", "StagingTracer",
    "SymbolicDimension", "TRANSPOSE", "Token", "Trace", "TracedLiteral", "Tracer",
    "TracingDebugInfo", "Var",
    "check_debug_info_counts", "abstract_token", "all_primitives", "bind_static",
    "canonical_dim", "check_callable", "check_jaxpr", "check_no_leaks",
    "current_frontend_attributes", "current_name_stack", "current_source_info", "current_trace",
    "dce_closed_jaxpr", "dce_jaxpr", "decided",
    "derived_debug_info", "escaped_tracer_error", "eval_jaxpr", "extend_name_stack",
    "finalize_debug_info", "frontend_attributes", "fun_sourceinfo", "get_aval",
    "install_array_methods",
    "is_python_scalar", "jaxpr_as_fun", "make_tracing_debug_info", "max_dim", "min_dim",
    "normalize_argnums",
    "physical_aval", "pp_jaxpr",
    "ordered_effects", "primitive_by_id", "reapplied_frontend_attributes", "residual_name",
    "reject_masked", "resolve_argnums",
    "result_paths_from_tree", "set_current_trace", "short_dtype_name", "split_static",
    "stage_flat", "subjaxprs", "swap_source_info", "tangent_name", "trace_to_jaxpr",
    "user_frame",
]
