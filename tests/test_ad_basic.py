"""Autodiff: jvp/vjp/grad against closed forms and finite differences, through jit,
with debug info kept, and the errors users hit."""
import numpy as np
import pytest

import plax
from plax import lax
from plax.extend.core import check_jaxpr
from plax.extend.dtypes import float0
from plax.test_util import check_grads

X = np.array([0.3, 0.7, 1.2], np.float32)
POS = np.array([0.4, 0.9, 1.5], np.float32)

UNARY = [lax.sin, lax.cos, lax.tan, lax.exp, lax.log, lax.log1p, lax.expm1, lax.tanh,
         lax.logistic, lax.sqrt, lax.rsqrt, lax.cbrt, lax.asinh, lax.atan, lax.sinh, lax.cosh,
         lax.erf, lax.erfc, lax.neg, lax.square, lax.abs, lambda x: lax.integer_pow(x, 3),
         lambda x: lax.asin(lax.mul(x, 0.5)), lambda x: lax.acos(lax.mul(x, 0.5)),
         lambda x: lax.atanh(lax.mul(x, 0.5)), lambda x: lax.acosh(lax.add(x, 1.5)),
         lambda x: lax.erf_inv(lax.mul(x, 0.5)),
         lambda x: lax.cumsum(x), lambda x: lax.cumprod(x), lambda x: lax.cumlogsumexp(x),
         lambda x: lax.reduce_max(x, (0,)), lambda x: lax.reduce_prod(x, (0,)),
         lambda x: lax.rev(x, (0,)), lambda x: lax.pad(x, 0.0, [(1, 2, 1)]),
         lambda x: lax.slice(x, (1,), (3,)), lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)),
         lambda x: lax.reshape(x, (3, 1)), lambda x: lax.concatenate([x, lax.sin(x)], 0),
         lambda x: lax.dynamic_slice(x, (1,), (2,)),
         lambda x: lax.dynamic_update_slice(x, lax.mul(x[:1], 3.0), (1,)),
         lambda x: lax.clamp(0.5, x, 1.0), lambda x: lax.convert_element_type(x, np.float32),
         lambda x: lax.select(lax.gt(x, 0.5), x, lax.sin(x))]
BINARY = [lax.add, lax.sub, lax.mul, lax.div, lax.max, lax.min, lax.atan2, lax.pow,
          lambda x, y: lax.rem(x, lax.add(y, 2.0))]  # rem away from its jumps


@pytest.mark.parametrize("f", UNARY)
def test_unary_primitives_orders_1_and_2(f):
    check_grads(f, (POS,), order=2)


def test_lgamma_first_order():
    # digamma has no derivative rule (plax has no polygamma yet), so order 1 only.
    check_grads(lax.lgamma, (POS,), order=1)


@pytest.mark.parametrize("f", BINARY)
def test_binary_primitives_with_broadcasting(f):
    check_grads(f, (POS, X[::-1].copy()), order=2)
    check_grads(f, (POS, np.float32(0.8)), order=1)


def test_dot_general_and_transpose():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    b = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    check_grads(lambda a, b: lax.dot(a, b), (a, b), order=2)
    c = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 9
    check_grads(lambda c, b: lax.dot_general(c, b, (((1,), (0,)), ((), ()))), (c, b), order=1)
    check_grads(lambda c: lax.batch_matmul(c, lax.transpose(c, (0, 2, 1))), (c,), order=1)


def _mlp_loss(params, x, y):
    import plax.numpy as jnp
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=-1, keepdims=True))
    return -jnp.mean(jnp.sum(logp * y, axis=-1)) + 0.1 * jnp.sqrt(jnp.sum(w1 * w1))


def test_composites_mlp_softmax_cross_entropy_norm():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((3, 4)).astype(np.float32), np.zeros(4, np.float32)
    w2, b2 = rng.standard_normal((4, 2)).astype(np.float32), np.zeros(2, np.float32)
    x = rng.standard_normal((5, 3)).astype(np.float32)
    y = np.eye(2, dtype=np.float32)[[0, 1, 1, 0, 1]]
    check_grads(lambda w1, w2: _mlp_loss(((w1, b1), (w2, b2)), x, y), (w1, w2), order=1)
    g = plax.jit(plax.grad(_mlp_loss))(((w1, b1), (w2, b2)), x, y)
    g_eager = plax.grad(_mlp_loss)(((w1, b1), (w2, b2)), x, y)
    for a, b in zip(plax.tree_util.tree_leaves(g), plax.tree_util.tree_leaves(g_eager)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_grad_closed_form_and_jit_both_ways():
    f = lambda x: lax.reduce_sum(lax.mul(lax.sin(x), x), (0,))
    want = np.cos(X) * X + np.sin(X)
    for g in (plax.grad(f), plax.jit(plax.grad(f)), plax.grad(plax.jit(f))):
        np.testing.assert_allclose(g(X), want, rtol=1e-5)
    np.testing.assert_allclose(plax.grad(plax.grad(lax.sin))(1.0), -np.sin(1.0), rtol=1e-6)


def test_grad_of_jit_stays_staged_and_checks():
    f = plax.jit(lambda x: lax.reduce_sum(lax.exp(x), (0,)))
    closed = plax.make_jaxpr(plax.grad(f))(X)
    check_jaxpr(closed)
    names = [e.params["name"] for e in closed.eqns if e.primitive.name == "jit"]
    assert names == ["<lambda>", "<lambda>"]  # the forward and the transposed call, as JAX's


def test_debug_info_names_through_grad():
    def f(w, b, x):
        return lax.reduce_sum(lax.tanh(lax.add(lax.dot(x, w), b)), (0,))
    w, b = np.ones((3, 2), np.float32), np.zeros(2, np.float32)
    closed = plax.make_jaxpr(plax.grad(f, argnums=(0, 1)))(w, b, X)
    check_jaxpr(closed)
    assert closed.jaxpr.debug_info.arg_names == ("w", "b", "x")
    text = plax.jit(plax.grad(f)).lower(w, b, X).as_text(debug_info=True)
    for name in ("w", "b", "x"):
        assert f'loc("{name}")' in text


def test_jaxpr_to_jaxpr_steps_keep_one_name_per_variable():
    from plax_transforms.ad import jvp_jaxpr
    from plax_transforms.partial_eval import partial_eval_jaxpr
    from plax_transforms.transpose import transpose_jaxpr

    def f(x, y):
        return lax.mul(lax.sin(x), y), lax.cos(x)
    closed = plax.make_jaxpr(f)(X, X)
    jvp_closed, out_nz = jvp_jaxpr(closed, [True, False])
    check_jaxpr(jvp_closed)
    assert jvp_closed.jaxpr.debug_info.arg_names == ("x", "y", "t:x")
    assert out_nz == [True, True]
    known, unknown, out_unknowns, n_res = partial_eval_jaxpr(jvp_closed, [False, False, True])
    check_jaxpr(known)
    check_jaxpr(unknown)
    assert unknown.jaxpr.debug_info.arg_names[:n_res] == tuple(
        f"residual[{i}]" for i in range(n_res))
    assert out_unknowns == [False, False, True, True]
    linear = [False] * n_res + [True]
    t = transpose_jaxpr(unknown, linear)
    check_jaxpr(t)
    assert t.jaxpr.debug_info.result_paths == ("ct:t:x",)


def test_integer_inputs_float0_and_stop_gradient():
    f = lambda x, n: lax.mul(x, lax.convert_element_type(n, np.float32))
    n = np.int32(3)
    g = plax.grad(f, argnums=(0, 1), allow_int=True)(np.float32(2.0), n)
    assert float(g[0]) == 3.0 and g[1].dtype == float0
    assert float(plax.grad(lambda x: lax.mul(x, lax.stop_gradient(x)))(np.float32(2.0))) == 2.0


def test_errors():
    with pytest.raises(TypeError, match="scalar-output"):
        plax.grad(lax.sin)(X)
    with pytest.raises(TypeError, match="allow_int"):
        plax.grad(lambda n: lax.convert_element_type(n, np.float32))(np.int32(1))
    with pytest.raises(TypeError, match="not a valid plax type"):
        plax.grad(lambda s: 1.0)("text")


def test_linearize_jacobians_and_linear_transpose():
    f = lambda x: lax.mul(lax.sin(x), x)
    y, f_jvp = plax.linearize(f, X)
    v = np.ones(3, np.float32)
    np.testing.assert_allclose(f_jvp(v), plax.jvp(f, (X,), (v,))[1], rtol=1e-6)
    jac = np.diag(np.cos(X) * X + np.sin(X))
    np.testing.assert_allclose(plax.jacfwd(f)(X), jac, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(plax.jacrev(f)(X), jac, rtol=1e-5, atol=1e-6)
    h = plax.hessian(lambda x: lax.reduce_sum(f(x), (0,)))(X)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(X) - X * np.sin(X)), rtol=1e-5, atol=1e-6)
    t = plax.linear_transpose(lambda x: lax.mul(x, 2.0), X)
    np.testing.assert_allclose(t(v)[0], 2 * v)


def test_python_control_flow_on_primal_values():
    f = lambda x: lax.mul(x, x) if x > 0 else lax.neg(x)
    assert float(plax.grad(f)(np.float32(3.0))) == 6.0
    assert float(plax.grad(f)(np.float32(-3.0))) == -1.0


def _count(jaxpr, name):
    return sum(e.primitive.name == name for e in jaxpr.jaxpr.eqns)


def test_jacobians_batch_the_basis_in_one_computation():
    x5 = np.linspace(0.1, 0.9, 5).astype(np.float32)
    for jac in (plax.jacfwd, plax.jacrev):
        jaxpr = plax.make_jaxpr(jac(lax.sin))(x5)
        assert _count(jaxpr, "sin") == 1 and _count(jaxpr, "cos") == 1, jaxpr
        np.testing.assert_allclose(jac(lax.sin)(x5), np.diag(np.cos(x5)), rtol=1e-6)
    hess = plax.make_jaxpr(plax.hessian(lambda x: lax.reduce_sum(lax.sin(x), (0,))))(x5)
    assert _count(hess, "sin") <= 2, hess


def test_jacobians_of_pytrees_argnums_and_aux():
    def f(p, b):
        return {"s": lax.mul(p["w"], b), "t": lax.reduce_sum(lax.mul(b, b), (0,))}, lax.cos(b)
    p, b = {"w": np.float32(2.0)}, np.array([1.0, 2.0, 3.0], np.float32)
    for jac in (plax.jacfwd, plax.jacrev):
        j, aux = jac(f, argnums=(0, 1), has_aux=True)(p, b)
        assert not isinstance(aux, plax._src.tracing.Tracer)
        np.testing.assert_allclose(aux, np.cos(b), rtol=1e-6)
        np.testing.assert_allclose(j["s"][0]["w"], b)
        np.testing.assert_allclose(j["s"][1], 2 * np.eye(3))
        np.testing.assert_allclose(j["t"][0]["w"], 0.0)
        np.testing.assert_allclose(j["t"][1], 2 * b)
        j1 = jac(lambda x: lax.mul(x, x))(np.ones((2, 3), np.float32))
        assert j1.shape == (2, 3, 2, 3)
        np.testing.assert_allclose(np.asarray(j1).reshape(6, 6), 2 * np.eye(6))


def test_jacobians_zero_size_holomorphic_and_allow_int():
    z = np.zeros((0, 2), np.float32)
    for jac in (plax.jacfwd, plax.jacrev):
        assert jac(lax.sin)(z).shape == (0, 2, 0, 2)
        c = np.array([1 + 1j, 2j], np.complex64)
        np.testing.assert_allclose(jac(lambda v: lax.mul(v, v), holomorphic=True)(c),
                                   np.diag(2 * c), rtol=1e-6)
        with pytest.raises(TypeError, match="holomorphic=True"):
            jac(lambda v: lax.mul(v, v))(c)
        with pytest.raises(TypeError, match="requires real.*inputs.*int32"):
            jac(lambda n: lax.convert_element_type(n, np.float32))(np.arange(2, dtype=np.int32))
    scale = lambda v, n: lax.mul(v, lax.convert_element_type(n, np.float32))
    jv, jn = plax.jacrev(scale, argnums=(0, 1), allow_int=True)(X, np.int32(2))
    np.testing.assert_allclose(jv, 2 * np.eye(3))
    assert jn.dtype == np.int32 and jn.shape == (3,) and not jn.any()  # JAX's dtype
    # as grad: complex inputs of a real function (JAX conjugates), not in forward mode
    c = np.array([1 + 2j, 3 - 1j], np.complex64)
    np.testing.assert_allclose(plax.jacrev(lambda v: lax.abs(v))(c), np.diag(c.conj() / abs(c)),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="jacfwd requires real-valued inputs"):
        plax.jacfwd(lambda v: lax.abs(v))(c)
    np.testing.assert_allclose(plax.jit(plax.jacfwd(lax.sin))(X), np.diag(np.cos(X)), rtol=1e-6)


def test_jvp_checks_the_tangent_dtype_before_its_shape_as_jax():
    primal = (np.ones((3, 2), np.complex64),)
    with pytest.raises(TypeError, match="c64"):  # another dtype and shape: the dtype's class
        plax.jvp(lambda x: x, primal, (np.ones(3, np.float32),))
    with pytest.raises(ValueError, match="f32"):
        plax.jvp(lambda x: x, (np.ones((3, 2), np.float32),), (np.ones(3, np.float32),))


@pytest.mark.parametrize("transform", [plax.grad, plax.value_and_grad, plax.jacfwd,
                                       plax.jacrev])
def test_an_argument_named_twice_in_argnums_is_a_type_error(transform):
    # JAX calls the function with None in the repeated position (a TypeError there);
    # plax says what is wrong instead of differentiating by one argument twice.
    f = lambda x, y: (x * y).sum()  # noqa: E731
    with pytest.raises(TypeError, match="more than once"):
        transform(f, argnums=(1, 1))(X, POS)
    with pytest.raises(TypeError, match="more than once"):
        transform(f, argnums=(0, -2))(X, POS)
    out = transform(f, argnums=(1, 0))(X, POS)
    grads = out[1] if transform is plax.value_and_grad else out
    np.testing.assert_allclose(grads[0], X, rtol=1e-6)  # by y first, then by x
    np.testing.assert_allclose(grads[1], POS, rtol=1e-6)


def test_tangent_type_of_an_abstract_value():
    """JAX's `aval.to_tangent_aval()` (and its older name `at_least_vspace`, which
    equinox calls): float0 for integers and booleans, the same type for inexact."""
    from plax.extend.core import ShapedArray
    assert ShapedArray((2,), np.float32).to_tangent_aval() == ShapedArray((2,), np.float32)
    assert ShapedArray((2, 3), np.int32).at_least_vspace().dtype == plax.dtypes.float0
    assert ShapedArray((), np.bool_).to_tangent_aval().shape == ()


def test_linear_transpose_uses_each_primitives_transpose_rule():
    """As JAX's: `fun` itself is traced and transposed equation by equation, so a
    linear primitive needs a transpose rule, not a jvp rule."""
    from plax.extend import Primitive, ShapedArray
    triple_p = Primitive("tests.linear_transpose_triple")
    triple_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    triple_p.def_impl(lambda x: x * 3)
    triple_p.def_transpose(lambda ct, x: [triple_p.bind(ct)])
    t = plax.linear_transpose(lambda x: triple_p.bind(x) + x, X)
    np.testing.assert_allclose(t(np.ones(3, np.float32))[0], np.full(3, 4.0, np.float32))


def test_linearized_function_is_a_pytree_of_its_residuals():
    """As JAX's (and vjp's): it can be returned from `jit` and `vmap`."""
    y, f_jvp = plax.jit(lambda x: plax.linearize(lax.sin, x))(X)
    assert plax.tree_util.tree_leaves(f_jvp)  # the residuals (cos X)
    np.testing.assert_allclose(f_jvp(np.ones(3, np.float32)), np.cos(X), rtol=1e-6)
    _, f_jvps = plax.vmap(lambda x: plax.linearize(lax.sin, x))(X)
    np.testing.assert_allclose(plax.vmap(lambda f, t: f(t))(f_jvps, np.ones(3, np.float32)),
                               np.cos(X), rtol=1e-6)


class _Made:
    """A pytree node that records the trace in effect when it is made (as flax's
    Variables do)."""
    made_under: list = []

    def __init__(self, value):
        from plax.extend.core import current_trace
        self.value = value
        _Made.made_under.append(current_trace())


plax.tree_util.register_pytree_node(_Made, lambda m: ((m.value,), None),
                                    lambda _, children: _Made(*children))


@pytest.mark.parametrize("api", ["grad", "value_and_grad", "vjp", "jvp", "linearize",
                                 "jacfwd", "jacrev"])
def test_an_auxiliary_output_is_rebuilt_for_the_caller(api):
    """As JAX: `has_aux`'s output is taken apart under the transformation and rebuilt
    once it is over, so that a node made by unflattening it is made at the caller's
    level (flax's nnx.capture returns Variables so: TestCapture), its leaves primal
    values."""
    from plax.extend.core import EVAL_TRACE

    def f(x):
        return (x ** 2).sum(), _Made(x * 3)

    x = np.float32([1.0, 2.0])
    calls = {"grad": lambda: plax.grad(f, has_aux=True)(x)[1],
             "value_and_grad": lambda: plax.value_and_grad(f, has_aux=True)(x)[0][1],
             "vjp": lambda: plax.vjp(f, x, has_aux=True)[2],
             "jvp": lambda: plax.jvp(f, (x,), (x,), has_aux=True)[2],
             "linearize": lambda: plax.linearize(f, x, has_aux=True)[2],
             "jacfwd": lambda: plax.jacfwd(f, has_aux=True)(x)[1],
             "jacrev": lambda: plax.jacrev(f, has_aux=True)(x)[1]}
    aux = calls[api]()
    assert isinstance(aux, _Made) and _Made.made_under[-1] is EVAL_TRACE
    assert type(aux.value) is plax.Array
    np.testing.assert_allclose(aux.value, x * 3)


def test_abs_derivative_at_zero_is_jaxs():
    """JAX's rule: +g where x >= 0 (so 1 at 0.0), and 0, not NaN, at a complex 0."""
    assert plax.grad(lambda x: lax.abs(x))(0.0) == 1.0
    assert plax.grad(lambda x: lax.abs(x))(-2.0) == -1.0
    np.testing.assert_allclose(plax.grad(lambda z: lax.abs(z))(np.complex64(3 + 4j)),
                               np.complex64(0.6 - 0.8j), rtol=1e-6)
    assert plax.grad(lambda z: lax.abs(z))(np.complex64(0)) == 0


def test_float0_tangents_stay_numpy_eagerly_and_are_staged_under_jit():
    x = np.ones(3, np.float32)
    tangent = plax.jvp(lax.is_finite, (x,), (x,))[1]
    assert type(tangent) is np.ndarray and tangent.dtype == plax.dtypes.float0
    assert "float0[3] = broadcast_in_dim" in str(
        plax.make_jaxpr(lambda x: plax.jvp(lax.is_finite, (x,), (x,)))(x))
