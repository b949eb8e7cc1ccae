"""plax.export's symbolic scopes and constraints: comparisons decided from
`b >= 16`-style constraints, normalization by equalities, scope mixing, and the
constraints checked when an `Exported` is called (statically, and by the module's
shape assertions after a round trip), compared with JAX 0.10.2 where installed."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import plax
from plax import export
from plax.extend.core import max_dim, min_dim

from export_decisions import outcomes

requires_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None or importlib.util.find_spec("flatbuffers") is None,
    reason="JAX (with flatbuffers, which jax.export's serialization needs) is not installed")

f32 = np.float32

def test_comparisons_are_decided_from_the_constraints():
    a, b = export.symbolic_shape("a, b", constraints=["b >= 16", "a == 2*b"])
    assert a == 2 * b and str(a) == "2*b" and a - 2 * b == 0
    assert b >= 16 and a >= 32 and not (b < 16) and max_dim(b, 16) == b
    with pytest.raises(export.InconclusiveDimensionOperation,
                       match=r"'b' >= '17' is inconclusive.\nUsing symbolic scope .* with "
                             r"constraints:\n  b >= 16\n  a == 2\*b"):
        assert b >= 17
    c, d = export.symbolic_shape("c, d", constraints=["c >= d", "d >= 4", "c <= 100"])
    assert c >= d and c >= 4 and 2 * c >= d + 4 and c < 101
    assert (max_dim(c, d), min_dim(c, d), max_dim(c, 200)) == (c, d, 200)
    with pytest.raises(export.InconclusiveDimensionOperation, match="'c' >= '5'"):
        assert c >= 5
    e, = export.symbolic_shape("e", constraints=["mod(e, 4) == 0"])
    assert e % 4 == 0 and (e // 4) * 4 == e
    f, g = export.symbolic_shape("f, g", constraints=["f + g <= 10"])
    assert f <= 9 and g <= 9
    with pytest.raises(export.InconclusiveDimensionOperation):
        assert f <= 8
    # Without constraints, the message names no scope.
    u, = export.symbolic_shape("u")
    with pytest.raises(export.InconclusiveDimensionOperation) as info:
        assert u >= 2
    assert "scope" not in str(info.value)


def test_bad_constraints_and_scopes():
    with pytest.raises(ValueError, match="must contain one of '==' or '>=' or '<='"):
        export.SymbolicScope(["b > 3"])
    with pytest.raises(ValueError, match="should be a sequence of strings"):
        export.SymbolicScope("b >= 3")
    with pytest.raises(ValueError, match="Unsatisfiable explicit constraint: 3 >= 4"):
        export.SymbolicScope(["3 >= 4"])
    with pytest.raises(ValueError, match="Unsatisfiable explicit constraint: b == 5"):
        export.SymbolicScope(["b == 4", "b == 5"])
    with pytest.raises(ValueError, match="left-hand-side must be of the form"):
        export.SymbolicScope(["b + c == 4"])
    with pytest.raises(ValueError, match="Cannot specify both a `scope` and `constraints`"):
        export.symbolic_shape("b", constraints=["b >= 2"], scope=export.SymbolicScope())
    scope = export.SymbolicScope(["n >= 8"])
    (n,), (m,) = (export.symbolic_shape(s, scope=scope) for s in "nm")
    assert n >= 8 and n + m >= 9 and n.scope is m.scope is scope
    x, = export.symbolic_shape("x")
    with pytest.raises(ValueError, match=r"Invalid mixing of symbolic scopes for linear "
                                         r"combination.\nExpected  scope"):
        assert x + n
    with pytest.raises(ValueError, match="Invalid mixing of symbolic scopes when comparing "
                                         "'x' >= 'n'"):
        assert x >= n
    assert x != n  # as JAX: equality across scopes is False, not an error
    with pytest.raises(ValueError, match=r"Invalid mixing of symbolic scopes when exporting "
                                         r"<lambda>.\nExpected current \(from args\[0\]\) "
                                         r"scope .*\nand found for 'n' \(kwargs\['v'\]\)"):
        export.export(plax.jit(lambda u, v: u))(plax.ShapeDtypeStruct((x,), f32),
                                                 v=plax.ShapeDtypeStruct((n,), f32))


@pytest.fixture(scope="module")
def constrained():
    """`x[:4] * 2 + y.sum()` for `x: f32[2*b]`, `y: f32[b]`, `b >= 4`: the slice needs the
    constraint (4 <= 2*b), and a call must satisfy it."""
    a, b = export.symbolic_shape("a, b", constraints=["b >= 4", "a == 2*b"])
    fn = plax.jit(lambda x, y: plax.lax.slice_in_dim(x, 0, 4) * 2 + y.sum())
    return export.export(fn)(plax.ShapeDtypeStruct((a,), f32), plax.ShapeDtypeStruct((b,), f32))


_BROKEN = r"Input shapes do not match the symbolic shape constraint b >= 4. Expected 'b - 4' " \
          r"to be greater or equal to 0, but found -1."


def test_constraints_are_checked_when_called(constrained):
    assert [str(a.shape) for a in constrained.in_avals] == ["(2*b,)", "(b,)"]
    assert "symbolic shape constraint b >= 4" in constrained.mlir_module()
    x, y = np.arange(8, dtype=f32), np.ones(4, f32)
    np.testing.assert_allclose(constrained.call(x, y), 2 * x[:4] + 4)
    with pytest.raises(ValueError, match=_BROKEN):
        constrained.call(np.arange(6, dtype=f32), np.ones(3, f32))
    with pytest.raises(ValueError, match=_BROKEN):
        plax.jit(constrained.call)(np.arange(6, dtype=f32), np.ones(3, f32))
    # A deserialized Exported has no constraints (JAX's format keeps none): the module's
    # own shape assertion reports the broken one.
    back = export.deserialize(constrained.serialize())
    np.testing.assert_allclose(back.call(x, y), 2 * x[:4] + 4)
    with pytest.raises(ValueError, match=_BROKEN):
        back.call(np.arange(6, dtype=f32), np.ones(3, f32))
    b, = export.symbolic_shape("b")
    with pytest.raises(export.InconclusiveDimensionOperation, match="'4' <= 'b'|'b' >= '4'"):
        export.export(plax.jit(lambda x: plax.lax.slice_in_dim(x, 0, 4)))(
            plax.ShapeDtypeStruct((b,), f32))


_JAX_SIDE = """
    import json, sys, pathlib
    import numpy as np
    import jax
    from jax import export
    sys.path.insert(0, sys.argv[2])
    from export_decisions import outcomes
    tmp = pathlib.Path(sys.argv[1])
    results = {"outcomes": outcomes(export, jax.core.max_dim, jax.core.min_dim)}
    plax_exp = export.deserialize(bytearray((tmp / "plax.bin").read_bytes()))
    x, y = np.arange(8, dtype=np.float32), np.ones(4, np.float32)
    results["plax_call"] = np.asarray(plax_exp.call(x, y)).tolist()
    try:
        plax_exp.call(np.arange(6, dtype=np.float32), np.ones(3, np.float32))
    except Exception as err:
        results["plax_error"] = type(err).__name__
    a, b = export.symbolic_shape("a, b", constraints=["b >= 4", "a == 2*b"])
    fn = jax.jit(lambda x, y: jax.lax.slice_in_dim(x, 0, 4) * 2 + y.sum())
    exp = export.export(fn)(jax.ShapeDtypeStruct((a,), np.float32),
                            jax.ShapeDtypeStruct((b,), np.float32))
    (tmp / "jax.bin").write_bytes(exp.serialize())
    (tmp / "results.json").write_text(json.dumps(results))
"""


@requires_jax
def test_decisions_and_constrained_exports_agree_with_jax(tmp_path, constrained):
    (tmp_path / "plax.bin").write_bytes(constrained.serialize())
    script = tmp_path / "jax_side.py"
    script.write_text(textwrap.dedent(_JAX_SIDE))
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path), os.path.dirname(__file__)],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert outcomes(export, max_dim, min_dim) == results["outcomes"]
    np.testing.assert_allclose(results["plax_call"], 2 * np.arange(4) + 4)
    assert results["plax_error"] == "ValueError"
    from_jax = export.deserialize((tmp_path / "jax.bin").read_bytes())
    np.testing.assert_allclose(from_jax.call(np.arange(8, dtype=f32), np.ones(4, f32)),
                               2 * np.arange(4) + 4)
    with pytest.raises(ValueError, match=_BROKEN):
        from_jax.call(np.arange(6, dtype=f32), np.ones(3, f32))
