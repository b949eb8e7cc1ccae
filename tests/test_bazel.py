"""The Bazel description (MODULE.bazel, BUILD.bazel files) says what the Python
packaging says: the same packages, sources, C++ extension sources, dependencies,
versions and entry points.

Bazel itself is not needed. Starlark is Python syntax, so the files are parsed
with `ast` and run by the small interpreter below, which knows the few builtins
they use (`load`, `glob`, `select`, `requirement`) and records every rule call.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from workspace_layout import ROOT, Member, member_by_name, members, normalized

# Rules and functions Bazel provides without a `load`.
NATIVE = {"package", "filegroup", "alias", "exports_files", "module", "bazel_dep",
          "use_extension", "use_repo"}


@dataclass
class Rule:
    kind: str  # e.g. "py_library", or "pip.parse" for a module-extension tag
    args: list
    kwargs: dict


@dataclass
class Select:
    """A `select()`: kept whole, since which branch applies depends on the build."""
    branches: dict


@dataclass
class StarlarkFile:
    path: Path
    rules: list[Rule] = field(default_factory=list)
    loads: dict[str, str] = field(default_factory=dict)  # symbol → .bzl label
    env: dict = field(default_factory=dict)

    def named(self, kind: str, name: str) -> Rule:
        for rule in self.rules:
            if rule.kind == kind and rule.kwargs.get("name") == name:
                return rule
        raise AssertionError(f"{shown(self.path)} has no {kind}(name = {name!r})")

    def of_kind(self, kind: str) -> list[Rule]:
        return [r for r in self.rules if r.kind == kind]


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def requirement_label(name: str) -> str:
    """The label rules_python's `requirement("ml-dtypes")` stands for: `@pypi//ml_dtypes`."""
    return "@pypi//" + re.sub(r"[-_.]+", "_", name).lower()


def load_starlark(path: Path) -> StarlarkFile:
    """Run a BUILD.bazel or MODULE.bazel file; unsupported syntax is an error."""
    out = StarlarkFile(path)
    folder = path.parent

    def where(node) -> str:
        return f"{shown(path)}:{node.lineno}"

    def glob(include, exclude=(), allow_empty=False):
        def matches(patterns):
            return {p.relative_to(folder).as_posix()
                    for pattern in patterns for p in folder.glob(pattern) if p.is_file()}
        found = sorted(matches(include) - matches(exclude))
        assert found or allow_empty, f"{shown(path)}: glob({include}) is empty"
        return found

    builtins = {"glob": glob, "select": Select}
    loadable_functions = {"requirement": requirement_label}  # the rest of loads are rules

    def value(node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Name) and node.id in out.env:
            return out.env[node.id]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return value(node.left) + value(node.right)
        if isinstance(node, ast.Call):
            return call(node)
        raise SyntaxError(f"{where(node)}: unsupported expression {ast.dump(node)[:80]}")

    def call(node: ast.Call):
        kind = ast.unparse(node.func)
        args = [value(a) for a in node.args]
        kwargs = {kw.arg: value(kw.value) for kw in node.keywords}
        if kind == "load":
            label, *symbols = args
            out.loads.update({s: label for s in symbols})
            return None
        if kind in builtins:
            return builtins[kind](*args, **kwargs)
        receiver = kind.split(".")[0]
        if receiver not in NATIVE and receiver not in out.loads and receiver not in out.env:
            raise NameError(f"{where(node)}: {kind}() is used but not loaded")
        if kind in loadable_functions:
            return loadable_functions[kind](*args, **kwargs)
        return Rule(kind, args, kwargs)

    tree = ast.parse(path.read_text(), filename=str(path))
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            result = call(stmt.value)
            if isinstance(result, Rule):
                out.rules.append(result)
        elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
              and isinstance(stmt.targets[0], ast.Name)):
            out.env[stmt.targets[0].id] = value(stmt.value)
        else:
            raise SyntaxError(f"{where(stmt)}: unsupported statement")
    return out


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
    assert wheel["deps"] == [":package"]


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_extension_sources_match_cmake(member):
    cc_files = sorted(p.relative_to(member.folder).as_posix()
                      for p in member.folder.glob("src/**/*.cc"))
    build = build_file(member)
    bazel = {r.kwargs["name"]: sorted(r.kwargs["srcs"])
             for r in build.of_kind("nanobind_extension")}
    cmake = cmake_extensions(member)
    assert bazel == cmake, f"{member.path}: Bazel extensions {bazel} != CMake's {cmake}"
    assert sorted(src for srcs in bazel.values() for src in srcs) == cc_files, (
        f"{member.path}: every src/*.cc belongs to exactly one extension")
    data = build.named("py_library", member.import_name).kwargs.get("data", [])
    assert sorted(data) == sorted(f":{name}" for name in bazel)


def test_root_wheels_list_every_package():
    wheels = load_starlark(ROOT / "BUILD.bazel").named("filegroup", "wheels")
    assert sorted(wheels.kwargs["srcs"]) == sorted(f"//{m.path}:wheel" for m in MEMBERS)


def test_module_provides_every_repository_used():
    module = load_starlark(ROOT / "MODULE.bazel")
    repos = {r.kwargs["name"] for r in module.of_kind("bazel_dep")}
    repos |= {repo for r in module.of_kind("use_repo") for repo in r.args[1:]}
    used = set()
    for path in [ROOT / "BUILD.bazel", *(m.folder / "BUILD.bazel" for m in MEMBERS)]:
        used |= set(re.findall(r'"@(\w+)//', path.read_text()))
    assert used <= repos, f"MODULE.bazel does not provide {sorted(used - repos)}"


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


def test_interpreter_rejects_unloaded_rules(tmp_path):
    (tmp_path / "BUILD.bazel").write_text('py_library(name = "x", srcs = [])\n')
    with pytest.raises(NameError, match="py_library"):
        load_starlark(tmp_path / "BUILD.bazel")
