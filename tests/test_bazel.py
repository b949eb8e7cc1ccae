"""The Bazel description (MODULE.bazel, the BUILD.bazel files and the macro they
share, bazel/plax_package.bzl) says what the Python packaging says: the same
packages, sources, C++ extension sources, dependencies, versions and entry points.

Bazel itself is not needed: `starlark_recorder` runs the files, macros included,
and records every rule call.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from starlark_recorder import StarlarkError, StarlarkFile, requirement_label
from starlark_recorder import load_starlark as load_in
from workspace_layout import ROOT, Member, member_by_name, members, normalized

MACROS = ROOT / "bazel" / "plax_package.bzl"


def load_starlark(path: Path) -> StarlarkFile:
    return load_in(path, ROOT)


def build_file(member: Member) -> StarlarkFile:
    path = member.folder / "BUILD.bazel"
    assert path.is_file(), f"{member.name} ({member.path}/) has no BUILD.bazel"
    return load_starlark(path)


def library_label(member: Member) -> str:
    return f"//{member.path}:{member.import_name}"


def expected_label(req: Requirement) -> str:
    """A pyproject dependency as a BUILD dependency: a workspace target or a pip one."""
    dep = member_by_name().get(canonicalize_name(req.name))
    return library_label(dep) if dep else requirement_label(req.name)


def parse_entry_points(groups: dict[str, list[str]]) -> dict[str, dict[str, str]]:
    parsed = {}
    for group, lines in groups.items():
        parsed[group] = {}
        for line in lines:
            name, _, target = line.partition("=")
            parsed[group][name.strip()] = target.strip()
    return parsed


def cmake_extensions(member: Member) -> dict[str, list[str]]:
    """`{"plax_runtime/_fastpath": ["src/fastpath.cc"]}` from the CMakeLists.txt."""
    cmake = member.folder / "CMakeLists.txt"
    if not cmake.exists():
        return {}
    text = cmake.read_text()
    modules = dict(re.findall(r"nanobind_add_module\((\w+)\s+([^)]*)\)", text))
    destinations = dict(re.findall(r"install\(TARGETS\s+(\w+).*?DESTINATION\s+(\S+?)\)",
                                   text, flags=re.S))
    return {f"{destinations[name]}/{name}":
            sorted(w for w in words.split() if not w.isupper()) for name, words in modules.items()}


MEMBERS = members()
member_ids = [m.name for m in MEMBERS]


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_library_covers_every_shipped_python_file(member):
    library = build_file(member).named("py_library", member.import_name)
    srcs = set(library.kwargs.get("srcs", []))
    shipped = {p.relative_to(member.folder).as_posix() for p in member.python_files()}
    assert shipped, f"{member.name} ships no .py files"
    assert not shipped - srcs, f"{member.path}/BUILD.bazel misses {sorted(shipped - srcs)}"
    assert not srcs - shipped, f"{member.path}/BUILD.bazel lists {sorted(srcs - shipped)}"
    assert library.kwargs.get("imports") == ["."]


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_library_deps_are_the_pyproject_dependencies(member):
    library = build_file(member).named("py_library", member.import_name)
    expected = {expected_label(r) for r in member.requirements}
    deps = set(library.kwargs.get("deps", []))
    assert expected <= deps, f"{member.path}/BUILD.bazel lacks deps {sorted(expected - deps)}"
    assert deps <= expected, (f"{member.path}/BUILD.bazel has deps {sorted(deps - expected)} "
                              "that pyproject.toml does not declare")


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_wheel_metadata_matches_pyproject(member):
    build = build_file(member)
    package = build.named("py_package", "package").kwargs
    assert package["packages"] == [f"{member.path.replace('/', '.')}.{member.import_name}"]
    assert package["deps"] == [f":{member.import_name}"]
    wheel = build.named("py_wheel", "wheel").kwargs
    assert canonicalize_name(wheel["distribution"]) == member.name
    assert wheel["version"] == member.version
    assert wheel["python_requires"] == member.project["requires-python"]
    assert normalized(wheel.get("requires", [])) == normalized(member.requirements)
    assert ({k: normalized(v) for k, v in wheel.get("extra_requires", {}).items()}
            == {k: normalized(v) for k, v in member.extras.items()})
    assert parse_entry_points(wheel.get("entry_points", {})) == member.entry_points, (
        f"{member.path}/BUILD.bazel py_wheel entry_points differ from pyproject.toml")
    assert wheel["strip_path_prefixes"] == [member.path]
    root_files = member.wheel_root_files
    assert wheel["deps"] == [":package"] + ([":root_files"] if root_files else [])
    if root_files:
        assert sorted(build.named("filegroup", "root_files").kwargs["srcs"]) == root_files


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_extension_sources_match_cmake(member):
    sources = sorted(p.relative_to(member.folder).as_posix()
                     for pattern in ("src/**/*.cc", "src/**/*.h")
                     for p in member.folder.glob(pattern))
    build = build_file(member)
    bazel = {r.kwargs["name"]: sorted(r.kwargs["srcs"])
             for r in build.of_kind("nanobind_extension")}
    cmake = cmake_extensions(member)
    assert bazel == cmake, f"{member.path}: Bazel extensions {bazel} != CMake's {cmake}"
    assert sorted(src for srcs in bazel.values() for src in srcs) == sources, (
        f"{member.path}: every src/*.cc and src/*.h belongs to exactly one extension")
    data = build.named("py_library", member.import_name).kwargs.get("data", [])
    assert sorted(data) == sorted([f":{name}" for name in bazel] + member.package_data()), (
        f"{member.path}: the library's data are its extensions and its package data")


def test_root_wheels_list_every_package():
    wheels = load_starlark(ROOT / "BUILD.bazel").named("filegroup", "wheels")
    assert sorted(wheels.kwargs["srcs"]) == sorted(f"//{m.path}:wheel" for m in MEMBERS)


def test_module_provides_every_repository_used():
    module = load_starlark(ROOT / "MODULE.bazel")
    repos = {r.kwargs["name"] for r in module.of_kind("bazel_dep")}
    repos |= {repo for r in module.of_kind("use_repo") for repo in r.args[1:]}
    used = set()
    for path in [ROOT / "BUILD.bazel", *(m.folder / "BUILD.bazel" for m in MEMBERS),
                 *MACROS.parent.glob("*.bzl")]:
        used |= set(re.findall(r'"@(\w+)//', path.read_text()))
    assert used <= repos, f"MODULE.bazel does not provide {sorted(used - repos)}"


def test_macro_knows_every_distribution_at_the_workspace_version():
    macros = load_starlark(MACROS).globals
    assert macros["LIBRARIES"] == {m.name: library_label(m) for m in MEMBERS}
    assert {macros["VERSION"]} == {m.version for m in MEMBERS}
    assert {macros["PYTHON_REQUIRES"]} == {m.project["requires-python"] for m in MEMBERS}
    module = load_starlark(ROOT / "MODULE.bazel").named("module", "plax")
    assert module.kwargs["version"] == macros["VERSION"]


def requirement_lines(path: Path) -> list[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def test_pip_lock_pins_every_requirement():
    module = load_starlark(ROOT / "MODULE.bazel")
    (parse,) = module.of_kind("pip.parse")
    lock = ROOT / parse.kwargs["requirements_lock"].removeprefix("//:")
    pins = {canonicalize_name(r.name): r for r in map(Requirement, requirement_lines(lock))}
    (toolchain,) = module.of_kind("python.toolchain")
    for member in MEMBERS:
        assert SpecifierSet(member.project["requires-python"]).contains(
            toolchain.kwargs["python_version"]), member.name
        for req in member.requirements:
            if canonicalize_name(req.name) in member_by_name():
                continue
            pin = pins.get(canonicalize_name(req.name))
            assert pin is not None, f"{lock.name} does not pin {req.name} ({member.name})"
            (version,) = [s.version for s in pin.specifier]
            assert req.specifier.contains(version), f"{lock.name}: {pin} violates {req}"


def write_workspace(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_interpreter_rejects_unloaded_rules(tmp_path):
    (tmp_path / "BUILD.bazel").write_text('py_library(name = "x", srcs = [])\n')
    with pytest.raises(NameError, match=r"BUILD.bazel:1: py_library is used but neither"):
        load_in(tmp_path / "BUILD.bazel", tmp_path)


def test_interpreter_runs_loaded_macros_and_records_their_rules(tmp_path):
    write_workspace(tmp_path, {
        "defs/BUILD.bazel": "",
        "defs/m.bzl": ('load("@rules_python//python:defs.bzl", "py_library")\n'
                       "def lib(name):\n"
                       '    py_library(name = name, srcs = native.glob(["*.py"]),\n'
                       "               pkg = native.package_name())\n"),
        "pkg/a.py": "",
        "pkg/BUILD.bazel": 'load("//defs:m.bzl", "lib")\nlib(name = "a")\n',
    })
    (rule,) = load_in(tmp_path / "pkg" / "BUILD.bazel", tmp_path).rules
    assert rule.kind == "py_library"
    assert rule.kwargs == {"name": "a", "srcs": ["a.py"], "pkg": "pkg"}
    # A macro does not bring the rules it loads into the BUILD file's scope.
    (tmp_path / "pkg" / "BUILD.bazel").write_text(
        'load("//defs:m.bzl", "lib")\npy_library(name = "b")\n')
    with pytest.raises(NameError, match="py_library"):
        load_in(tmp_path / "pkg" / "BUILD.bazel", tmp_path)


@pytest.mark.parametrize("files, message", [
    ({"BUILD.bazel": "def f():\n    pass\n"}, "FunctionDef is not allowed"),
    ({"BUILD.bazel": 'x = f"{1}"\n'}, "JoinedStr is not Starlark"),
    ({"BUILD.bazel": 'load("//nowhere:m.bzl", "f")\n'}, "not a Bazel package"),
    ({"BUILD.bazel": 'load(":m.bzl", "_f")\n', "m.bzl": "def _f():\n    pass\n"},
     "no public symbol '_f'"),
    ({"BUILD.bazel": 'load(":m.bzl", "f")\nf()\n',
      "m.bzl": "import os\ndef f():\n    pass\n"}, "Import is not allowed"),
    ({"BUILD.bazel": 'load(":m.bzl", "f")\nf()\n',
      "m.bzl": 'def f():\n    fail("no", "way")\n'}, "no way"),
])
def test_interpreter_rejects_what_bazel_rejects(tmp_path, files, message):
    write_workspace(tmp_path, files)
    with pytest.raises(StarlarkError, match=message):
        load_in(tmp_path / "BUILD.bazel", tmp_path)
