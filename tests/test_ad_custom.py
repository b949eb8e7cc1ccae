"""custom_jvp and custom_vjp: the user's rules are used (not the function's own
derivative) in every mode, through jit, at second order, under vmap, and bad rules
are reported naming the function."""
import functools

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax.custom_derivatives import SymbolicZero
from jax_reference import requires_jax, run_reference
from plax.extend.core import check_jaxpr

X = np.float32(0.5)
Y = np.float32(1.5)
XS = np.array([0.1, 0.4, 0.9], np.float32)


# A rule that deliberately disagrees with the true derivative (factor 2), so using
# it is observable.
@plax.custom_jvp
def sin2(x):
    return jnp.sin(x)


@sin2.defjvp
def sin2_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return sin2(x), 2.0 * jnp.cos(x) * t


@plax.custom_vjp
def sin_times(x, y):
    return jnp.sin(x) * y


def sin_times_fwd(x, y):
    return sin_times(x, y), {"cos": jnp.cos(x), "sin_y": (jnp.sin(x), y)}


def sin_times_bwd(res, g):
    sin_x, y = res["sin_y"]
    return 2.0 * res["cos"] * y * g, sin_x * g


sin_times.defvjp(sin_times_fwd, sin_times_bwd)


def test_custom_jvp_rule_used_in_every_mode():
    np.testing.assert_allclose(sin2(X), np.sin(X), rtol=1e-6)
    want = 2 * np.cos(X)
    _, t = plax.jvp(sin2, (X,), (np.float32(1.0),))
    np.testing.assert_allclose(t, want, rtol=1e-6)
    for g in (plax.grad(sin2), plax.jit(plax.grad(sin2)), plax.grad(plax.jit(sin2))):
        np.testing.assert_allclose(g(X), want, rtol=1e-6)
    # Second order differentiates the rule: d/dx 2cos(x) = -2 sin(x).
    np.testing.assert_allclose(plax.grad(plax.grad(sin2))(X), -2 * np.sin(X), rtol=1e-5)
    np.testing.assert_allclose(plax.jacfwd(plax.grad(sin2))(X), -2 * np.sin(X), rtol=1e-5)


def test_custom_jvp_staged_as_primitive_with_names():
    closed = plax.make_jaxpr(sin2)(X)
    check_jaxpr(closed)
    (eqn,) = closed.eqns
    assert eqn.primitive.name == "custom_jvp_call"
    assert eqn.params["call_jaxpr"].jaxpr.debug_info.arg_names == ("x",)
    assert "custom_jvp_call" in str(closed)
    for g in (plax.make_jaxpr(plax.grad(sin2))(X),
              plax.make_jaxpr(plax.grad(plax.jit(sin2)))(X)):
        check_jaxpr(g)
        assert g.jaxpr.debug_info.arg_names == ("x",)
    text = plax.jit(lambda x: sin2(x) + sin_times(x, x)).lower(X).as_text()
    assert "func.func private @sin2" in text and "func.func private @sin_times" in text


def test_log1pexp_stable_gradient():
    @plax.custom_jvp
    def log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    log1pexp.defjvps(lambda t, ans, x: t * (1.0 - 1.0 / (1.0 + jnp.exp(x))))
    assert float(plax.grad(log1pexp)(np.float32(100.0))) == 1.0
    np.testing.assert_allclose(plax.grad(log1pexp)(X), 1 / (1 + np.exp(-X)), rtol=1e-6)


def test_defjvps_several_arguments_and_nondiff_argnums():
    @plax.custom_jvp
    def prod(x, y):
        return x * y

    prod.defjvps(lambda g, ans, x, y: 3.0 * g * y, None)
    gx, gy = plax.grad(prod, (0, 1))(X, Y)
    assert np.isclose(gx, 3 * Y) and float(gy) == 0.0

    @functools.partial(plax.custom_jvp, nondiff_argnums=(0,))
    def apply_nd(fn, x):
        return fn(x)

    @apply_nd.defjvp
    def apply_jvp(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return apply_nd(fn, x), 10.0 * t

    assert float(plax.grad(lambda x: apply_nd(jnp.sin, x))(X)) == 10.0
    assert float(plax.jit(plax.grad(lambda x: apply_nd(jnp.cos, x)))(X)) == 10.0


@pytest.mark.parametrize("symbolic", [False, True])
def test_symbolic_zeros(symbolic):
    seen = []

    @plax.custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        seen.append(type(ty))
        t = 0.0 * x
        if not isinstance(tx, SymbolicZero):
            t = t + tx * y
        if not isinstance(ty, SymbolicZero):
            t = t + x * ty
        return f(x, y), t

    f.defjvp(f_jvp, symbolic_zeros=symbolic)
    assert np.isclose(plax.grad(f)(X, Y), Y)
    assert (seen[-1] is SymbolicZero) == symbolic


def test_custom_jvp_errors_name_the_function():
    @plax.custom_jvp
    def f(x):
        return jnp.sin(x)

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function f"):
        f(X)
    f.defjvp(lambda p, t: (f(p[0]), (t[0], t[0])))
    with pytest.raises(TypeError, match="function f must produce primal and tangent outputs "
                                        "with equal container"):
        plax.jvp(f, (X,), (X,))
    f.defjvp(lambda p, t: (f(p[0]), jnp.ones(3, np.float32)))
    with pytest.raises(TypeError, match=r"corresponding shapes and dtypes.*f32\[3\]"):
        plax.grad(f)(X)

    def closes_over(x):
        @plax.custom_jvp
        def g(y):
            return y * x
        g.defjvp(lambda p, t: (g(p[0]), t[0] * x))
        return g(1.0)
    # Staged (under jit), the closure is seen and named; eagerly the rule runs on concrete
    # values and meets the closed-over tracer: JAX's UnexpectedTracerError in both cases.
    with pytest.raises(TypeError, match="custom_jvp function g with respect to a closed-over"):
        plax.jit(plax.grad(closes_over))(X)
    with pytest.raises(plax.errors.UnexpectedTracerError):
        plax.grad(closes_over)(X)


def test_custom_vjp_rule_used_residual_pytree_and_jit():
    np.testing.assert_allclose(sin_times(X, Y), np.sin(X) * Y, rtol=1e-6)
    want = (2 * np.cos(X) * Y, np.sin(X))
    for g in (plax.grad(sin_times, (0, 1)), plax.jit(plax.grad(sin_times, (0, 1))),
              plax.grad(plax.jit(sin_times), (0, 1))):
        np.testing.assert_allclose(g(X, Y), want, rtol=1e-6)
    # Reverse over reverse differentiates the bwd rule: d/dx 2cos(x)y = -2 sin(x) y.
    np.testing.assert_allclose(plax.grad(plax.grad(sin_times))(X, Y), -2 * np.sin(X) * Y,
                               rtol=1e-5)
    closed = plax.make_jaxpr(sin_times)(X, Y)
    check_jaxpr(closed)
    assert closed.eqns[0].primitive.name == "custom_vjp_call"
    check_jaxpr(plax.make_jaxpr(plax.grad(sin_times))(X, Y))


def test_custom_vjp_bwd_gets_scalar_residuals_as_arrays():
    """A 0-d residual reaches bwd as an Array, as in JAX (it is written inline in the
    linear map's Jaxpr; it was a NumPy scalar, which flax's nnx.custom_vjp cannot
    update in place), and its weak type is kept."""
    seen = []

    @plax.custom_vjp
    def f(x):
        return jnp.sin(x)

    def bwd(res, g):
        seen.append(res)
        return (res[0] * g,)

    f.defvjp(lambda x: (jnp.sin(x), (jnp.cos(x), jnp.multiply(x, 2))), bwd)
    np.testing.assert_allclose(plax.grad(f)(jnp.float32(1.0)), np.cos(np.float32(1.0)),
                               rtol=1e-6)
    np.testing.assert_allclose(plax.grad(f)(1.0), np.cos(1.0), rtol=1e-6)
    (cos, twice), (weak_cos, weak_twice) = seen
    assert all(type(r) is plax.Array for r in (cos, twice, weak_cos, weak_twice))
    assert not cos.weak_type and not twice.weak_type
    assert weak_cos.weak_type and weak_twice.weak_type  # as JAX's
    np.testing.assert_allclose(twice, 2.0)


def test_custom_vjp_bwd_runs_without_cotangents_when_its_outputs_are_used():
    """As JAX: a custom_vjp whose outputs feed the rest of the linear map runs its bwd
    even when their cotangents are zero (a bwd may return statistics as 'gradients',
    as flax's fp8 ops do); one whose outputs reach nothing (stop_gradient) does not.
    The numbers are JAX's."""
    @plax.custom_vjp
    def track(x, stat):
        return x

    track.defvjp(lambda x, stat: (x, jnp.maximum(stat, jnp.abs(x).max())),
                 lambda new, g: (g, new))

    @plax.custom_vjp
    def block(y, x):  # never a cotangent for y
        return y * x

    block.defvjp(lambda y, x: (y * x, y), lambda y, g: (None, g * y))
    x, s = np.float32([1.0, -3.0]), np.float32(2.0)
    cases = [(lambda x, s: block(track(x, s), x).sum(), ([1.0, -3.0], 3.0)),
             (lambda x, s: plax.lax.stop_gradient(track(x, s)).sum() + x.sum(),
              ([1.0, 1.0], 0.0))]
    for f, (want_x, want_s) in cases:
        for g in (plax.grad(f, (0, 1)), plax.jit(plax.grad(f, (0, 1)))):
            gx, gs = g(x, s)
            np.testing.assert_allclose(gx, want_x)
            np.testing.assert_allclose(gs, want_s)


def test_nondiff_argnums_may_name_a_parameter_left_to_its_default():
    """As JAX resolves a call's arguments: defaults are filled in, so nondiff_argnums
    may name a parameter the call leaves out (flax's fp8 dot_general does); keyword
    arguments bind by name, keyword-only ones passed are refused."""
    @functools.partial(plax.custom_jvp, nondiff_argnums=(1, 2))
    def scaled(x, scale=3.0, shift=None):
        return x * scale

    @scaled.defjvp
    def scaled_jvp(scale, shift, primals, tangents):
        assert shift is None
        return scaled(primals[0], scale), 10.0 * scale * tangents[0]

    np.testing.assert_allclose(plax.grad(scaled)(X), 30.0)
    np.testing.assert_allclose(plax.grad(lambda x: scaled(x, scale=2.0))(X), 20.0)
    np.testing.assert_allclose(plax.jit(plax.grad(scaled))(X), 30.0)

    @plax.custom_jvp
    def keyword_only(x, *, y=1.0):
        return x * y

    keyword_only.defjvp(lambda primals, tangents: (keyword_only(*primals), tangents[0]))
    np.testing.assert_allclose(plax.grad(keyword_only)(X), 1.0)  # y left to its default
    with pytest.raises(TypeError, match="keyword-only arguments: \\['y'\\]"):
        plax.grad(lambda x: keyword_only(x, y=2.0))(X)


def test_custom_vjp_nondiff_argnums_and_none_cotangent():
    def scale_fwd(s, x, y):
        return scale(s, x, y), y

    def scale_bwd(s, y, g):
        return (s * y * g, None)

    scale = plax.custom_vjp(lambda s, x, y: s * x * y, nondiff_argnums=(0,))
    scale.defvjp(scale_fwd, scale_bwd)
    gx, gy = plax.grad(lambda x, y: scale(4.0, x, y), (0, 1))(X, Y)
    assert np.isclose(gx, 4 * Y) and float(gy) == 0.0


def test_clip_gradient_under_vmap():
    @plax.custom_vjp
    def clip_gradient(x):
        return x

    clip_gradient.defvjp(lambda x: (x, None),
                         lambda _, g: (jnp.clip(g, -1.0, 1.0),))
    f = lambda x: jnp.sum(clip_gradient(x) * jnp.array([0.5, 3.0, -4.0], np.float32))
    np.testing.assert_allclose(plax.grad(f)(XS), [0.5, 1.0, -1.0])
    per_example = plax.vmap(plax.grad(lambda x: 3.0 * clip_gradient(x)))(XS)
    np.testing.assert_allclose(per_example, [1.0, 1.0, 1.0])


def test_custom_rules_under_vmap():
    np.testing.assert_allclose(plax.vmap(sin2)(XS), np.sin(XS), rtol=1e-6)
    total = lambda xs, y: jnp.sum(plax.vmap(sin_times, (0, None))(xs, y))
    gx, gy = plax.grad(total, (0, 1))(XS, Y)
    np.testing.assert_allclose(gx, 2 * np.cos(XS) * Y, rtol=1e-6)
    np.testing.assert_allclose(gy, np.sum(np.sin(XS)), rtol=1e-6)
    np.testing.assert_allclose(plax.grad(lambda xs: jnp.sum(plax.vmap(sin2)(xs)))(XS),
                               2 * np.cos(XS), rtol=1e-6)


def test_custom_vjp_errors_name_the_function():
    @plax.custom_vjp
    def f(x, y):
        return x * y

    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function f"):
        f(X, Y)

    def short_bwd(res, g):
        return (g,)
    f.defvjp(lambda x, y: (f(x, y), None), short_bwd)
    with pytest.raises(TypeError, match="bwd rule short_bwd for function 'f' must produce a "
                                        "tuple of length 2.*got a tuple of length 1"):
        plax.grad(f)(X, Y)

    def shape_bwd(res, g):
        return (g, jnp.ones(3, np.float32))
    f.defvjp(lambda x, y: (f(x, y), None), shape_bwd)
    with pytest.raises(ValueError, match=r"shape_bwd for function 'f'.*argument 1.*f32\[3\], "
                                         r"expected f32\[\]"):
        plax.grad(f)(X, Y)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        plax.jvp(f, (X, Y), (X, Y))


def test_custom_vjp_symbolic_zeros_and_second_order():
    seen = {}

    @plax.custom_vjp
    def two(x, y):
        return x * y, jnp.sin(x)

    def two_fwd(x, y):
        seen["perturbed"] = (x.perturbed, y.perturbed)
        # each is one pytree leaf, as in JAX (equinox maps over them whole)
        seen["leaves"] = len(plax.tree_util.tree_leaves((x, y)))
        return two(x.value, y.value), (x.value, y.value)

    def two_bwd(res, cts):
        x, y = res
        seen["cts"] = tuple(type(c) for c in cts)
        ct_prod, ct_sin = cts
        gx = ct_prod * y if not isinstance(ct_prod, SymbolicZero) else 0.0 * x
        if not isinstance(ct_sin, SymbolicZero):
            gx = gx + ct_sin * jnp.cos(x)
        return gx, (None if isinstance(ct_prod, SymbolicZero) else ct_prod * x)

    two.defvjp(two_fwd, two_bwd, symbolic_zeros=True)
    g = plax.grad(lambda x: two(x, Y)[0])(X)
    assert np.isclose(g, Y)
    assert seen["perturbed"] == (True, False) and seen["leaves"] == 2
    assert seen["cts"][1] is SymbolicZero
    # Reverse over reverse runs the bwd rule on differentiable values; forward over
    # reverse (hessian = jacfwd(jacrev)) meets the forward-mode limit, as in JAX.
    np.testing.assert_allclose(plax.grad(plax.grad(lambda x: two(x, Y)[1]))(X), -np.sin(X),
                               rtol=1e-5)
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        plax.hessian(lambda x: two(x, Y)[1])(X)


def test_custom_jvp_function_used_linearly_in_its_own_rule_transposes():
    @plax.custom_jvp
    def triple(x):
        return 3.0 * x

    @triple.defjvp
    def triple_jvp(primals, tangents):
        return triple(primals[0]), triple(tangents[0])

    assert float(plax.grad(lambda x: triple(jnp.sin(x)))(X)) == pytest.approx(3 * np.cos(X))
    closed = plax.make_jaxpr(plax.grad(triple))(X)
    check_jaxpr(closed)


def test_grad_of_a_jitted_custom_vjp_traces_bwd_once_and_compiles_nothing_again():
    """An eager `grad(jit(f))` each step reuses the jit call's transformed Jaxprs (as
    JAX's): bwd's Python runs once, and the second step compiles nothing."""
    from plax import monitoring
    traces, compiles = [], []

    @plax.custom_vjp
    def f(x):
        return jnp.sin(x)
    f.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (traces.append(1) or g * 2.0,))

    def listen(event, secs, **kw):
        compiles.append(event)
    step = plax.grad(plax.jit(lambda x: f(x) * 3.0))
    assert float(step(X)) == 6.0
    monitoring.register_event_duration_secs_listener(listen)
    try:
        assert float(step(X)) == 6.0
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert len(traces) == 1
    assert "/jax/core/compile/backend_compile_duration" not in compiles


_FORWARD_MODE_OF_CUSTOM_VJP = """
@jax.custom_vjp
def f(x):
    return jnp.sin(x)
f.defvjp(lambda x: (f(x), x), lambda x, g: (g * jnp.cos(x),))
result = []
for call in (lambda: jax.jvp(f, (1.0,), (1.0,)), lambda: jax.jacfwd(f)(1.0),
             lambda: jax.hessian(f)(1.0), lambda: jax.jit(jax.jacfwd(f))(1.0)):
    try:
        call()
        result.append(None)
    except Exception as e:
        result.append([type(e).__name__, str(e)])
"""


@requires_jax
def test_forward_mode_of_a_custom_vjp_function_raises_jaxs_error():
    mine = run_reference(_FORWARD_MODE_OF_CUSTOM_VJP, library="plax")
    assert mine[0] == ["TypeError", "can't apply forward-mode autodiff (jvp) to a custom_vjp "
                                    "function."]
    assert mine == run_reference(_FORWARD_MODE_OF_CUSTOM_VJP)
