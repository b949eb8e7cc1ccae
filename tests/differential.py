"""Differential tests against JAX: the same body runs on JAX and on plax, each in its
own subprocess (plax never shares a process with `jax` here), and the results are
compared value by value, dtype by dtype.

A body is Python source that uses the name `jax` (bound to `jax` or to `plax`) and
defines `CASES`, a dict mapping a case name to a function of no arguments returning
an array or a tuple of arrays. A case that raises records the exception's class name.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="JAX is not installed")

_RUNNER = """
import json, sys, numpy as np
lib, out_path, x64 = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if lib == "jax":
    import jax
else:
    import plax as jax
jax.config.update("jax_enable_x64", x64)
namespace = {"jax": jax, "np": np}
exec(compile(sys.stdin.read(), "<differential body>", "exec"), namespace)
arrays, errors = {}, {}
for name, case in namespace["CASES"].items():
    try:
        out = case()
    except Exception as err:
        errors[name] = type(err).__name__
        continue
    outs = out if isinstance(out, tuple) else (out,)
    for i, o in enumerate(outs):
        o = np.asarray(o)
        arrays[f"{name}#{i}#dtype"] = np.array(str(o.dtype))
        # ml_dtypes' narrow floats do not survive np.load; their values fit float32.
        arrays[f"{name}#{i}"] = o.astype(np.float32) if o.dtype.kind == "V" or (
            o.dtype.itemsize < 4 and o.dtype.kind == "f") else o
np.savez(out_path, **arrays, __errors__=np.array(json.dumps(errors)))
"""


def _run(lib: str, body: str, x64: bool) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out_path = Path(tmp) / "out.npz"
        proc = subprocess.run([sys.executable, "-c", _RUNNER, lib, str(out_path),
                               "1" if x64 else "0"], input=textwrap.dedent(body),
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"the {lib} run failed:\n{proc.stderr[-4000:]}")
        with np.load(out_path) as data:
            arrays = {k: data[k] for k in data.files if k != "__errors__"}
            errors = json.loads(str(data["__errors__"]))
    return arrays, errors


def compare_with_jax(body: str, *, x64: bool = False, rtol: float = 1e-6, atol: float = 1e-6,
                     tolerances: dict | None = None, skip: tuple = ()) -> None:
    """Run `body` on JAX and on plax and assert equal dtypes, shapes, NaN/inf
    positions and values within `rtol`/`atol` (per case in `tolerances`), and that a
    case raises in one exactly when it raises the same exception class in the other.
    Cases named in `skip` are documented deviations and are not compared."""
    theirs, their_errors = _run("jax", body, x64)
    mine, my_errors = _run("plax", body, x64)
    for name in sorted(set(their_errors) | set(my_errors)):
        if name.split("#")[0] in skip:
            continue
        assert their_errors.get(name) == my_errors.get(name), (
            f"{name}: JAX raises {their_errors.get(name)}, plax {my_errors.get(name)}")
    tolerances = tolerances or {}
    problems = []
    for key in sorted(theirs):
        case = key.split("#")[0]
        if key.endswith("#dtype") or case in skip:
            continue
        if key not in mine:
            problems.append(f"{key}: missing from plax's results")
            continue
        if str(mine[key + "#dtype"]) != str(theirs[key + "#dtype"]):
            problems.append(f"{key}: dtype {mine[key + '#dtype']} vs JAX's "
                            f"{theirs[key + '#dtype']}")
            continue
        got, want = mine[key], theirs[key]
        if got.shape != want.shape:
            problems.append(f"{key}: shape {got.shape} vs JAX's {want.shape}")
            continue
        r, a = tolerances.get(case, (rtol, atol))
        try:
            np.testing.assert_allclose(np.asarray(got, np.float64) if got.dtype.kind != "c"
                                       else got, want.astype(got.dtype), rtol=r, atol=a,
                                       equal_nan=True)
        except AssertionError as err:
            problems.append(f"{key}: {err}")
    assert not problems, "\n".join(problems)
