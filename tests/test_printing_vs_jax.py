"""What JAX programs print about their values, compared with JAX run in a subprocess:
Arrays' reprs (JAX's line layout, empty arrays, complex values), Literals' and tracers'
reprs, and Jaxprs of gradients of weakly typed inputs."""
from __future__ import annotations

from jax_reference import requires_jax, run_reference

_ARRAYS = """
import itertools
result = []
for n, offset in itertools.product(range(1, 40, 3), (0.0, 0.123456, 1000.5)):
    result.append(repr(jnp.arange(n, dtype=jnp.float32) * 1.5 + offset))
result += [repr(x) for x in (
    jnp.zeros((0,)), jnp.zeros((2, 0), jnp.int32), jnp.array(1.0), jnp.array(True),
    jnp.arange(30.).reshape(5, 6) + 1000.123, jnp.arange(8, dtype=jnp.uint8),
    jnp.arange(12, dtype=jnp.complex64).reshape(2, 6) * 1.5j,
    jnp.arange(3, dtype=jnp.complex64), jax.random.key(0))]
with np.printoptions(linewidth=40):
    result.append(repr(jnp.arange(20.0)))
"""

_TRACERS = """
result = []
def show(x):
    result.append(repr(x))
    result.append(str(x))
    return x
jax.jit(show)(jnp.ones(3))
jax.make_jaxpr(show)(jnp.int8(1))
jax.eval_shape(show, jnp.ones(2))
jax.grad(lambda x: show(x * 2.0))(1.0)
jax.jvp(show, (1.0,), (1.0,))
jax.linearize(show, 1.0)
jax.vmap(show)(jnp.ones((2, 3)))
jax.vmap(jax.grad(lambda x: show(x) ** 2))(jnp.ones(2))
jax.jit(jax.grad(lambda x: show(x) ** 2))(1.0)
"""

# What a custom_jvp rule sees under each derivative, by class and repr: code printing
# traces (JAX's "How primitives work" tutorial) tells tracers apart by class. (A known
# Python float primal is a float subclass in JAX, its TypedFloat, and a float in plax.)
_DERIVATIVE_TRACERS = """
result = []
def show(x, named=True):
    result.append(f"{type(x).__name__ if named else ''}: {x!r}")
    return x
@jax.custom_jvp
def f(x):
    return jnp.sin(x)
@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    if not isinstance(x, float):
        show(x, named=False)  # plax's StagingTracer is JAX's DynamicJaxprTracer
    show(t)
    return f(x), jnp.cos(x) * t
jax.grad(lambda x: f(show(x)))(1.0)
jax.jvp(lambda x: f(show(x)), (1.0,), (1.0,))
jax.vjp(lambda x: show(x) * 2, 1.0)
jax.jacrev(lambda x: show(x) * 2)(jnp.ones(2))
jax.hessian(lambda x: show(x) ** 3)(1.0)
jax.jit(jax.grad(lambda x: f(show(x))))(1.0)
"""

_JAXPRS = """
def f(x):
    return jnp.sin(jnp.cos(x))
def g(z):
    return jnp.real(z) ** 2 + jnp.imag(z) ** 2
result = [str(jax.make_jaxpr(jax.grad(f))(3.0)),
          str(jax.make_jaxpr(jax.grad(f))(jnp.float32(3.0))),
          str(jax.make_jaxpr(jax.grad(g))(3.0 + 4j)),
          str(jax.make_jaxpr(jax.linearize(f, jnp.ones(3))[1])(jnp.ones(3))),
          str(jax.make_jaxpr(lambda x, n: jax.lax.fori_loop(0, n, lambda i, c: c * 2.0, x))(
              jnp.ones(3), 5))]
"""

_LITERALS = """
functions = [(lambda x: x + 1, np.int32(1)), (lambda x: jax.lax.add(x, 1), np.int32(1)),
             (lambda x: x + 1, 1), (lambda x: x * 2, 1.0), (lambda x: x + 1j, np.complex64(1)),
             (lambda x: jax.lax.add(x, 1j), np.complex64(1)), (lambda x: x + jnp.ones(5), 1.0),
             (lambda x: jnp.where(x > 0, x, 0), np.int32(1)), (lambda x: x & True, True),
             (lambda x: jax.lax.mul(x, np.int8(3)), np.int8(1))]
result = [[repr(a) for e in jax.make_jaxpr(f)(x).eqns for a in e.invars
           if type(a).__name__ == "Literal"] for f, x in functions]
"""


@requires_jax
def test_array_reprs_are_jaxs():
    assert run_reference(_ARRAYS, library="plax") == run_reference(_ARRAYS)


@requires_jax
def test_literal_reprs_are_jaxs():
    """A weakly typed Python int (or complex) literal is JAX's `TypedInt(1, dtype=int32)`;
    the others show their value."""
    mine = run_reference(_LITERALS, library="plax")
    assert "Literal(TypedInt(1, dtype=int32))" in mine[1]
    assert mine == run_reference(_LITERALS)


@requires_jax
def test_tracer_reprs_are_jaxs():
    mine = run_reference(_TRACERS, library="plax")
    assert "JitTracer(float32[3])" in mine and "JVPTracer(primal=1.0, tangent=1.0)" in mine
    assert mine == run_reference(_TRACERS)


@requires_jax
def test_derivative_tracers_are_jaxs():
    """grad's tracers are LinearizeTracers (shown as GradTracer) and the tangents they
    stage JaxprTracers, not JVPTracers and JitTracers; jvp's are JVPTracers."""
    mine = run_reference(_DERIVATIVE_TRACERS, library="plax")
    assert "LinearizeTracer: GradTracer(primal=1.0, typeof(tangent)=f32[])" in mine
    assert "JaxprTracer: Traced<~float32[]:JaxprTrace>" in mine
    assert mine == run_reference(_DERIVATIVE_TRACERS)


@requires_jax
def test_gradient_and_loop_jaxprs_convert_as_jaxs():
    """A weak input's gradient is weak all through (the seed too): no conversion at
    the end; real and imag transpose with strong zeros (a complex input's gradient is
    strong); a staged tangent of a conversion's type is not converted again; a fori_loop
    keeps a weak bound of its index's dtype as it is."""
    mine = run_reference(_JAXPRS, library="plax")
    assert "convert_element_type" not in "".join(mine)
    assert mine == run_reference(_JAXPRS)
