"""vmap of cond/switch/while_loop/fori_loop/scan/map equals a Python loop over the
batch, for batched and unbatched operands (and predicates)."""
import numpy as np
from hypothesis import given, settings, strategies as st

import plax
import plax.numpy as jnp
from plax import lax

FEW = settings(max_examples=6)


def _loop(f, in_axes, args, size):
    outs = []
    for i in range(size):
        outs.append(f(*(a if ax is None else np.take(a, i, axis=ax)
                        for a, ax in zip(args, in_axes))))
    return plax.tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def _check(f, in_axes, args, size):
    got = plax.vmap(f, in_axes=in_axes)(*args)
    want = _loop(f, in_axes, args, size)
    plax.tree_util.tree_map(lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-5,
                                                                   atol=1e-6), got, want)


def _arrays(draw, size, batched, shape):
    rng = np.random.RandomState(draw(st.integers(0, 2**16)))
    return np.asarray(rng.randn(*(((size,) if batched else ()) + shape)), np.float32)


@FEW
@given(st.data(), st.integers(1, 3), st.booleans(), st.booleans(), st.booleans())
def test_vmap_cond(data, size, pred_b, x_b, y_b):
    x_b = x_b or not (pred_b or y_b)  # vmap needs one batched operand
    x = _arrays(data.draw, size, x_b, (2,))
    y = _arrays(data.draw, size, y_b, ())
    p = _arrays(data.draw, size, pred_b, ())

    def f(p, x, y):
        return lax.cond(p > 0, lambda a, b: (a * b, b), lambda a, b: (a - b, b * 2.0), x, y)
    _check(f, (0 if pred_b else None, 0 if x_b else None, 0 if y_b else None), (p, x, y), size)


@FEW
@given(st.data(), st.integers(1, 3), st.booleans(), st.booleans())
def test_vmap_switch(data, size, index_b, x_b):
    x_b = x_b or not index_b
    idx = (np.arange(size) % 4 - 1) if index_b else np.int32(2)
    x = _arrays(data.draw, size, x_b, (2,))
    f = lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * v], x)  # noqa: E731
    _check(f, (0 if index_b else None, 0 if x_b else None), (np.asarray(idx, np.int32), x), size)


@FEW
@given(st.data(), st.integers(1, 3), st.booleans(), st.booleans())
def test_vmap_while_loop(data, size, limit_b, x_b):
    x_b = x_b or not limit_b
    limit = (np.arange(size, dtype=np.float32) * 3.0 + 2.0) if limit_b else np.float32(5.0)
    x = np.abs(_arrays(data.draw, size, x_b, ())) + 0.5

    def f(limit, x):
        return lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] * 1.5 + 0.1, c[1] + 1),
                              (x, 0))
    _check(f, (0 if limit_b else None, 0 if x_b else None), (limit, x), size)


@FEW
@given(st.data(), st.integers(1, 3), st.integers(1, 4), st.booleans(), st.booleans(),
       st.booleans())
def test_vmap_scan(data, size, length, w_b, h_b, xs_b):
    xs_b = xs_b or not (w_b or h_b)
    w = _arrays(data.draw, size, w_b, (2, 2))
    h = _arrays(data.draw, size, h_b, (2,))
    xs = _arrays(data.draw, size, xs_b, (length, 2))

    def f(w, h, xs):
        return lax.scan(lambda h, x: (jnp.tanh(w @ h + x), h.sum()), h, xs)
    _check(f, (0 if w_b else None, 0 if h_b else None, 0 if xs_b else None), (w, h, xs), size)


def test_vmap_fori_and_map_with_batch_axis_not_first():
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    f = lambda v: lax.fori_loop(0, 3, lambda i, acc: acc * 0.5 + v, v)  # noqa: E731
    _check(f, (1,), (x,), 3)
    g = lambda v: lax.map(lambda r: r * r.sum(), v)  # noqa: E731
    _check(g, (1,), (np.arange(12.0, dtype=np.float32).reshape(2, 3, 2),), 3)


def test_vmap_of_grad_of_scan():
    def loss(w, xs):
        return lax.scan(lambda c, x: (c * w + x, None), np.float32(0.0), xs)[0]
    ws = np.array([0.5, 1.5], np.float32)
    xs = np.arange(3.0, dtype=np.float32)
    _check(plax.grad(loss), (0, None), (ws, xs), 2)


def test_batched_body_keeps_debug_info():
    def body(h, x):
        return h * x, h

    closed = plax.make_jaxpr(plax.vmap(lambda xs: lax.scan(body, 1.0, xs)))(
        np.ones((2, 3), np.float32))
    (eqn,) = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    dbg = eqn.params["jaxpr"].jaxpr.debug_info
    assert dbg.func_name == "body" and dbg.arg_names == ("h", "x")


def test_cond_passes_an_input_every_branch_returns_unchanged_through():
    """As JAX's: an output every branch returns as the same input is that input, not an
    output of the cond, so under vmap with a batched predicate an unbatched operand
    passed through stays unbatched (flax's nnx.vmap of an nnx.cond relies on it); an
    input returned by one branch only is still selected."""
    def f(pred, x, c):
        return lax.cond(pred, lambda x, c: (x + 1, c, c), lambda x, c: (x, c, c * 2), x, c)

    preds, xs, c = np.array([True, False, True]), np.arange(3.0, dtype=np.float32), 5.0
    x, same, chosen = plax.vmap(f, in_axes=(0, 0, None), out_axes=(0, None, 0))(preds, xs, c)
    np.testing.assert_allclose(x, [1.0, 1.0, 3.0])
    assert same.shape == () and same.weak_type and float(same) == 5.0  # an Array, as JAX's
    np.testing.assert_allclose(chosen, [5.0, 10.0, 5.0])
    (eqn,) = [e for e in plax.make_jaxpr(f)(True, 1.0, c).eqns if e.primitive.name == "cond"]
    assert len(eqn.outvars) == 2 and all(len(b.jaxpr.outvars) == 2
                                         for b in eqn.params["branches"])
