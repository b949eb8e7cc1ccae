"""The CI subset of the JAX ecosystem's own test suites (`tests/ecosystem/run.py
--subset ci`): released test files of einops, optax, chex and flax, run through the
opt-in `jax` alias (`PLAX_AS_JAX=1`) in a subprocess. Every test of the subset that
JAX 0.10.2 passes (listed in tests/ecosystem/ci_expected.txt, written by `run.py
--subset ci --modes jax --record`) must pass with plax.

The libraries come from requirements-dev.txt (which includes
tests/ecosystem/requirements.txt, their pinned versions) and their test files from
their source distributions on the package index (cached in `.eco-cache/`). Skipped
where the pinned libraries are not installed."""
from __future__ import annotations

import importlib.metadata
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "tests" / "ecosystem"
LIBRARIES = ["einops", "optax", "chex", "flax"]


def _missing_pins() -> list[str]:
    pins = dict(line.split("#")[0].strip().split("==")
                for line in (HERE / "requirements.txt").read_text().splitlines()
                if "==" in line.split("#")[0])
    missing = []
    for name in LIBRARIES:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = None
        if version != pins[name]:
            missing.append(f"{name}=={pins[name]} (installed: {version})")
    return missing


@pytest.mark.timeout(1800)  # about a minute of CPU, but beside the other test workers
def test_the_ci_subset_passes_through_the_alias(tmp_path):
    missing = _missing_pins()
    if missing:
        pytest.skip(f"the pinned libraries are not installed: {', '.join(missing)}")
    # two halves of about equal CPU time side by side, one per core of CI's two
    halves = [["optax", "flax"], ["chex", "einops"]]
    procs = []
    for i, libraries in enumerate(halves):
        expected = tmp_path / f"expected{i}.txt"
        expected.write_text("".join(
            line + "\n" for line in (HERE / "ci_expected.txt").read_text().splitlines()
            if line.split("::", 1)[0] in libraries))
        procs.append(subprocess.Popen(
            [sys.executable, str(HERE / "run.py"), "--subset", "ci", "--modes", "plax",
             "--libraries", *libraries, "--python", sys.executable, "--no-programs",
             "--timeout", "120", "--expect", str(expected),
             "--cache", str(ROOT / ".eco-cache"), "--results", str(tmp_path / str(i))],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True))  # a group of its own: its pytest run ends with it
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=1700)
            assert proc.returncode == 0, out[-6000:] + err[-3000:]
            assert " pass with plax" in out
    finally:
        for proc in procs:  # none left running after a failure
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
