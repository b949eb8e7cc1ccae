"""plax.experimental.ode.odeint: solutions against closed forms, adjoint gradients
against closed forms and finite differences, transformations, bad inputs, and JAX."""
from __future__ import annotations

import numpy as np
import pytest
from jax_reference import requires_jax, run_reference

import plax
import plax.numpy as jnp
from plax.experimental.ode import odeint

T = np.linspace(0.0, 2.0, 5, dtype=np.float32)


def _decay(y, t, k):
    return -k * y


def _oscillator(state, t, omega):
    return {"x": state["v"], "v": -omega ** 2 * state["x"]}


def test_solutions_match_closed_forms():
    np.testing.assert_allclose(odeint(_decay, jnp.float32(2.0), T, 0.7),
                               2.0 * np.exp(-0.7 * T), rtol=1e-5)
    out = odeint(_oscillator, {"x": jnp.float32(1.0), "v": jnp.float32(0.0)}, T, 3.0)
    np.testing.assert_allclose(out["x"], np.cos(3.0 * T), atol=2e-5)
    np.testing.assert_allclose(out["v"], -3.0 * np.sin(3.0 * T), atol=6e-5)
    time_dependent = odeint(lambda y, t: jnp.cos(t) * jnp.ones(2), jnp.zeros(2), T)
    np.testing.assert_allclose(time_dependent, np.sin(T)[:, None] * np.ones(2), atol=1e-5)


def test_adjoint_gradients():
    def final(y0, k, ts):
        return odeint(_decay, y0, ts, k)[-1]
    grads = plax.jit(plax.grad(final, argnums=(0, 1, 2)))(1.5, 0.7, jnp.asarray(T))
    t1 = float(T[-1] - T[0])
    np.testing.assert_allclose(grads[0], np.exp(-0.7 * t1), rtol=1e-4)
    np.testing.assert_allclose(grads[1], -1.5 * t1 * np.exp(-0.7 * t1), rtol=1e-4)
    expected_t = np.zeros(5, np.float32)
    expected_t[-1] = -0.7 * 1.5 * np.exp(-0.7 * t1)   # moving the last output time
    expected_t[0] = 0.7 * 1.5 * np.exp(-0.7 * t1)     # moving the start time
    np.testing.assert_allclose(grads[2], expected_t, rtol=1e-4, atol=1e-6)


def test_gradient_reaches_closed_over_values_and_pytrees():
    def loss(omega, x0):
        out = odeint(lambda s, t: _oscillator(s, t, omega),
                     {"x": x0, "v": jnp.float32(0.0)}, T)
        return jnp.sum(out["x"] ** 2)
    value_grad = plax.grad(loss, argnums=(0, 1))(jnp.float32(1.3), jnp.float32(0.8))
    loss = plax.jit(loss)  # one compilation for the four evaluations
    eps = 1e-3
    for i, (a, b) in enumerate([((1.3 + eps, 0.8), (1.3 - eps, 0.8)),
                                ((1.3, 0.8 + eps), (1.3, 0.8 - eps))]):
        numeric = (float(loss(*map(jnp.float32, a))) - float(loss(*map(jnp.float32, b)))) / (
            2 * eps)
        np.testing.assert_allclose(value_grad[i], numeric, rtol=2e-3)


def test_vmap_over_initial_conditions():
    y0s = jnp.array([1.0, 2.0, 3.0])
    out = plax.vmap(lambda y0: odeint(_decay, y0, T, 0.5))(y0s)
    np.testing.assert_allclose(out, np.asarray(y0s)[:, None] * np.exp(-0.5 * T), rtol=1e-5)


def test_step_limits():
    stiff = odeint(_decay, jnp.float32(1.0), T, 50.0, mxstep=3)
    assert np.isnan(np.asarray(stiff)[1:]).all()  # not reached within 3 steps: unknown
    assert float(stiff[0]) == 1.0
    np.testing.assert_allclose(odeint(_decay, jnp.float32(1.0), T, 0.7, hmax=0.01),
                               np.exp(-0.7 * T), rtol=1e-5)


def test_bad_inputs():
    with pytest.raises(TypeError, match="t must be a 1-D array of floating-point times"):
        odeint(_decay, 1.0, np.arange(3), 0.7)
    with pytest.raises(TypeError, match="t must be a 1-D array"):
        odeint(_decay, 1.0, T.reshape(5, 1), 0.7)
    with pytest.raises(TypeError, match="func must return values shaped like y0"):
        odeint(lambda y, t: jnp.ones(3), jnp.float32(1.0), T)
    with pytest.raises(TypeError, match="rtol must be a positive Python number"):
        odeint(_decay, 1.0, T, 0.7, rtol=-1.0)
    with pytest.raises(TypeError, match="must be arrays or scalars"):
        odeint(lambda y, t, s: y, 1.0, T, "text")
    with pytest.raises(TypeError, match="y0 must hold floating-point arrays"):
        odeint(_decay, np.int32(1), T, 1)


@requires_jax
def test_matches_jax():
    code = """
    if jax.__name__ == "plax":
        from plax.experimental.ode import odeint
    else:
        from jax.experimental.ode import odeint
    ts = jnp.linspace(0., 3., 4)

    def lotka_volterra(y, t, a, b):
        prey, predator = y[0], y[1]
        return jnp.stack([a * prey - b * prey * predator, -predator + 0.5 * prey * predator])

    y0 = jnp.array([2.0, 1.0])
    ys = odeint(lotka_volterra, y0, ts, 1.1, 0.4, rtol=1e-6, atol=1e-6)
    grads = jax.jit(jax.grad(lambda y0, a: odeint(lotka_volterra, y0, ts, a, 0.4, rtol=1e-6,
                                                   atol=1e-6)[-1].sum(), argnums=(0, 1)))(y0, 1.1)
    result = [np.asarray(ys).tolist(), np.asarray(grads[0]).tolist(), float(grads[1])]
    """
    theirs, mine = run_reference(code, "jax"), run_reference(code, "plax")
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=2e-4, atol=1e-5)
