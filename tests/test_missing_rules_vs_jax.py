"""Primitives without a differentiation or batching rule, compared with JAX 0.10.2.

A primitive defined outside the library (as JAX's "How primitives work" tutorial
defines one) with no jvp rule raises JAX's `NotImplementedError` as soon as an input
has a tangent, before anything is evaluated, even when its outputs are integers;
applied to values without tangents (constants, integers' float0 tangents) it is just
applied. The library's own primitives with integer or bool results (comparisons,
argmax...) have zero jvp rules, as JAX's do.
"""
from jax_reference import requires_jax, run_reference

_PROGRAMS = """
import importlib
lax = jax.lax
f0 = jax.dtypes.float0
extend_core = importlib.import_module(f"{jax.__name__}.extend.core")
calls = []

def primitive(name, impl, out_dtype=None, log_abstract_eval=False):
    # plax's primitive ids are namespaced; both are named `name`
    p = extend_core.Primitive(f"tests.{name}" if jax.__name__ == "plax" else name)
    def run(x):
        calls.append(name)
        return impl(x)
    def abstract_eval(x):
        if log_abstract_eval:
            calls.append(f"{name}: abstract")
        return jax.core.ShapedArray(x.shape, out_dtype or x.dtype)
    p.def_impl(run)
    p.def_abstract_eval(abstract_eval)
    return p

# without a jvp rule: differentiating it must raise before evaluating it in any way
rounded_p = primitive("rounded", lambda x: np.floor(x).astype(np.int32), np.int32, True)
doubled_p = primitive("doubled", lambda x: x * 2)

def doubled_jvp(primals, tangents):  # linear, but without a transpose rule
    return doubled_p.bind(*primals), doubled_p.bind(*tangents)

if jax.__name__ == "plax":
    doubled_p.def_jvp(doubled_jvp)
else:
    importlib.import_module("jax.interpreters.ad").primitive_jvps[doubled_p] = doubled_jvp

@jax.custom_jvp
def with_count(x):
    return x, lax.convert_element_type(x, np.int32)

@with_count.defjvp
def _(primals, tangents):  # the integer output's tangent: float0 zeros, not a Zero
    return with_count(*primals), (tangents[0], np.zeros(np.shape(primals[0]), f0))

checkify = importlib.import_module(f"{jax.__name__}.experimental.checkify")

def checked(y):  # check_error's operands: the error's payload, the formatted 2 * y
    error, _ = checkify.checkify(lambda y: checkify.check(y > 0, "y={y}", y=y * 2))(y)
    checkify.check_error(error)
    return y * 3

def show(v):
    v = np.asarray(v)
    return "float0" if v.dtype == f0 else [str(v.dtype), v.tolist()]

def outcome(f):
    calls.clear()
    try:
        out = jax.tree.map(show, f())
    except Exception as err:
        out = [type(err).__name__, str(err).split(" (vmap")[0]]
    return [out, list(calls)]

x, xs = np.float32(2.5), np.array([1.5, -np.inf, 0.0, np.nan], np.float32)
one = np.float32(1)
result = {
    "jvp, a tangent": outcome(lambda: jax.jvp(rounded_p.bind, (x,), (one,))),
    "jvp, a constant": outcome(lambda: jax.jvp(lambda y: (y, rounded_p.bind(x)), (x,), (one,))),
    "jvp, an integer": outcome(lambda: jax.jvp(
        rounded_p.bind, (np.int32(3),), (np.zeros((), f0),))),
    "jvp, after a float0 tangent": outcome(lambda: jax.jvp(
        lambda y: rounded_p.bind(with_count(y)[1]), (x,), (one,))),
    "grad": outcome(lambda: jax.grad(lambda y: y * rounded_p.bind(y))(x)),
    "vmap": outcome(lambda: jax.vmap(rounded_p.bind)(xs)),
    "transpose": outcome(lambda: jax.grad(doubled_p.bind)(x)),
    "jvp, with a rule": outcome(lambda: jax.jvp(doubled_p.bind, (x,), (one,))),
    "check_error": outcome(lambda: jax.jvp(checked, (x,), (one,))),
    "check_error, failing": outcome(lambda: jax.jvp(checked, (-x,), (one,))),
    "integer results": outcome(lambda: jax.jvp(lambda v: (
        v > 1, lax.eq(v, v), lax.ne(v, 0.0), lax.le(v, 0.0), lax.ge(v, 0.0), lax.lt(v, 0.0),
        lax.is_finite(v), jnp.argmax(v), jnp.argmin(v), lax.bitcast_convert_type(v, np.int32),
        lax.population_count(with_count(v)[1]), jnp.sort(v), jnp.searchsorted(v, v)),
        (xs,), (np.ones(4, np.float32),))),
    "grad through integer results": outcome(lambda: jax.grad(
        lambda v: jnp.where(jnp.isfinite(v), v, 0.0)[jnp.argmax(v)] * (v[0] > 0))(xs[:3])),
}
"""


@requires_jax
def test_primitives_without_rules_and_zero_rules_as_in_jax():
    mine = run_reference(_PROGRAMS, library="plax")
    assert mine["jvp, a tangent"] == [
        ["NotImplementedError", "Differentiation rule for 'rounded' not implemented"], []]
    assert mine == run_reference(_PROGRAMS)
