"""lax's tokens (`create_token`, `after_all`), `composite`, `dce_sink`, `rng_uniform`,
the `accuracy=` of transcendental functions (`AccuracyMode`, `Tolerance`) and the
general `reduce_p`/`select_and_scatter_p`/`device_put_p`: lowered text and error
classes against JAX's (one JAX subprocess for the file), values, transformations."""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
from plax import lax
from plax.extend.core import AbstractToken, Token

F32 = np.float32

# Run by JAX in a subprocess and by plax here (`jax` is the library, `lax` its lax):
# lowered programs, and the class of the error for each bad input.
_PROGRAMS = """
lax = jax.lax
x = np.linspace(0.5, 1.5, 3, dtype=np.float32)
texts = {}
def lowered(name, f, *args):
    texts[name] = jax.jit(f).lower(*args).as_text()
lowered("exp_highest", lambda x: lax.exp(x, accuracy=lax.AccuracyMode.HIGHEST), x)
lowered("tanh_tolerance", lambda x: lax.tanh(
    x, accuracy=lax.Tolerance(atol=1e-5, rtol=1e-3, ulps=2)), x)
lowered("exp2_highest", lambda x: lax.exp2(x, accuracy=lax.AccuracyMode.HIGHEST), x)
lowered("sin_default", lambda x: lax.sin(x, accuracy=lax.AccuracyMode.DEFAULT), x)
lowered("tokens_out", lambda x: (x + 1, lax.after_all(lax.create_token(), lax.create_token())),
        x)
lowered("tokens_in", lambda t, x: (lax.after_all(t, t), x), lax.create_token(), x)
lowered("after_all_empty", lambda: lax.after_all())
lowered("rng_uniform", lambda: lax.rng_uniform(0.0, 1.0, (2, 3)))
lowered("dce_sink", lambda x: (lax.dce_sink(x * 2, prevent_mlir_dce=True), x)[1], x)
lowered("reduce", lambda x: lax.reduce(x, 0.0, lambda a, b: a * b + 1.0, (0,)), x)
decomposition = lambda x, y, **attrs: lax.tan(x) * 2.0 + y
lowered("composite", lambda x: lax.composite(decomposition, name="my.tangent", version=3)(
    x, x, f=1.5, i=3, b=True, s="str", n=None, np_i=np.int32(4), np_u=np.uint8(3),
    np_f=np.float32(2.5), arr=np.arange(3, dtype=np.int32), bools=np.array([True, False]),
    l=[1.5, "s", [True]], d={"a": 1}, dt=np.dtype("float32")), x)
lowered("composite_twice", lambda x: (lax.composite(lambda v: v + 1, name="my.op")(x),
                                      lax.composite(lambda v: v + 1, name="my.op")(x[:2])), x)
lowered("composite_consts", lax.composite(lambda v: v + np.arange(3, dtype=np.float32),
                                          name="my.cc"), x)

errors = {}
def error(name, f):
    try:
        f()
        errors[name] = None
    except Exception as e:
        errors[name] = type(e).__name__
error("tolerance_negative", lambda: lax.Tolerance(atol=-1.0))
error("tolerance_unset", lambda: lax.Tolerance())
error("tolerance_str", lambda: lax.Tolerance(atol="a"))
error("accuracy_str", lambda: jax.jit(lambda x: lax.exp(x, accuracy="HIGHEST"))(x))
error("rng_nonscalar", lambda: lax.rng_uniform(np.zeros(2, np.float32), np.ones(2, np.float32),
                                               (2,)))
error("rng_mixed", lambda: lax.rng_uniform(np.int32(0), np.float32(1), (2,)))
error("rng_shape_int", lambda: lax.rng_uniform(0.0, 1.0, 3))
error("rng_grad", lambda: jax.grad(lambda a: lax.rng_uniform(a, 2.0, ()))(1.0))
error("rng_vmap", lambda: jax.vmap(lambda a: lax.rng_uniform(a, 2.0, ()))(x))
error("after_all_array", lambda: lax.after_all(x))
error("token_in_add", lambda: lax.add(lax.create_token(), lax.create_token()))
error("token_plus_scalar", lambda: lax.add(lax.create_token(), 1.0))
error("composite_attr_traced", lambda: jax.jit(lambda v: lax.composite(
    lambda v, **k: v, name="my.b")(v, a=v))(x))
error("composite_attr_set", lambda: lax.composite(lambda v, **k: v, name="my.b")(x, a={1}))
error("composite_attr_object", lambda: jax.jit(lambda v: lax.composite(
    lambda v, **k: v, name="my.b")(v, a=object()))(x))
error("composite_bad_name", lambda: jax.jit(lax.composite(lambda v: v, name="no dots"))(x))
error("dce_sink_str", lambda: lax.dce_sink("s"))
result = {"texts": texts, "errors": errors}
"""

# JAX's accuracy lowering also leaves an unused copy of the op without the attribute
# (removed by the compiler); the ops compared are those that compute the results.
_ACCURACY_CASES = ("exp_highest", "tanh_tolerance", "exp2_highest")
# Errors where plax raises more than JAX: JAX takes these and fails later or never.
_STRICTER = {
    "composite_attr_set": ("TypeError", None),  # JAX: only under jit (unhashable parameter)
    "composite_bad_name": ("ValueError", "ValueError"),  # JAX: the verifier, at lowering
}


@functools.lru_cache(maxsize=None)
def _plax_results():
    scope = {"jax": plax, "np": np}
    exec(_PROGRAMS, scope)  # noqa: S102 - the shared program text, run by plax
    return scope["result"]


@pytest.fixture(scope="module")
def reference():
    return run_reference(_PROGRAMS)


def _ops(text: str) -> list[str]:
    """The module's lines without its header, argument names and result paths."""
    lines = []
    for line in text.splitlines():
        if line.startswith("module"):
            continue
        line = re.sub(r' \{jax\.result_info = "[^"]*"\}', "", line)
        lines.append(line)
    return lines


@requires_jax
@pytest.mark.parametrize("case", ["tokens_out", "tokens_in", "after_all_empty",
                                  "rng_uniform", "dce_sink", "reduce", "composite",
                                  "composite_twice", "composite_consts"])
def test_lowering_matches_jax(reference, case):
    assert _ops(_plax_results()["texts"][case]) == _ops(reference["texts"][case])


@requires_jax
@pytest.mark.parametrize("case", _ACCURACY_CASES)
def test_accuracy_lowers_to_result_accuracy_as_jax(reference, case):
    def attributed(text):
        return [line.split("=", 1)[1] for line in _ops(text) if "result_accuracy" in line]
    ours = attributed(_plax_results()["texts"][case])
    assert len(ours) == 1 and ours == attributed(reference["texts"][case])


@requires_jax
def test_default_accuracy_adds_no_attribute(reference):
    for texts in (_plax_results()["texts"], reference["texts"]):
        assert "stablehlo.sine" in texts["sin_default"]
        assert "result_accuracy" not in texts["sin_default"]


@requires_jax
def test_error_classes_match_jax(reference):
    ours, theirs = _plax_results()["errors"], reference["errors"]
    for name, cls in ours.items():
        assert cls is not None, name
        assert cls == theirs[name] or (cls, theirs[name]) == _STRICTER.get(name), (
            name, cls, theirs[name])


# --- accuracy ---------------------------------------------------------------------------------

def test_accuracy_is_a_parameter_only_when_given_and_survives_jvp_and_vmap():
    x = np.linspace(0.5, 1.5, 3, dtype=F32)
    (eqn,) = plax.make_jaxpr(lax.exp)(x).jaxpr.eqns
    assert eqn.params == {}
    highest = lax.AccuracyMode.HIGHEST
    jvp = plax.make_jaxpr(lambda x: plax.jvp(lambda v: lax.cos(v, accuracy=highest),
                                             (x,), (x,)))(x)
    # cos's derivative calls sin with the same accuracy, as in JAX
    assert [(e.primitive.name, e.params.get("accuracy")) for e in jvp.jaxpr.eqns
            if e.primitive.name in ("sin", "cos")] == [("cos", highest), ("sin", highest)]
    batched = plax.make_jaxpr(plax.vmap(lambda v: lax.logistic(v, accuracy=highest)))(x)
    assert batched.jaxpr.eqns[0].params == {"accuracy": highest}
    np.testing.assert_allclose(lax.expm1(x, accuracy=lax.Tolerance(ulps=1)), np.expm1(x),
                               rtol=1e-6)
    np.testing.assert_allclose(plax.grad(lambda v: lax.expm1(v, accuracy=highest))(F32(0.5)),
                               np.exp(0.5), rtol=1e-6)


def test_tolerance_equals_by_value_and_rejects_bad_bounds():
    assert lax.Tolerance(atol=1e-5) == lax.Tolerance(atol=1e-5, rtol=0.0)
    assert hash(lax.Tolerance(ulps=2)) == hash(lax.Tolerance(ulps=2))
    assert repr(lax.Tolerance(rtol=0.5)) == "Tolerance(atol=0.0, rtol=0.5, ulps=0)"
    with pytest.raises(ValueError, match="non-negative"):
        lax.Tolerance(ulps=-1)
    with pytest.raises(TypeError, match="ulps must be an integer"):
        lax.Tolerance(ulps=1.5)
    with pytest.raises(NotImplementedError, match="accuracy 3 not supported"):
        lax.sqrt(F32(2.0), accuracy=3)


# --- tokens -----------------------------------------------------------------------------------

def test_tokens_eagerly_and_through_jit():
    token = lax.create_token()
    assert isinstance(token, Token) and repr(token) == "Token()"
    assert token.block_until_ready() is None
    assert isinstance(plax.typeof(token), AbstractToken)
    after = plax.jit(lambda t, x: (lax.after_all(t, lax.create_token(x)), x + 1))
    for _ in range(2):  # a second call reuses the executable
        out_token, value = after(token, F32(1.0))
        assert isinstance(out_token, Token) and value == 2.0
    assert isinstance(plax.jit(lambda t: t)(out_token), Token)
    assert isinstance(lax.after_all(), Token)
    jaxpr = plax.make_jaxpr(lambda t: lax.after_all(t, lax.create_token()))(token)
    # (JAX's printer keeps the space before an equation's absent operands)
    assert str(jaxpr) == ("{ lambda ; a:Tok. let b:Tok = create_token ; c:Tok = after_all a b "
                          "in (c,) }")
    assert isinstance(plax.eval_shape(lax.create_token), AbstractToken)


def test_tokens_pass_through_transformations():
    x = np.ones(3, F32)
    token, batched = plax.vmap(lambda v: (lax.create_token(v), v * 2))(x)
    assert isinstance(token, Token)
    np.testing.assert_array_equal(batched, x * 2)
    (out_token, out), (tangent_token, tangent) = plax.jvp(
        lambda v: (lax.create_token(), v * 3), (F32(1.0),), (F32(1.0),))
    assert isinstance(out_token, Token) and tangent == 3.0
    _, vjp = plax.vjp(lambda v: (lax.create_token(), v * 2), F32(1.0))
    assert vjp((lax.create_token(), F32(1.0))) == (2.0,)
    assert plax.grad(lambda v, t: (lax.after_all(t), v * 5)[1])(F32(1.0), token) == 5.0


# --- rng_uniform ------------------------------------------------------------------------------

@pytest.mark.parametrize("lo, hi, dtype", [(2.0, 5.0, np.float32), (-3, 7, np.int32),
                                           (1.0, 2.0, np.float16)])
def test_rng_uniform_draws_from_the_half_open_interval(lo, hi, dtype):
    out = lax.rng_uniform(dtype(lo), dtype(hi), (64,))
    assert out.shape == (64,) and out.dtype == dtype
    values = np.asarray(out)
    assert (values >= lo).all() and (values < hi).all() and len(np.unique(values)) > 1


def test_rng_uniform_refuses_dtypes_xla_cannot_draw():
    with pytest.raises(TypeError, match="does not accept dtype int8"):
        lax.rng_uniform(np.int8(0), np.int8(9), (2,))
    with pytest.raises(TypeError, match="bool"):
        lax.rng_uniform(True, False, (2,))


# --- composite --------------------------------------------------------------------------------

def _scaled_tangent(x, y, *, scale=1.0):
    return lax.tan(x) * scale + y


def test_composite_computes_and_transforms_through_its_decomposition():
    x = np.linspace(-1.0, 1.0, 3, dtype=F32)
    op = lax.composite(_scaled_tangent, name="my.tangent", version=1)
    assert op.__name__ == "_scaled_tangent"
    want = np.tan(x) * 2 + x
    np.testing.assert_allclose(op(x, x, scale=2.0), want, rtol=1e-6)
    np.testing.assert_allclose(plax.jit(lambda v: op(v, v, scale=2.0))(x), want, rtol=1e-6)
    (eqn,) = plax.make_jaxpr(lambda v: op(v, v, scale=2.0))(x).jaxpr.eqns
    assert eqn.primitive is lax.composite_p and eqn.params["name"] == "my.tangent"
    assert eqn.params["version"] == 1
    np.testing.assert_allclose(plax.grad(lambda v: op(v, v, scale=2.0).sum())(x),
                               2 / np.cos(x) ** 2 + 1, rtol=1e-5)
    batched = plax.vmap(lambda v: op(v, v, scale=2.0))(np.stack([x, -x]))
    np.testing.assert_allclose(batched, np.stack([want, -want]), rtol=1e-6)
    pair = lax.composite(lambda d: (d["a"] + d["b"], d["a"]), name="my.pair")(
        {"a": x, "b": x})
    np.testing.assert_allclose(pair[0], 2 * x)


def test_composite_attributes_key_the_parameter_by_value():
    op = lax.composite(lambda v, **attrs: v, name="my.id")
    x = np.ones(2, F32)
    first = plax.make_jaxpr(lambda v: op(v, a=np.arange(2), l=[1, 2]))(x).jaxpr.eqns[0]
    second = plax.make_jaxpr(lambda v: op(v, a=np.arange(2), l=[1, 2]))(x).jaxpr.eqns[0]
    other = plax.make_jaxpr(lambda v: op(v, a=np.arange(3), l=[1, 2]))(x).jaxpr.eqns[0]
    assert first.params["attributes"] == second.params["attributes"]
    assert hash(first.params["attributes"]) == hash(second.params["attributes"])
    assert first.params["attributes"] != other.params["attributes"]
    with pytest.raises(TypeError, match="version must be a non-negative int32"):
        lax.composite(op, name="my.id", version="1")
    with pytest.raises(TypeError, match="NumPy array instead"):
        op(x, a=plax.numpy.ones(2))


# --- dce_sink ---------------------------------------------------------------------------------

def test_dce_sink_keeps_its_value_and_returns_none():
    x = np.ones(3, F32)
    assert lax.dce_sink(x) is None and lax.dce_sink({"a": x, "b": 3}) is None
    jaxpr = plax.make_jaxpr(lambda v: (lax.dce_sink(v * 2), v)[1])(x).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["mul", "dce_sink"]
    np.testing.assert_array_equal(
        plax.jit(lambda v: (lax.dce_sink(v * 2, prevent_mlir_dce=True), v)[1])(x), x)
    np.testing.assert_array_equal(plax.grad(lambda v: (lax.dce_sink(v), v.sum())[1])(x), 1.0)
    batched = plax.make_jaxpr(plax.vmap(lambda v: (lax.dce_sink(v), v)[1]))(np.ones((2, 3)))
    assert "dce_sink" in str(batched)


# --- the general primitives -------------------------------------------------------------------

def test_reduce_p_binds_and_matches_as_in_jax():
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], F32)
    product = lambda a, b: a * b + 0.0  # noqa: E731 - not recognised as the monoid
    (eqn,) = plax.make_jaxpr(lambda v: lax.reduce(v, F32(1), product, (1,)))(x).jaxpr.eqns
    assert eqn.primitive is lax.reduce_p and eqn.params["computation"] is product
    out = lax.reduce_p.bind(x, F32(1), **eqn.params)
    np.testing.assert_allclose(out[0], x.prod(1))
    np.testing.assert_allclose(plax.vmap(lambda v: lax.reduce(v, F32(1), product, (0,)))(x),
                               x.prod(1))
    with pytest.raises(TypeError, match="init_values must be scalars"):
        lax.reduce_p.bind(x, np.ones(2, F32), **eqn.params)


def test_select_and_scatter_p_is_the_general_select_and_scatter():
    from plax_stdlib.lax.select_and_scatter import select_and_scatter
    x = np.array([[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 8.0, 1.0]], F32)
    source = np.array([[10.0, 20.0]], F32)
    valid = ((0, 0), (0, 0))
    pick_max = select_and_scatter(x, lax.ge, (2, 2), (2, 2), valid, source, F32(0), lax.add)
    np.testing.assert_array_equal(pick_max, lax.select_and_scatter_add(
        source, x, lax.ge_p, (2, 2), (2, 2), "VALID"))
    pick_min = select_and_scatter(x, lax.le, (2, 2), (2, 2), valid, source, F32(-1), lax.max)
    np.testing.assert_array_equal(pick_min, [[10, -1, -1, 20], [-1, -1, -1, -1]])
    (eqn,) = plax.make_jaxpr(lambda v: select_and_scatter(
        v, lax.ge, (2, 2), (2, 2), valid, source, F32(0), lax.add))(x).jaxpr.eqns
    assert eqn.primitive is lax.select_and_scatter_p
    with pytest.raises(TypeError, match="shape of the windows"):
        select_and_scatter(x, lax.ge, (2, 2), (1, 1), valid, source, F32(0), lax.add)


def test_device_put_p_is_the_primitive_of_traced_device_puts():
    device = plax.devices()[0]
    jaxpr = plax.make_jaxpr(lambda v: plax.device_put(v * 2, device))(np.ones(2, F32))
    assert lax.device_put_p in [e.primitive for e in jaxpr.jaxpr.eqns]
