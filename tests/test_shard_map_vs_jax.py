"""shard_map, its collectives and pmap against JAX 0.10 itself (in a subprocess):
values, shapes and dtypes of the same program on the same 8 CPU devices."""
import numpy as np

from jax_differential import assert_same_as_jax, requires_jax, run_body, run_in_jax

BODY = """
import importlib
sharding = importlib.import_module(lib.__name__ + ".sharding")
P, Mesh = sharding.PartitionSpec, sharding.Mesh
devs = lib.devices()
line = Mesh(np.array(devs), ("i",))
grid = Mesh(np.array(devs).reshape(2, 4), ("x", "y"))
x, w = inputs["x"], inputs["w"]

def smap(f, mesh, i, o, **kw):
    return lib.jit(lib.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw))

ring = [(k, (k + 1) % 8) for k in range(8)]
outs = smap(lambda b: (lax.psum(b, "y"), lax.pmax(b, ("x", "y")), lax.pmean(b, "x"),
                       lax.all_gather(b, "y", axis=1, tiled=True),
                       lax.psum_scatter(b, "y", scatter_dimension=0, tiled=True),
                       lax.all_to_all(b, "y", 0, 1, tiled=True),
                       lax.ppermute(b, ("x", "y"), ring),
                       b * 0 + lax.axis_index(("x", "y"))),
            grid, P("x", "y"), (P("x"), P(), P(None, "y"), P("x"), P("x", "y"), P("x", "y"),
                                P("x", "y"), P("x", "y")), check_vma=False)(x)
for k, o in enumerate(outs):
    results[f"grid{k}"] = o

# Partially manual: a member's index with the other axis left to the partitioner,
# under both partitioners (JAX 0.10.2 has no lowering of pbroadcast; plax's own
# tests check it).
for shardy in (True, False):
    lib.config.update("jax_use_shardy_partitioner", shardy)
    tag = "sdy" if shardy else "gspmd"
    results[f"part_x_{tag}"] = smap(lambda b: b * 0 + lax.axis_index("x") * 2, grid, P("x"),
                                    P("x"), axis_names={"x"})(x)
    results[f"part_y_{tag}"] = smap(lambda b: lax.psum(b, "y") + lax.axis_index("y") * 4,
                                    grid, P(None, "y"), P(None, "y"), axis_names={"y"})(x)
lib.config.update("jax_use_shardy_partitioner", True)

def loss(w, b):
    return lax.psum(jnp.sum(jnp.tanh(b @ w) ** 2), "i")
grad = lib.grad(lib.shard_map(loss, mesh=line, in_specs=(P(), P("i")), out_specs=P()))
results["dp_grad"] = lib.jit(grad)(w, x)
results["pmap_psum"] = lib.pmap(lambda v: lax.psum(v, "i"), axis_name="i")(x)
results["pmap_axes"] = lib.pmap(lambda a, s: (a * s, lax.axis_index("i")), "i",
                                in_axes=(1, None), out_axes=(1, 0))(x.T, np.float32(3))[0]
results["pmap_grad"] = lib.pmap(lib.grad(lambda v: lax.psum(jnp.sum(v ** 2), "i")),
                                axis_name="i")(x)
"""


@requires_jax
def test_shard_map_collectives_and_pmap_match_jax():
    rng = np.random.default_rng(0)
    inputs = {"x": rng.normal(size=(8, 8)).astype(np.float32),
              "w": rng.normal(size=(8, 3)).astype(np.float32)}
    assert_same_as_jax(BODY, inputs, rtol=1e-5, atol=1e-5)


EAGER_BODY = """
import importlib
sharding = importlib.import_module(lib.__name__ + ".sharding")
P = sharding.PartitionSpec
mesh = lib.make_mesh((4,), ("i",), axis_types=(sharding.AxisType.Auto,))
x = lib.device_put(inputs["x"], sharding.NamedSharding(mesh, P()))
# An eager call resharding a committed argument laid out otherwise than its in_specs.
out = lib.shard_map(lambda a: a * 2 + lax.axis_index("i"), mesh=mesh, in_specs=P("i"),
                    out_specs=P("i"))(x)
results["resharded"] = out
results["resharded_spec"] = np.array(str(out.sharding.spec))
with lib.set_mesh(mesh):
    y = jnp.arange(8.0)
    results["under_set_mesh"] = lib.shard_map(lambda a: a + 1, mesh=mesh, in_specs=P("i"),
                                              out_specs=P("i"))(y)
# None as out_specs (or an out_specs entry) for an empty output subtree.
results["none_out"] = np.array(repr(lib.shard_map(lambda a: None, mesh=mesh,
                                                  in_specs=P("i"), out_specs=None)(x)))
pair = lib.shard_map(lambda a: (a, None), mesh=mesh, in_specs=P("i"),
                     out_specs=(P("i"), None))(x)
results["pair0"], results["pair1"] = pair[0], np.array(repr(pair[1]))
try:
    lib.shard_map(lambda a: a, mesh=mesh, in_specs=P("i"), out_specs=None)(x)
except Exception as err:
    results["none_for_array"] = np.array(type(err).__name__)
"""


@requires_jax
def test_eager_shard_map_reshards_and_takes_none_out_specs_as_jax():
    inputs = {"x": np.arange(8, dtype=np.float32)}
    mine, theirs = run_body(EAGER_BODY, inputs), run_in_jax(EAGER_BODY, inputs)
    assert sorted(mine) == sorted(theirs)
    for key in mine:
        assert mine[key].dtype == theirs[key].dtype and np.array_equal(mine[key], theirs[key]), (
            key, mine[key], theirs[key])
