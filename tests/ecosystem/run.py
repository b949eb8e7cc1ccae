"""The JAX ecosystem's own test suites, run once with JAX and once with `jax`
resolved to plax (the opt-in alias, `PLAX_AS_JAX=1`), and compared.

    python3 tests/ecosystem/run.py                  # every library, all their tests
    python3 tests/ecosystem/run.py --subset ci      # the small CI subset (a few minutes)
    python3 tests/ecosystem/run.py --libraries optax chex --jobs 2

Steps (each kept in the cache folder, `.eco-cache/` by default, and redone only
when missing): a venv layered over this interpreter's packages (so it sees plax and
JAX 0.10.2 as installed here) with the pinned libraries below installed from the
package index; their released test files, from each library's source
distribution on the package index; then pytest over them, JAX first, then plax.
Prints, per library, the tests JAX passes, how many of those plax passes too, and
the failures of plax among them grouped by their error.

equinox and orbax-checkpoint ship no tests in their distributions: give a
folder of equinox's tests with `--tests-dir equinox=PATH` (a checkout of its
release tag); orbax is checked by `orbax_roundtrip.py` beside this file instead.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import site
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

def _pins(path: Path) -> dict[str, str]:
    """`name==version` lines of a requirements file."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return dict(line.split("==") for line in lines if "==" in line)


# The versions measured (issue 34's table), pinned so that figures compare; the file
# is also part of requirements-dev.txt, so the CI subset runs in the development venv.
PINS = _pins(HERE / "requirements.txt")
# What the test files import besides the libraries.
TEST_REQUIREMENTS = ["pytest", "pytest-timeout", "absl-py", "cloudpickle"]


@dataclass
class Suite:
    """Where a library's tests live in its source distribution, and how to run them."""
    library: str
    patterns: list[str]  # globs, relative to the unpacked distribution
    env: dict[str, str] = field(default_factory=dict)
    ci: list[str] = field(default_factory=list)  # the CI subset: files (relative)
    deselect: list[str] = field(default_factory=list)  # files needing what is not here


SUITES = {
    "einops": Suite("einops", ["einops/tests/test_*.py"], env={"EINOPS_TEST_BACKENDS": "jax"},
                    ci=["einops/tests/test_ops.py", "einops/tests/test_einsum.py",
                        "einops/tests/test_packing.py"],
                    # notebooks and framework layers of other backends
                    deselect=["einops/tests/test_notebooks.py"]),
    "optax": Suite("optax", ["optax/**/*_test.py"],
                   ci=["optax/_src/base_test.py", "optax/_src/combine_test.py",
                       "optax/_src/linear_algebra_test.py", "optax/_src/numerics_test.py",
                       "optax/_src/update_test.py", "optax/_src/utils_test.py",
                       "optax/transforms/_clipping_test.py",
                       "optax/transforms/_accumulation_test.py",
                       "optax/losses/_regression_test.py"]),
    "chex": Suite("chex", ["chex/_src/*_test.py"],
                  ci=["chex/_src/dataclass_test.py", "chex/_src/dimensions_test.py",
                      "chex/_src/asserts_internal_test.py"]),
    "equinox": Suite("equinox", ["tests/test_*.py"]),
    "flax": Suite("flax", ["tests/linen/*_test.py", "tests/core/*_test.py",
                           "tests/nnx/*_test.py", "tests/*_test.py"],
                  ci=["tests/linen/linen_activation_test.py",
                      "tests/linen/initializers_test.py"]),
}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(cmd, **kwargs):
    log("+", " ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


# --- the venv -----------------------------------------------------------------------

def venv_python(cache: Path) -> Path:
    """The venv's interpreter, made and filled when missing."""
    venv = cache / "venv"
    python = venv / "bin" / "python"
    marker = venv / "pins.txt"
    wanted = "\n".join(f"{k}=={v}" for k, v in PINS.items())
    if marker.exists() and marker.read_text() == wanted:
        return python
    run([sys.executable, "-m", "venv", venv])
    # Layer over this interpreter's site-packages (plax, editable; JAX; their
    # dependencies): its .pth files run too, so editable installs resolve.
    ours = site.getsitepackages()[0]
    theirs = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                            check=True, capture_output=True, text=True).stdout.strip()
    Path(theirs, "zz_layer_over_dev.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n")
    jax_pin = subprocess.run([sys.executable, "-c", "import jax; print(jax.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    constraints = [f"jax=={jax_pin}", f"jaxlib=={jax_pin}"] if jax_pin else []
    run([python, "-m", "pip", "install", "-q", *wanted.split(), *TEST_REQUIREMENTS,
         *constraints])
    marker.write_text(wanted)
    return python


# --- the tests ----------------------------------------------------------------------

def released_sources(cache: Path, library: str) -> Path:
    """The library's source distribution from the package index, unpacked."""
    version = PINS[library]
    out = cache / "sources"
    found = list(out.glob(f"{library.replace('-', '_')}-{version}")) + \
        list(out.glob(f"{library}-{version}"))
    if found:
        return found[0]
    downloads = cache / "sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", downloads, f"{library}=={version}"])
    (sdist,) = [p for p in downloads.iterdir()
                if p.name.lower().replace("_", "-").startswith(f"{library}-{version}")]
    with tarfile.open(sdist) as tar:
        tar.extractall(out, filter="data")
    return released_sources(cache, library)


def test_files(suite: Suite, tree: Path, subset: str) -> list[Path]:
    if subset == "ci":
        return [tree / f for f in suite.ci if (tree / f).exists()]
    files = sorted({p for pattern in suite.patterns for p in tree.glob(pattern)})
    return [f for f in files if f.relative_to(tree).as_posix() not in suite.deselect]


# --- running and reading ------------------------------------------------------------

def run_pytest(python: Path, tree: Path, files: list[Path], mode: str, suite: Suite,
               results: Path, jobs: int, timeout: int) -> Path:
    report = results / f"{suite.library}-{mode}.xml"
    env = {**os.environ, **suite.env,
           "XLA_FLAGS": "--xla_force_host_platform_device_count=8 "
                        "--xla_backend_optimization_level=0 "
                        "--xla_cpu_use_fusion_emitters=false",
           "PLAX_AS_JAX": "1" if mode == "plax" else "0"}
    # (a file that fails to import, e.g. for a missing optional dependency such as
    # optax's scikit-learn, loses its own tests, not the whole run)
    cmd = [python, "-m", "pytest", *(f.relative_to(tree) for f in files), "-q",
           "-p", "no:cacheprovider", "-o", "addopts=", f"--timeout={timeout}",
           f"--junitxml={report}", "-W", "ignore", "--continue-on-collection-errors",
           f"--rootdir={tree}"]  # test ids relative to the library's tree
    if jobs > 1:
        cmd += ["-n", str(jobs)]
    log(f"[{suite.library} under {mode}] {len(files)} files")
    subprocess.run([str(c) for c in cmd], cwd=tree, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return report


def outcomes(report: Path) -> dict[str, tuple[str, str]]:
    """test id → (outcome, first line of its failure) from a JUnit XML report."""
    found = {}
    if not report.exists():
        return found
    for case in ET.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if problem is None:
            found[test] = ("passed", "")
        else:
            message = (problem.get("message") or problem.text or "").strip().splitlines()
            found[test] = (problem.tag, message[0] if message else problem.tag)
    return found


def group_of(message: str) -> str:
    """A failure's group: its message with numbers, quoted names and shapes masked."""
    message = re.sub(r"0x[0-9a-f]+", "0x…", message)
    message = re.sub(r"\d+", "N", message)
    message = re.sub(r"'[^']{20,}'", "'…'", message)
    return message[:140]


def compare(library: str, jax_results, plax_results, top: int) -> tuple[list, list]:
    jax_passed = {t for t, (o, _) in jax_results.items() if o == "passed"}
    kept = {t for t in jax_passed if plax_results.get(t, ("missing",))[0] == "passed"}
    groups = collections.Counter(
        group_of(plax_results[t][1]) if t in plax_results else "did not run (collection error)"
        for t in jax_passed - kept)
    share = f"{100 * len(kept) / len(jax_passed):.0f} %" if jax_passed else "-"
    row = [library, PINS[library], len(jax_passed),
           sum(o == "passed" for o, _ in plax_results.values()), len(kept), share]
    return row, groups.most_common(top)


# Programs beside this file, run under both and compared line by line (numbers to 5
# significant digits): a flax nnx model trained with optax under jit and shard_map,
# and orbax saving and restoring sharded arrays.
PROGRAMS = ["nnx_train.py", "orbax_roundtrip.py"]


def _rounded(line: str) -> list:
    out = []
    for word in line.split():
        try:
            out.append(float(f"{float(word):.5g}"))
        except ValueError:
            out.append(word)
    return out


def run_programs(python: Path) -> list[str]:
    """Each program's verdict: the same output under JAX and the alias, or the diff."""
    verdicts = []
    for program in PROGRAMS:
        outputs = {}
        for mode in ("jax", "plax"):
            env = {**os.environ, "PLAX_AS_JAX": "1" if mode == "plax" else "0"}
            proc = subprocess.run([str(python), str(HERE / program)], env=env,
                                  capture_output=True, text=True)
            lines = proc.stdout.splitlines() if proc.returncode == 0 else \
                [f"failed ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"]
            outputs[mode] = [_rounded(line.replace(" jaxlib._jax", "").replace(" plax", ""))
                             for line in lines]
        same = outputs["jax"] == outputs["plax"]
        detail = "" if same else f"\n  jax:  {outputs['jax']}\n  plax: {outputs['plax']}"
        verdicts.append(f"{program}: {'same under JAX and plax' if same else 'DIFFERS'}{detail}")
    return verdicts


def check_expected(expected: Path, plax_results: dict) -> list[str]:
    """The tests `expected` lists that plax did not pass, printed with their errors."""
    wanted = [line.strip() for line in expected.read_text().splitlines() if line.strip()]
    missed = [t for t in wanted if plax_results.get(t, ("missing",))[0] != "passed"]
    print(f"{len(wanted) - len(missed)} of the {len(wanted)} tests JAX passes in "
          f"{expected.name} pass with plax")
    for test in missed:
        outcome, message = plax_results.get(test, ("did not run", ""))
        print(f"  {test}: {outcome} {message[:200]}")
    return missed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libraries", nargs="*", default=list(SUITES), choices=list(SUITES))
    parser.add_argument("--subset", choices=["all", "ci"], default="all")
    parser.add_argument("--cache", type=Path, default=ROOT / ".eco-cache")
    parser.add_argument("--tests-dir", action="append", default=[],
                        help="LIBRARY=PATH: that library's tests from a folder")
    parser.add_argument("--jobs", type=int, default=1, help="pytest-xdist workers")
    parser.add_argument("--timeout", type=int, default=300, help="seconds per test")
    parser.add_argument("--groups", type=int, default=8, help="failure groups shown")
    parser.add_argument("--modes", nargs="*", default=["jax", "plax"])
    parser.add_argument("--no-programs", action="store_true",
                        help="skip the nnx/optax training and orbax round trip")
    parser.add_argument("--python", type=Path,
                        help="run the tests with this interpreter, which has the pinned "
                             "libraries (the development venv does), not the cache's venv")
    parser.add_argument("--results", type=Path,
                        help="where the JUnit reports go (default: the cache's results/)")
    parser.add_argument("--record", type=Path,
                        help="write the tests JAX passes (LIBRARY::ID lines) to this file")
    parser.add_argument("--expect", type=Path,
                        help="fail unless plax passes every test this file lists (one "
                             "written by --record)")
    args = parser.parse_args(argv)
    given = dict(item.split("=", 1) for item in args.tests_dir)

    python = args.python.absolute() if args.python else venv_python(args.cache)
    results = args.results or args.cache / "results"
    results.mkdir(parents=True, exist_ok=True)
    rows, all_groups = [], {}
    found = {"jax": {}, "plax": {}}
    for library in args.libraries:
        suite = SUITES[library]
        if library in given:
            tree = Path(given[library]).resolve()
        elif library == "equinox":
            log("equinox: its distribution ships no tests; pass --tests-dir equinox=PATH")
            continue
        else:
            tree = released_sources(args.cache, library)
        files = test_files(suite, tree, args.subset)
        if not files:
            log(f"{library}: no test files found under {tree}")
            continue
        reports = {mode: run_pytest(python, tree, files, mode, suite, results, args.jobs,
                                    args.timeout) for mode in args.modes}
        for mode, report in reports.items():
            found[mode].update({f"{library}::{t}": o for t, o in outcomes(report).items()})
        if set(reports) != {"jax", "plax"}:
            continue
        row, groups = compare(library, outcomes(reports["jax"]), outcomes(reports["plax"]),
                              args.groups)
        rows.append(row)
        all_groups[library] = groups

    print("| library | version | passed with JAX | passed with plax | of JAX's passes, "
          "plax passes | share kept |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    if args.record:
        args.record.write_text("".join(f"{t}\n" for t, (o, _) in sorted(found["jax"].items())
                                       if o == "passed"))
    missed = check_expected(args.expect, found["plax"]) if args.expect else []
    verdicts = [] if args.no_programs else run_programs(python)
    for verdict in verdicts:
        print(verdict)
    for library, groups in all_groups.items():
        if groups:
            print(f"\n{library}: plax's failures among JAX's passes, by group")
            for message, count in groups:
                print(f"  {count:5d}  {message}")
    return 1 if missed or any("DIFFERS" in v for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
