"""Differentiating at Python scalars: as in JAX, a primal stays a Python scalar until an
operation promotes it, so every rule must cope with one (no int literal meeting a
float primal: lax refuses two Python scalars of different kinds)."""
import numpy as np
import pytest

import plax
from jax_reference import requires_jax, run_reference
from plax import lax

UNARY = ["sin", "cos", "tan", "exp", "log", "sqrt", "rsqrt", "cbrt", "tanh", "logistic",
         "asin", "acos", "atan", "sinh", "cosh", "asinh", "atanh", "erf", "erfc", "erf_inv",
         "lgamma", "digamma", "log1p", "expm1", "exp2", "square", "abs", "sign", "floor",
         "ceil", "round", "neg"]
BINARY = ["add", "sub", "mul", "div", "pow", "max", "min", "atan2", "rem", "nextafter"]


@pytest.mark.parametrize("name", UNARY)
def test_grad_of_unary_primitive_at_a_python_float(name):
    f = getattr(lax, name)
    x, eps = 0.3, 1e-3  # away from rounding boundaries and domain edges
    g = plax.grad(f)(x)
    want = (float(f(np.float32(x + eps))) - float(f(np.float32(x - eps)))) / (2 * eps)
    np.testing.assert_allclose(float(g), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("name", BINARY)
def test_grad_of_binary_primitive_at_python_floats(name):
    gx, gy = plax.grad(getattr(lax, name), argnums=(0, 1))(0.5, 0.75)
    assert np.isfinite(float(gx)) and np.isfinite(float(gy))


def test_power_rule_with_constant_python_exponents():
    assert float(plax.grad(lambda x: lax.pow(x, 3.0))(2.0)) == pytest.approx(12.0)
    assert float(plax.grad(lambda x: lax.pow(2.0, x))(3.0)) == pytest.approx(8 * np.log(2))
    assert float(plax.grad(lambda x: x ** 3)(2.0)) == pytest.approx(12.0)


def test_real_valued_function_of_a_complex_python_scalar():
    # JAX's convention for non-holomorphic functions: the conjugate of the gradient.
    assert complex(plax.grad(lambda z: abs(z) ** 2)(1.0 + 1.0j)) == pytest.approx(2 - 2j)


def test_jvp_tangents_at_python_scalars_are_jaxs():
    # Promotion converts a tracer of a known value even when its dtype already
    # matches (as JAX's), so `x + 1` hands back a weakly typed Array tangent; the
    # identity hands back the Python scalars themselves, and custom rules see them.
    primal, tangent = plax.jvp(lambda x: x + 1, (1.0,), (1.0,))
    assert isinstance(tangent, plax.Array) and tangent.weak_type and float(tangent) == 1.0
    assert isinstance(primal, plax.Array) and primal.weak_type and float(primal) == 2.0
    # convert_element_type's tangents and cotangents keep their primals' weak types
    _, tangent = plax.jvp(lambda x: lax.convert_element_type(x, np.float32) * 2, (1.0,),
                          (1.0,))
    assert not tangent.weak_type
    assert plax.linearize(lambda x: x * 2, 1.0)[1](1.0).weak_type
    assert plax.jvp(lambda x: x, (1.0,), (2.0,)) == (1.0, 2.0)
    seen = []

    @plax.custom_jvp
    def f(x):
        return x * 3

    @f.defjvp
    def f_jvp(primals, tangents):
        seen.append(type(primals[0]))
        return f(primals[0]), tangents[0] * 3
    assert plax.jvp(f, (2.0,), (1.0,)) == (6.0, 3.0) and seen == [float]


_GRADS_OF_SCALARS = """
lax = jax.lax
functions = [lambda x: x ** 2, jnp.sin, jnp.abs, lambda x: 3.0, lambda x: x * jnp.float32(2),
             lambda x: jnp.where(x > 0, x, 0.0), lambda x: lax.select(True, x, x * 2),
             lambda x: lax.convert_element_type(x, jnp.float32) * 2, jax.nn.relu,
             lambda x: lax.cond(x > 0, lambda y: y * 2, lambda y: y, x),
             lambda z: jnp.real(z) ** 2 + jnp.imag(z) ** 2, lambda z: jnp.real(jnp.conj(z) * z),
             lambda z: jnp.real(z), lambda x: x.astype(jnp.float32)]
result = []
for f in functions:
    for x in (3.0, 3.0 + 4j, jnp.float32(3.0)):
        for g in (jax.grad(f), jax.jit(jax.grad(f))):
            try:
                result.append(repr(g(x)))
            except TypeError as e:  # a complex output
                result.append(type(e).__name__)
result.append(repr(jax.grad(jax.grad(lambda x: x ** 3))(3.0)))
result.append(repr(jax.hessian(lambda x: x ** 3)(3.0)))
result.append(repr(jax.grad(lambda z: z ** 2, holomorphic=True)(3.0 + 4j)))
"""


@requires_jax
def test_gradients_of_python_scalars_are_as_weak_as_jaxs():
    """The transposes keep the weak types JAX's keep (zeros and constants as weak as
    what they stand beside, a weak seed), with no cast at the end: a complex Python
    scalar's gradient through real and imag is strong, as JAX's."""
    mine = run_reference(_GRADS_OF_SCALARS, library="plax")
    assert "Array(6.-8.j, dtype=complex64)" in mine
    assert mine == run_reference(_GRADS_OF_SCALARS)


_COTANGENT_TYPES = """
lax = jax.lax
where = lambda x: jnp.where(x > 0, x, 0.0)
functions = [
    jax.nn.elu, jax.nn.hard_tanh, jnp.nan_to_num, lambda x: jnp.clip(x, -1, 1), where,
    jax.nn.relu, jnp.sinc, jnp.abs, lambda x: jnp.power(x, 3.0), lambda x: lax.pow(x, 2),
    jax.jit(lambda x: where(x) + where(x - 1)), jax.checkpoint(lambda x: where(jnp.sin(x))),
    lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x),
    lambda x: lax.cond(x > 0, where, lambda y: y * 2, x),
    lambda x: lax.scan(lambda c, _: (where(c) + c, None), x, None, length=2)[0],
    lambda x: lax.scan(lambda c, _: (c * 2.0, where(c)), x, None, length=2)[1].sum(),
    lambda x: lax.fori_loop(0, 2, lambda i, c: c * jnp.float32(2), x),
]
result = []
for f in functions:
    for x in (np.float32(2.0), 2.0):
        for ct in (1.0, np.float32(1.0)):
            out = jax.vjp(f, x)[1](ct)[0]
            result.append(f"{out.dtype} weak={out.weak_type}")
        out = jax.grad(f)(x)
        result.append(f"{out.dtype} weak={out.weak_type}")
result.append([float(jax.grad(lambda x: lax.pow(x, 0))(0.0)),
               float(jax.grad(lambda y: lax.pow(0.0, y))(2.0))])
"""


@requires_jax
def test_cotangents_of_a_vjp_are_as_weak_as_jaxs():
    """Over (function, strong or weak primal, weak or strong cotangent): a call, cond or
    scan is transposed on its cotangents' own types (a weak cotangent of a strong
    output stays weak through select_n), a checkpoint on its outputs' types; a sum of
    cotangents has its first operand's weak type; pow's derivatives are JAX's (strong,
    0 rather than NaN at x = 0)."""
    assert run_reference(_COTANGENT_TYPES, library="plax") == run_reference(_COTANGENT_TYPES)
