"""`plax.debug.breakpoint`: the `(jdb)` prompt, driven non-interactively by feeding its
commands on standard input to a fresh interpreter, eagerly and inside `jit`."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import plax

PROGRAM = textwrap.dedent("""
    import numpy as np, plax
    def f(x):
        y = x * 2
        plax.debug.breakpoint()
        return y + 1
    print("eager result", f(np.float32(3)))
    print("jit result", plax.jit(f)(np.float32(4)))
    plax.effects_barrier()
""")


def run(commands: str, tmp_path) -> str:
    script = tmp_path / "program.py"  # a file, so the prompt can list its source
    script.write_text(PROGRAM)
    proc = subprocess.run([sys.executable, str(script)], input=commands, text=True,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_breakpoint_eager_and_jit(tmp_path):
    out = run('p y\npp {"y": y}\nw\nu\nd\nl\nmissing\nc\np y + 1\nc\n', tmp_path)
    eager, jitted = out.split("eager result 7.0")
    assert eager.count("Entering jdb:") == 1 and "(jdb) np.float32(6.0)" in eager
    assert "{'y': np.float32(6.0)}" in eager
    assert f'Traceback:\n  File "{tmp_path / "program.py"}", line 7' in eager  # caller, then f
    assert "->      plax.debug.breakpoint()" in eager
    assert "*** NameError: name 'missing' is not defined" in eager
    # Inside jit, the traced `y` is handed to the prompt with its computed value.
    assert "Entering jdb:" in jitted and "(jdb) Array(9., dtype=float32)" in jitted
    assert "jit result 9.0" in jitted


def test_breakpoint_quit_and_end_of_input(tmp_path):
    out = run("q\n", tmp_path)
    assert "eager result" not in out  # quitting stops the program
    assert "Entering jdb:" in run("", tmp_path)  # end of input quits too (returncode 0)


def test_breakpoint_arguments():
    with pytest.raises(ValueError, match="mutually exclusive"):
        plax.debug.breakpoint(ordered=True, token=1.0)
    with pytest.raises(ValueError, match="unknown debugger backend"):
        plax.debug.breakpoint(backend="web")


def test_breakpoint_with_token_returns_it():
    import io

    import numpy as np
    out = io.StringIO()

    def f(x):
        y = plax.debug.breakpoint(token=x * 3, stdin=io.StringIO("p x\nc\n"), stdout=out)
        return y + 1
    np.testing.assert_allclose(plax.jit(f)(np.float32(2)), 7.0)
    plax.effects_barrier()
    assert "Array(2., dtype=float32)" in out.getvalue()
