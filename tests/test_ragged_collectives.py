"""`lax.ragged_all_to_all`, `lax.psend`/`lax.precv` and `plax.sharding.ManualAxisType`.

XLA:CPU runs neither the ragged all-to-all nor Send/Recv, so their lowerings are
compared with JAX's text (and their CPU failures with JAX's), and the values of
the ragged exchange are checked through `vmap` over its axis, which emulates it,
against a NumPy model of JAX's documented semantics.
"""
from __future__ import annotations

import pickle
import re

import numpy as np
import pytest

import plax
from plax import lax
from plax import numpy as jnp
from plax.errors import JaxRuntimeError
from plax.sharding import ManualAxisType, Mesh, PartitionSpec as P

from jax_reference import requires_jax, run_reference

N_MEMBERS, N_ROWS, M_ROWS, SLICES = 4, 12, 13, 2  # K = 8 slices per member
K = N_MEMBERS * SLICES


def ragged_model(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes):
    """JAX's documented semantics on arrays stacked over the n members: member j
    receives slice j*s + t of member i (send_sizes[i, j*s+t] rows, which
    recv_sizes[j, i*s+t] repeats) into rows output_offsets[i, j*s+t] onwards."""
    del recv_sizes
    n = operand.shape[0]
    s = input_offsets.shape[1] // n
    result = np.array(output)
    for j in range(n):
        for i in range(n):
            for t in range(s):
                k = j * s + t
                count = send_sizes[i, k]
                src, dst = input_offsets[i, k], output_offsets[i, k]
                result[j, dst:dst + count] = operand[i, src:src + count]
    return result


def random_pattern(rng, n=N_MEMBERS, s=SLICES, n_rows=N_ROWS, m_rows=M_ROWS):
    """Offsets and sizes of a valid exchange: each member's slices are disjoint
    pieces of its operand (some empty, some padding between), and each receiver's
    pieces are disjoint too."""
    k = n * s
    send = np.zeros((n, k), np.int32)
    in_off = np.zeros((n, k), np.int32)
    for i in range(n):
        cuts = np.sort(rng.integers(0, n_rows + 1, size=2 * k))
        in_off[i], send[i] = cuts[0::2], cuts[1::2] - cuts[0::2]
    out_off = np.zeros((n, k), np.int32)  # where sender i's slice j*s+t lands on j
    for j in range(n):
        pieces = [(i, j * s + t) for i in range(n) for t in range(s)]
        rng.shuffle(pieces)
        while sum(send[p] for p in pieces) > m_rows:  # too much for j: shrink the largest
            send[max(pieces, key=lambda p: send[p])] -= 1
        free = m_rows - sum(send[p] for p in pieces)
        gaps = rng.multinomial(free, [1 / (len(pieces) + 1)] * (len(pieces) + 1))
        at = 0
        for piece, gap in zip(pieces, gaps):
            out_off[piece] = at + gap
            at += gap + send[piece]
    recv = send.reshape(n, n, s).transpose(1, 0, 2).reshape(n, k)  # what j takes from i
    return in_off, send, out_off, recv


def _exchange(*args):
    return lax.ragged_all_to_all(*args, axis_name="i")


exchange = plax.jit(plax.vmap(_exchange, axis_name="i"))


def test_docstring_example():
    operand = np.array([[1, 2, 2], [3, 4, 0]], np.float32)
    output = np.zeros((2, 4), np.float32)
    args = (operand, output, np.array([[0, 1], [0, 1]]), np.array([[1, 2], [1, 1]]),
            np.array([[0, 0], [1, 2]]), np.array([[1, 1], [2, 1]]))
    got = plax.vmap(_exchange, axis_name="i")(*args)
    np.testing.assert_array_equal(got, [[1, 3, 0, 0], [2, 2, 4, 0]])
    np.testing.assert_array_equal(got, ragged_model(*args))


@pytest.fixture(scope="module")
def patterns():
    rng = np.random.default_rng(0)
    out = []
    for _ in range(4):
        operand = rng.normal(size=(N_MEMBERS, N_ROWS, 3)).astype(np.float32)
        output = rng.normal(size=(N_MEMBERS, M_ROWS, 3)).astype(np.float32)
        out.append((operand, output, *random_pattern(rng)))
    return out


def test_values_against_model(patterns):
    for args in patterns:
        np.testing.assert_array_equal(exchange(*args), ragged_model(*args))


def test_out_of_range_rows_are_dropped():
    operand = np.arange(N_MEMBERS * N_ROWS, dtype=np.float32).reshape(N_MEMBERS, N_ROWS, 1)
    output = -np.ones((N_MEMBERS, M_ROWS, 1), np.float32)
    zeros = np.zeros((N_MEMBERS, K), np.int32)
    out_off = np.full((N_MEMBERS, K), M_ROWS - 1, np.int32)  # one row fits, the rest spills
    sizes = np.full((N_MEMBERS, K), 3, np.int32)
    got = np.asarray(exchange(operand, output, zeros, sizes, out_off, sizes))
    np.testing.assert_array_equal(got[:, :M_ROWS - 1], -1)
    assert set(got[:, M_ROWS - 1, 0]) <= set(operand[:, 0, 0])


def test_batched_inside_the_exchange(patterns):
    """vmap over another axis (some operands unbatched) merges the batch into the
    rows: each batch member exchanges on its own."""
    (op_a, out_a, *idx), (op_b, out_b, *_) = patterns[:2]
    inner = plax.vmap(_exchange, in_axes=(0, 0, None, None, None, None))
    got = plax.vmap(inner, axis_name="i")(np.stack([op_a, op_b], 1), np.stack([out_a, out_b], 1),
                                           *idx)
    np.testing.assert_array_equal(got[:, 0], ragged_model(op_a, out_a, *idx))
    np.testing.assert_array_equal(got[:, 1], ragged_model(op_b, out_b, *idx))
    both = [np.stack(pair, 1) for pair in zip(*patterns[2:4])]  # every operand batched
    got = plax.vmap(plax.vmap(_exchange), axis_name="i")(*both)
    for b in range(2):
        np.testing.assert_array_equal(got[:, b], ragged_model(*patterns[2 + b]))


def test_jvp_and_transpose_are_adjoint(patterns):
    operand, output, *idx = patterns[0]
    rng = np.random.default_rng(1)
    dx, dy, ct = (rng.normal(size=a.shape).astype(np.float32) for a in (operand, output, output))
    f = plax.vmap(lambda x, y, *i: _exchange(x, y, *i), axis_name="i")
    _, tangent = plax.jvp(lambda x, y: f(x, y, *idx), (operand, output), (dx, dy))
    np.testing.assert_array_equal(tangent, ragged_model(dx, dy, *idx))
    _, pullback = plax.vjp(lambda x, y: f(x, y, *idx), operand, output)
    ct_x, ct_y = pullback(ct)
    lhs = np.vdot(ct, ragged_model(dx, dy, *idx))
    np.testing.assert_allclose(np.vdot(ct_x, dx) + np.vdot(ct_y, dy), lhs, rtol=1e-5)


# --- inside shard_map: typing and lowering ------------------------------------------------

def _index_args(n=4):
    return [np.zeros(n, np.int32)] * 4


def _shard_map(f, mesh, n_args=6, **kw):
    kw.setdefault("check_vma", False)
    return plax.shard_map(f, mesh=mesh, in_specs=(P(),) * n_args, out_specs=P(), **kw)


@pytest.fixture(scope="module")
def meshes():
    devices = np.array(plax.devices()[:8])
    return Mesh(devices[:4], ("x",)), Mesh(devices.reshape(2, 4), ("a", "b"))


_SSA = re.compile(r"%[\w#]+")


def _collective_lines(text: str, name: str) -> list[str]:
    return [_SSA.sub("%v", line.strip()) for line in text.splitlines() if name in line]


_LOWERINGS = """
devices = np.array(jax.devices()[:8])
mesh, mesh2 = (jax.sharding.Mesh(devices[:4], ("x",)),
               jax.sharding.Mesh(devices.reshape(2, 4), ("a", "b")))
P = jax.sharding.PartitionSpec
r = jax.lax.ragged_all_to_all
idx = [np.zeros(8, np.int32)] * 4
args = (np.zeros(8, np.float32), np.zeros(6, np.float32), *idx)
def sm(f, m):
    return jax.jit(jax.shard_map(f, mesh=m, in_specs=(P(),) * 6, out_specs=P(),
                                 check_vma=False))
cases = {
    "x": (lambda *a: r(*a, axis_name="x"), mesh),
    "ab": (lambda *a: r(*a, axis_name=("a", "b")), mesh2),
    "b": (lambda *a: r(*a, axis_name="b"), mesh2),
    "groups": (lambda *a: r(*a, axis_name="x", axis_index_groups=[[0, 1], [2, 3]]), mesh),
    "groups_a": (lambda *a: r(*a, axis_name="a", axis_index_groups=[[0], [1]]), mesh2),
}
result = {name: sm(f, m).lower(*args).as_text() for name, (f, m) in cases.items()}
stacked = [np.stack([a] * 4) for a in args]
result["pmap"] = jax.pmap(cases["x"][0], axis_name="x").lower(*stacked).as_text()
batched = [np.stack([a] * 2) for a in args]
result["vmap"] = sm(jax.vmap(cases["x"][0]), mesh).lower(*batched).as_text()
try:
    sm(*cases["x"])(*args)
except Exception as e:
    result["cpu_error"] = [type(e).__name__, str(e)]
perm = [(0, 1), (1, 2), (2, 3), (3, 0)]
def body(x):
    tok = jax.lax.psend(x, "x", perm)
    return jax.lax.precv(tok, jax.ShapeDtypeStruct(x.shape, x.dtype), "x", perm)
pair = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
result["send_recv_cuda"] = pair.trace(np.arange(8.0)).lower(lowering_platforms=("cuda",)).as_text()
try:
    pair.lower(np.arange(8.0))
except Exception as e:
    result["send_cpu_error"] = [type(e).__name__, str(e)]
"""


@pytest.fixture(scope="module")
def jax_lowerings():
    return run_reference(_LOWERINGS)


def _ragged(**kw):
    return lambda *a: lax.ragged_all_to_all(*a, **kw)


@requires_jax
def test_lowering_matches_jax(jax_lowerings, meshes):
    mesh, mesh2 = meshes
    cases = {
        "x": (_ragged(axis_name="x"), mesh),
        "ab": (_ragged(axis_name=("a", "b")), mesh2),
        "b": (_ragged(axis_name="b"), mesh2),
        "groups": (_ragged(axis_name="x", axis_index_groups=[[0, 1], [2, 3]]), mesh),
        "groups_a": (_ragged(axis_name="a", axis_index_groups=[[0], [1]]), mesh2),
    }
    args = (np.zeros(8, np.float32), np.zeros(6, np.float32), *_index_args(8))
    for name, (f, m) in cases.items():
        ours = plax.jit(_shard_map(f, m)).lower(*args).as_text()
        theirs = _collective_lines(jax_lowerings[name], "ragged_all_to_all")
        assert _collective_lines(ours, "ragged_all_to_all") == theirs, name
        assert "replica_groups" in theirs[0]
    stacked = [np.stack([a] * 4) for a in args]
    pmapped = plax.pmap(cases["x"][0], axis_name="x").lower(*stacked).as_text()
    batched = [np.stack([a] * 2) for a in args]
    vmapped = plax.jit(_shard_map(plax.vmap(cases["x"][0]), mesh)).lower(*batched).as_text()
    for name, ours in (("pmap", pmapped), ("vmap", vmapped)):
        assert (_collective_lines(ours, "ragged_all_to_all")
                == _collective_lines(jax_lowerings[name], "ragged_all_to_all")), name


@requires_jax
def test_cpu_refuses_it_as_for_jax(jax_lowerings, meshes):
    f = plax.jit(_shard_map(_ragged(axis_name="x"), meshes[0]))
    kind, message = jax_lowerings["cpu_error"]
    assert kind == "JaxRuntimeError"
    with pytest.raises(JaxRuntimeError, match="ragged-all-to-all") as info:
        f(np.zeros(8, np.float32), np.zeros(6, np.float32), *_index_args())
    assert str(info.value) == message


def test_typed_as_its_output(meshes):
    """As in JAX, the result is typed as `output` is: here the same on every member,
    so a check_vma shard_map may return it replicated."""
    def body(operand, *idx):
        return lax.ragged_all_to_all(operand, jnp.zeros(6), *idx, axis_name="x")
    f = plax.shard_map(body, mesh=meshes[0], in_specs=(P("x"),) + (P(),) * 4, out_specs=P())
    assert "ragged_all_to_all" in str(plax.make_jaxpr(f)(np.zeros(32, np.float32),
                                                         *_index_args()))


def test_bad_inputs(meshes):
    mesh = meshes[0]
    f32, i32 = np.zeros(8, np.float32), np.zeros(4, np.int32)

    def trace(*args, **kw):
        kw.setdefault("axis_name", "x")
        return plax.make_jaxpr(_shard_map(_ragged(**kw), mesh))(*args)

    with pytest.raises(ValueError, match="input_offsets must be integer type"):
        trace(f32, f32, np.zeros(4, np.float32), i32, i32, i32)
    with pytest.raises(ValueError, match="send_sizes must be rank 1 .* shape \\(2, 2\\)"):
        trace(f32, f32, i32, np.zeros((2, 2), np.int32), i32, i32)
    with pytest.raises(ValueError, match="recv_sizes must be rank 1 .* shape \\(0,\\)"):
        trace(f32, f32, i32, i32, i32, np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="same length"):
        trace(f32, f32, i32, i32, np.zeros(8, np.int32), i32)
    with pytest.raises(TypeError, match="same dtype"):
        trace(f32, f32.astype(np.int32), i32, i32, i32, i32)
    with pytest.raises(ValueError, match="rows of one shape"):
        trace(np.zeros((8, 2)), np.zeros((8, 3)), i32, i32, i32, i32)
    with pytest.raises(ValueError, match="multiple of the number of members 4"):
        trace(f32, f32, *[np.zeros(6, np.int32)] * 4)
    with pytest.raises(ValueError, match="axis_index_groups"):
        trace(f32, f32, i32, i32, i32, i32, axis_index_groups=[[0, 1, 2], [3]])
    with pytest.raises(NameError, match="unbound axis name: y"):
        trace(f32, f32, i32, i32, i32, i32, axis_name="y")
    with pytest.raises(RuntimeError, match="within a mapped context"):
        lax.ragged_all_to_all(f32, f32, i32, i32, i32, i32, axis_name="x")
    with pytest.raises(NameError, match="unbound axis name: x"):  # traced: JAX's NameError
        plax.jit(_ragged(axis_name="x"))(f32, f32, i32, i32, i32, i32)
    with pytest.raises(NotImplementedError, match="several axis names"):
        plax.vmap(plax.vmap(_ragged(axis_name=("i", "j")), axis_name="j"), axis_name="i")(
            np.zeros((2, 2, 8)), np.zeros((2, 2, 8)), *[np.zeros((2, 2, 4), np.int32)] * 4)


# --- psend / precv --------------------------------------------------------------------------

PERM = [(0, 1), (1, 2), (2, 3), (3, 0)]


def _send_recv(x):
    token = lax.psend(x, "x", PERM)
    return lax.precv(token, plax.ShapeDtypeStruct(x.shape, x.dtype), "x", PERM)


@requires_jax
def test_send_recv_lowering_matches_jax(jax_lowerings, meshes):
    from plax_transforms.lowering import lower_jaxpr_to_module
    f = plax.shard_map(_send_recv, mesh=meshes[0], in_specs=P("x"), out_specs=P("x"))
    closed = plax.make_jaxpr(f)(np.arange(8.0, dtype=np.float32))
    text = str(lower_jaxpr_to_module(closed, name="f", platform="cuda",
                                     num_partitions=4).module)
    for op in ("stablehlo.create_token", "stablehlo.send", "stablehlo.recv"):
        assert (_collective_lines(text, op)
                == _collective_lines(jax_lowerings["send_recv_cuda"], op)), op
    with pytest.raises(NotImplementedError) as info:
        plax.jit(f).lower(np.arange(8.0, dtype=np.float32))
    assert [type(info.value).__name__, str(info.value)] == jax_lowerings["send_cpu_error"]


def test_send_recv_tracing(meshes):
    f = plax.shard_map(_send_recv, mesh=meshes[0], in_specs=P("x"), out_specs=P("x"))
    text = str(plax.make_jaxpr(f)(np.arange(8.0, dtype=np.float32)))
    assert "Tok = psend" in text and "f32[2] = precv" in text
    # An unused send is kept (its effect), as JAX keeps it.
    g = plax.shard_map(lambda x: (lax.psend(x, "x", PERM), x)[1], mesh=meshes[0],
                       in_specs=P("x"), out_specs=P("x"))
    assert "psend" in str(plax.make_jaxpr(g)(np.arange(8.0, dtype=np.float32)))
    # precv's result is typed invariant (JAX's typing): out_specs=P() passes check_vma.
    h = plax.shard_map(_send_recv, mesh=meshes[0], in_specs=P("x"), out_specs=P())
    assert plax.make_jaxpr(h)(np.arange(8.0, dtype=np.float32)).out_avals[0].shape == (2,)


def test_send_recv_errors(meshes):
    mesh = meshes[0]
    with pytest.raises(NameError, match="unbound axis name: x"):
        lax.psend(np.zeros(2), "x", PERM)
    with pytest.raises(NotImplementedError, match="Differentiation rule for 'psend'"):
        plax.grad(lambda x: plax.shard_map(_send_recv, mesh=mesh, in_specs=P("x"),
                                           out_specs=P("x"))(x).sum())(np.arange(8.0))

    def traced(body):
        return plax.make_jaxpr(plax.shard_map(body, mesh=mesh, in_specs=P("x"),
                                              out_specs=P("x")))(np.arange(8.0))
    with pytest.raises(ValueError, match="psend: destinations .* distinct members"):
        traced(lambda x: (lax.psend(x, "x", [(0, 1), (1, 1)]), x)[1])
    with pytest.raises(ValueError, match="precv: sources .* size 4"):
        traced(lambda x: lax.precv(lax.psend(x, "x", PERM), x, "x", [(7, 0)]))
    with pytest.raises(TypeError, match="out_shape must have a shape and a dtype"):
        traced(lambda x: lax.precv(lax.psend(x, "x", PERM), (x, x), "x", PERM))
    with pytest.raises(NotImplementedError, match="vmap of psend over its own axis"):
        plax.vmap(lambda x: (lax.psend(x, "i", [(0, 1)]), x)[1], axis_name="i")(np.zeros((2, 3)))


# --- ManualAxisType -------------------------------------------------------------------------

def test_manual_axis_type():
    a = ManualAxisType(varying={"x"})
    assert a is ManualAxisType(varying=frozenset({"x"}), unreduced=set())
    assert repr(a) == ("ManualAxisType(varying=frozenset({'x'}), unreduced=frozenset(), "
                       "reduced=frozenset())")
    assert pickle.loads(pickle.dumps(a)) is a
    assert ManualAxisType().empty and not a.empty
    b = a.update(reduced={"y"})
    assert (b.varying, b.reduced, b.vur) == ({"x"}, {"y"}, {"x", "y"})
    assert b.to_ct_mat() is ManualAxisType(varying={"x"}, unreduced={"y"})
    assert a.invarying(Mesh(np.array(plax.devices()[:1]), ("x",))) == frozenset()
    with pytest.raises(AttributeError):
        a.varying = frozenset()
    with pytest.raises(ValueError, match="varying and unreduced cannot have common mesh axes"):
        ManualAxisType(varying={"x"}, unreduced={"x"})
    with pytest.raises(ValueError, match="varying and reduced"):
        a.update(reduced={"x"})
    with pytest.raises(TypeError):
        ManualAxisType({"x"})
    with pytest.raises(TypeError, match="set of mesh axis names"):
        ManualAxisType(varying="x")


def test_shape_dtype_struct_manual_axis_type():
    a = ManualAxisType(varying={"x"})
    s = plax.ShapeDtypeStruct((2,), np.float32, manual_axis_type=a)
    assert s.manual_axis_type is a and "manual_axis_type=ManualAxisType(" in repr(s)
    assert s != plax.ShapeDtypeStruct((2,), np.float32)
    assert plax.ShapeDtypeStruct((2,), np.float32).manual_axis_type is None
    with pytest.raises(TypeError, match="should be of type `plax.sharding.ManualAxisType`"):
        plax.ShapeDtypeStruct((2,), np.float32, manual_axis_type={"x"})
