"""Sharding entry points called as JAX's documentation calls them, against JAX in a
subprocess: `auto_axes` given `out_sharding=` at the call, and
`make_array_from_process_local_data` with a bare PartitionSpec under `set_mesh` and
with a pytree of local data, the shardings of `zeros_like`/`full_like`, and of the
outputs of one-device computations (results, their specs and the errors' classes)."""
import numpy as np
from jax_differential import requires_jax, run_body, run_in_jax

pytestmark = requires_jax

BODY = """
import importlib
sharding = importlib.import_module(lib.__name__ + ".sharding")
P, NamedSharding, AxisType = sharding.PartitionSpec, sharding.NamedSharding, sharding.AxisType
x = inputs["x"]

def put(name, value):
    results[name] = np.asarray(value)
    results[name + ".spec"] = np.array(str(value.sharding.spec))

def error(name, fn):
    try:
        fn()
        results[name] = np.array("no error")
    except Exception as err:
        results[name] = np.array(type(err).__name__)

explicit = lib.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
double = sharding.auto_axes(lambda a: a * 2)
with lib.set_mesh(explicit):
    xe = lib.device_put(x, P("x", "y"))
    put("auto_axes.at_call", double(xe, out_sharding=P(None, "y")))
    put("auto_axes.jit", lib.jit(lambda a: double(a, out_sharding=P("x")))(xe))
    error("auto_axes.missing", lambda: double(xe))

auto = lib.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
with lib.set_mesh(auto):
    put("local.spec", lib.make_array_from_process_local_data(P("x"), x))
    tree = lib.make_array_from_process_local_data(NamedSharding(auto, P("x")),
                                                 {"a": x, "b": x[:, 0]})
    put("local.tree.a", tree["a"])
    put("local.tree.b", tree["b"])
    tree = lib.make_array_from_process_local_data({"a": P("x", "y"), "b": P()},
                                                 {"a": x, "b": x[:, 0]})
    put("local.prefix.a", tree["a"])
    put("local.prefix.b", tree["b"])
    error("local.bad_shape", lambda: lib.make_array_from_process_local_data(
        P("x"), x, (16, 4)))
error("local.no_mesh", lambda: lib.make_array_from_process_local_data(P("x"), x))

# zeros_like/ones_like/full_like of a committed Array keep its sharding (the rule of
# JAX's full_like: not for a weak type, another shape or a traced prototype)
def like(name, value):
    results[name] = np.asarray(value)
    results[name + ".sharding"] = np.array(str(getattr(value.sharding, "spec", "single")))

xs = lib.device_put(x, NamedSharding(auto, P("x", "y")))
like("like.zeros", lib.numpy.zeros_like(xs))
like("like.full", lib.numpy.full_like(xs, 2.5))
like("like.ones_int", lib.numpy.ones_like(xs, dtype=lib.numpy.int32))
like("like.other_shape", lib.numpy.zeros_like(xs, shape=(8, 2)))
like("like.weak", lib.numpy.zeros_like(lib.device_put(1.0, NamedSharding(auto, P()))))
like("like.jit", lib.jit(lib.numpy.zeros_like)(xs))
on_one = lib.numpy.full_like(lib.device_put(x, lib.devices()[3]), 7.0)
like("like.one_device", on_one)
results["like.one_device.where"] = np.array([next(iter(on_one.devices())).id, on_one.committed])
with lib.set_mesh(auto):
    like("like.in_mesh", lib.numpy.zeros_like(lib.device_put(x, P("x"))))

# a computation on one device gives its outputs the kind of sharding its first stated
# input (else output) has: a NamedSharding on a one-device mesh stays one
one = NamedSharding(sharding.Mesh(lib.devices()[:1], ("d",)), P())
single = sharding.SingleDeviceSharding(lib.devices()[0])
xn, x1, u = lib.device_put(x, one), lib.device_put(x, single), lib.numpy.ones(3)
like("one.eager", xn + 1)
like("one.later_arg", lib.jit(lambda a, b: (a.sum() + b, b * 2))(u, xn)[1])
like("one.single_first", lib.jit(lambda a, b: a + b)(x1, xn))
like("one.named_first", lib.jit(lambda a, b: a + b)(xn, x1))
like("one.stated_out", lib.jit(lambda a: (a, a * 2), out_shardings=(one, None))(u)[1])
like("one.stated_in", lib.jit(lambda a: a[None], in_shardings=one)(u))
like("one.stated_single", lib.jit(lambda a: a, out_shardings=single)(xn))
"""


def test_auto_axes_at_call_and_process_local_data_as_jax():
    inputs = {"x": np.arange(32, dtype=np.float32).reshape(8, 4)}
    mine, theirs = run_body(BODY, inputs), run_in_jax(BODY, inputs)
    assert sorted(mine) == sorted(theirs)
    bad = {k: (mine[k], theirs[k]) for k in mine
           if mine[k].dtype != theirs[k].dtype or not np.array_equal(mine[k], theirs[k])}
    assert not bad, bad
