"""The TPU backend ahead of time, with libtpu installed and no TPU attached: programs
compiled for a v5e:2x2 topology through its compile-only client, and their optimized
TPU HLO compared with JAX's for the same source (tests/tpu_aot_programs.py; JAX in a
subprocess). `python3 tests/test_tpu_aot.py` prints the comparison table.
"""
from __future__ import annotations

import difflib
import importlib.util
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import tpu_aot_programs as programs  # noqa: E402
from jax_reference import requires_jax, run_reference  # noqa: E402

pytestmark = pytest.mark.skipif(importlib.util.find_spec("libtpu") is None,
                                reason="libtpu is not installed (requirements-dev.txt has it)")

# Programs whose optimized HLO differs from JAX's, and why. A program not listed must
# compile to JAX's HLO exactly (after `normalize`); a listed one that becomes equal
# fails too, so that the list stays true.
DIFFERENCES = {
    "random_sampling": "the Jaxprs are identical, the lowered modules are not: JAX outlines "
                       "each threefry2x32 hash as a function and inlines random_seed and "
                       "random_bits, plax outlines its key primitives and inlines the hash; "
                       "once XLA inlines the calls the ops come in another order and one "
                       "fusion of counter arithmetic splits differently (1010/1005 "
                       "instructions)",
    "linalg_decompositions": "svd is JAX's TPU formulation (qdwh, then eigh) and its Jaxpr "
                             "JAX's, but the lowerings differ: svd_p's body is one more "
                             "private function, qr is a call (JAX inlines it) masking R "
                             "another way, a bool to bool convert is no `ne`, and "
                             "`u @ diag(int)` converts the int operand where JAX's "
                             "dot_general takes mixed dtypes; XLA also lays out the "
                             "symmetrized inputs of cholesky and eigh transposed ({0,1} "
                             "where JAX's are {1,0}), a cause not yet isolated",
}


@pytest.fixture(scope="module")
def env():
    import plax
    return programs.Env(plax)


@pytest.fixture(scope="module")
def plax_hlo(env):
    import plax
    return {name: programs.build(plax, name, env).as_text() for name in programs.PROGRAMS}


def jax_texts() -> dict[str, str]:
    """Each program's optimized HLO as JAX compiles it (in a subprocess)."""
    return run_reference(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import tpu_aot_programs as programs
        env = programs.Env(jax)
        result = {{name: programs.build(jax, name, env).as_text()
                  for name in programs.PROGRAMS}}
        """)


@pytest.fixture(scope="module")
def jax_hlo():
    return jax_texts()


def test_every_program_compiles_for_the_topology(plax_hlo):
    """Each program compiled for TPU (its HLO has TPU's tiled layouts), none for CPU."""
    assert len(plax_hlo) >= 15
    for name, text in plax_hlo.items():
        assert "T(8,128)" in text or "T(128)" in text or "T(256)" in text, name


@requires_jax
@pytest.mark.parametrize("name", list(programs.PROGRAMS))
def test_same_optimized_tpu_hlo_as_jax(name, plax_hlo, jax_hlo):
    ours, theirs = (programs.normalize(h[name]) for h in (plax_hlo, jax_hlo))
    if name in DIFFERENCES:
        assert ours != theirs, f"{name} now compiles as JAX's: remove it from DIFFERENCES"
        return
    diff = "\n".join(list(difflib.unified_diff(theirs.splitlines(), ours.splitlines(),
                                               "jax", "plax", lineterm="", n=1))[:60])
    assert ours == theirs, f"{name}: the optimized HLO differs from JAX's:\n{diff}"


def test_mesh_over_a_tray_follows_the_chips_ring(env):
    """make_mesh lays a v5e tray's chips out as JAX does (a ring for 4 chips)."""
    assert [d.id for d in env.mesh.devices.flat] == [0, 1, 3, 2]
    assert [[d.id for d in row] for row in env.mesh2.devices] == [[0, 1], [3, 2]]


@requires_jax
def test_mesh_orders_match_jax():
    code = """
        from {lib}.experimental import topologies
        result = []
        for name, shapes in (("v5e:2x2", [(4,), (2, 2)]), ("v5e:2x4", [(8,), (4, 2)]),
                             ("v5e:4x4", [(16,), (4, 4)])):
            topo = topologies.get_topology_desc(topology_name=name, platform="tpu")
            for shape in shapes:
                mesh = topologies.make_mesh(topo, shape, ("a", "b")[:len(shape)])
                result.append([name, list(shape), [d.id for d in mesh.devices.flat]])
        """
    assert (run_reference(code.format(lib="plax"), library="plax")
            == run_reference(code.format(lib="jax")))


def test_compiled_for_a_topology_is_inspected_not_run(env):
    import plax
    import plax.numpy as jnp
    from plax.experimental import serialize_executable
    x = env.arg((256, 256), spec=("x",))
    compiled = plax.jit(lambda a: jnp.tanh(a @ a.T)).lower(x).compile()
    assert compiled.input_shardings[0][0].spec == plax.sharding.PartitionSpec("x")
    text = compiled.as_text()
    assert "all-gather" in text and "T(8,128)" in text
    assert compiled.cost_analysis()["flops"] > 2 * 256 ** 3 / 4
    assert compiled.memory_analysis().argument_size_in_bytes == 256 * 256 * 4 // 4
    payload, in_tree, out_tree = serialize_executable.serialize(compiled)
    assert len(payload) > 1000
    with pytest.raises(RuntimeError, match="compiled ahead of time for the devices of a "
                                           "TPU topology"):
        compiled(np.ones((256, 256), np.float32))


def test_a_topology_leaves_profiler_sessions_to_the_attached_devices(env):
    """libtpu loaded only for a topology must not join profiler sessions: on a host
    with no chip its profiler adds an empty device plane and samples the host so often
    that profiled programs (PGLE's runs, `plax.profiler.trace`) crawl (JAX's do)."""
    import plax
    from jaxlib import _profiler
    session = _profiler.ProfilerSession(_profiler.ProfileOptions())
    try:
        plax.jit(lambda a: a * 3)(np.ones(4, np.float32)).block_until_ready()
    finally:
        xspace = session.stop()
    assert b"/host:CPU" in xspace and b"/device:CUSTOM" not in xspace


def test_lowering_platforms_needs_devices_of_that_platform(env):
    import plax
    import plax.numpy as jnp
    traced = plax.jit(jnp.sin).trace(plax.ShapeDtypeStruct((8, 128), np.float32))
    lowered = traced.lower(lowering_platforms=("tpu",))
    assert "stablehlo.sine" in lowered.as_text()
    with pytest.raises(ValueError, match="lowered for TPU but its arguments place it on "
                                         "CPU devices"):
        lowered.compile()
    with pytest.raises(ValueError, match="must name one platform"):
        traced.lower(lowering_platforms=("tpu", "cpu"))
    on_chip = plax.jit(jnp.sin).trace(env.arg((8, 128))).lower(lowering_platforms=("tpu",))
    assert "T(8,128)" in on_chip.compile().as_text()


@pytest.mark.parametrize("primitive", ["lax.eig", "lax.schur"])
def test_cpu_only_primitives_name_themselves_for_tpu(env, primitive):
    """A primitive plax lowers only for CPU (LAPACK) is a clear NotImplementedError at
    lowering, naming it and the platform, never an XLA crash."""
    import plax
    import plax.numpy as jnp
    op = {"lax.eig": jnp.linalg.eig, "lax.schur": plax.scipy.linalg.schur}[primitive]
    with pytest.raises(NotImplementedError, match=f"'{primitive}' has no lowering rule for "
                                                  "platform 'tpu'"):
        plax.jit(op).lower(env.arg((16, 16)))


def test_eigh_of_any_size_compiles_to_xlas_eigensolver(env):
    """Past 256 (where JAX switches to a divide and conquer) XLA's TPU eigensolver
    still compiles; a subset is sliced from the whole (values checked on the chip:
    test_on_tpu.py)."""
    import plax
    from plax import lax
    compiled = plax.jit(lambda a: lax.linalg.eigh(a, subset_by_index=(376, 384))).lower(
        env.arg((384, 384))).compile()
    assert "custom-call" in compiled.as_text()
    v, w = compiled.out_info
    assert (v.shape, w.shape) == ((384, 8), (8,))


def test_host_callbacks_cannot_compile_for_a_topology(env):
    import plax
    f = plax.jit(lambda a: plax.pure_callback(np.sin, plax.ShapeDtypeStruct(a.shape, a.dtype),
                                              a))
    with pytest.raises(NotImplementedError, match="host callbacks"):
        f.lower(env.arg((8, 128))).compile()


def _table() -> str:
    """Program, instruction counts plax/JAX, fusions plax/JAX, equal? (needs JAX)."""
    import plax
    env = programs.Env(plax)
    theirs = jax_texts()
    rows = ["| program | instructions plax/JAX | fusions plax/JAX | equal |",
            "|---|---|---|---|"]
    for name in programs.PROGRAMS:
        ours = programs.build(plax, name, env).as_text()
        a, b = programs.instruction_counts(ours), programs.instruction_counts(theirs[name])
        same = programs.normalize(ours) == programs.normalize(theirs[name])
        rows.append(f"| {name} | {sum(a.values())}/{sum(b.values())} | "
                    f"{a['fusion']}/{b['fusion']} | {'yes' if same else 'no'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(_table())
