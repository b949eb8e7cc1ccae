"""`plax.custom_batching`: custom_vmap's rule under vmap (and its jvp), composed
with jit, reverse mode outside vmap, the checks of the rule's outputs, and
sequential_vmap; against NumPy and, in a subprocess, JAX."""
from __future__ import annotations

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax

import plax
import plax.numpy as jnp
from plax.custom_batching import custom_vmap, sequential_vmap


def _recording_cos_rule():
    """sin whose batching rule (deliberately) computes cos, recording its calls."""
    calls = []

    @custom_vmap
    def f(x):
        return jnp.sin(x)

    @f.def_vmap
    def rule(axis_size, in_batched, x):
        calls.append((axis_size, in_batched))
        return jnp.cos(x), in_batched[0]
    return f, calls


X = np.linspace(-1.0, 1.0, 3, dtype=np.float32)


def test_unbatched_calls_run_the_function():
    f, calls = _recording_cos_rule()
    np.testing.assert_allclose(f(X[0]), np.sin(X[0]), rtol=1e-6)
    np.testing.assert_allclose(plax.jit(f)(X[0]), np.sin(X[0]), rtol=1e-6)
    assert calls == []
    assert "custom_vmap_call" in str(plax.make_jaxpr(f)(X[0]))


@pytest.mark.parametrize("wrap", ["plain", "jit_outside", "jit_inside"])
def test_vmap_uses_the_rule(wrap):
    f, calls = _recording_cos_rule()
    fn = {"plain": plax.vmap(f), "jit_outside": plax.jit(plax.vmap(f)),
          "jit_inside": plax.vmap(plax.jit(f))}[wrap]
    np.testing.assert_allclose(fn(X), np.cos(X), rtol=1e-6)
    assert calls == [(3, [True])]


def test_rule_sees_in_batched_per_leaf_and_batch_dim_first():
    seen = []

    @custom_vmap
    def f(pair, scale):
        return pair["a"] * scale + pair["b"]

    @f.def_vmap
    def rule(axis_size, in_batched, pair, scale):
        seen.append((axis_size, in_batched, pair["a"].shape, np.shape(scale)))
        return pair["a"] * scale + pair["b"], True

    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    out = plax.vmap(f, in_axes=({"a": 1, "b": None}, None))({"a": a, "b": 1.0}, 2.0)
    np.testing.assert_allclose(out, a.T * 2.0 + 1.0)
    assert seen == [(3, [{"a": True, "b": False}, False], (3, 2), ())]


def test_unbatched_rule_output_and_out_axes():
    @custom_vmap
    def total(x):
        return jnp.sum(x)

    total.def_vmap(lambda n, b, x: (jnp.sum(x, axis=1), True))
    xs = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(plax.vmap(total, in_axes=1)(xs), xs.sum(0))

    @custom_vmap
    def const(x):
        return jnp.ones(2)

    const.def_vmap(lambda n, b, x: (jnp.ones(2), False))
    out = plax.vmap(const, out_axes=1)(np.zeros(3, np.float32))
    np.testing.assert_allclose(out, np.ones((2, 3)))


def test_nested_vmap_applies_the_rule_at_each_level():
    f, calls = _recording_cos_rule()
    xs = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(plax.vmap(plax.vmap(f))(xs), np.cos(xs), rtol=1e-6)
    assert calls == [(3, [True])]  # the outer vmap batches the rule's own operations


def test_closed_over_values_reach_the_rule_through_its_closure():
    def outer(c):
        @custom_vmap
        def h(x):
            return x * c

        h.def_vmap(lambda n, b, x: (x * c + 100.0, True))
        return plax.vmap(h)(jnp.ones(2))
    np.testing.assert_allclose(outer(3.0), [103.0, 103.0])
    np.testing.assert_allclose(plax.vmap(outer)(X), (X + 100.0)[:, None] * np.ones(2))


def test_jvp_and_vmap_of_jvp():
    f, calls = _recording_cos_rule()
    p, t = plax.jvp(f, (X[1],), (2.0 * np.ones((), np.float32),))
    np.testing.assert_allclose([p, t], [np.sin(X[1]), 2.0 * np.cos(X[1])], rtol=1e-6)
    assert calls == []
    p, t = plax.vmap(lambda x: plax.jvp(f, (x,), (x,)))(X)
    # the rule's jvp: cos and its derivative -sin
    np.testing.assert_allclose(p, np.cos(X), rtol=1e-6)
    np.testing.assert_allclose(t, -np.sin(X) * X, rtol=1e-6)
    assert calls == [(3, [True])]


def test_jvp_with_primal_batched_and_tangent_not():
    f, calls = _recording_cos_rule()
    p, t = plax.vmap(lambda x: plax.jvp(f, (x,), (np.float32(1.0),)))(X)
    np.testing.assert_allclose(t, -np.sin(X), rtol=1e-6)


def test_grad_of_vmap_uses_the_rule_and_grad_of_the_function_raises():
    f, _ = _recording_cos_rule()
    g = plax.grad(lambda x: plax.vmap(f)(x).sum())(X)
    np.testing.assert_allclose(g, -np.sin(X), rtol=1e-6)
    for fn in (plax.grad(f), plax.jit(plax.grad(f)), plax.grad(plax.jit(f))):
        with pytest.raises(ValueError, match="reverse-mode"):
            fn(X[0])


def test_differentiating_a_closed_over_value_raises():
    def outer(c):
        @custom_vmap
        def h(x):
            return x * c
        h.def_vmap(lambda n, b, x: (x * c, True))
        return h(1.0)
    with pytest.raises(TypeError, match="closed-over value"):
        plax.jvp(outer, (2.0,), (1.0,))


def test_missing_rule_and_bad_rule_outputs_raise():
    @custom_vmap
    def f(x, y):
        return x * y
    with pytest.raises(AttributeError, match="No batching rule defined"):
        f(1.0, 2.0)
    with pytest.raises(TypeError, match="not callable|callable"):
        custom_vmap(3)

    def vmapped_with(rule):
        g = custom_vmap(lambda x, y: x * y)
        g.def_vmap(rule)
        return plax.vmap(g, in_axes=(0, None))(np.ones(2, np.float32), 1.0)

    with pytest.raises(ValueError, match="do not match"):
        vmapped_with(lambda n, b, x, y: (x * y, [True]))
    with pytest.raises(ValueError, match=r"unbatched output of f32\[\] .* shape \(\)"):
        vmapped_with(lambda n, b, x, y: (x * y, False))
    with pytest.raises(ValueError, match=r"batched output .* shape \(2,\)"):
        vmapped_with(lambda n, b, x, y: (x[0] * y, True))
    with pytest.raises(ValueError, match="dtype float32"):
        vmapped_with(lambda n, b, x, y: ((x * y).astype(jnp.int32), True))
    with pytest.raises(TypeError, match="pair"):
        vmapped_with(lambda n, b, x, y: x * y)
    with pytest.raises(TypeError, match="must be bools"):
        vmapped_with(lambda n, b, x, y: (x * y, "yes"))


def test_keyword_arguments_are_bound_by_position():
    seen = []

    @custom_vmap
    def f(x, y=2.0):
        return x * y

    @f.def_vmap
    def rule(n, in_batched, x, y):
        seen.append(in_batched)
        return x * y, True
    np.testing.assert_allclose(plax.vmap(lambda x: f(x, y=3.0))(X), X * 3.0)
    assert seen == [[True, False]]


def test_sequential_vmap_loops_and_nests():
    s = sequential_vmap(lambda x, y: x * y + 1.0)
    np.testing.assert_allclose(plax.vmap(s, in_axes=(0, None))(X, 2.0), X * 2.0 + 1.0)
    assert "scan" in str(plax.make_jaxpr(plax.vmap(s))(X, X))
    xs = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(plax.vmap(plax.vmap(s))(xs, xs), xs * xs + 1.0)
    text = str(plax.make_jaxpr(plax.vmap(plax.vmap(s)))(xs, xs))
    assert text.count("scan") == 2


@requires_jax
def test_same_as_jax():
    assert_same_as_jax("""
        cv = lib.custom_batching.custom_vmap

        @cv
        def f(x, y):
            return jnp.sin(x) * y

        @f.def_vmap
        def rule(axis_size, in_batched, x, y):
            xb, yb = in_batched
            out = jnp.cos(x) * y + axis_size
            return out, xb or yb

        x, y = inputs["x"], inputs["y"]
        results["vmap"] = lib.vmap(f, in_axes=(0, None))(x, y[0])
        results["vmap_both"] = lib.jit(lib.vmap(f))(x, y)
        results["vmap_jvp"] = lib.vmap(lambda a, b: lib.jvp(f, (a, b), (b, a))[1])(x, y)
        results["grad_vmap"] = lib.grad(lambda a: lib.vmap(f, in_axes=(0, None))(a, 2.0)
                                        .sum())(x)
        seq = lib.custom_batching.sequential_vmap(lambda a, b: a * b - 1.0)
        results["seq"] = lib.vmap(seq, in_axes=(None, 0))(x[0], y)
    """, {"x": np.linspace(-1, 1, 4, dtype=np.float32),
          "y": np.linspace(0.5, 2, 4, dtype=np.float32)})
