"""Installs that are not a checkout: every distribution builds as a wheel into `dist/`
(the README's command), and those wheels, installed into a fresh virtual environment
with no editable install and no checkout on the path, run the main example and a smoke
test from another directory.

Cost: the wheels in `dist/` are reused while they are newer than every file they ship
(a fresh checkout builds them once, about 30 s of CPU: the C++ build is incremental in
`runtime_cpp/build/`). The fresh environment gets plax's third-party dependencies
(jaxlib, NumPy...) as links to the ones installed here, found from the wheels'
requirements, so the test needs no network; `pip check` then proves every requirement
of every installed distribution is met, as a resolver installing from PyPI would make
it.
"""
from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from workspace_layout import ROOT, members

pytestmark = pytest.mark.install

DIST = ROOT / "dist"
# The README's command that builds every wheel into dist/.
WHEEL_COMMAND = " ".join(["python3 -m pip wheel --no-deps -w dist",
                          *(f"./{m.path}" for m in members())])


def _wheel_of(member) -> Path | None:
    stem = f"{member.name.replace('-', '_')}-{member.version}-"
    found = sorted(DIST.glob(stem + "*.whl"))
    return found[-1] if found else None


def _sources(member) -> list[Path]:
    """The files a member's wheel is built from."""
    files = member.python_files() + [member.folder / p for p in member.package_data()]
    files += [member.folder / "pyproject.toml", member.folder / "README.md"]
    files += list(member.folder.glob("src/*")) + list(member.folder.glob("CMakeLists.txt"))
    return files


def _fresh(member) -> bool:
    wheel = _wheel_of(member)
    return wheel is not None and wheel.stat().st_mtime >= max(
        p.stat().st_mtime for p in _sources(member))


@pytest.fixture(scope="module")
def wheels() -> dict[str, Path]:
    stale = [m for m in members() if not _fresh(m)]
    if stale:
        for m in stale:  # a stale wheel of the same name would be kept by pip
            old = _wheel_of(m)
            if old is not None:
                old.unlink()
        # With the build backends (and CMake) installed here, no isolated build
        # environment is made per package (pip would download them into each).
        local = shutil.which("cmake") is not None and all(
            importlib.util.find_spec(b)
            for b in ("setuptools", "scikit_build_core", "nanobind", "hatchling"))
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(DIST),
                   *(["--no-build-isolation"] if local else []),
                   *(str(m.folder) for m in stale)]
        # setuptools stages a package in <folder>/build/ and never prunes it there: a
        # module deleted since would reach the wheel. (runtime_cpp's build/ is CMake's.)
        staging = [m.folder / "build" for m in stale if "scikit-build" not in m.pyproject["tool"]]
        for folder in staging:
            shutil.rmtree(folder, ignore_errors=True)
        try:
            subprocess.run(command, cwd=ROOT, check=True, timeout=900)
        finally:
            for folder in staging:
                shutil.rmtree(folder, ignore_errors=True)
    built = {m.name: _wheel_of(m) for m in members()}
    assert all(built.values()), built
    return built


def _third_party_closure(requirements) -> list[metadata.Distribution]:
    """The installed distributions these requirements need, transitively (plax's own
    and optional extras left out)."""
    plax_names = {m.name for m in members()}
    seen: dict[str, metadata.Distribution] = {}
    todo = [r for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in plax_names or name in seen:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        dist = metadata.distribution(name)
        seen[name] = dist
        todo.extend(Requirement(r) for r in dist.requires or ())
    return list(seen.values())


def _link_distribution(dist: metadata.Distribution, site: Path) -> None:
    """Makes `dist` (installed here) importable in `site` by linking its top-level
    entries (packages, modules, .dist-info, shared-library folders)."""
    base = Path(dist.locate_file(""))
    tops = {Path(str(f)).parts[0] for f in dist.files or ()}
    for top in tops:
        source = base / top
        if top in ("..", "bin") or not source.exists() or (site / top).exists():
            continue
        (site / top).symlink_to(source)


def _wheel_requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(name).decode().splitlines()
    return [Requirement(line.split(":", 1)[1]) for line in lines
            if line.startswith("Requires-Dist:")]


@pytest.fixture(scope="module")
def venv(wheels, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wheel-install")
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    needed = [r for w in wheels.values() for r in _wheel_requirements(w)]
    for dist in _third_party_closure(needed):
        _link_distribution(dist, site)
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    subprocess.run([*pip, "install", "-q", "--no-deps", "--no-index",
                    *map(str, wheels.values())], check=True, cwd=root, timeout=300)
    check = subprocess.run([*pip, "check"], capture_output=True, text=True, cwd=root)
    assert check.returncode == 0, check.stdout + check.stderr
    return env_dir


def _run(venv: Path, args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    return subprocess.run([str(venv / "bin" / "python"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_wheel_command_builds_every_distribution(wheels):
    assert set(wheels) == {m.name for m in members()}
    runtime = wheels["plax-runtime"]
    assert "-cp3" in runtime.name and not runtime.name.endswith("-none-any.whl")
    with zipfile.ZipFile(runtime) as z:  # the C++ extension is in the wheel
        assert any(n.startswith("plax_runtime/") and n.endswith((".so", ".pyd"))
                   for n in z.namelist())
    with zipfile.ZipFile(wheels["plax"]) as z:  # the errors reference is package data
        assert "plax/errors.md" in z.namelist()


def test_installed_wheels_run_the_main_example(venv, tmp_path):
    shutil.copy(ROOT / "examples" / "main.py", tmp_path / "main.py")
    done = _run(venv, ["main.py"], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "final loss: plax" in done.stdout and "dominant eigenvalue: plax" in done.stdout
    assert "parameters kept their layouts: True" in done.stdout


SMOKE = r"""
import pathlib, sys
import plax, plax.numpy as jnp, plax_runtime
checkout = pathlib.Path(sys.argv[1])
for module in (plax, jnp, plax_runtime):
    where = pathlib.Path(module.__file__).resolve()
    assert checkout not in where.parents, f"{module.__name__} imported from the checkout: {where}"
    assert pathlib.Path(sys.prefix) in where.parents, where
f = plax.jit(plax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2)))
x = jnp.arange(4.0)
print("grad", [round(float(v), 4) for v in f(x)])
print("vmap", plax.vmap(jnp.dot)(jnp.ones((3, 2)), jnp.ones((3, 2))).tolist())
print("devices", plax.device_count())
try:
    plax.jit(lambda x: 1 if x > 0 else 0)(1.0)
except plax.errors.TracerBoolConversionError as e:
    print("pointer", str(e).splitlines()[-1])
assert "jax" not in sys.modules
"""


def test_installed_wheels_smoke(venv, tmp_path):
    import numpy as np
    done = _run(venv, ["-c", SMOKE, str(ROOT)], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    expected = np.round(np.sin(2 * np.arange(4.0)), 4).tolist()  # d/dx sin² = sin 2x
    assert lines["grad"] == str(expected)
    assert lines["vmap"] == "[2.0, 2.0, 2.0]"
    assert "python -m plax.errors TracerBoolConversionError" in lines["pointer"]
    entry = _run(venv, ["-m", "plax.errors", "TracerBoolConversionError"], tmp_path)
    assert entry.returncode == 0 and entry.stdout.startswith("## tracerboolconversionerror")


def test_readme_gives_the_wheel_command():
    assert WHEEL_COMMAND in (ROOT / "README.md").read_text()
