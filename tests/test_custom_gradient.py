"""`custom_gradient`, `closure_convert`, `ensure_compile_time_eval`, the checkpoint
policies module and `saved_residuals`: against known answers, finite
differences and, in a subprocess, JAX."""
from __future__ import annotations

import numpy as np
import pytest
from jax_differential import assert_same_as_jax, requires_jax, run_body, run_in_jax

import plax
import plax.numpy as jnp
from plax.ad_checkpoint import checkpoint_name, print_saved_residuals, saved_residuals


@plax.custom_gradient
def _clipped_square(x):
    return x * x, lambda g: (jnp.clip(g * 2.0 * x, -1.0, 1.0),)


def test_custom_gradient_calls_the_users_vjp():
    np.testing.assert_allclose(_clipped_square(3.0), 9.0)
    np.testing.assert_allclose(plax.grad(_clipped_square)(3.0), 1.0)
    np.testing.assert_allclose(plax.grad(_clipped_square)(0.1), 0.2, rtol=1e-6)
    xs = np.array([0.1, 3.0], np.float32)
    np.testing.assert_allclose(plax.vmap(plax.grad(_clipped_square))(xs), [0.2, 1.0],
                               rtol=1e-6)
    np.testing.assert_allclose(plax.jit(plax.grad(_clipped_square))(0.1), 0.2, rtol=1e-6)


def test_custom_gradient_several_arguments_and_bare_cotangent():
    @plax.custom_gradient
    def h(x, y):
        return x * y, lambda g: (g * y, g * x * 10.0)
    np.testing.assert_allclose(plax.grad(h, argnums=(0, 1))(2.0, 3.0), (3.0, 20.0))

    @plax.custom_gradient
    def k(x):
        return x * 2.0, lambda g: g * 5.0  # one argument: the bare cotangent
    np.testing.assert_allclose(plax.grad(k)(1.0), 5.0)


def test_custom_gradient_closing_over_traced_values():
    def loss(w, x):
        @plax.custom_gradient
        def scaled(v):
            return v * w, lambda g: (g * w * 2.0,)  # closes over w, a tracer
        return scaled(x)
    np.testing.assert_allclose(plax.grad(loss, argnums=1)(3.0, 1.0), 6.0)
    np.testing.assert_allclose(plax.jit(plax.grad(loss, argnums=1))(3.0, 1.0), 6.0)


def test_custom_gradient_bad_rules():
    @plax.custom_gradient
    def two(x):
        return x, lambda g: (g, g)
    with pytest.raises(TypeError, match="tuple of length 1"):
        plax.grad(two)(1.0)

    @plax.custom_gradient
    def not_fn(x):
        return x, 3.0
    with pytest.raises(TypeError, match="vjp function"):
        plax.grad(not_fn)(1.0)
    with pytest.raises(TypeError, match="forward-mode"):
        plax.jvp(_clipped_square, (1.0,), (1.0,))


def test_closure_convert_hoists_traced_closures():
    def outer(c):
        converted, consts = plax.closure_convert(lambda x: x * c + np.float32(1.0), 1.0)
        assert len(consts) == 1
        return converted(2.0, *consts)
    np.testing.assert_allclose(plax.grad(outer)(3.0), 2.0)
    converted, consts = plax.closure_convert(lambda x: x * 3.0, 1.0)
    assert consts == []
    np.testing.assert_allclose(converted(2.0), 6.0)
    with pytest.raises(TypeError, match="structure"):
        converted((2.0, 1.0))


def test_closure_convert_inside_custom_vjp():
    """The documented use: a custom_vjp rule taking the closure as arguments."""
    apply = plax.custom_vjp(lambda f, x, *consts: f(x, *consts), nondiff_argnums=(0,))
    apply.defvjp(lambda f, x, *c: (f(x, *c), (x, c)),
                 lambda f, res, g: tuple(plax.vjp(f, res[0], *res[1])[1](g)))

    def loss(c, x):
        converted, consts = plax.closure_convert(lambda v: jnp.sin(v) * c, x)
        return apply(converted, x, *consts)
    got = plax.grad(loss, argnums=(0, 1))(2.0, 0.5)
    np.testing.assert_allclose(got, (np.sin(0.5), 2.0 * np.cos(0.5)), rtol=1e-6)


def test_ensure_compile_time_eval():
    seen = []

    @plax.jit
    def f(x):
        with plax.ensure_compile_time_eval():
            y = jnp.sin(2.0)
            seen.append(type(y))
            if y > 0:  # concrete: Python control flow works
                y = y * 2.0
            z = x + 1.0  # a traced value stays traced
        return z * y
    np.testing.assert_allclose(f(1.0), 2.0 * 2.0 * np.sin(2.0), rtol=1e-6)
    assert seen == [plax.Array]
    text = str(plax.make_jaxpr(f)(1.0))
    assert "sin" not in text and "add" in text
    with plax.ensure_compile_time_eval():  # outside tracing: nothing changes
        assert isinstance(jnp.ones(2) + 1, plax.Array)


def test_checkpoint_policies_module():
    import plax.checkpoint_policies as cp
    assert cp is plax.checkpoint_policies is plax.ad_checkpoint.checkpoint_policies
    names = {"checkpoint_dots", "checkpoint_dots_with_no_batch_dims", "dots_saveable",
             "dots_with_no_batch_dims_saveable", "everything_saveable", "nothing_saveable",
             "offload_dot_with_no_batch_dims", "save_and_offload_only_these_names",
             "save_any_names_but_these", "save_anything_except_these_names",
             "save_from_both_policies", "save_only_these_names"}
    assert set(cp.__all__) == names
    with pytest.raises(ValueError, match="should not intersect"):
        cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                             names_which_can_be_offloaded=["a"],
                                             offload_src="device", offload_dst="pinned_host")


def _named(x):
    a = checkpoint_name(jnp.sin(x), "a")
    b = checkpoint_name(jnp.cos(a), "b")
    return jnp.sum(jnp.sin(b))


@pytest.mark.parametrize("policy, saved", [
    ("save_any_names_but_these('a')", ["b"]),
    ("save_from_both_policies(cp.save_only_these_names('a'), cp.save_only_these_names('b'))",
     ["a", "b"]),
    ("save_and_offload_only_these_names(names_which_can_be_saved=['a'], "
     "names_which_can_be_offloaded=['b'], offload_src='device', offload_dst='pinned_host')",
     ["a", "b"]),
])
def test_policies_decide_the_residuals(policy, saved):
    cp = plax.checkpoint_policies
    f = plax.checkpoint(_named, policy=eval("cp." + policy, {"cp": cp}))
    x = np.linspace(0.1, 1.0, 3, dtype=np.float32)
    residuals = saved_residuals(f, x)
    assert [r.split("'")[1] for _, r in residuals if r.startswith("named ")] == saved, residuals
    np.testing.assert_allclose(plax.grad(f)(x), plax.grad(_named)(x), rtol=1e-6)


def test_a_policy_answering_nonsense_raises():
    f = plax.checkpoint(_named, policy=lambda *a, **k: "x")
    with pytest.raises(TypeError, match="remat policy should be a bool"):
        plax.grad(f)(np.ones(3, np.float32))


def test_saved_residuals_names_arguments_and_lines(capsys):
    def f(x, w):
        y = jnp.sin(x) @ w
        return jnp.sum(jnp.cos(y))
    x = np.ones((3, 3), np.float32)
    got = saved_residuals(f, x, x)
    assert all(a.shape == (3, 3) for a, _ in got)
    origins = sorted(r.split(" from ")[0] if r.startswith("output") else r for _, r in got)
    assert origins == ["from the argument w", "output of cos", "output of sin",
                       "output of sin"]
    assert any("test_custom_gradient.py" in r and "<locals>.f)" in r for _, r in got), got
    remat = plax.checkpoint(f, policy=plax.checkpoint_policies.dots_saveable)
    assert sorted(r.split(" from ")[0] if r.startswith("output") else r
                  for _, r in saved_residuals(remat, x, x)) == [
        "from the argument w", "from the argument x", "output of dot_general"]
    print_saved_residuals(plax.checkpoint(f), x, x)
    assert capsys.readouterr().out.splitlines() == ["f32[3,3] from the argument x",
                                                    "f32[3,3] from the argument w"]


@requires_jax
def test_same_as_jax():
    assert_same_as_jax("""
        @lib.custom_gradient
        def f(x):
            return jnp.sin(x), lambda g: (g * jnp.cos(x) * 3.0,)
        x = inputs["x"]
        results["grad"] = lib.vmap(lib.grad(f))(x)
        results["value"] = f(x)
        def outer(c):
            conv, consts = lib.closure_convert(lambda v: v * c, 1.0)
            return conv(2.0, *consts) + len(consts)
        results["cc"] = lib.grad(outer)(3.0)
    """, {"x": np.linspace(-1, 1, 4, dtype=np.float32)})


@requires_jax
def test_saved_residual_counts_same_as_jax():
    body = """
        from importlib import import_module
        sr = getattr(import_module(lib.__name__ + "._src.ad_checkpoint")
                     if lib.__name__ == "jax" else lib.ad_checkpoint, "saved_residuals")
        cp = lib.checkpoint_policies
        def f(x, w):
            return jnp.sum(jnp.cos(jnp.sin(x) @ w))
        x = inputs["x"]
        for name, fn in [("plain", f), ("remat", lib.checkpoint(f)),
                         ("dots", lib.checkpoint(f, policy=cp.dots_saveable))]:
            got = sr(fn, x, x)
            results[name] = np.int64(len(got))
            results[name + "_from_args"] = np.int64(sum(r.startswith("from the argument")
                                                        for _, r in got))
    """
    inputs = {"x": np.ones((3, 3), np.float32)}
    mine, theirs = run_body(body, inputs), run_in_jax(body, inputs)
    assert {k: int(v) for k, v in mine.items()} == {k: int(v) for k, v in theirs.items()}
