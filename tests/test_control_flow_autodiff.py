"""Differentiating through cond/switch/while/fori/scan: derivatives against finite
differences (`check_grads`), the shape of the reverse-mode program, and errors."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.extend.core import check_jaxpr
from plax.test_util import check_grads

RNG = np.random.RandomState(0)
W = (RNG.randn(3, 3) * 0.5).astype(np.float32)
XS = RNG.randn(4, 3).astype(np.float32)


def rnn_loss(w, xs):
    def cell(h, x):
        h = jnp.tanh(w @ h + x)
        return h, (h ** 2).sum()
    h, losses = lax.scan(cell, jnp.zeros(3, np.float32), xs)
    return losses.sum() + h.sum()


def test_scan_rnn_cell_grads_orders_1_and_2():
    check_grads(rnn_loss, (W, XS), order=2)


def test_cumulative_sum_as_scan():
    cumsum = lambda xs: lax.scan(lambda c, x: (c + x, c + x), np.float32(0.0), xs)[1]  # noqa
    x = RNG.randn(5).astype(np.float32)
    np.testing.assert_allclose(cumsum(x), np.cumsum(x), rtol=1e-6)
    # The Jacobian of a cumulative sum is lower-triangular ones.
    np.testing.assert_allclose(plax.jacrev(cumsum)(x), np.tril(np.ones((5, 5))))
    check_grads(lambda x: (cumsum(x) ** 2).sum(), (x,), order=2)


def test_fori_loop_polynomial_horner():
    coeffs = [0.5, -1.0, 2.0, 3.0]
    horner = lambda x: lax.fori_loop(0, 4, lambda i, acc: acc * x + jnp.array(coeffs)[i], 0.0)  # noqa
    x = np.float32(0.7)
    np.testing.assert_allclose(plax.grad(horner)(x), np.polyval(np.polyder(coeffs), x), rtol=1e-5)
    check_grads(horner, (x,), order=2)


def test_piecewise_cond_and_switch():
    def piecewise(x):
        return lax.cond(x > 0, lambda y: jnp.sin(y) * y, lambda y: y ** 3, x)

    def three_way(i, x):
        return lax.switch(i, [jnp.sin, lambda y: jnp.exp(0.5 * y), lambda y: y * y], x)

    for x in (np.float32(0.8), np.float32(-0.6)):
        check_grads(piecewise, (x,), order=2)
    for i in range(3):
        check_grads(lambda x: three_way(i, x), (np.float32(0.4),), order=2)  # noqa: B023 (run at once)
    assert float(plax.grad(piecewise)(np.float32(-0.6))) == pytest.approx(3 * 0.36, rel=1e-5)


def test_while_loop_forward_mode_and_reverse_mode_error():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * x), (0, 1.0))[1]
    assert float(plax.jacfwd(f)(np.float32(2.0))) == pytest.approx(12.0)
    check_grads(f, (np.float32(1.3),), order=1, modes=("fwd",))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                         "lax.while_loop"):
        plax.grad(f)(np.float32(2.0))


def test_reverse_mode_through_jit_uses_the_known_carries_of_a_while_loop():
    """Under jit the loop is split as eagerly: the carries that do not depend on the
    differentiated value are computed by a loop of their own (before, all its outputs
    counted as unknown, and the transpose failed with an internal TypeError)."""
    def f(x):
        w, _, _ = lax.while_loop(lambda s: s[1] < 3, lambda s: (s[0] * 2.0, s[1] + 1, s[2] + x),
                                 (1.5, 0, 0.0))
        return w * x
    assert float(plax.grad(plax.jit(f))(0.7)) == float(plax.grad(f)(0.7)) == 12.0

    def g(a):  # a loop carrying a's tangent: reverse mode is while's error, jit or not
        return (2 * a) * lax.while_loop(lambda s: s[1] < 3, lambda s: (s[0] * a, s[1] + 1),
                                        (a, 0))[0]
    for fn in (g, plax.jit(g)):
        with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
            plax.grad(lambda a: plax.jvp(fn, (a,), (1.0,))[1])(0.5)  # noqa: B023


def test_grad_of_scan_shows_forward_and_reverse_scans():
    closed = plax.make_jaxpr(plax.grad(lambda xs: lax.scan(lambda c, x: (c * x, None), 0.0,
                                                           xs)[0]))(np.ones(3, np.float32))
    check_jaxpr(closed.jaxpr)
    scans = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    assert [e.params["reverse"] for e in scans] == [False, True]


def test_loop_invariant_weight_is_not_stacked():
    closed = plax.make_jaxpr(plax.grad(rnn_loss))(W, XS)
    check_jaxpr(closed.jaxpr)
    forward, backward = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    nk = forward.params["num_carry"]
    ys = forward.outvars[nk:]
    residuals = ys[1:]  # after the per-step loss
    # Only the per-step vectors the backward body reads are stacked, each f32[4,3]:
    # the incoming hidden state (for W's cotangent), tanh's output and 1 - output (its
    # derivative as JAX writes it, (t + t*y) * (1 - y)) and the loss's 2h, the four JAX
    # stacks too. W (which would be f32[4,3,3] stacked) is a const of the backward scan.
    assert [v.aval.shape for v in residuals] == [(4, 3)] * 4
    assert backward.params["reverse"] and backward.params["num_consts"] == 1
    assert backward.invars[0].aval.shape == (3, 3)


def test_debug_info_survives_jvp_and_partial_eval():
    def body(carry, x):
        return carry * x, carry
    closed = plax.make_jaxpr(plax.grad(lambda xs: lax.scan(body, 1.0, xs)[0]))(
        np.ones(3, np.float32))
    for eqn in closed.jaxpr.eqns:
        if eqn.primitive.name == "scan":
            inner = eqn.params["jaxpr"].jaxpr
            dbg = inner.debug_info
            assert dbg is not None and dbg.func_name == "body"
            assert len(dbg.arg_names) == len(inner.invars)
            assert len(dbg.result_paths) == len(inner.outvars)


def test_grad_under_jit_and_of_jit():
    f = lambda w: rnn_loss(w, XS)  # noqa: E731
    want = plax.grad(f)(W)
    np.testing.assert_allclose(plax.jit(plax.grad(f))(W), want, rtol=1e-5)
    np.testing.assert_allclose(plax.grad(plax.jit(f))(W), want, rtol=1e-5)


def test_nested_scan_in_cond_in_scan_grad():
    def f(x):
        def outer(c, y):
            inner = lambda v: lax.scan(lambda a, b: (a * b + v, None), v, jnp.ones(2) * y)[0]  # noqa
            return lax.cond(y > 0, inner, lambda v: v * y, c), None
        return lax.scan(outer, x, jnp.array([0.5, -1.0, 2.0]))[0]
    check_grads(f, (np.float32(0.3),), order=1)


def test_checkpoint_inside_scan_body():
    def f(w, xs):
        cell = plax.checkpoint(lambda h, x: (jnp.tanh(w * h + x), h))
        return lax.scan(cell, np.float32(0.0), xs)[0]
    check_grads(f, (np.float32(0.5), np.arange(3, dtype=np.float32)), order=1)
