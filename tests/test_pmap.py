"""pmap on shard_map + jit: collectives over 8 devices, in_axes/out_axes over pytrees,
static and donated arguments, devices/backend/axis_size, sharded results, nesting over
a 2 x 4 grid, composition with grad, jit and vmap, errors naming the argument, and the
user's names in the lowered module and the Jaxpr (beyond JAX 0.10.2)."""
import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.sharding import NamedSharding, PartitionSpec as P

RNG = np.random.default_rng(3)
X = RNG.normal(size=(8, 3)).astype(np.float32)


def test_psum_over_eight_devices_gives_sharded_arrays(devs):
    out = plax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(X)
    np.testing.assert_allclose(out, np.broadcast_to(X.sum(0), X.shape), rtol=1e-5)
    assert isinstance(out.sharding, NamedSharding) and out.sharding.spec == P("i")
    assert out.devices() == set(devs)
    np.testing.assert_allclose(out[3], X.sum(0), rtol=1e-5)  # indexable
    np.testing.assert_allclose(np.asarray(out)[5], X.sum(0), rtol=1e-5)


def test_pytrees_in_axes_out_axes_and_keyword_arguments():
    def f(tree, scale, *, bias):
        return {"sum": tree["a"] * scale + tree["b"] + bias,
                "index": lax.axis_index("i") + 0 * scale}
    a = RNG.normal(size=(3, 8)).astype(np.float32)
    b = RNG.normal(size=(8,)).astype(np.float32)
    bias = RNG.normal(size=(8, 3)).astype(np.float32)
    out = plax.pmap(f, "i", in_axes=({"a": 1, "b": 0}, None),
                    out_axes={"sum": 1, "index": 0})({"a": a, "b": b}, np.float32(2), bias=bias)
    np.testing.assert_allclose(out["sum"], (a.T * 2 + b[:, None] + bias).T, rtol=1e-5)
    np.testing.assert_array_equal(out["index"], np.arange(8))


def test_static_arguments_donation_devices_backend_and_axis_size(devs):
    f = plax.pmap(lambda v, n: v * n, static_broadcasted_argnums=1, devices=devs[4:])
    out = f(X[:4], 3)
    np.testing.assert_allclose(out, X[:4] * 3)
    assert out.devices() == set(devs[4:])
    donor = plax.device_put(X)
    plax.pmap(lambda v: v + 1, donate_argnums=0, backend="cpu")(donor)
    assert donor.is_deleted()
    ones = plax.pmap(lambda: jnp.ones(2), axis_size=4)()
    np.testing.assert_array_equal(ones, np.ones((4, 2)))


def test_nested_pmap_over_a_two_by_four_grid(devs):
    y = RNG.normal(size=(2, 4, 3)).astype(np.float32)
    f = plax.pmap(plax.pmap(lambda v: lax.psum(v, "j") + 10 * lax.psum(v, "i")
                            + 100 * lax.axis_index("i"), axis_name="j"), axis_name="i")
    out = f(y)
    want = y.sum(1, keepdims=True) + 10 * y.sum(0, keepdims=True) + 100 * np.arange(2)[:, None,
                                                                                       None]
    np.testing.assert_allclose(out, want, rtol=1e-5)
    assert out.devices() == set(devs)


def test_grad_jit_and_vmap_compositions():
    loss = lambda w, v: lax.pmean(jnp.sum(jnp.tanh(v * w) ** 2), "i")  # noqa: E731
    w = np.float32(0.7)
    grads = plax.pmap(plax.grad(loss), "i", in_axes=(None, 0))(w, X)
    # psum transposes to psum under pmap: each device gets its own gradient
    local = [plax.grad(lambda w, v: jnp.sum(jnp.tanh(v * w) ** 2))(w, X[k]) for k in range(8)]
    np.testing.assert_allclose(grads, local, rtol=1e-5)
    total = plax.grad(lambda v: jnp.sum(plax.pmap(jnp.sin)(v)))(X)
    np.testing.assert_allclose(total, np.cos(X), rtol=1e-5)
    jitted = plax.jit(plax.pmap(lambda v: v * 2))(X)
    np.testing.assert_allclose(jitted, X * 2)
    stacked = np.stack([X, 2 * X])
    mapped = plax.vmap(plax.pmap(lambda v: lax.psum(v, "i"), "i"))(stacked)
    np.testing.assert_allclose(mapped, np.stack([np.broadcast_to(s.sum(0), X.shape)
                                                 for s in stacked]), rtol=1e-5)


def test_errors_name_the_argument(devs):
    def f(x, y):
        return x + y
    with pytest.raises(ValueError, match=r"(?s)inconsistent sizes.*argument x has shape "
                                         r"\(8, 3\).*argument y has shape \(4, 3\)"):
        plax.pmap(f)(X, X[:4])
    with pytest.raises(ValueError, match="requires 16 logical devices, but only 8"):
        plax.pmap(f)(np.ones((16, 1)), np.ones((16, 1)))
    with pytest.raises(ValueError, match="argument y along axis 2"):
        plax.pmap(f, in_axes=(0, 2))(X, X)
    with pytest.raises(TypeError, match="in_axes must be an int, None"):
        plax.pmap(f, in_axes=(0, "x"))
    with pytest.raises(ValueError, match="static_broadcasted_argnums=.*only 1 positional"):
        plax.pmap(f, static_broadcasted_argnums=1)(X)
    with pytest.raises(ValueError, match="Specified axis_size 4 doesn't match"):
        plax.pmap(f, axis_size=4)(X, X)
    with pytest.raises(NameError, match="unbound axis name: j"):
        plax.pmap(lambda v: lax.psum(v, "j"), "i")(X)


# --- the user's names, through pmap (JAX 0.10.2 loses them) -------------------------------------

def _named(text, *names):
    """Whether each name is an argument's location or a result's path (`text` lowered
    with debug info)."""
    return all(f'loc("{n}")' in text or f'jax.result_info = "{n}"' in text for n in names)


def test_lowered_pmap_names_arguments_and_results():
    def step(params, batch, lr):
        return {"w": params["w"] - lr * batch}, jnp.sum(batch)
    f = plax.pmap(step, "i", in_axes=(None, 0, None), static_broadcasted_argnums=2)
    text = f.lower({"w": np.ones(3, np.float32)}, X, 0.1).as_text(debug_info=True)
    assert _named(text, "params['w']", "batch", "result[0]['w']", "result[1]")
    assert 'loc("batch")' in text and "lr" not in text  # static arguments are not inputs


def test_names_survive_grad_and_jit_of_pmap():
    def loss(weights, batch):
        return jnp.sum(jnp.sin(weights * batch))
    g = plax.pmap(plax.grad(loss), in_axes=(None, 0))
    assert _named(g.lower(np.ones(3, np.float32), X).as_text(debug_info=True),
                  "weights", "batch", "result")
    j = plax.jit(plax.pmap(loss))
    assert _named(j.lower(X, X).as_text(debug_info=True), "weights", "batch", "result")


def test_make_jaxpr_of_pmap_holds_the_inner_jaxpr_with_its_names():
    def f(weights, batch):
        return lax.psum(weights * batch, "i")
    closed = plax.make_jaxpr(plax.pmap(f, "i"))(X, X)
    (call,) = closed.eqns
    assert call.params["name"] == "_fun"  # JAX's pmap jits a function of that name
    inner = call.params["jaxpr"].jaxpr
    assert inner.debug_info.arg_names == ("weights", "batch")
    (shmap,) = inner.eqns
    body = shmap.params["jaxpr"].jaxpr
    assert body.debug_info.arg_names == ("weights", "batch")
    assert body.debug_info.func_name == "f" and "psum" in str(closed)
