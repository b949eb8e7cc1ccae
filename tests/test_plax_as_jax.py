"""The opt-in `jax` alias (compat/, `plax_as_jax`): off, nothing changes (plax never
loads `jax`, real JAX still imports); on, `jax` and its submodules are plax, and
rules registered the JAX way land in plax's rule table. Each case runs in a fresh
interpreter, since the alias is process-wide."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def run_python(code: str, *, alias: str | None = None, args=()) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PLAX_AS_JAX"}
    if alias is not None:
        env["PLAX_AS_JAX"] = alias
    proc = subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_off_by_default_plax_never_loads_jax():
    out = run_python("""
        import sys
        import plax, plax.numpy as jnp
        print(float(plax.jit(lambda x: (x * 2).sum())(jnp.arange(3.0))))
        print(sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")))
        print("plax_as_jax" in sys.modules)
    """, alias="0")
    assert out.split() == ["6.0", "[]", "False"]


def test_off_real_jax_still_imports():
    pytest.importorskip("jax")
    out = run_python("""
        import jax, jax.numpy as jnp
        print(jax.__file__.endswith("jax/__init__.py"), type(jnp.ones(2)).__module__)
    """)
    assert out.split()[0] == "True" and not out.split()[1].startswith("plax")


@pytest.mark.parametrize("how", ["env", "install"])
def test_on_jax_resolves_to_plax(how):
    prefix = "import plax_as_jax; plax_as_jax.install()\n" if how == "install" else ""
    out = run_python(prefix + textwrap.dedent("""
        import sys
        import jax, jax.numpy as jnp
        from jax import lax
        import jax.tree_util, jax.sharding, jax.version
        import plax
        x = jax.jit(lambda v: lax.sin(v) * 2)(jnp.zeros(3))
        print(type(x) is plax.Array, jax.numpy.ones is plax.numpy.ones,
              jax.tree_util.tree_map is plax.tree_util.tree_map,
              jax.sharding.NamedSharding is plax.sharding.NamedSharding)
        print(jax.__version__, jax.__version_info__, jax.version.__version__)
        print("site-packages/jax/" in str(getattr(sys.modules["jax"], "__file__", "")))
        try:
            import jax.no_such_module
        except ModuleNotFoundError as err:
            print("missing:", err.name)
    """), alias="1" if how == "env" else None)
    lines = out.splitlines()
    assert lines[0] == "True True True True"
    assert lines[1] == "0.10.2 (0, 10, 2) 0.10.2"
    assert lines[2] == "False"
    assert lines[3] == "missing: jax.no_such_module"


def test_python_dash_m_runs_a_program_with_the_alias(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys, jax\nprint(type(jax).__name__, sys.argv[1:])\n")
    proc = subprocess.run([sys.executable, "-m", "plax_as_jax", str(script), "a", "b"],
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PLAX_AS_JAX"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split(None, 1) == ["AliasModule", "['a', 'b']\n"]


def test_install_refuses_after_real_jax():
    pytest.importorskip("jax")
    out = run_python("""
        import jax, plax_as_jax
        try:
            plax_as_jax.install()
        except RuntimeError as err:
            print("refused:", "before `jax` is imported" in str(err))
    """)
    assert out.strip() == "refused: True"


def test_rules_registered_the_jax_way_are_plax_rules():
    """A primitive defined as equinox does (a plain name, rules set in JAX's tables)
    works under jit, grad and vmap, and its rules are in plax's table, credited to
    the defining module."""
    out = run_python("""
        import numpy as np
        import jax, jax.numpy as jnp
        from jax.interpreters import ad, batching, mlir
        import jax.extend.core
        import plax.extend

        cube_p = jax.extend.core.Primitive("cube")
        cube_p.def_impl(lambda x: x ** 3)
        cube_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
        ad.primitive_jvps[cube_p] = lambda p, t: (cube_p.bind(*p), 3 * p[0] ** 2 * t[0])
        batching.primitive_batchers[cube_p] = lambda args, dims: (cube_p.bind(*args), dims[0])
        mlir.register_lowering(cube_p, mlir.lower_fun(lambda x: x * x * x,
                                                      multiple_results=False))
        again = jax.extend.core.Primitive("cube")  # JAX allows the same name twice

        x = jnp.arange(4.0)
        print(np.asarray(jax.jit(cube_p.bind)(x)).tolist())
        print(float(jax.grad(lambda v: cube_p.bind(v))(2.0)))
        print(np.asarray(jax.vmap(cube_p.bind, in_axes=1)(x.reshape(2, 2))).tolist())
        print(jax.make_jaxpr(cube_p.bind)(1.0).eqns[0].primitive.name, again.id != cube_p.id)
        rules = plax.extend.rules_of(cube_p)
        print(sorted(rules), cube_p.id)
        print(ad.primitive_jvps[cube_p] is not None, cube_p in batching.primitive_batchers)
    """, alias="1")
    lines = out.splitlines()
    assert lines[0] == "[0.0, 1.0, 8.0, 27.0]"
    assert lines[1] == "12.0"
    assert lines[2] == "[[0.0, 8.0], [1.0, 27.0]]"
    assert lines[3] == "cube True"
    assert lines[4] == "['abstract_eval', 'batching', 'impl', 'jvp', 'lowering'] __main__.cube"
    assert lines[5] == "True True"


def test_python_callback_lowering_impl_and_bind_params():
    """equinox's noinline lowers through `mlir.emit_python_callback` (NumPy in, NumPy
    out, a keepalive for the module); its finalisation calls `prim.impl` and every
    equation's `primitive.get_bind_params` (JAX 0.10: the params, as a dict)."""
    out = run_python("""
        import numpy as np
        import jax, jax.numpy as jnp
        from jax.interpreters import mlir
        import jax.extend.core

        seen = []
        def host(x):
            seen.append(type(x).__name__)
            return [np.asarray(x * 10 + 1, x.dtype)]
        def lowering(ctx, x):
            results, token, keepalive = mlir.emit_python_callback(
                ctx, host, None, [x], ctx.avals_in, ctx.avals_out, has_side_effect=False)
            ctx.module_context.add_keepalive(keepalive)
            return results
        host_p = jax.extend.core.Primitive("host_affine")
        host_p.def_impl(lambda x: x * 10 + 1)
        host_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
        mlir.register_lowering(host_p, lowering)
        print(np.asarray(jax.jit(host_p.bind)(jnp.arange(3.0))).tolist(), seen)
        print(np.asarray(host_p.impl(jnp.arange(2.0))).tolist())
        eqn = jax.make_jaxpr(lambda x: jnp.sin(x) + 1)(1.0).eqns[0]
        params = eqn.primitive.get_bind_params(eqn.params)
        print(type(params).__name__, params == dict(eqn.params))
        try:
            jax.lax.sin_p.impl(1.0)
        except NotImplementedError as err:
            print("NotImplementedError", err)
    """, alias="1")
    lines = out.splitlines()
    assert lines[0] == "[1.0, 11.0, 21.0] ['ndarray']"
    assert lines[1] == "[1.0, 11.0]"
    assert lines[2] == "dict True"
    assert lines[3] == "NotImplementedError Evaluation rule for 'sin' not implemented"


def test_rule_tables_refuse_non_primitives():
    out = run_python("""
        from jax.interpreters import ad
        try:
            ad.primitive_jvps["sin"] = lambda p, t: None
        except TypeError as err:
            print(err)
    """, alias="1")
    assert "keyed by primitives" in out


def test_legacy_partial_eval_and_trace_state():
    out = run_python("""
        import jax, jax.numpy as jnp
        from jax.extend import linear_util as lu
        from jax.interpreters import partial_eval as pe
        import jax.extend.core as jc
        f = lambda x: (x * 2, jnp.ones(2) * 3)
        wrapped, out_tree = jax.api_util.flatten_fun_nokwargs(
            lu.wrap_init(f), jax.tree_util.tree_structure((1,)))
        _, pvals, _ = pe.trace_to_jaxpr_nounits(
            wrapped, [pe.PartialVal.unknown(jax.core.ShapedArray((2,), jnp.float32))])
        print(pvals[0].is_known(), pvals[1].is_known(), pvals[1].const.tolist(), out_tree())
        outer = jc.get_opaque_trace_state()
        inner = []
        jax.jit(lambda x: inner.append(jc.get_opaque_trace_state()) or x)(1.0)
        print(outer == jc.get_opaque_trace_state(), outer == inner[0])
    """, alias="1")
    lines = out.splitlines()
    assert lines[0] == "False True [3.0, 3.0] PyTreeDef((*, *))"
    assert lines[1] == "True False"


def test_prefix_errors_name_the_key_path():
    out = run_python("""
        import dataclasses, jax
        from jax._src.tree_util import prefix_errors

        @jax.tree_util.register_dataclass
        @dataclasses.dataclass
        class Point:
            x: object
            y: object
        (e,) = prefix_errors(Point(1.0, [2.0]), Point(1.0, 2.0))
        print(str(e("in_axes")).splitlines()[1].strip())
        print(prefix_errors({"a": 0}, {"a": [1, 2]}), len(prefix_errors({"a": 0}, {"b": 1})))
    """, alias="1")
    assert out.splitlines() == ["in_axes.y", "[] 1"]


def test_addressable_device_assignment_keeps_the_assignment_order(devs):
    """JAX's `Sharding._addressable_device_assignment` (orbax restores arrays by it)."""
    import numpy as np

    import plax
    from plax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(devs[::-1]).reshape(2, 4), ("x", "y"))
    sharding = NamedSharding(mesh, P("x"))
    assert sharding._addressable_device_assignment == tuple(devs[::-1])
    assert plax.sharding.SingleDeviceSharding(devs[3])._addressable_device_assignment == \
        (devs[3],)


def test_global_async_checkpoint_manager_round_trip(tmp_path):
    """JAX's `GlobalAsyncCheckpointManager` (flax saves multi-process arrays with it):
    each shard written once to a zarr store, read back under another sharding, a
    larger shape (zeros beyond the stored one) or another dtype; the commit callback
    runs, and its error is raised by `wait_until_finished`."""
    pytest.importorskip("tensorstore")
    out = run_python(f"""
        import numpy as np
        import jax, jax.numpy as jnp
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        from jax.experimental.array_serialization import serialization as ser
        mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("x", "y"))
        a = jax.device_put(jnp.arange(32.0).reshape(8, 4), NamedSharding(mesh, P("x", "y")))
        b = jax.device_put(jnp.arange(6, dtype=jnp.int32), NamedSharding(mesh, P()))
        specs = [ser.get_tensorstore_spec("{tmp_path}/" + name + "/") for name in "ab"]
        manager, done = ser.GlobalAsyncCheckpointManager(), []
        manager.serialize([a, b], specs, on_commit_callback=lambda: done.append(True))
        manager.wait_until_finished()
        print(done, specs[0])
        ra, rb = manager.deserialize(
            [NamedSharding(mesh, P("y")), NamedSharding(mesh, P("x"))], specs,
            global_shapes=[None, (8,)], dtypes=[None, jnp.float32])
        print(ra.sharding.spec, ra.dtype, np.array_equal(ra, np.arange(32.0).reshape(8, 4)))
        print(rb.dtype, rb.tolist(), rb.addressable_shards[1].data.tolist())
        manager.serialize([b], specs[1:], on_commit_callback=lambda: 1 / 0)
        try:
            manager.wait_until_finished()
        except ZeroDivisionError:
            print("raised")
        manager.wait_until_finished()  # raised once
        print(ser.get_tensorstore_spec("gs://bucket/run/x")["kvstore"])
    """, alias="1")
    assert out.splitlines() == [
        f"[True] {{'driver': 'zarr', 'kvstore': {{'driver': 'file', 'path': '{tmp_path}/a'}}}}",
        "P('y',) float32 True",
        "float32 [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0] [0.0, 1.0]",
        "raised",
        "{'driver': 'gcs', 'bucket': 'bucket', 'path': 'run/x'}"]


def test_cur_qdd_of_a_mutable_high_level_value():
    """`jax.experimental.cur_qdd` (flax's hijax Variables read their state with it):
    outside transformations a value's own `cur_qdd()`, as JAX's evaluation; under
    one, an error, since plax does not trace high-level values."""
    out = run_python("""
        import jax

        class Box:
            def __init__(self, leaves):
                self.leaves = leaves

            def cur_qdd(self):
                return tuple(jax.typeof(x).str_short() for x in self.leaves)
        box = Box([jax.numpy.ones(2), 1])
        print(jax.experimental.cur_qdd(box))
        try:
            jax.jit(lambda x: jax.experimental.cur_qdd(box))(1.0)
        except TypeError as e:
            print(str(e).splitlines()[0])
    """, alias="1")
    assert out.splitlines() == [
        "('f32[2]', 'i32[]')",
        "cur_qdd of a Box under a transformation: plax cannot trace high-level values "
        "(jax.experimental.hijax)"]


def test_traceback_exclusions_are_plax_filtering():
    """`jax._src.traceback_util` is plax's filtering: `_exclude_paths` is the list it
    reads (flax appends and removes its paths there), `register_exclusion` adds to it,
    `include_frame` (equinox's question) leaves out plax's frames and excluded ones."""
    out = run_python("""
        import sys
        from jax._src import traceback_util as tu
        import plax.extend.traceback_util as ptu
        tu.register_exclusion("/some/lib/")
        frame = sys._getframe()
        print(tu._exclude_paths is ptu.excluded_paths, "/some/lib/" in ptu.excluded_paths,
              tu.include_frame(frame), tu.UnfilteredStackTrace is ptu.UnfilteredStackTrace)
        tu._exclude_paths.append(frame.f_code.co_filename)
        print(tu.include_frame(frame))
    """, alias="1")
    assert out.split() == ["True", "True", "True", "True", "False"]


def test_opaque_trace_state_of_a_custom_vjp_fwd_under_grad():
    """Under `grad`, a custom_vjp's fwd and the function it calls run at one level, the
    caller's (JAX computes a linearized function's primal values on the parent trace;
    plax's partial-evaluation trace counts as its parent): flax's Variables made in
    one are usable in the other (nnx.custom_vjp's test_two_args_functional)."""
    out = run_python("""
        import jax
        from jax.extend.core import get_opaque_trace_state as state
        seen = []

        @jax.custom_vjp
        def f(x):
            seen.append(state())
            return x * 2

        def fwd(x):
            seen.append(state())
            return f(x), None

        f.defvjp(fwd, lambda r, g: (g * 2,))
        outside = state()
        print(jax.grad(f)(1.0), jax.jit(jax.grad(f))(1.0))
        print(seen[0] == seen[1], seen[0] == outside, seen[2] == seen[3], seen[2] == outside)
    """, alias="1")
    assert out.splitlines() == ["2.0 2.0", "True True False False"]  # as JAX's


def test_test_util_create_mesh_as_jaxs():
    """`jax._src.test_util.create_mesh` (JAX's notebook on gradient checkpointing
    imports it): the mesh JAX's makes, by `make_mesh` with Auto axes or by device id;
    wanting more devices than there are skips the test."""
    pytest.importorskip("jax")
    code = """
        import unittest
        from jax._src import test_util as jtu
        for kwargs in ({}, {"iota_order": True}):
            mesh = jtu.create_mesh((1, 1), ("x", "y"), **kwargs)
            print(dict(mesh.shape), mesh.axis_names, mesh.axis_types, mesh.devices.shape)
        try:
            jtu.create_mesh((64,), ("x",))
        except unittest.SkipTest as e:
            print("skipped:", e)
    """
    assert run_python(code, alias="1") == run_python(code)


def test_jax_extend_mlir_modules_build_and_run_a_program_as_autodidax_does():
    """`jax.extend.mlir.ir`, `.passmanager` and `.dialects.<name>` are jaxlib's modules
    (a submodule of an alias is its counterpart's), and a module built with them runs
    on `jax._src.xla_bridge.get_backend` through `jax._src.lib.xla_client`."""
    out = run_python("""
        import io
        import numpy as np
        import jaxlib.mlir.ir, jaxlib.mlir.passmanager, jaxlib.mlir.dialects.func
        from jax.extend.mlir import ir
        from jax.extend.mlir.dialects import func
        from jax.extend.mlir.dialects import stablehlo as hlo
        import jax.extend.mlir.ir, jax.extend.mlir.passmanager
        from jax._src import xla_bridge as xb
        from jax._src.lib import xla_client as xc
        print(jax.extend.mlir.ir.Context is jaxlib.mlir.ir.Context,
              jax.extend.mlir.passmanager.PassManager is jaxlib.mlir.passmanager.PassManager,
              func.FuncOp is jaxlib.mlir.dialects.func.FuncOp)
        with ir.Context() as ctx, ir.Location.unknown(ctx):
            hlo.register_dialect(ctx)
            module = ir.Module.create()
            f32 = ir.RankedTensorType.get((2,), ir.F32Type.get())
            with ir.InsertionPoint(module.body):
                @func.func(f32, f32)
                def main(x, y):
                    return hlo.add(hlo.multiply(x, y), y)
        text = io.StringIO()
        module.operation.print(file=text)
        backend = xb.get_backend(None)
        device = backend.devices()[0]
        compiled = backend.compile_and_load(text.getvalue(), backend.devices()[:1])
        x = np.array([1.0, 2.0], np.float32)
        sharding = xc.GSPMDSharding((device,), xc.OpSharding())
        bufs = [xc.batched_device_put(jax.core.ShapedArray((2,), np.float32), sharding, [v],
                                      [device], True, enable_x64=True) for v in (x, x + 1)]
        print(np.asarray(compiled.execute(bufs)[0]).tolist())
    """, alias="1")
    assert out.splitlines() == ["True True True", "[4.0, 9.0]"]


def test_rules_of_a_jax_way_primitive_see_what_jaxs_see():
    """As in JAX's jax-primitives guide: forward mode through a primitive without a
    jvp rule raises before its implementation runs, and the symbolic zeros and
    undefined primals its rules get print with their (weak) types."""
    pytest.importorskip("jax")
    code = """
        import jax, jax.numpy as jnp
        from jax.interpreters import ad
        import jax.extend.core

        madd_p = jax.extend.core.Primitive("madd")
        madd_p.def_impl(lambda x, y, z: print("impl") or x * y + z)
        madd_p.def_abstract_eval(lambda x, y, z: jax.core.ShapedArray(x.shape, x.dtype))
        try:
            jax.jvp(madd_p.bind, (2.0, 2.0, 10.0), (1.0, 1.0, 1.0))
        except NotImplementedError as e:
            print(e)

        def madd_jvp(primals, tangents):
            print("jvp", *map(repr, tangents[2:]))
            x, y, z = primals
            xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
            return madd_p.bind(x, y, z), madd_p.bind(xt, y, madd_p.bind(x, yt, zt))

        def madd_transpose(ct, x, y, z):
            print("transpose", *(repr(a) for a in (x, y) if ad.is_undefined_primal(a)))
            return (madd_p.bind(ct, y, 0.0) if ad.is_undefined_primal(x) else None,
                    madd_p.bind(x, ct, 0.0) if ad.is_undefined_primal(y) else None, ct)

        ad.primitive_jvps[madd_p] = madd_jvp
        ad.primitive_transposes[madd_p] = madd_transpose
        print(jax.grad(lambda a: madd_p.bind(a, a, 10.0))(2.0))
    """
    assert run_python(code, alias="1") == run_python(code, alias="0")


def test_private_modules_of_jaxs_primitives_and_interpreters_tutorials():
    """JAX's "How primitives work" imports `jax._src.lax.lax`, `jax._src.api` and
    `jax._src.lib.mlir.dialects.hlo`; "Writing custom interpreters" `jax._src.util`'s
    `safe_map`. They resolve as under JAX, and the list helpers behave as JAX's."""
    pytest.importorskip("jax")
    code = """
        from jax._src.lax import lax
        from jax._src import api
        from jax._src.lib.mlir.dialects import hlo
        from jax._src import util
        print(lax.add(lax.mul(2.0, 3.0), 1.0), api.grad(lambda x: lax.mul(x, x))(3.0))
        print(callable(hlo.AddOp), util.safe_map(lambda a, b: a + b, [1, 2], [3, 4]),
              list(util.safe_zip("ab", "cd")), util.unzip2([(1, "a"), (2, "b")]))
        print(util.split_list(list(range(6)), [1, 3]),
              util.partition_list([True, False, True], "xyz"),
              util.merge_lists([True, False, True], ["y"], ["x", "z"]),
              util.canonicalize_axis(-1, 3), util.wrap_name("jit", "f"))
        for bad in (lambda: util.safe_map(int, [1], [2, 3]), lambda: util.canonicalize_axis(3, 3)):
            try:
                bad()
            except Exception as e:
                print(type(e).__name__)
    """
    assert run_python(code, alias="1") == run_python(code)
