"""checkpoint/remat: values unchanged, gradients unchanged, and the residuals reverse
mode saves (the leaves of `vjp`'s `f_vjp`) follow the policy."""
import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.numpy as jnp
from plax.ad_checkpoint import checkpoint_name, checkpoint_policies as cp
from plax.extend.core import check_jaxpr

X = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5) / 4
W = (np.arange(9, dtype=np.float32).reshape(3, 3) - 4) / 5


def layers(x, w):
    h = checkpoint_name(jnp.sin(x @ w), "h")
    return jnp.sum(jnp.sin(h @ w))


def _residuals(f):
    _, f_vjp = plax.vjp(f, X, W)
    return plax.tree_util.tree_leaves(f_vjp)


GRAD = plax.grad(layers, (0, 1))(X, W)


@pytest.mark.parametrize("policy, extra", [
    (None, 0), (cp.nothing_saveable, 0), (cp.save_only_these_names("h"), 1),
    (cp.save_only_these_names("other"), 0), (cp.dots_saveable, 2),
    (cp.dots_with_no_batch_dims_saveable, 2), (cp.everything_saveable, 3)])
def test_residuals_follow_the_policy(policy, extra):
    f = plax.checkpoint(layers, policy=policy)
    # (the sum of sines nearly cancels: compared to the terms' rounding, not its own)
    np.testing.assert_allclose(f(X, W), layers(X, W), rtol=1e-6, atol=1e-6)
    residuals = _residuals(f)
    # The checkpoint's inputs are always saved; then what the policy allows.
    assert len(residuals) == 2 + extra
    assert residuals[0] is X and residuals[1] is W
    _, f_vjp = plax.vjp(f, X, W)
    for got, want in zip(f_vjp(np.float32(1.0)), GRAD):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_saved_named_value_is_the_named_one():
    _, _, h = _residuals(plax.remat(layers, policy=cp.save_only_these_names("h")))
    np.testing.assert_allclose(h, np.sin(X @ W), rtol=1e-6)


def test_dots_with_batch_dims_are_not_saved_by_the_no_batch_policy():
    def f(a):
        return jnp.sum(jnp.sin(plax.lax.batch_matmul(a, a)))
    a = np.ones((2, 2, 2), np.float32) / 3
    n_dots = len(plax.tree_util.tree_leaves(plax.vjp(plax.checkpoint(
        f, policy=cp.dots_saveable), a)[1]))
    n_no_batch = len(plax.tree_util.tree_leaves(plax.vjp(plax.checkpoint(
        f, policy=cp.dots_with_no_batch_dims_saveable), a)[1]))
    assert (n_dots, n_no_batch) == (2, 1)


def test_staged_recomputation_barrier_and_debug_info():
    f = plax.checkpoint(layers, policy=cp.dots_saveable)
    closed = plax.make_jaxpr(plax.grad(f, (0, 1)))(X, W)
    check_jaxpr(closed)
    assert closed.jaxpr.debug_info.arg_names == ("x", "w")
    remats = [e for e in closed.eqns if e.primitive.name == "remat2"]
    assert remats and all(e.params["differentiated"] for e in remats)
    # The backward pass recomputes the sines it was not allowed to save.
    assert any(e.primitive.name == "cos" for r in remats for e in r.params["jaxpr"].eqns)
    fwd = plax.make_jaxpr(f)(X, W)
    check_jaxpr(fwd)
    assert fwd.eqns[0].params["jaxpr"].jaxpr.debug_info.arg_names == ("x", "w")
    text = plax.jit(plax.grad(f)).lower(X, W).as_text(debug_info=True)
    assert "optimization_barrier" in text and 'loc("x")' in text
    no_cse = plax.checkpoint(layers, prevent_cse=False)
    assert "optimization_barrier" not in plax.jit(plax.grad(no_cse)).lower(X, W).as_text()


def test_jit_both_ways_second_order_static_args_and_vmap():
    f = plax.checkpoint(layers, policy=cp.dots_saveable)
    for g in (plax.jit(plax.grad(f, (0, 1))), plax.grad(plax.jit(f), (0, 1))):
        for got, want in zip(g(X, W), GRAD):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(plax.grad(plax.grad(plax.remat(jnp.sin)))(np.float32(0.5)),
                               -np.sin(0.5), rtol=1e-6)

    def power(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return x
    p = plax.checkpoint(power, static_argnums=(1,))
    np.testing.assert_allclose(plax.grad(p)(np.float32(0.5), 2),
                               np.cos(np.sin(0.5)) * np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(plax.vmap(plax.grad(plax.remat(jnp.sin)))(X[0]), np.cos(X[0]),
                               rtol=1e-6)


def test_f_vjp_is_a_pytree_that_crosses_jit():
    out, f_vjp = plax.vjp(lambda x: jnp.sin(x) * x, X[0])
    apply = plax.jit(lambda f_vjp, ct: f_vjp(ct))
    (got,) = apply(f_vjp, np.ones(3, np.float32))
    np.testing.assert_allclose(got, np.cos(X[0]) * X[0] + np.sin(X[0]), rtol=1e-6)


def test_bad_arguments():
    with pytest.raises(TypeError, match="policy must be callable"):
        plax.checkpoint(layers, policy="dots")
    with pytest.raises(ValueError, match="static_argnums 3 out of range"):
        plax.checkpoint(layers, static_argnums=3)(X, W)


def test_nested_jit_inside_checkpoint_keeps_primal_values_known():
    inner = plax.jit(lambda x: jnp.sin(x @ W))
    f = lambda x: jnp.sum(jnp.cos(inner(x)))
    for policy in (None, cp.everything_saveable):
        g = plax.grad(plax.checkpoint(f, policy=policy))(X)
        np.testing.assert_allclose(g, plax.grad(f)(X), rtol=1e-5, atol=1e-6)
    check_jaxpr(plax.make_jaxpr(plax.grad(plax.checkpoint(f)))(X))


def test_a_checkpointed_function_is_traced_once_per_signature():
    """As JAX's (and jit's): a function is traced again only for new argument types or
    static values, not for each call or each `checkpoint` of it; not a tracing that
    closes over another transformation's tracer (it ends with it), and not after
    `clear_caches`."""
    calls, box = [], {}

    def f(x, n):
        calls.append(n)
        return jnp.sin(x) * n * box.get("y", 1.0)
    checkpointed = plax.checkpoint(f, static_argnums=1)
    for n in (2, 2, 3):
        checkpointed(X, n)
    plax.checkpoint(f, static_argnums=1)(X, 2)
    plax.checkpoint(f, static_argnums=1)(X[0], 2)
    assert calls == [2, 3, 2]

    def closes_over_a_tracer(y):
        box["y"] = y
        return jnp.sum(checkpointed(X, 4))
    np.testing.assert_allclose(plax.grad(closes_over_a_tracer)(2.0), 4 * np.sum(np.sin(X)),
                               rtol=1e-6)
    box["y"] = 3.0
    np.testing.assert_allclose(checkpointed(X, 4), np.sin(X) * 12, rtol=1e-6)
    assert calls == [2, 3, 2, 4, 4]
    plax.clear_caches()
    checkpointed(X, 2)
    assert calls[-1] == 2 and len(calls) == 6
    unhashable = plax.checkpoint(lambda x, s: x * len(s), static_argnums=1)
    np.testing.assert_allclose(unhashable(X, [1, 2]), X * 2)


_PRINTED_RESIDUALS = """
import contextlib, io
from importlib import import_module
adc = import_module(jax.__name__ + ".ad_checkpoint")
cp = jax.checkpoint_policies
result = {}

def show(name, f, *args, **kwargs):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            adc.print_saved_residuals(f, *args, **kwargs)
        result[name] = out.getvalue()
    except Exception as e:
        result[name] = type(e).__name__

def g(W, x):
    y = jnp.dot(W, x)
    return jnp.sin(y)

def f(W1, W2, W3, x):
    return g(W3, g(W2, g(W1, x)))

def f2(W1, W2, W3, x):
    x = jax.checkpoint(g)(W1, x)
    x = jax.checkpoint(g)(W2, x)
    return jax.checkpoint(g)(W3, x)

def f4(W1, W2, W3, x):
    x = adc.checkpoint_name(g(W1, x), name="a")
    x = adc.checkpoint_name(g(W2, x), name="b")
    return adc.checkpoint_name(g(W3, x), name="c")

W = (jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4))
show("plain", f, *W)
show("each layer checkpointed", f2, *W)
for policy in ("dots_with_no_batch_dims_saveable", "dots_saveable", "everything_saveable",
               "save_only_these_names('a')", "save_any_names_but_these('b')"):
    show(policy, jax.checkpoint(f4, policy=eval("cp." + policy, {"cp": cp})), *W)
show("dots_saveable saves convolutions", jax.checkpoint(
    lambda x, k: jnp.sum(jnp.sin(jax.lax.conv(x, k, (1, 1), "SAME"))), policy=cp.dots_saveable),
    jnp.ones((1, 1, 4, 4)), jnp.ones((1, 1, 3, 3)))
show("keywords and pytrees", lambda p, x, *, y: jnp.sum(jnp.sin(p["w"] @ x) * y),
     {"w": W[0]}, W[3], y=jnp.ones(5))
show("a jitted function", lambda x: jnp.sum(jax.jit(jnp.sin)(x) * x), W[3])
show("a closed-over array", lambda x: jnp.sum(jnp.sin(x * W[3]) * W[3]), W[3])

def chain(n):
    def f(x):
        for _ in range(n):
            x = jnp.sin(x)
        return x
    return f

def halves(n):
    if n == 1:
        return jnp.sin
    first, second = halves(n // 2), halves(n - n // 2)
    return lambda x: first(jax.checkpoint(second)(x))

show("a chain", chain(4), 3.)
show("recursive checkpoints", halves(8), 3.)

# A checkpointed function is traced once per signature: one that reads a global
# changed since is not traced again (as a jitted one).
def loss(x):
    return jnp.sum(layer(x))

def layer(x):
    return jnp.sin(jnp.sin(x))
show("before", jax.checkpoint(loss, policy=cp.dots_saveable), W[3])

def layer(x):
    return adc.checkpoint_name(jnp.sin(jnp.sin(x)), "named")
show("after, another policy", jax.checkpoint(loss, policy=cp.save_only_these_names("named")),
     W[3])
show("after, not checkpointed", loss, W[3])

show("not callable", 3, 1.0)
show("a string argument", jnp.sin, "x")
show("a string result", lambda x: "s", 1.0)
show("a policy answering nonsense", jax.checkpoint(jnp.sin, policy=lambda *a, **k: "x"), 1.0)
"""


@requires_jax
def test_print_saved_residuals_prints_as_jax():
    """Residuals in JAX's order (the arguments, then what is computed, in program
    order), each from its `file:line:column (function)`, named ones by name, through
    checkpoints, policies, jit, and checkpoint's tracing cache; bad inputs raise JAX's
    exception classes."""
    mine, theirs = run_reference(_PRINTED_RESIDUALS, "plax"), run_reference(_PRINTED_RESIDUALS)
    assert mine == theirs


_VJP_LEAVES = """
W, x = jnp.ones((3, 3)), jnp.ones(3) / 2

def leaves(f, *args):
    _, f_vjp = jax.vjp(f, *args)
    # each residual: its shape, and which argument it is (-1: a computed value)
    return [[list(r.shape), next((i for i, a in enumerate(args) if r is a), -1)]
            for r in jax.tree_util.tree_leaves(f_vjp)]

dots = jax.checkpoint(lambda W, x: jnp.sin(W @ x), policy=jax.checkpoint_policies.dots_saveable)
result = {"matmul": leaves(lambda W, x: jnp.sin(W @ x), W, x),
          "operator": leaves(lambda a, b: a * b, x, x + 1),
          "one array twice": leaves(lambda a, b: a * jnp.sin(b), x, x),
          "scalars": leaves(lambda s: jnp.sin(jnp.sin(s)), 3.0),
          "0-d arrays": leaves(lambda s, t: jnp.sin(s * t), jnp.float32(2), jnp.float32(3)),
          "checkpoint": leaves(dots, W, x)}
"""


@requires_jax
def test_vjp_residuals_are_jaxs():
    """The leaves of `vjp`'s function are JAX's: the arguments it saves first (the
    arguments themselves, every one that is the same array), then the computed values,
    0-d ones too."""
    assert run_reference(_VJP_LEAVES, "plax") == run_reference(_VJP_LEAVES)
