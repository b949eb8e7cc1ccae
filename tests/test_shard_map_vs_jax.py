"""shard_map, its collectives and pmap against JAX 0.10 itself (in a subprocess):
values, shapes and dtypes of the same program on the same 8 CPU devices."""
import numpy as np

from jax_differential import (
    assert_same_as_jax,
    requires_jax,
    run_body,
    run_in_jax,
    start_in_jax,
)

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
# Nested: the outer shard_map makes "x" manual; an inner one (on the mesh in context in
# its body, all axes but those already manual) splits over "y", and may not name "x".
grid = lib.make_mesh((2, 4), ("x", "y"), axis_types=(sharding.AxisType.Auto,) * 2)
x84 = np.arange(32, dtype=np.float32).reshape(8, 4)
over_y = lambda b: lib.shard_map(lambda c: lax.psum(c, "y") + lax.axis_index("y"),
                                 in_specs=P(None, "y"), out_specs=P(None, "y"))(b)
over_x = lambda b: lib.shard_map(lambda c: c * 2, in_specs=P("x"), out_specs=P("x"))(b)
outer = lambda inner: lib.shard_map(inner, mesh=grid, in_specs=P("x"), out_specs=P("x"),
                                    axis_names={"x"})
results["nested_eager"], results["nested_jit"] = outer(over_y)(x84), lib.jit(outer(over_y))(x84)
try:  # (JAX's lowering refuses it; plax refuses it while tracing, with the same class)
    lib.jit(outer(over_x))(x84)
except Exception as err:
    results["nested_same_axis"] = np.array(type(err).__name__)
"""


@requires_jax
def test_eager_shard_map_reshards_and_takes_none_out_specs_as_jax():
    inputs = {"x": np.arange(8, dtype=np.float32)}
    mine, theirs = run_body(EAGER_BODY, inputs), run_in_jax(EAGER_BODY, inputs)
    assert sorted(mine) == sorted(theirs)
    for key in mine:
        assert mine[key].dtype == theirs[key].dtype and np.array_equal(mine[key], theirs[key]), (
            key, mine[key], theirs[key])


GROUPS_BODY = """
import importlib
sharding = importlib.import_module(lib.__name__ + ".sharding")
P = sharding.PartitionSpec
grid = sharding.Mesh(np.array(lib.devices()).reshape(4, 2), ("x", "y"))
x, m = inputs["x"], inputs["m"]  # f32[4] and f32[4, 4]: member k of pmap holds row k
G, uneven = [[0, 2], [3, 1]], [[0, 1, 2], [3]]

def pm(f, *args):
    return lib.pmap(f, "i")(*args)

def outcome(key, f, *args):  # an error is an answer too: its class
    try:
        results[key] = f(*args)
    except Exception as err:
        results[key] = np.array(type(err).__name__)

outcome("psum", pm, lambda v: lax.psum(v, "i", axis_index_groups=G), x)
outcome("psum_uneven", pm, lambda v: lax.psum(v, "i", axis_index_groups=uneven), x)
outcome("psum_bool", pm, lambda v: lax.psum(v > 1, "i", axis_index_groups=G), x)
outcome("psum_numpy_groups", pm, lambda v: lax.psum(v, "i", axis_index_groups=np.array(G)), x)
outcome("pmax", pm, lambda v: lax.pmax(v, "i", axis_index_groups=G), x)
outcome("pmin", pm, lambda v: lax.pmin(v, "i", axis_index_groups=G), x)
outcome("pmean_int", pm, lambda v: lax.pmean(v.astype(jnp.int32), "i", axis_index_groups=G), x)
outcome("all_gather", pm, lambda v: lax.all_gather(v, "i", axis_index_groups=G, axis=1), m)
outcome("all_gather_tiled", pm, lambda v: lax.all_gather(v, "i", axis_index_groups=G,
                                                         tiled=True), m)
outcome("psum_scatter", pm, lambda v: lax.psum_scatter(v, "i", axis_index_groups=G,
                                                       tiled=True), m)
outcome("psum_scatter_untiled", pm, lambda v: lax.psum_scatter(v[:2], "i",
                                                               axis_index_groups=G), m)
outcome("all_to_all", pm, lambda v: lax.all_to_all(v.reshape(2, 2), "i", 0, 1,
                                                   axis_index_groups=G), m)
outcome("pswapaxes", pm, lambda v: lax.pswapaxes(v.reshape(2, 2), "i", 0,
                                                 axis_index_groups=G), m)
# Derivatives under pmap (psum transposes to psum within the groups).
weights = jnp.arange(8.0).reshape(2, 4)
outcome("grad_psum", pm, lib.grad(lambda v: lax.psum(v * v, "i", axis_index_groups=G)), x)
outcome("jvp_psum", pm, lambda v: lib.jvp(lambda u: lax.psum(u * u, "i", axis_index_groups=G),
                                          (v,), (v,)), x)
outcome("grad_all_gather", pm, lib.grad(lambda v: jnp.sum(
    lax.all_gather(v, "i", axis_index_groups=G) * weights)), m)
outcome("grad_psum_scatter", pm, lib.grad(lambda v: jnp.sum(
    lax.psum_scatter(v, "i", axis_index_groups=G, tiled=True) * v[:2])), m)
outcome("grad_all_to_all", pm, lib.grad(lambda v: jnp.sum(
    lax.all_to_all(v, "i", 0, 0, axis_index_groups=G, tiled=True) * v)), m)
# A vmap of another axis inside the pmap, and one outside it.
inner = lambda f: pm(lib.vmap(f, axis_name="j"), m)
outcome("vmap_psum", inner, lambda v: lax.psum(v, "i", axis_index_groups=G))
outcome("vmap_all_gather", inner, lambda v: lax.all_gather(v, "i", axis_index_groups=G))
outcome("vmap_psum_scatter", lambda: pm(lib.vmap(lambda v: lax.psum_scatter(
    v, "i", axis_index_groups=G, tiled=True), axis_name="j"), m.reshape(4, 2, 2)))
outcome("vmap_of_pmap", lib.vmap(lib.pmap(lambda v: lax.psum(v, "i", axis_index_groups=G),
                                          "i")), m)
# shard_map over a 4 x 2 grid: the groups' positions index the product of the names, the
# first varying slowest; check_vma=True takes groups but in psum (as JAX).
def smap(f, vma=False):
    return lib.jit(lib.shard_map(f, mesh=grid, in_specs=P("x", "y"), out_specs=P("x", "y"),
                                 check_vma=vma))(m)
halves = [[0, 1, 2, 3], [4, 5, 6, 7]]
outcome("grid_xy", smap, lambda b: lax.psum(b, ("x", "y"), axis_index_groups=halves))
outcome("grid_yx", smap, lambda b: lax.psum(b, ("y", "x"), axis_index_groups=halves))
outcome("grid_x", smap, lambda b: lax.psum(b, "x", axis_index_groups=G))
outcome("grid_all_gather_yx", smap, lambda b: lax.all_gather(
    b, ("y", "x"), axis_index_groups=halves, tiled=True))
outcome("checked_pmax", smap, lambda b: lax.pmax(b, "x", axis_index_groups=G), True)
outcome("checked_all_gather", smap, lambda b: lax.all_gather(b, "x", axis_index_groups=G,
                                                             tiled=True), True)
outcome("checked_psum_scatter", smap, lambda b: lax.psum_scatter(
    jnp.tile(b, (2, 1)), "x", axis_index_groups=G, tiled=True), True)
outcome("checked_all_to_all", smap, lambda b: lax.all_to_all(
    b, "x", 1, 1, axis_index_groups=G, tiled=True), True)
outcome("checked_psum", smap, lambda b: lax.psum(b, "x", axis_index_groups=G), True)
# Through the shard_map: a psum within groups is no psum over the whole axis, even of a
# cotangent the members all hold (out_specs without "x").
for spec in (P(None, "y"), P("x", "y")):
    outcome(f"grad_through_{spec}", lib.grad(lambda a: jnp.sum(lib.shard_map(
        lambda b: lax.psum(b * b, "x", axis_index_groups=G), mesh=grid, in_specs=P("x", "y"),
        out_specs=spec, check_vma=False)(a) ** 2)), m)
# Bad groups, and where groups are not supported.
for key, groups in [("duplicate", [[0, 0], [2, 3]]), ("negative", [[-1, 0], [1, 2]]),
                    ("floats", [[0.0, 1.0], [2, 3]]), ("flat", [0, 1, 2, 3]),
                    ("string", "ab"), ("empty", []), ("beyond", [[0, 1, 2], [3, 4, 5]]),
                    ("too_few", [[0, 1]])]:
    outcome("bad_" + key, pm, lambda v: lax.psum(v, "i", axis_index_groups=groups), x)
outcome("uneven_all_gather", pm, lambda v: lax.all_gather(v, "i", axis_index_groups=uneven),
        x)
outcome("uneven_psum_scatter", pm, lambda v: lax.psum_scatter(
    v, "i", axis_index_groups=uneven, tiled=True), m[:, :3])
outcome("uneven_all_to_all", pm, lambda v: lax.all_to_all(
    v[:3], "i", 0, 0, axis_index_groups=uneven), m)
outcome("psum_scatter_size", pm, lambda v: lax.psum_scatter(v, "i", axis_index_groups=G), m)
outcome("all_gather_invarying", pm, lambda v: lax.all_gather(v, "i", axis_index_groups=G,
                                                             to="invarying"), x)
own = lambda f: lib.vmap(f, axis_name="i")(m)
outcome("vmap_own_psum", own, lambda v: lax.psum(v, "i", axis_index_groups=G))
outcome("vmap_own_pmax", own, lambda v: lax.pmax(v, "i", axis_index_groups=G))
outcome("vmap_own_pmean", own, lambda v: lax.pmean(v, "i", axis_index_groups=G))
outcome("vmap_own_all_gather", own, lambda v: lax.all_gather(v, "i", axis_index_groups=G))
outcome("vmap_own_psum_scatter", own, lambda v: lax.psum_scatter(v, "i", axis_index_groups=G))
outcome("vmap_own_all_to_all", own, lambda v: lax.all_to_all(v[:2], "i", 0, 0,
                                                            axis_index_groups=G))
outcome("vmap_own_two_names", lambda: pm(lib.vmap(lambda v: lax.psum(
    v, ("i", "j"), axis_index_groups=halves), axis_name="j"), m[:, :2]))
# A constant every member of a vmap holds: counted once per member of its group.
outcome("vmap_constant", own, lambda v: lax.psum(2.0, "i", axis_index_groups=G))
"""


@requires_jax
def test_axis_index_groups_match_jax():
    """Collectives within groups of an axis's members under pmap, shard_map and vmap:
    bit-identical values (of integers), dtypes, and the class of each error."""
    inputs = {"x": np.float32([3, 1, 4, 1]), "m": np.arange(16, dtype=np.float32).reshape(4, 4)}
    theirs = start_in_jax(GROUPS_BODY, inputs)
    mine = run_body(GROUPS_BODY, inputs)
    theirs = theirs()
    assert sorted(mine) == sorted(theirs)
    for key in mine:
        assert mine[key].dtype == theirs[key].dtype and np.array_equal(mine[key], theirs[key]), (
            key, mine[key], theirs[key])


# What an eager shard_map's body prints (its values show each device's block), the types
# it sees, which conversions of its values to Python work, and the errors of bad uses:
# the cells of JAX's shard_map notebook and more. Meshes of at most 4 devices (JAX's eager
# shard_map over all 8 CPU devices can stall in XLA's collective rendezvous).
EAGER_PRINT_BODY = """
import contextlib
import importlib
import io
sharding = importlib.import_module(lib.__name__ + ".sharding")
P = sharding.PartitionSpec

def printed(key, f, *args):  # what the call prints (or the class of its error) and returns
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            value = f(*args)
        if value is not None:
            results[key + "_value"] = value
    except Exception as err:
        print(f"!! {type(err).__name__}", file=out)
    results[key] = np.array(out.getvalue())

def sm(f, i=P("i"), o=P("i"), **kw):
    return lib.shard_map(f, in_specs=i, out_specs=o, **kw)

def before_after(key, collective, x, i=P("i"), o=P("i")):
    def body(b):
        print("BEFORE:", b)
        y = collective(b)
        print("AFTER:", y)
        return y
    printed(key, sm(body, i, o), x)

x6 = np.arange(6.0, dtype=np.float32)
x16 = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 1, 2], np.int32)
with lib.set_mesh(lib.make_mesh((2,), ("i",))):
    xs = lib.device_put(x6, P("i"))
    printed("blocks", sm(lambda v: print(v) or 2 * v), xs)
    printed("whole", sm(lambda v: print(v) or 2 * v, P(), P()), x6)
    printed("summed", sm(lambda v: print(lax.psum(v, "i")) or lax.psum(v, "i"), o=P()), xs)
    printed("types", sm(lambda v: print(lib.typeof(v), lib.typeof(lax.psum(v, "i"))) or v), xs)
    printed("pcast_without_out_specs", sm(lambda v: print(
        lib.typeof(v), lib.typeof(lax.pcast(v, "i", to="varying"))), P(), None), x6)
    printed("constant", sm(lambda v: print(jnp.zeros(2), lib.typeof(jnp.zeros(2))) or v), xs)
    printed("index", sm(lambda v: print(lax.axis_index("i"), lax.axis_size("i")) or v), xs)
    printed("unchecked", sm(lambda v: print(v * 2, lib.typeof(v)) or v, check_vma=False), xs)
    printed("repr", sm(lambda v: print(repr(v[0])) or v), xs)
    keys = lib.device_put(lib.random.split(lib.random.key(0), 2), P("i"))
    printed("keys", sm(lambda k: print(k) or lib.random.key_data(k)), keys)
    printed("closure", sm(lambda v: print(v + x6[:3]) or v), xs)
    printed("nested_jit", sm(lambda v: lib.jit(lambda u: print(lib.typeof(u)) or u + 1)(v)), xs)
    printed("bool_replicated", sm(lambda v: v * bool(lax.psum(v, "i")[0] > 0)), xs)
    printed("int_replicated", sm(lambda v: v * int(lax.psum(v, "i")[1])), xs)
    printed("item_replicated", sm(lambda v: v * lax.psum(v, "i")[2].item()), xs)
    leaked = []
    printed("leak", sm(lambda v: leaked.append(v) or v), xs)
    printed("leaked_str", lambda: print(leaked[0]))
    # bad uses
    printed("bool_varying", sm(lambda v: v * bool(v[0] > 0)), xs)
    printed("float_varying", sm(lambda v: v * float(v[0])), xs)
    printed("bool_unchecked", sm(lambda v: v * bool(lax.psum(v, "i")[0] > 0),
                                 check_vma=False), xs)
    printed("numpy_varying", sm(lambda v: np.asarray(v)), xs)
    printed("put_on_device", sm(lambda v: lib.device_put(v, lib.devices()[0])), xs)
    printed("claimed_replicated", sm(lambda v: v, o=P()), xs)
    printed("claimed_replicated_jit", lib.jit(sm(lambda v: v, o=P())), xs)
    printed("rank", sm(lambda v: v.sum()), xs)
    printed("spec_mismatch", sm(lambda v: v), x6)
    lib.config.update("jax_auto_pcast", False)
    try:
        printed("unmatched_without_auto_pcast", sm(lambda v, w: v * w, (P("i"), P())), xs,
                x6[:3])
    finally:
        lib.config.update("jax_auto_pcast", True)
# Meshes of Auto axes, as the notebook's (arguments need not be laid out as their specs).
with lib.set_mesh(sharding.Mesh(np.array(lib.devices()[:4]), ("i",))):
    before_after("psum", lambda b: lax.psum(b, "i"), x16, o=P(None))
    before_after("all_gather", lambda b: lax.all_gather(b, "i", tiled=True), x16[:4])
    before_after("all_gather_untiled", lambda b: lax.all_gather(b, "i"), x16[:4])
    before_after("psum_scatter", lambda b: lax.psum_scatter(b, "i", tiled=True), x16)
    before_after("ppermute", lambda b: lax.ppermute(
        b, "i", [(k, (k + 1) % lax.axis_size("i")) for k in range(lax.axis_size("i"))]),
        np.arange(8, dtype=np.int32))
    before_after("all_to_all", lambda b: lax.all_to_all(b, "i", 0, 0, tiled=True), x16)
with lib.set_mesh(sharding.Mesh(np.array(lib.devices()[:4]).reshape(2, 2), ("i", "j"))):
    x44 = np.arange(16, dtype=np.int32).reshape(4, 4)
    before_after("grid_psum", lambda b: lax.psum(b, "i"), x44, P("i", "j"), P(None, "j"))
    before_after("grid_psum_both", lambda b: lax.psum(b, ("i", "j")), x44, P("i", "j"),
                 P(None, None))
    printed("grid_types", sm(lambda b: print(lib.typeof(b), lib.typeof(lax.psum(b, "j"))) or b,
                             P("i", "j"), P("i", "j")), x44)
"""


@requires_jax
def test_eager_shard_map_prints_blocks_types_and_errors_as_jax():
    theirs = start_in_jax(EAGER_PRINT_BODY, {"unused": np.zeros(1)})
    mine = run_body(EAGER_PRINT_BODY, {"unused": np.zeros(1)})
    theirs = theirs()
    assert sorted(mine) == sorted(theirs)
    different = [f"{key}:\n--- plax\n{mine[key]}\n--- jax\n{theirs[key]}" for key in mine
                 if mine[key].dtype != theirs[key].dtype
                 or not np.array_equal(mine[key], theirs[key])]
    assert not different, "\n".join(different)
