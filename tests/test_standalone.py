"""plax runs on jaxlib alone (DESIGN.md §9): a plax workload, and loading every
entry point that plax's packages announce, leave `jax` unimported.

Each check runs in a fresh interpreter, so nothing another test imported counts.
"""
import subprocess
import sys
import textwrap

from workspace_layout import members

REPORT_JAX = """
import sys
print("jax modules:", sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")))
"""


def run_python(code: str) -> str:
    script = textwrap.dedent(code) + REPORT_JAX
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_workload_does_not_import_jax():
    out = run_python("""
        import plax, plax.numpy as jnp
        print(plax.make_jaxpr(lambda x: jnp.sin(x))(1.0))
    """)
    assert "sin" in out and "f32[]" in out, out
    assert "jax modules: []" in out, out


def test_sharded_workload_does_not_import_jax():
    """Per-shard buffers are built by jaxlib's C++, which would import `jax` for their
    avals (reading a replicated result too); plax's runtime keeps it out
    (plax_runtime.shard_buffers)."""
    out = run_python("""
        import numpy as np, plax
        from plax.sharding import NamedSharding, PartitionSpec as P
        mesh = plax.make_mesh((2, 4), ("x", "y"))
        x = plax.device_put(np.ones((8, 8), np.float32), NamedSharding(mesh, P("x", "y")))
        seen = []
        def f(v):
            plax.debug.inspect_array_sharding(v * 2, callback=seen.append)
            return plax.sharding.reshard(v.T, P(None, "x")) * 2
        with plax.set_mesh(mesh):
            y = plax.jit(f)(x)
        print(float(np.asarray(y).sum()), len(y.addressable_shards), seen[0].spec)
        plax.debug.visualize_array_sharding(y)
        print("replicated", float(plax.jit(lambda v: v.sum())(x)))  # read from one copy
    """)
    assert "128.0 8 P('x', 'y')" in out and "replicated 64.0" in out, out
    assert "jax modules: []" in out, out


def test_callbacks_and_ffi_do_not_import_jax():
    """Host callbacks run through jaxlib's own callback custom call, and their tokens and
    results come back through plax's result handlers, without `jax`."""
    out = run_python("""
        import numpy as np, plax
        def f(x):
            plax.debug.print("x={}", x, ordered=True)
            y = plax.pure_callback(np.cos, plax.ShapeDtypeStruct(x.shape, x.dtype), x)
            return plax.experimental.io_callback(np.sin, plax.ShapeDtypeStruct(x.shape, x.dtype), y)
        print(plax.jit(f)(np.float32(0)))
        plax.effects_barrier()
        try:
            import rms_norm
            print(rms_norm.rms_norm(np.ones((2, 2), np.float32)))
        except ImportError:
            pass
    """)
    assert "x=0.0" in out and "0.84147" in out, out
    assert "jax modules: []" in out, out


def test_every_entry_point_loads_without_jax():
    names = [m.name for m in members()]
    expected = sum(len(group) for m in members() for group in m.entry_points.values())
    out = run_python(f"""
        from importlib.metadata import distribution
        loaded = 0
        for name in {names!r}:
            for ep in distribution(name).entry_points:
                ep.load()
                loaded += 1
        print("loaded:", loaded)
    """)
    assert f"loaded: {expected}\n" in out, out
    assert "jax modules: []" in out, out

