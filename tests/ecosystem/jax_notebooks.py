"""JAX's documentation notebooks, run once with JAX and once with `jax` resolved to
plax (the opt-in alias, `PLAX_AS_JAX=1`), compared cell by cell.

    python3 tests/ecosystem/jax_notebooks.py --docs PATH/TO/jax/docs [--only NAME ...]

`--docs` is the `docs` folder of a checkout of JAX at its release tag (jax-v0.10.2):
the notebooks are MyST markdown files whose `{code-cell}` blocks JAX's documentation
build executes. Each notebook runs in one namespace, cell after cell, as Jupyter runs
it; a cell's record is what it prints plus the repr of its last expression, or the
class of the exception it raises (the next cells still run). IPython magics
(`%timeit`, `!pip`...) are left out, and so is what a cell prints about time or
memory addresses. Prints, per notebook, how many cells print the same under both,
and the first cells that differ.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SECONDS_PER_NOTEBOOK = 600
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
_YAML_OPTIONS = re.compile(r"\A---\n.*?^---\n", re.S | re.M)  # a cell's options block
_VARYING = [(re.compile(r" at 0x[0-9a-f]+"), " at 0x..."),
            (re.compile(r"\d+(\.\d+)? ?(ns|µs|us|ms|s) ± .*"), "<timing>"),
            (re.compile(r"(Wall|CPU) time.*|\d+\.\d+ (seconds|sec|ms)"), "<timing>")]


def cells_of(path: Path) -> list[str]:
    """The notebook's code cells, without their options (`:key: value` lines, or a
    YAML block between `---` lines) and IPython magics."""
    cells = []
    for body in _CELL.findall(path.read_text()):
        lines = [line for line in _YAML_OPTIONS.sub("", body).splitlines()
                 if not line.startswith((":", "%", "!"))]
        cells.append("\n".join(lines))
    return cells


class _Timeout(BaseException):
    pass


def _give_up(*_):
    raise _Timeout


def _run_cell(source: str, namespace: dict) -> str:
    """What the cell prints, and its last expression's repr, as Jupyter shows them."""
    out = io.StringIO()
    try:
        tree = ast.parse(source)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(tree, "<cell>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
                if value is not None:
                    print(repr(value))
    except Exception as e:  # noqa: BLE001 - the exception is the cell's result
        print(f"!! {type(e).__name__}", file=out)
    text = out.getvalue()
    for pattern, replacement in _VARYING:
        text = pattern.sub(replacement, text)
    return text


def run_notebook(path: str) -> list[str]:
    """Every cell's record, in order, in one namespace. NumPy's global generator is
    seeded first: notebooks draw inputs from it unseeded (tracing.md), and both runs
    must see the same ones. `jax` is imported before: JAX's import draws from it."""
    import jax  # noqa: F401
    import numpy as np
    np.random.seed(0)
    signal.signal(signal.SIGALRM, _give_up)
    signal.alarm(SECONDS_PER_NOTEBOOK)
    namespace: dict = {"__name__": "__main__"}
    records = []
    try:
        for source in cells_of(Path(path)):
            records.append(_run_cell(source, namespace))
    except _Timeout:
        records.append(f"!! timed out after {SECONDS_PER_NOTEBOOK} s")
    return records


def _run(path: Path, library: str, folder: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PLAX_AS_JAX"}
    env.update(JAX_PLATFORMS="cpu", PLAX_AS_JAX="1" if library == "plax" else "0",
               MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, __file__, "--run-one", str(path)], env=env,
                          cwd=folder, capture_output=True, text=True,
                          timeout=SECONDS_PER_NOTEBOOK + 60)
    if proc.returncode != 0:
        return [f"!! the notebook's process failed: {proc.stderr[-500:]}"]
    return json.loads(proc.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--show", type=int, default=2, help="differing cells shown each")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        print(json.dumps(run_notebook(args.run_one)))
        return
    notebooks = sorted(p for p in args.docs.rglob("*.md") if _CELL.search(p.read_text()))
    if args.only:
        notebooks = [p for p in notebooks if p.stem in args.only]
    total_same = total = 0
    for path in notebooks:
        with tempfile.TemporaryDirectory() as jax_dir, tempfile.TemporaryDirectory() as mine:
            theirs, ours = _run(path, "jax", jax_dir), _run(path, "plax", mine)
        differ = [i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b]
        differ += list(range(min(len(theirs), len(ours)), max(len(theirs), len(ours))))
        same = max(len(theirs), len(ours)) - len(differ)
        total_same, total = total_same + same, total + max(len(theirs), len(ours))
        print(f"{path.relative_to(args.docs)}: {same} of {max(len(theirs), len(ours))} cells "
              f"print the same", flush=True)
        for i in differ[:args.show]:
            a = theirs[i] if i < len(theirs) else "<no cell>"
            b = ours[i] if i < len(ours) else "<no cell>"
            print(f"  cell {i}:\n  --- JAX\n{a[:1500]}\n  --- plax\n{b[:1500]}", flush=True)
    print(f"total: {total_same} of {total} cells print the same")


if __name__ == "__main__":
    main()
