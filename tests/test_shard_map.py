"""shard_map: eager and under jit, specs as pytree prefixes, the mesh in context,
partially manual meshes, nesting, a member's index where some axes are automatic
(both partitioners), control flow on both sides, AbstractMesh caching (counted with
plax.monitoring), check_vma, transformations (grad, jvp, vmap, checkpoint, scan), the
experimental spelling, GSPMD's lowering, and the errors."""
import collections
import warnings

import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.sharding import AbstractMesh, Mesh, NamedSharding, PartitionSpec as P

RNG = np.random.default_rng(1)
X = RNG.normal(size=(8, 4)).astype(np.float32)
EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
          "/jax/core/compile/backend_compile_duration": "compile"}


@pytest.fixture(scope="module")
def line(devs):
    return Mesh(np.array(devs), ("i",))


@pytest.fixture
def counts():
    seen = collections.Counter()

    def listener(event, duration, **kwargs):
        if event in EVENTS:
            seen[EVENTS[event]] += 1

    plax.monitoring.register_event_duration_secs_listener(listener)
    yield seen
    plax.monitoring.unregister_event_duration_listener(listener)


def total(b, axis="i"):
    return lax.psum(b, axis)


# --- calls -------------------------------------------------------------------------------------

def test_eager_and_jit_agree_and_outputs_are_laid_out_by_out_specs(line):
    f = plax.shard_map(lambda b: (b * 2, total(b)), mesh=line, in_specs=P("i"),
                       out_specs=(P("i"), P()))
    for doubled, summed in (f(X), plax.jit(f)(X)):
        np.testing.assert_allclose(doubled, X * 2)
        np.testing.assert_allclose(summed, X.sum(0, keepdims=True), rtol=1e-5)
        assert doubled.sharding == NamedSharding(line, P("i"))


def test_decorator_pytree_prefixes_and_unmapped_arguments(line):
    @plax.shard_map(mesh=line, in_specs=({"a": P("i"), "b": P()}, None), out_specs=P())
    def f(tree, scale):
        return total(tree["a"] * tree["b"]) * scale

    out = f({"a": X, "b": np.float32(3)}, 0.5)
    np.testing.assert_allclose(out, X.sum(0, keepdims=True) * 1.5, rtol=1e-5)


def test_the_mesh_in_context(line):
    f = plax.shard_map(lambda b: total(b), in_specs=P("i"), out_specs=P())
    with plax.set_mesh(line):
        np.testing.assert_allclose(f(X), X.sum(0, keepdims=True), rtol=1e-5)
        np.testing.assert_allclose(plax.jit(f)(X), X.sum(0, keepdims=True), rtol=1e-5)
    with pytest.raises(ValueError, match="context mesh cannot be empty"):
        f(X)


def test_partially_manual_axes_leave_the_others_to_the_partitioner(mesh):
    f = plax.jit(plax.shard_map(lambda b: jnp.sin(lax.psum(b, "x")) @ b.T, mesh=mesh,
                                in_specs=P("x"), out_specs=P("x"), axis_names={"x"}))
    x = RNG.normal(size=(8, 8)).astype(np.float32)
    halves = x.reshape(2, 4, 8)
    want = np.concatenate([np.sin(halves.sum(0)) @ h.T for h in halves])
    np.testing.assert_allclose(f(x), want, rtol=1e-5, atol=1e-5)
    text = f.lower(x).as_text()
    assert 'manual_axes={"x"}' in text and '[{"x", ?}, {?}]' in text
    with pytest.raises(NameError, match="unbound axis name: y"):
        plax.shard_map(lambda b: lax.psum(b, "y"), mesh=mesh, in_specs=P("x"),
                       out_specs=P(), axis_names={"x"})(x)


def test_nested_shard_maps_over_the_other_axis(mesh):
    def inner(b):
        return lax.psum(b, "y")

    def outer(a):
        part = plax.shard_map(inner, mesh=mesh, in_specs=P(None, "y"), out_specs=P(),
                              axis_names={"y"})(a)
        return lax.psum(part, "x")

    f = plax.jit(plax.shard_map(outer, mesh=mesh, in_specs=P("x"), out_specs=P(),
                                axis_names={"x"}))
    x = RNG.normal(size=(4, 8)).astype(np.float32)
    want = x.reshape(2, 2, 4, 2).sum((0, 2))  # blocks (2, 2) summed over every member
    np.testing.assert_allclose(f(x), want, rtol=1e-5)
    assert f.lower(x).as_text().count("sdy.manual_computation") == 2


def test_a_nested_shard_map_may_not_split_over_the_outer_axis(mesh):
    """Inside the body the mesh in context has the outer axis Manual; an inner spec
    naming it is a ValueError while tracing (JAX's lowering refuses the module)."""
    seen = []

    def outer(a):
        seen.append(plax.sharding.get_abstract_mesh().manual_axes)
        return plax.shard_map(lambda b: b * 2, in_specs=P(), out_specs=P("x"))(a)

    f = plax.shard_map(outer, mesh=mesh, in_specs=P("x"), out_specs=P("x"), axis_names={"x"})
    with pytest.raises(ValueError, match=r"out_specs is P\('x',\), which names the mesh "
                                         "axis 'x', already bound by an enclosing shard_map"):
        plax.make_jaxpr(f)(np.zeros((4, 4), np.float32))
    assert seen == [("x",)]


# --- a member's index where some mesh axes are automatic --------------------------------------
# Only a fully manual region may read the partition id, so there the index is computed
# in a nested region manual over every axis; under both partitioners.

PARTITIONERS = pytest.mark.parametrize("shardy", [True, False], ids=["shardy", "gspmd"])


def partial(f, mesh, in_specs, out_specs, axes, **kw):
    return plax.jit(plax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                   axis_names=axes, **kw))


@PARTITIONERS
@pytest.mark.parametrize("axis", ["x", "y"])
def test_axis_index_and_pbroadcast_with_the_other_axis_automatic(mesh, shardy, axis):
    from plax.extend import config
    n = mesh.shape[axis]
    other = "y" if axis == "x" else "x"
    x = RNG.normal(size=(n * 2, 4)).astype(np.float32)
    # `i * n`: n is also a constant of the index's own lowering (GSPMD once merged the
    # two and crashed).
    f = partial(lambda b: ((lax.axis_index(axis) * n)[None], lax.pbroadcast(b, axis, n - 1)),
                mesh, P(axis), (P(axis), P(axis)), {axis})
    with config.use_shardy_partitioner(shardy):
        index, bcast = f(x)
        text = f.lower(x).as_text()
    np.testing.assert_array_equal(index, np.arange(n) * n)
    np.testing.assert_array_equal(bcast, np.tile(x[-2:], (n, 1)))
    if shardy:  # the index is read in a region nested inside, manual over the rest
        assert f'manual_axes={{"{axis}"}}' in text and f'manual_axes={{"{other}"}}' in text
    else:
        assert "partition_id" in text and "SPMDShardToFullShape" in text and "sdy." not in text


@PARTITIONERS
def test_axis_index_in_nested_batched_and_traced_bodies(mesh, shardy):
    from plax.extend import config

    def outer(a):  # manual over x; the inner shard_map over y makes both manual
        inner = plax.shard_map(lambda b: b + lax.axis_index(("x", "y")), mesh=mesh,
                               in_specs=P("y"), out_specs=P("y"), axis_names={"y"})
        called = plax.jit(lambda b: b + 10 * lax.axis_index("x"))
        return inner(a) + lax.cond(a[0] >= 0, called, lambda b: b, a)

    over_y = partial(lambda b: b + lax.axis_index("y"), mesh, P("y"), P("y"), {"y"})
    with config.use_shardy_partitioner(shardy):
        nested = partial(outer, mesh, P("x"), P("x"), {"x"})(np.zeros(16, np.float32))
        batched = plax.vmap(over_y)(np.zeros((3, 8), np.float32))
    np.testing.assert_array_equal(nested, np.repeat(np.arange(8), 2) + np.repeat([0, 10], 8))
    np.testing.assert_array_equal(batched, np.tile(np.repeat(np.arange(4), 2), (3, 1)))


@PARTITIONERS
def test_axis_index_over_axes_of_size_one(devs, shardy):
    from plax.extend import config
    tall = Mesh(np.array(devs).reshape(8, 1), ("x", "y"))
    f = partial(lambda b: b + lax.axis_index("x"), tall, P("x"), P("x"), {"x"})
    g = partial(lambda b: b + lax.axis_index("y"), tall, P(), P(), {"y"}, check_vma=False)
    with config.use_shardy_partitioner(shardy):
        np.testing.assert_array_equal(f(np.zeros(8, np.int32)), np.arange(8))
        np.testing.assert_array_equal(g(np.ones(8, np.int32)), np.ones(8))
        assert "partition_id" not in g.lower(np.ones(8, np.int32)).as_text()


def test_control_flow_around_and_inside(line):
    summed = plax.shard_map(total, mesh=line, in_specs=P("i"), out_specs=P())

    def step(carry, row):
        return carry + summed(row), None
    rows = RNG.normal(size=(3, 8)).astype(np.float32)
    carry, _ = lax.scan(step, np.zeros(1, np.float32), rows)
    np.testing.assert_allclose(carry, [rows.sum()], rtol=1e-5)
    picked = plax.jit(lambda p, v: lax.cond(p, summed, lambda u: u[:1] * 0, v))
    np.testing.assert_allclose(picked(True, rows[0]), [rows[0].sum()], rtol=1e-5)

    def body(b):
        def inner(c, r):
            return c + total(r), c
        return lax.scan(inner, jnp.zeros(4), b)[0]
    np.testing.assert_allclose(plax.jit(plax.shard_map(body, mesh=line, in_specs=P("i"),
                                                       out_specs=P()))(X), X.sum(0), rtol=1e-5)


# --- AbstractMesh: one trace and one lowering for meshes of one shape -------------------------

def test_abstract_mesh_shares_trace_and_lowering(devs, counts):
    m1, m2 = Mesh(devs[:4], "i"), Mesh(devs[4:], "i")
    f = plax.jit(plax.shard_map(total, mesh=AbstractMesh((4,), ("i",)), in_specs=P("i"),
                                out_specs=P()))
    v = np.arange(8, dtype=np.float32)
    o1 = f(plax.device_put(v, NamedSharding(m1, P("i"))))
    o2 = f(plax.device_put(v, NamedSharding(m2, P("i"))))
    assert counts == {"trace": 1, "lower": 1, "compile": 2}
    np.testing.assert_allclose(o2, [12, 16])
    assert o1.sharding == NamedSharding(m1, P()) and o2.sharding == NamedSharding(m2, P())


def test_abstract_mesh_outside_jit_takes_devices_from_the_arguments(devs):
    m2 = Mesh(devs[4:], "i")
    f = plax.shard_map(total, mesh=AbstractMesh((4,), ("i",)), in_specs=P("i"), out_specs=P())
    out = f(plax.device_put(np.arange(8, dtype=np.float32), NamedSharding(m2, P("i"))))
    assert out.devices() == set(devs[4:])
    with pytest.raises(ValueError, match="needs devices: pass plax Arrays"):
        f(np.arange(8, dtype=np.float32))


# --- check_vma --------------------------------------------------------------------------------

def test_check_vma_rejects_a_varying_value_claimed_replicated(line):
    with pytest.raises(ValueError, match=r"(?s)out_specs is P\(\) which implies that the "
                                         r"corresponding output value is replicated across "
                                         r"mesh axis 'i'.*varying over \{i\}.*check_vma=False"):
        plax.shard_map(lambda b: b * 2, mesh=line, in_specs=P("i"), out_specs=P())(X)
    unchecked = plax.shard_map(lambda b: b * 2, mesh=line, in_specs=P("i"), out_specs=P(),
                               check_vma=False)
    np.testing.assert_allclose(unchecked(X), X[:1] * 2)  # one member's block, unchecked


def test_check_vma_follows_collectives_and_nested_calls(line):
    fine = [lambda b: total(b), lambda b: lax.all_gather(b, "i", to="invarying"),
            lambda b: plax.jit(total)(b), lambda b: lax.cond(True, total, total, b),
            lambda b: lax.pmax(jnp.sin(b), "i") + 1.0]
    for fn in fine:
        plax.shard_map(fn, mesh=line, in_specs=P("i"), out_specs=P())(X)
    varying = [lambda b: lax.all_gather(b, "i"), lambda b: total(b) * lax.axis_index("i"),
               lambda b: lax.ppermute(total(b), "i", [(0, 1)]),
               lambda b: lax.pvary(total(b), "i"), lambda b: lax.pcast(total(b), "i", to="varying")]
    for fn in varying:
        with pytest.raises(ValueError, match="require replication"):
            plax.shard_map(fn, mesh=line, in_specs=P("i"), out_specs=P())(X)


def test_replication_errors_name_each_spec_and_output_in_jaxs_words(mesh):
    def f(b):
        return b, b, {"k": b}
    smap = plax.shard_map(f, mesh=mesh, in_specs=P("x", "y"),
                          out_specs=(P("x"), P("x", "y"), P()))
    for call in (smap, plax.jit(smap)):  # the eager call checks as the traced one
        with pytest.raises(ValueError) as err:
            call(X)
        message = str(err.value)
        assert ("* out_specs[0] is P('x',) which implies that the corresponding output value "
                "is replicated across mesh axis 'y', but it was inferred to be possibly "
                "varying over {x,y}") in message
        assert ("* out_specs[2] is P() which implies that the corresponding output value "
                "result[2]['k'] is only varying across mesh axes {} and not {x,y}, but it was "
                "inferred to be possibly varying over {x,y}") in message
        assert "out_specs[1]" not in message


def test_pcast_to_varying_is_pvary_and_other_casts_are_refused(line):
    cast = plax.shard_map(lambda b: lax.pcast(total(b), ("i",), to="varying") * 2,
                          mesh=line, in_specs=P("i"), out_specs=P("i"))
    np.testing.assert_allclose(cast(X), np.tile(2 * X.sum(0), (8, 1)), rtol=1e-5)
    assert lax.pcast(X, (), to="varying") is X
    body = lambda to: lambda b: lax.pcast(b, "i", to=to)  # noqa: E731
    with pytest.raises(NotImplementedError, match="pcast to 'reduced'"):
        plax.shard_map(body("reduced"), mesh=line, in_specs=P("i"), out_specs=P("i"))(X)
    with pytest.raises(ValueError, match="to must be 'varying'"):
        plax.shard_map(body("vary"), mesh=line, in_specs=P("i"), out_specs=P("i"))(X)
    with pytest.raises(TypeError, match="got the set"):
        lax.pcast(X, {"i"}, to="varying")


# --- eager: the body run one primitive at a time on every device --------------------------------

def test_eager_body_values_hold_every_devices_block(line, capsys):
    seen = {}

    def body(b):
        print(b)
        seen["type"] = plax.typeof(b)
        seen["total"] = float(total(b)[0, 0])  # the same on every device: a Python float
        return b * 2

    f = plax.shard_map(body, mesh=line, in_specs=P("i"), out_specs=P("i"))
    np.testing.assert_allclose(f(X), X * 2)
    blocks = [f"On {d} at mesh coordinates (i,) = ({k},):\n{X[k:k + 1]}\n"
              for k, d in enumerate(line.devices.flat)]
    assert capsys.readouterr().out == "\n".join(blocks) + "\n"
    assert seen["type"].str_short() == "f32[1,4]{V:i}"
    np.testing.assert_allclose(seen["total"], X[:, 0].sum(), rtol=1e-5)
    with pytest.raises(TypeError):  # under jit the body is traced: no value to convert
        plax.jit(f)(X)


def test_eager_calls_stage_and_compile_once(line, counts):
    f = plax.shard_map(lambda b: jnp.sin(b) * 2.0 + total(b), mesh=line, in_specs=P("i"),
                       out_specs=P("i"))
    first = f(X)
    counts.clear()
    np.testing.assert_allclose(f(X), first)
    assert not counts  # no tracing, lowering or compiling on the second call


def test_eager_body_refuses_values_it_cannot_take(line):
    def smap(body):
        return plax.shard_map(body, mesh=line, in_specs=P("i"), out_specs=P("i"))
    with pytest.raises(plax.errors.TracerBoolConversionError,
                       match=r"varies over mesh axes \('i',\): each device holds its own"):
        smap(lambda b: b * bool(b[0, 0] > 0))(X)
    with pytest.raises(plax.errors.TracerArrayConversionError):
        smap(np.asarray)(X)
    kept = []
    smap(lambda b: kept.append(b) or b)(X)
    assert str(kept[0]).startswith("On ")  # its blocks can still be shown
    with pytest.raises(plax.errors.UnexpectedTracerError, match="already finished"):
        kept[0] + 1
    with pytest.raises(ValueError, match="device_put with explicit device not allowed"):
        smap(lambda b: plax.device_put(b, line.devices.flat[0]))(X)
    for call in (smap(plax.new_ref), plax.jit(smap(plax.new_ref))):
        with pytest.raises(ValueError, match="returned a `plax.Ref` as result"):
            call(X)
    np.testing.assert_allclose(smap(plax.device_put)(X), X)  # no target: nothing to do


# --- transformations -------------------------------------------------------------------------

def _loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


def test_grad_of_a_data_parallel_loss_matches_one_device(line):
    w = RNG.normal(size=(4, 3)).astype(np.float32)
    sharded = plax.shard_map(lambda w, b: lax.psum(_loss(w, b), "i"), mesh=line,
                             in_specs=(P(), P("i")), out_specs=P())
    g = plax.jit(plax.grad(sharded))(w, X)
    np.testing.assert_allclose(g, plax.grad(_loss)(w, X), rtol=1e-4, atol=1e-6)
    gx = plax.grad(sharded, argnums=1)(w, X)
    np.testing.assert_allclose(gx, plax.grad(_loss, argnums=1)(w, X), rtol=1e-4, atol=1e-6)


def test_jvp_and_checkpoint_and_scan_inside_the_body(line):
    def body(b):
        h = plax.checkpoint(lambda v: jnp.sin(v) * v)(b)
        # (the rows vary over 'i', so the carry must too: JAX's TypeError otherwise)
        init = lax.pcast(jnp.zeros(4), "i", to="varying")
        return total(lax.scan(lambda c, r: (c + r, None), init, h)[0])
    f = plax.shard_map(body, mesh=line, in_specs=P("i"), out_specs=P())
    t = RNG.normal(size=X.shape).astype(np.float32)
    _, tangent = plax.jvp(f, (X,), (t,))
    np.testing.assert_allclose(tangent, ((np.cos(X) * X + np.sin(X)) * t).sum(0), rtol=1e-4)
    g = plax.grad(lambda v: jnp.sum(f(v)))(X)
    np.testing.assert_allclose(g, np.cos(X) * X + np.sin(X), rtol=1e-4, atol=1e-6)


def test_vmap_of_shard_map_equals_a_loop(line):
    f = plax.shard_map(lambda b, c: (total(b * c), b + c), mesh=line,
                       in_specs=(P("i"), P()), out_specs=(P(), P("i")))
    xs = RNG.normal(size=(3, 8, 4)).astype(np.float32)
    cs = RNG.normal(size=(4, 3)).astype(np.float32)
    out = plax.vmap(f, in_axes=(0, 1))(xs, cs)
    for k in range(3):
        want = f(xs[k], cs[:, k])
        np.testing.assert_allclose(out[0][k], want[0], rtol=1e-5)
        np.testing.assert_allclose(out[1][k], want[1], rtol=1e-5)


def test_grad_of_vmap_of_shard_map(line):
    f = plax.shard_map(lambda b: total(jnp.sin(b)), mesh=line, in_specs=P("i"), out_specs=P())
    xs = RNG.normal(size=(2, 8, 4)).astype(np.float32)
    g = plax.grad(lambda v: jnp.sum(plax.vmap(f)(v)))(xs)
    np.testing.assert_allclose(g, np.cos(xs), rtol=1e-5)


# --- spellings and errors ------------------------------------------------------------------

def test_experimental_spelling_warns_and_works(line):
    import plax.experimental.shard_map as old
    with pytest.warns(DeprecationWarning, match="use plax.shard_map"):
        old_shard_map = old.shard_map
    f = old_shard_map(total, line, P("i"), P(), check_rep=True)
    np.testing.assert_allclose(f(X), X.sum(0, keepdims=True), rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert plax.shard_map is not None  # the new spelling does not warn


def test_spec_and_mesh_errors(line, mesh):
    sm = plax.shard_map
    with pytest.raises(TypeError, match="in_specs argument must be a pytree.*AxisType.Auto"):
        sm(total, mesh=line, out_specs=P())(X)  # no in_specs to infer over Auto axes
    with pytest.raises(TypeError, match="did you mean `in_specs=P\\(\\)`"):
        sm(total, mesh=line, in_specs=None, out_specs=P())
    with pytest.raises(TypeError, match=r"in_specs\[0\] is 'i' of type str"):
        sm(total, mesh=line, in_specs=("i",), out_specs=P())
    with pytest.raises(ValueError, match=r"(?s)must refer to an axis marked as manual.*"
                                         r"in_specs refers to 'y'"):
        sm(total, mesh=mesh, in_specs=P("y"), out_specs=P(), axis_names={"x"})
    with pytest.raises(ValueError, match="subset of mesh.axis_names"):
        sm(total, mesh=line, in_specs=P("i"), out_specs=P(), axis_names={"z"})
    with pytest.raises(TypeError, match="should be of type `frozenset` or `set`"):
        sm(total, mesh=line, in_specs=P("i"), out_specs=P(), axis_names=["i"])
    with pytest.raises(TypeError, match="requires a `plax.sharding.Mesh`"):
        sm(total, mesh="i", in_specs=P("i"), out_specs=P())
    with pytest.raises(ValueError, match="names a mesh axis more than once"):
        sm(total, mesh=mesh, in_specs=P("x", "x"), out_specs=P())
    with pytest.raises(TypeError, match="Expected a callable"):
        sm(3, mesh=line, in_specs=P(), out_specs=P())


def test_argument_errors_name_the_argument(line):
    def f(weights, batch):
        return total(batch)
    sm = plax.shard_map(f, mesh=line, in_specs=(P(), P("i")), out_specs=P())
    with pytest.raises(ValueError, match=r"argument batch of shape f32\[6,4\].*array axis 0 "
                                         r"\(of size 6\) to mesh axis 'i' \(of size 8\)"):
        sm(np.ones(3), np.ones((6, 4), np.float32))
    with pytest.raises(ValueError, match=r"argument batch has shape f32\[\].*of length 1"):
        sm(np.ones(3), np.float32(1))
    with pytest.raises(ValueError, match="pytree prefix of the arguments of f"):
        plax.shard_map(f, mesh=line, in_specs=(P(), P(), P()), out_specs=P())(X, X)
    with pytest.raises(ValueError, match="pytree prefix of the output of f"):
        plax.shard_map(f, mesh=line, in_specs=P("i"), out_specs=(P(), P()))(X, X)
    with pytest.raises(ValueError, match=r"out_specs entry P\('i', None, None\) has length 3"):
        plax.shard_map(f, mesh=line, in_specs=P("i"), out_specs=P("i", None, None))(X, X)
    with pytest.raises(ValueError, match="mesh must have as many devices"):
        plax.jit(plax.shard_map(total, mesh=AbstractMesh((4,), ("i",)), in_specs=P("i"),
                                out_specs=P()))(X)


def test_gspmd_lowering_when_shardy_is_off(mesh):
    from plax.extend import config
    x = RNG.normal(size=(8, 8)).astype(np.float32)
    halves = x.reshape(2, 4, 8)
    with config.use_shardy_partitioner(False):
        full = plax.jit(plax.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh,
                                       in_specs=P("x", "y"), out_specs=P(None, "y")))
        part = plax.jit(plax.shard_map(lambda b: lax.psum(b, "x"), mesh=mesh,
                                       in_specs=P("x"), out_specs=P(), axis_names={"x"}))
        np.testing.assert_allclose(full(x), halves.sum(0), rtol=1e-5)
        np.testing.assert_allclose(part(x), halves.sum(0), rtol=1e-5)
        g = plax.grad(lambda v: jnp.sum(part(v) ** 2))(x)
        text = part.lower(x).as_text()
    np.testing.assert_allclose(g, 2 * np.tile(halves.sum(0), (2, 1)), rtol=1e-5)
    assert "SPMDFullToShardShape" in text and "last_tile_dims={manual, replicated}" in text
    assert "sdy." not in text


def test_gspmd_keeps_a_manual_body_apart_from_equal_constants_outside(mesh):
    """The body is a function of its own: XLA must not merge its constants (laid out
    manual) with equal ones of the caller (it crashed on `s * 4 % 2` here)."""
    from plax.extend import config
    body = plax.shard_map(lambda b: b + lax.axis_index("x"), mesh=mesh,
                          in_specs=P(("x", "y")), out_specs=P(("x", "y")))
    with config.use_shardy_partitioner(False):
        out = plax.jit(lambda v, s: body(v) + s * 4 % 2)(np.zeros(8, np.int32), np.int32(3))
    np.testing.assert_array_equal(out, np.repeat([0, 1], 4))
