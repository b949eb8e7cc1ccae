"""`plax.fwd_and_bwd`: the forward and backward passes as separately jitted functions."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_differential import assert_same_as_jax, requires_jax

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4)).astype(np.float32)
W = RNG.standard_normal((4, 2)).astype(np.float32)


def layer(x, w):
    return jnp.tanh(x @ w)


def test_matches_vjp_and_compiles_each_pass_once():
    fwd, bwd = plax.fwd_and_bwd(layer, argnums=(0, 1))
    cot = np.ones((3, 2), np.float32)
    y, res = fwd(X, W)
    cx, cw = bwd(res, cot)
    y_ref, f_vjp = plax.vjp(layer, X, W)
    cx_ref, cw_ref = f_vjp(cot)
    np.testing.assert_allclose(y, y_ref, rtol=1e-6)
    np.testing.assert_allclose(cx, cx_ref, rtol=1e-6)
    np.testing.assert_allclose(cw, cw_ref, rtol=1e-6)
    with plax.no_tracing(True):  # later steps reuse both compiled passes
        for scale in (2.0, 3.0):
            _, res = fwd(X * scale, W)
            bwd(res, cot)


def test_single_argnum_gives_one_cotangent_and_aux_comes_last():
    def loss(x, w):
        y = layer(x, w)
        return (y ** 2).sum(), {"y": y}
    for jitted in (True, False):
        fwd, bwd = plax.fwd_and_bwd(loss, argnums=1, has_aux=True, jitted=jitted)
        value, res, aux = fwd(X, W)
        g = bwd(res, np.float32(1.0))
        np.testing.assert_allclose(g, plax.grad(lambda w: loss(X, w)[0])(W), rtol=1e-5)
        np.testing.assert_allclose(aux["y"], layer(X, W), rtol=1e-6)
        np.testing.assert_allclose(value, (np.asarray(aux["y"]) ** 2).sum(), rtol=1e-5)


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        plax.fwd_and_bwd(3, argnums=0)
    fwd, _ = plax.fwd_and_bwd(layer, argnums=2)
    with pytest.raises(ValueError, match="argnums"):
        fwd(X, W)
    _, bwd = plax.fwd_and_bwd(layer, argnums=0)
    _, res = plax.fwd_and_bwd(layer, argnums=0)[0](X, W)
    with pytest.raises(ValueError, match="tree structure|shape"):
        bwd(res, (np.ones((3, 2), np.float32),))


@requires_jax
def test_fwd_and_bwd_as_jax():
    body = """
x, w = inputs["x"], inputs["w"]
fwd, bwd = lib.fwd_and_bwd(lambda x, w: lib.numpy.sin(x @ w) * 2.0, argnums=(0, 1))
y, res = fwd(x, w)
cx, cw = bwd(res, lib.numpy.ones_like(y))
results.update(y=y, cx=cx, cw=cw)
"""
    assert_same_as_jax(body, {"x": X, "w": W})
