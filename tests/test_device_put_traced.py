"""`device_put` of traced values (the primitive `plax.device_put`): inside jit it names
where a value should be without moving it (as JAX on CPU), types the value on a mesh
with Explicit axes, and composes with grad and vmap; concrete operands are placed."""
import numpy as np
import pytest

import plax
import plax.memory
import plax.numpy as jnp
from plax.extend.core import eval_jaxpr
from plax.sharding import AxisType, NamedSharding, PartitionSpec as P

X = np.arange(16.0, dtype=np.float32)


def _put_eqns(jaxpr):
    return [e for e in jaxpr.eqns if e.primitive.name == "device_put"]


def test_a_sharding_target_inside_jit_names_the_devices_not_a_layout(devs):
    mesh = plax.sharding.Mesh(np.array(devs), ("x",))
    target = NamedSharding(mesh, P("x"))
    f = plax.jit(lambda a: plax.device_put(a * 2, target) + 1)
    np.testing.assert_array_equal(f(X), X * 2 + 1)
    # as JAX: the jit runs on the target's mesh, and the result's layout is the
    # partitioner's (replicated here), since the put lowers to the value itself
    assert f(X).sharding == NamedSharding(mesh, P())
    (eqn,) = _put_eqns(plax.make_jaxpr(lambda a: plax.device_put(a, target))(X).jaxpr)
    assert eqn.params == {"device": target, "donate": False, "may_alias": None}
    assert "stablehlo.custom_call" not in f.lower(X).as_text()
    # a constant put there is staged as well, so it too places the call on the mesh
    constant = plax.jit(lambda: plax.device_put(X, target))
    assert constant().sharding == NamedSharding(mesh, P())
    np.testing.assert_array_equal(constant(), X)
    assert len(_put_eqns(plax.make_jaxpr(constant)().jaxpr.eqns[0].params["jaxpr"].jaxpr)) == 1


def test_device_and_memory_space_targets_inside_jit_leave_the_value(devs):
    for target in (devs[3], plax.memory.Space.Host, plax.memory.Space.Device):
        f = plax.jit(lambda a, t=target: plax.device_put(a, t) * 3)
        np.testing.assert_array_equal(f(X), X * 3)
        (eqn,) = _put_eqns(plax.make_jaxpr(lambda a, t=target: plax.device_put(a, t))(X).jaxpr)
        assert eqn.params["device"] is target
    # a pytree with a target per leaf: every leaf binds its target, a constant too, and
    # a leaf without one binds None (JAX stages each put as well)
    g = plax.jit(lambda a, b: plax.device_put((a, b, 2.0), (devs[1], None, devs[2])))
    outs = g(X, X + 1)
    np.testing.assert_array_equal(outs[0], X)
    np.testing.assert_array_equal(outs[1], X + 1)
    assert float(outs[2]) == 2.0
    puts = _put_eqns(plax.make_jaxpr(g)(X, X).jaxpr.eqns[0].params["jaxpr"].jaxpr)
    assert [eqn.params["device"] for eqn in puts] == [devs[1], None, devs[2]]
    (eqn,) = _put_eqns(plax.make_jaxpr(plax.device_put)(X).jaxpr)
    assert eqn.params["device"] is None


def test_grad_and_vmap_through_device_put(mesh):
    target = NamedSharding(mesh, P("x"))
    loss = lambda a: (plax.device_put(a, target) ** 2).sum()  # noqa: E731
    x = X.reshape(4, 4)
    np.testing.assert_allclose(plax.grad(loss)(x), 2 * x)
    np.testing.assert_allclose(plax.jit(plax.grad(loss))(x), 2 * x)
    # the linear map and its transpose are device_puts of tangents and cotangents
    _, tangent = plax.jvp(lambda a: plax.device_put(a, target), (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(tangent, 1.0)
    # outside jit, the primal is placed now
    primal, _ = plax.jvp(lambda a: plax.device_put(a, target), (x,), (x,))
    assert primal.sharding == target
    # vmap leaves the batch dimension out of the target's split
    batched = plax.vmap(lambda a: plax.device_put(a, target))(np.ones((3, 4, 4), np.float32))
    assert batched.sharding.spec == P(None, "x")
    (eqn,) = _put_eqns(plax.make_jaxpr(plax.vmap(lambda a: plax.device_put(a, target)))(
        np.ones((3, 4, 4), np.float32)).jaxpr)
    assert eqn.params["device"].spec == P(None, "x")


def test_eval_jaxpr_places_concrete_operands(mesh):
    target = NamedSharding(mesh, P(None, "y"))
    closed = plax.make_jaxpr(lambda a: plax.device_put(a, target))(X.reshape(4, 4))
    (out,) = eval_jaxpr(closed.jaxpr, closed.consts, X.reshape(4, 4))
    assert out.sharding == target
    np.testing.assert_array_equal(out, X.reshape(4, 4))


def test_explicit_axes_type_the_result_and_the_cotangent_keeps_the_input_type(devs):
    mesh = plax.make_mesh((8,), ("x",), axis_types=(AxisType.Explicit,))
    with plax.set_mesh(mesh):
        types = []

        def f(a):
            out = plax.device_put(a, P("x"))
            types.append(plax.typeof(out))
            return out * 2
        out = plax.jit(f)(X)
        assert str(types[0]) == "float32[16@x]"
        assert out.sharding == NamedSharding(mesh, P("x"))
        np.testing.assert_array_equal(out, X * 2)
        x = jnp.asarray(X)
        for grad in (plax.grad, lambda fn: plax.jit(plax.grad(fn))):
            g = grad(lambda a: (plax.device_put(a, P("x")) ** 2).sum())(x)
            np.testing.assert_allclose(g, 2 * X)
            # as JAX: unsplit, as the input's type says
            assert str(plax.typeof(g)) == "float32[16]"
            assert g.sharding == NamedSharding(mesh, P())


def test_bad_targets_inside_jit_are_value_errors(mesh, devs):
    split = NamedSharding(plax.sharding.Mesh(np.array(devs), ("x",)), P("x"))
    with pytest.raises(ValueError, match=r"device_put of a value of type f32\[3\].*"
                                         r"not divisible by 8"):
        plax.jit(lambda a: plax.device_put(a, split))(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="device_put"):
        plax.jit(lambda a: plax.device_put(a, NamedSharding(mesh, P("x", "y"))))(X)
    with pytest.raises(ValueError, match="donate=True cannot be transposed"):
        plax.grad(lambda a: plax.device_put(a, split, donate=True).sum())(X)
    with pytest.raises(ValueError, match="device_put: device must be"):  # as JAX
        plax.jit(lambda a: plax.device_put(a, "cpu:0"))(X)
