"""`plax.vmap`: in_axes/out_axes semantics, errors, debug info, and composition
with jit, grad and itself."""
import numpy as np
import pytest

import plax
import plax.numpy as jnp
from plax import lax
from plax.extend.core import check_jaxpr
from plax_transforms.batching import batch_jaxpr

RNG = np.random.default_rng(1)
X = RNG.normal(size=(3, 4)).astype(np.float32)


# --- in_axes / out_axes ------------------------------------------------------------------

def test_negative_axes_and_none():
    out = plax.vmap(lambda a, b: a * b, in_axes=(-1, None), out_axes=-1)(X, np.float32(2))
    np.testing.assert_allclose(out, X * 2)
    out = plax.vmap(lambda a: a.sum(), in_axes=-2)(X)
    np.testing.assert_allclose(out, X.sum(1), rtol=1e-6)


def test_in_axes_pytree_prefix_as_a_list_and_kwargs_mapped_along_0():
    params = {"w": X, "b": X[:, 0]}
    xs = RNG.normal(size=(5, 4)).astype(np.float32)
    scales = np.arange(5, dtype=np.float32)

    def f(p, x, *, scale):
        return (p["w"] @ x + p["b"]) * scale

    out = plax.vmap(f, in_axes=[{"w": None, "b": None}, 0])(params, xs, scale=scales)
    expected = np.stack([(X @ xs[i] + X[:, 0]) * scales[i] for i in range(5)])
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_out_axes_pytree_and_unmapped_outputs_are_broadcast():
    out = plax.vmap(lambda a: {"m": a, "c": np.float32(1)}, out_axes={"m": 1, "c": 0})(X)
    np.testing.assert_allclose(out["m"], X.T)
    np.testing.assert_allclose(out["c"], np.ones(3))


def test_axis_size_without_mapped_inputs():
    out = plax.vmap(lambda: jnp.arange(2.0), axis_size=3)()
    np.testing.assert_allclose(out, np.tile(np.arange(2.0), (3, 1)))


def test_out_axes_none_for_unmapped_output():
    total, row = plax.vmap(lambda a, b: (b, a), in_axes=(0, None), out_axes=(None, 0))(X, 7.0)
    assert float(total) == 7.0 and row.shape == X.shape


# --- errors --------------------------------------------------------------------------------

def test_inconsistent_sizes_lists_each_argument():
    with pytest.raises(ValueError) as err:
        plax.vmap(lambda a, b: a + b)(X, {"k": np.ones((4, 4))})
    message = str(err.value)
    assert "inconsistent sizes" in message
    assert "argument a has shape (3, 4)" in message and "size 3" in message
    assert "argument b['k'] has shape (4, 4)" in message and "size 4" in message


def test_in_axes_structure_mismatch_shows_both_structures():
    with pytest.raises(ValueError, match=r"tree prefix.*\{'x': 0\}.*PyTreeDef"):
        plax.vmap(lambda a: a, in_axes=({"x": 0},))([X])
    with pytest.raises(ValueError, match="len\\(in_axes\\)=2, len\\(args\\)=1"):
        plax.vmap(lambda a: a, in_axes=(0, 0))(X)


def test_out_of_range_axes_are_named():
    with pytest.raises(ValueError, match="argument a along axis 2.*rank.*2"):
        plax.vmap(lambda a: a, in_axes=2)(X)
    with pytest.raises(ValueError, match="out_axes 3 is out of bounds for output result"):
        plax.vmap(lambda a: a, out_axes=3)(X)
    # JAX's message, naming the output's key path
    with pytest.raises(ValueError, match=r"^at vmap out_axes, got axis spec None but output "
                                         r"was batched on axis 0"):
        plax.vmap(lambda a: a, out_axes=None)(X)
    with pytest.raises(ValueError, match=r"^at vmap out_axes\['w'\]\[1\], got axis spec None"):
        plax.vmap(lambda a: {"w": (1.0, a)}, out_axes=None)(X)


def test_bad_specs():
    with pytest.raises(ValueError, match="at least one non-None value in in_axes"):
        plax.vmap(lambda a: a, in_axes=None)(X)
    with pytest.raises(ValueError, match="in_axes must be an int, None"):
        plax.vmap(lambda a: a, in_axes="0")
    with pytest.raises(TypeError, match="callable"):
        plax.vmap(3)


def test_unbound_axis_name_is_a_name_error():
    with pytest.raises(NameError, match="unbound axis name: j"):
        plax.vmap(lambda a: lax.psum(a, "j"), axis_name="i")(X)
    with pytest.raises(NameError, match="unbound axis name: i"):
        lax.axis_index("i")


def test_missing_batching_rule_is_named():
    from plax.extend.core import Primitive
    prim = Primitive("tests.no_rules_here")
    prim.def_abstract_eval(lambda x: x)
    with pytest.raises(NotImplementedError, match="Batching rule for 'no_rules_here'"):
        plax.vmap(prim.bind)(X)


# --- jaxprs and debug info ------------------------------------------------------------------

def test_make_jaxpr_of_vmap_keeps_names_and_checks():
    def f(x, y):
        return {"s": jnp.sin(x) + y}

    jaxpr = plax.make_jaxpr(plax.vmap(f, in_axes=(1, None)))(X, np.float32(1))
    check_jaxpr(jaxpr)
    assert jaxpr.jaxpr.debug_info.arg_names == ("x", "y")
    assert jaxpr.jaxpr.debug_info.result_paths == ("result['s']",)
    assert "transpose" in str(jaxpr)  # out_axes=0 from in_axes=1 needs exactly one
    assert sum(e.primitive.name == "transpose" for e in jaxpr.jaxpr.eqns) == 1


def test_batch_jaxpr_keeps_debug_info_and_forces_out_dims():
    closed = plax.make_jaxpr(lambda x, y: (x * 2, y))(X, np.float32(1))
    batched, out_dims = batch_jaxpr(closed, 5, [1, None], [False, 0])
    check_jaxpr(batched)
    assert out_dims == [1, 0]
    assert [a.shape for a in batched.in_avals] == [(3, 5, 4), ()]
    assert [a.shape for a in batched.out_avals] == [(3, 5, 4), (5,)]
    assert batched.jaxpr.debug_info == closed.jaxpr.debug_info


# --- composition ---------------------------------------------------------------------------

def test_vmap_of_vmap_with_different_axes():
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    f = plax.vmap(plax.vmap(lambda a: a.sum(), in_axes=1), in_axes=2, out_axes=1)
    np.testing.assert_allclose(f(x), x.sum(0), rtol=1e-5)  # out[j, k]


def test_jit_of_vmap_and_vmap_of_jit():
    g = plax.jit(lambda a: jnp.tanh(a) @ a.T)
    expected = np.stack([np.tanh(r) @ r for r in X])
    np.testing.assert_allclose(plax.vmap(g)(X), expected, rtol=1e-5)
    np.testing.assert_allclose(plax.jit(plax.vmap(g))(X), expected, rtol=1e-5)
    jaxpr = plax.make_jaxpr(plax.vmap(g))(X)
    (eqn,) = jaxpr.jaxpr.eqns
    assert eqn.primitive.name == "jit"  # stays staged, with its body batched
    assert eqn.params["jaxpr"].in_avals[0].shape == (3, 4)


def test_vmap_of_jit_reuses_the_batched_jaxpr():
    g = plax.jit(lambda a: a * 3)
    first = plax.make_jaxpr(plax.vmap(g))(X).jaxpr.eqns[0].params["jaxpr"]
    second = plax.make_jaxpr(plax.vmap(g))(X).jaxpr.eqns[0].params["jaxpr"]
    assert first is second


def _loss(w, x, y):
    return jnp.sum((jnp.tanh(x @ w["a"]) @ w["b"] - y) ** 2)


def test_per_example_gradients_match_a_loop():
    w = {"a": RNG.normal(size=(4, 3)).astype(np.float32),
         "b": RNG.normal(size=(3, 2)).astype(np.float32)}
    xs, ys = X, RNG.normal(size=(3, 2)).astype(np.float32)
    per_example = plax.jit(plax.vmap(plax.grad(_loss), in_axes=(None, 0, 0)))(w, xs, ys)
    for i in range(3):
        g = plax.grad(_loss)(w, xs[i], ys[i])
        for k in w:
            np.testing.assert_allclose(per_example[k][i], g[k], rtol=1e-4, atol=1e-6)


def test_grad_of_vmap_matches_sum_of_grads():
    w = RNG.normal(size=(4,)).astype(np.float32)
    f = lambda w, x: jnp.sin(x @ w)  # noqa: E731
    g = plax.grad(lambda w: plax.vmap(f, in_axes=(None, 0))(w, X).sum())(w)
    expected = sum(np.asarray(plax.grad(f)(w, X[i])) for i in range(3))
    np.testing.assert_allclose(g, expected, rtol=1e-5)


def test_vmap_of_grad_of_checkpoint():
    f = plax.checkpoint(lambda a: jnp.sin(a) * a)
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    np.testing.assert_allclose(plax.vmap(plax.grad(f))(x), np.sin(x) + x * np.cos(x),
                               rtol=1e-5)


def test_vmap_of_a_check_grads_verified_function():
    from plax.test_util import check_grads
    f = lambda a, b: jnp.tanh(a * b).sum()  # noqa: E731
    check_grads(f, (X[0], X[1]), order=1)
    np.testing.assert_allclose(plax.vmap(f)(X, X[::-1]),
                               [f(X[i], X[2 - i]) for i in range(3)], rtol=1e-5)


def test_custom_rules_survive_vmap_and_grad_in_either_order():
    """The user's rules (scaled, so that differentiating sin itself would show)."""
    @plax.custom_jvp
    def f(x):
        return jnp.sin(x)
    f.defjvp(lambda primals, tangents: (f(primals[0]), 2 * jnp.cos(primals[0]) * tangents[0]))

    @plax.custom_vjp
    def g(x):
        return jnp.sin(x)
    g.defvjp(lambda x: (jnp.sin(x), x), lambda x, ct: (3 * jnp.cos(x) * ct,))

    x = np.linspace(-1, 1, 3, dtype=np.float32)
    for fn, scale in ((f, 2), (g, 3)):
        np.testing.assert_allclose(plax.vmap(fn)(x), np.sin(x), rtol=1e-6)
        np.testing.assert_allclose(plax.vmap(plax.grad(fn))(x), scale * np.cos(x), rtol=1e-6)
        np.testing.assert_allclose(plax.grad(lambda v: plax.vmap(fn)(v).sum())(x),  # noqa: B023 (run at once)
                                   scale * np.cos(x), rtol=1e-6)


def test_vmap_of_a_callable_object_takes_its_attributes():
    """As JAX's `wraps`: `vmap(obj)` carries the object's attributes (equinox reads a
    module's fields through it); a `__name__` that is not a string is left out; a
    jitted function's internals are not copied."""
    class Scale:
        __name__ = property(lambda self: 5)  # not a string: not copied

        def __init__(self):
            self.w = 3.0

        def __call__(self, x):
            return x * self.w

    obj = Scale()
    v = plax.vmap(obj)
    np.testing.assert_array_equal(v(jnp.arange(3.0)), [0.0, 3.0, 6.0])
    assert v.w == 3.0 and isinstance(v.__name__, str)
    assert v.__wrapped__ is obj  # functools.wraps's link to what was wrapped
    jitted = plax.jit(lambda x: x + 1)
    assert not hasattr(plax.vmap(jitted), "lower")
