"""`plax.stages`: `jit(f).trace(...)` → `Traced` → `Lowered` → `Compiled`, what each
stage says of its arguments and outputs, and the compiled analyses; compared with
JAX in a subprocess where JAX gives numbers."""
from __future__ import annotations

import numpy as np
import pytest
from jax_differential import requires_jax, run_body, run_in_jax

import plax
import plax.numpy as jnp
from plax import stages


def _f(x, y=1.0):
    return jnp.sin(x) * y


@pytest.fixture(scope="module")
def traced():
    return plax.jit(_f, donate_argnums=0).trace(np.ones(3, np.float32), y=2.0)


def test_public_names_are_jaxs():
    assert set(stages.__all__) == {"ArgInfo", "Compiled", "CompilerOptions", "Lowered",
                                   "Traced", "Wrapped"}
    assert isinstance(plax.jit(_f), stages.Wrapped)
    assert not isinstance(_f, stages.Wrapped)


def test_traced_describes_the_call(traced):
    assert isinstance(traced, stages.Traced)
    assert "sin" in str(traced.jaxpr)
    assert traced.fun_name == "_f"
    assert traced.donate_argnums == (0,)
    (x_info,), kw_info = traced.args_info
    assert (x_info.shape, x_info.dtype, x_info.donated) == ((3,), np.float32, True)
    assert kw_info["y"].donated is False and kw_info["y"].aval.weak_type
    (x_aval,), _ = traced.in_avals
    assert x_aval.shape == (3,)
    assert traced.out_avals.shape == (3,)
    assert traced.out_info.shape == (3,) and traced.out_info.dtype == np.float32


def test_lowered_and_compiled(traced):
    lowered = traced.lower()
    assert isinstance(lowered, stages.Lowered)
    assert lowered.args_info == traced.args_info
    assert lowered.donate_argnums == (0,)
    assert "stablehlo.sine" in lowered.as_text()
    cost = lowered.cost_analysis()
    assert cost["flops"] == 3.0 and cost["transcendentals"] == 3.0
    compiled = lowered.compile()
    assert isinstance(compiled, stages.Compiled)
    assert compiled.in_avals == traced.in_avals and compiled.donate_argnums == (0,)
    assert compiled.cost_analysis()["flops"] == 3.0
    assert compiled.memory_analysis().argument_size_in_bytes == 16  # f32[3] and f32[]
    assert "sine" in compiled.as_text()
    assert hasattr(compiled.runtime_executable(), "execute_sharded")
    x = jnp.ones(3)
    np.testing.assert_allclose(compiled(x, y=2.0), 2.0 * np.sin(np.ones(3)), rtol=1e-6)


def test_compiler_options():
    lowered = plax.jit(_f).lower(np.ones(2, np.float32))
    compiled = lowered.compile(compiler_options={"xla_embed_ir_in_executable": True})
    np.testing.assert_allclose(compiled(jnp.ones(2)), np.sin(np.ones(2)), rtol=1e-6)
    assert compiled is not lowered.compile()
    with pytest.raises(Exception, match="No such compile option: 'bogus_option'"):
        lowered.compile(compiler_options={"bogus_option": True})
    with pytest.raises(TypeError, match="compiler_options must be a dict"):
        lowered.compile(compiler_options=[("xla_embed_ir_in_executable", True)])


def test_jit_compiler_options_reach_xla_and_compile_adds_to_them(tmp_path):
    def dumped(folder):  # XLA writes HLO text there only if the options reached it
        return sorted(p.name for p in folder.glob("*.txt"))

    dump = {"xla_dump_to": str(tmp_path / "call"), "xla_dump_hlo_as_text": True}
    f = plax.jit(lambda x: x * 3.0, compiler_options=dump)
    np.testing.assert_allclose(f(np.ones(2, np.float32)), [3.0, 3.0])
    assert dumped(tmp_path / "call")
    lowered = f.lower(np.ones(3, np.float32))
    lowered.compile({"xla_dump_to": str(tmp_path / "aot")})  # compile's name wins
    assert dumped(tmp_path / "aot")
    with pytest.raises(Exception, match="No such compile option: 'bogus_option'"):
        plax.jit(lambda x: x + 1, compiler_options={"bogus_option": True})(1.0)
    with pytest.raises(TypeError, match="jit: compiler_options must be a dict"):
        plax.jit(lambda x: x, compiler_options=[("xla_dump_to", "/tmp")])
    with pytest.raises(TypeError, match=r"keys must be XLA option names \(str\), got 1"):
        plax.jit(lambda x: x, compiler_options={1: 2})
    with pytest.raises(TypeError, match="abstracted_axes"):  # not jit's option in JAX
        plax.jit(lambda x: x, abstracted_axes=({0: "n"},))


def test_statics_are_not_arguments():
    traced = plax.jit(lambda x, n: x * n, static_argnums=1).trace(np.ones(2, np.float32), 3)
    assert traced.args_info[0][0].shape == (2,) and len(traced.args_info[0]) == 1
    assert traced.donate_argnums == ()


@requires_jax
def test_cost_analysis_same_as_jax():
    body = """
        f = lib.jit(lambda x, w: jnp.tanh(x @ w).sum())
        lowered = f.lower(inputs["x"], inputs["w"])
        for stage, cost in (("lowered", lowered.cost_analysis()),
                            ("compiled", lowered.compile().cost_analysis())):
            for key in ("flops", "transcendentals"):
                results[f"{stage}_{key}"] = np.float32(cost[key])
        results["args"] = np.int64(lowered.compile().memory_analysis().argument_size_in_bytes)
    """
    inputs = {"x": np.ones((4, 5), np.float32), "w": np.ones((5, 3), np.float32)}
    mine, theirs = run_body(body, inputs), run_in_jax(body, inputs)
    assert {k: float(v) for k, v in mine.items()} == {k: float(v) for k, v in theirs.items()}
