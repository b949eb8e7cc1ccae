"""Jitted calls met by eager transformations (`vmap(jnp.sin)`, `grad` of jnp functions):
`executing.execute_jaxpr` prepares a caller once per Jaxpr, options, argument
signature, config and context mesh, and runs it on later calls; a linearized call's
tangent equations are staged again with the types they have
(`PartialEvalTrace.restage`)."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.extend import config
from plax.extend.core import Primitive, ShapedArray, set_current_trace
from plax.extend.sharding import set_vma_rule
from plax.sharding import NamedSharding, PartitionSpec
from plax_transforms import executing
from plax_transforms.partial_eval import PartialEvalTrace
from plax_transforms.signature import trace_context_names


@pytest.fixture
def prepared(monkeypatch):
    """The names of the calls `execute_jaxpr` prepared during the test (caches emptied
    first)."""
    plax.clear_caches()
    seen = []
    compiled_for_call = executing.compiled_for_call

    def counting(closed, name, args, **options):
        seen.append(name)
        return compiled_for_call(closed, name, args, **options)

    monkeypatch.setattr(executing, "compiled_for_call", counting)
    return seen


def _closed(fun, *args):
    return plax.make_jaxpr(fun)(*args)


def _run(closed, args, name="f", **options):
    options = {"donated_invars": (False,) * len(args), "keep_unused": False, **options}
    return executing.execute_jaxpr(closed, name, args, **options)


def test_a_repeated_call_runs_the_prepared_caller(prepared):
    x = np.arange(6, dtype=np.float32) + 0.5
    closed = _closed(lambda v: v * 2 + 1, x)
    first = _run(closed, [plax.device_put(x)])
    again = _run(closed, [plax.device_put(x + 1)])
    assert prepared == ["f"]
    np.testing.assert_array_equal(first[0], x * 2 + 1)
    np.testing.assert_array_equal(again[0], (x + 1) * 2 + 1)


def test_each_part_of_the_key_prepares_anew(prepared):
    x = np.arange(4, dtype=np.float32)
    closed = _closed(lambda v: v * 3, x)
    arg = plax.device_put(x)
    _run(closed, [arg])
    _run(closed, [arg], name="g")  # the name (the executable is named after it)
    _run(closed, [x])  # a host value instead of an Array
    _run(closed, [plax.device_put(x, plax.devices()[2])])  # committed, another device
    _run(closed, [plax.device_put(x)], donated_invars=(True,))
    _run(closed, [arg], keep_unused=True)
    mesh = plax.make_mesh((2,), ("x",), devices=plax.devices()[:2])
    _run(closed, [arg], in_shardings=(NamedSharding(mesh, PartitionSpec("x")),))
    _run(closed, [arg], out_shardings=(NamedSharding(mesh, PartitionSpec()),))
    with config.optimization_level("O1"):  # a compiler setting
        _run(closed, [arg])
    with plax.default_device(plax.devices()[1]):  # trace context
        _run(closed, [arg])
    with plax.set_mesh(mesh):  # the mesh in context
        _run(closed, [arg])
    _run(_closed(lambda v: v * 3, x), [arg])  # an equal Jaxpr is another Jaxpr
    assert len(prepared) == 12
    _run(closed, [plax.device_put(x + 1)])
    assert len(prepared) == 12


def test_signatures_tell_dtypes_shapes_and_weak_types_apart(prepared):
    closed = _closed(lambda v: v + 1, np.float32(1))
    assert float(_run(closed, [np.float32(2)])[0]) == 3
    assert float(_run(closed, [2.0])[0]) == 3  # weak
    assert len(prepared) == 2
    with plax.enable_x64(True):
        wide = _closed(lambda v: v + 1, np.float64(1))
        out = _run(wide, [np.float64(2)])[0]
    assert out.dtype == np.float64 and len(prepared) == 3


def test_outputs_follow_the_committed_input_on_every_call(prepared):
    x = np.ones(3, np.float32)
    closed = _closed(lambda v: v * 2, x)
    device = plax.devices()[3]
    for _ in range(2):
        out = _run(closed, [plax.device_put(x, device)])[0]
        assert out.committed and out.sharding.device_set == {device}
        out = _run(closed, [plax.device_put(x)])[0]
        assert not out.committed and out.sharding.device_set == {plax.devices()[0]}
    assert len(prepared) == 2


def test_debug_nans_checks_calls_prepared_before(prepared):
    closed = _closed(jnp.log, np.float32(1))
    _run(closed, [plax.device_put(np.float32(-1))])
    with config.debug_nans(True), pytest.raises(FloatingPointError):
        _run(closed, [plax.device_put(np.float32(-1))])


def test_no_execution_refuses_calls_prepared_before(prepared):
    closed = _closed(lambda v: v + 1, np.float32(1))
    _run(closed, [np.float32(2)])
    with config.no_execution(True), pytest.raises(RuntimeError, match="no_execution"):
        _run(closed, [np.float32(2)])


def test_clear_caches_and_a_dead_jaxpr_drop_the_callers(prepared):
    x = np.ones(2, np.float32)
    closed = _closed(lambda v: v - 1, x)
    _run(closed, [x])
    assert len(executing._callers) == 1
    plax.clear_caches()
    assert len(executing._callers) == 0
    _run(closed, [x])
    assert len(prepared) == 2 and len(executing._callers) == 1
    del closed
    gc.collect()
    executing._callers.get(None)  # (purges what died)
    assert len(executing._callers) == 0
    assert executing._callers.max_entries < float("inf")


def test_eager_transformations_reuse_their_calls(prepared):
    x = jnp.arange(8.0).reshape(2, 4)
    for _ in range(3):
        plax.vmap(jnp.tanh)(x)
        plax.grad(lambda w: jnp.sum(jnp.tanh(w)))(x)
    count = len(prepared)
    plax.vmap(jnp.tanh)(x)
    plax.grad(lambda w: jnp.sum(jnp.tanh(w)))(x)
    assert len(prepared) == count


def test_every_option_of_the_compiled_code_is_in_the_key():
    """The options that change compiled code (`jit_key_context`) are in the trace
    context or among the compiler settings the callers' key reads."""
    keyed = set(trace_context_names()) | {s.name for s in executing.COMPILE_SETTINGS}
    assert set(config.config.jit_key_context_names()) <= keyed


# --- the tangent equations of a linearized call, staged again --------------------------

def _linear_jaxpr(fun, *primals) -> str:
    _, f_jvp = plax.linearize(fun, *primals)
    return str(plax.make_jaxpr(f_jvp)(*primals))


def test_restaged_equations_are_those_binding_would_stage(monkeypatch):
    x = jnp.arange(1.0, 5.0)

    def f(v):
        return jnp.sum(jnp.exp(-jnp.tanh(v)) * jnp.sin(v))

    def g(v):  # a weak-typed constant and an integer power inside jnp functions
        return jnp.power(v, 3) + jnp.maximum(v, 2.0)

    fast = [_linear_jaxpr(f, x), _linear_jaxpr(g, x), plax.grad(f)(x)]
    monkeypatch.setattr(PartialEvalTrace, "restage",
                        lambda self, eqn, values: eqn.primitive.bind(*values, **eqn.params))
    bound = [_linear_jaxpr(f, x), _linear_jaxpr(g, x), plax.grad(f)(x)]
    assert fast[:2] == bound[:2]
    np.testing.assert_array_equal(fast[2], bound[2])


def _restaged(fun, *avals):
    """`restage` of the one equation of `fun` traced on float32 scalars, given tracers
    of `avals`: (the equation staged, its output, the primitives whose abstract
    evaluation ran meanwhile)."""
    eqn, = plax.make_jaxpr(fun)(np.float32(1), np.float32(2)).jaxpr.eqns
    trace = PartialEvalTrace()
    tracers = [trace.new_arg(a) for a in avals]
    inferred = []
    abstract_eval = Primitive.abstract_eval

    def counting(prim, *args, **params):
        inferred.append(prim.name)
        return abstract_eval(prim, *args, **params)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Primitive, "abstract_eval", counting)
        with set_current_trace(trace):
            out = trace.restage(eqn, tracers)
    return trace.eqns[-1], out, inferred


def test_restaging_takes_the_equation_types_only_on_atoms_of_its_input_types():
    strong = ShapedArray((), np.float32)
    eqn, out, inferred = _restaged(lambda a, b: a * b, strong, strong)
    assert inferred == [] and eqn.outvars[0].aval == strong and out.aval == strong
    weak = ShapedArray((), np.float32, weak_type=True)
    _, out, inferred = _restaged(lambda a, b: a * b, weak, weak)  # other types: inferred
    assert inferred == ["mul"] and out.aval == weak
    with set_vma_rule(lambda trace, prim, params, atoms, out_avals: (atoms, out_avals)):
        _, _, inferred = _restaged(lambda a, b: a * b, strong, strong)  # a shard_map body
    assert inferred == ["mul"]
    call = plax.jit(lambda a, b: a * b)  # a primitive with a partial-eval rule: bound
    eqn, _, inferred = _restaged(call, strong, strong)
    assert eqn.primitive.name == "jit" and inferred == ["jit"]
