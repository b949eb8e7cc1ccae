"""Options that do what they say: debug_nans/debug_infs, checking_leaks, enable_x64
changed at runtime, numpy_rank_promotion, default_matmul_precision, disable_jit."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax

from jax_reference import requires_jax, run_reference


_NANS_AND_INFS = """
import contextlib, io
lax = jax.lax

def nan_at_log(x):
    return lax.log(lax.sin(x) - 2.0) * 2

def f(x):  # JAX's debugging/flags notebook: jnp.log is itself jitted
    return jnp.log(-3 * jnp.square(x))

cases = [lambda: jax.jit(lambda x: x + jnp.nan)(1.0),  # no NaN when run de-optimized
         lambda: lax.log(-1.0), lambda: jax.jit(nan_at_log)(1.0),
         lambda: jax.jit(lambda x: jax.jit(nan_at_log)(x) + 1.0)(1.0),  # nested
         lambda: jax.jit(lambda x: lax.div(1.0, x))(0.0), lambda: lax.exp(1000.0),
         lambda: f(5.0), lambda: jax.jit(f)(5.0), lambda: jnp.exp(1000.0)]
result = []
for option in ("jax_debug_nans", "jax_debug_infs"):
    jax.config.update(option, True)
    for case in cases:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                case()
            error = None
        except FloatingPointError as e:
            error = str(e).split(".")[0] if "(without jit)" not in str(e) else "no NaN"
        result.append((out.getvalue(), error))
    jax.config.update(option, False)
result.append(repr(jax.jit(nan_at_log)(1.0)))  # off again: the plain call
"""


@requires_jax
def test_debug_nans_and_infs_print_and_raise_as_jaxs():
    """A special value out of a jitted call is announced with JAX's words, then the
    function runs de-optimized (nested jits announce theirs, and so do the jitted
    plax.numpy functions, as JAX's), and the eager primitive that makes it raises
    JAX's message."""
    mine = run_reference(_NANS_AND_INFS, library="plax")
    theirs = run_reference(_NANS_AND_INFS)
    assert theirs[0][1].startswith("('jit(<lambda>)', 'nan')") and mine[0][1] == "no NaN"
    mine[0][1] = theirs[0][1]  # JAX's message there is its own prose, said in other words
    assert mine == theirs


def test_checking_leaks_reports_the_leaked_tracer_and_where_it_was_created():
    store = []

    def leaky(x):
        y = x * 2
        store.append(y)
        return y + 1

    transforms = {"jit": plax.jit(leaky), "vmap": plax.vmap(leaky),
                  "grad": plax.grad(lambda x: leaky(x).sum()),
                  "jvp": lambda x: plax.jvp(leaky, (x,), (x,))}
    for f in transforms.values():
        store.clear()
        with plax.checking_leaks():
            with pytest.raises(plax.errors.UnexpectedTracerError,
                               match=r"(?s)Leaked 1 tracer.*created at .*test_options.py:"
                                     r"\d+:\d+ \(.*leaky\)"):
                f(jnp.ones(3))
    store.clear()
    with plax.checking_leaks():  # clean functions pass
        plax.jit(lambda x: x * 2)(jnp.ones(2))
        plax.grad(lambda x: (x ** 2).sum())(jnp.ones(2))
        plax.vmap(jnp.sin)(jnp.ones(2))
    leaky(1.0)  # off: nothing is checked


def test_enable_x64_at_runtime_changes_defaults_promotion_and_caches():
    f = plax.jit(lambda x: x * 2)
    assert f(1).dtype == np.int32
    plax.config.update("jax_enable_x64", True)
    try:
        assert f(1).dtype == np.int64 and f(1.0).dtype == np.float64
        assert jnp.ones(2).dtype == np.float64 and jnp.arange(3).dtype == np.int64
        assert jnp.array(1.5).dtype == np.float64 and jnp.asarray(np.ones(2)).dtype == np.float64
        assert (jnp.ones(2, jnp.float32) + 1.5).dtype == np.float32  # weak scalars still weak
        assert int(jnp.int64(2**40)) == 2**40
        assert jnp.sum(jnp.ones(3, bool)).dtype == np.int64
        assert plax.grad(lambda x: x * x)(1.0).dtype == np.float64
    finally:
        plax.config.update("jax_enable_x64", False)
    assert f(1).dtype == np.int32 and jnp.ones(2).dtype == np.float32


def test_numpy_rank_promotion():
    x, v = jnp.ones((2, 3)), jnp.ones(3)
    with plax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
            x + v
        with pytest.raises(ValueError):
            plax.jit(jnp.multiply)(x, v)
        assert (x + 1).shape == (2, 3) and (x * x).shape == (2, 3)
        assert jnp.where(x > 0, x, v).shape == (2, 3)  # explicit broadcasting, as in JAX
    with plax.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x + v
    assert any("rank promotion" in str(w.message) for w in caught)


def test_default_matmul_precision_reaches_dot_general():
    a = np.ones((4, 4), np.float32)

    def precision_of(f):
        (eqn,) = [e for e in plax.make_jaxpr(f)(a).jaxpr.eqns if e.primitive.name == "dot_general"]
        return eqn.params["precision"]

    assert precision_of(lambda m: m @ m) is None
    with plax.default_matmul_precision("highest"):
        assert precision_of(lambda m: m @ m) == (lax.Precision.HIGHEST,) * 2
        assert "HIGHEST" in plax.jit(lambda m: m @ m).lower(a).as_text()
        assert precision_of(lambda m: lax.dot(m, m, precision="default")) == (
            lax.Precision.DEFAULT,) * 2  # an explicit precision wins
    with plax.default_matmul_precision("float32"):
        assert precision_of(lambda m: jnp.matmul(m, m)) == (lax.Precision.HIGHEST,) * 2


def test_disable_jit_runs_control_flow_as_python():
    seen = []

    def body(c):
        seen.append(type(c).__name__)
        return c + 1

    with plax.disable_jit():
        assert plax.jit(lambda x: type(x).__name__)(jnp.ones(2)) == "Array"
        assert lax.cond(True, lambda x: "true branch", lambda x: "false branch", 1.0) == \
            "true branch"
        assert lax.switch(7, [lambda x: "a", lambda x: "b"], 1.0) == "b"  # clamped index
        assert lax.while_loop(lambda c: c < 3, body, 0) == 3 and seen == ["int"] * 3
        assert lax.fori_loop(0, 3, lambda i, c: c + i, 0) == 3
        carry, ys = lax.scan(lambda c, x: (c + x, x * 2), 0.0, jnp.arange(3.0), reverse=True)
        assert float(carry) == 3.0
        np.testing.assert_array_equal(ys, [0.0, 2.0, 4.0])
        assert plax.jit(lambda x: 1 if x > 0 else 2)(1.0) == 1
        # Abstract values (under vmap) are still staged.
        np.testing.assert_array_equal(
            plax.vmap(lambda p: lax.cond(p, lambda: 1.0, lambda: 2.0))(jnp.array([True, False])),
            [1.0, 2.0])
