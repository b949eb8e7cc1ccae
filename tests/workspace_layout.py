"""The plax workspace as its Python packaging describes it.

The root `pyproject.toml` lists the package folders (`[tool.uv.workspace]`); each
folder's own `pyproject.toml` names its distribution, import package, dependencies
and entry points. The packaging, Bazel and import-direction tests all read the
workspace through `members()`, so they agree on what a package is.
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]


def read_toml(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


@dataclass(frozen=True)
class Member:
    """One package folder of the workspace, e.g. `runtime_cpp` → `plax-runtime`."""
    path: str  # relative to the repository root, with forward slashes

    @property
    def folder(self) -> Path:
        return ROOT / self.path

    @functools.cached_property
    def pyproject(self) -> dict:
        return read_toml(self.folder / "pyproject.toml")

    @property
    def project(self) -> dict:
        return self.pyproject["project"]

    @property
    def name(self) -> str:
        """The canonical distribution name (`plax-runtime`)."""
        return canonicalize_name(self.project["name"])

    @property
    def version(self) -> str:
        return self.project["version"]

    @property
    def import_name(self) -> str:
        """The one top-level package the distribution ships (`plax_runtime`)."""
        tool = self.pyproject.get("tool", {})
        if "scikit-build" in tool:
            (package,) = tool["scikit-build"]["wheel"]["packages"]
            return package
        if "hatch" in tool:
            (package,) = tool["hatch"]["build"]["targets"]["wheel"]["packages"]
            return package
        include = tool["setuptools"]["packages"]["find"]["include"]
        (package,) = {pattern.removesuffix(".*") for pattern in include}
        return package

    @property
    def wheel_root_files(self) -> list[str]:
        """Files the wheel holds at its root beside the package (hatch's force-include
        to a top-level name: a start-up `.pth`)."""
        forced = (self.pyproject.get("tool", {}).get("hatch", {}).get("build", {})
                  .get("targets", {}).get("wheel", {}).get("force-include", {}))
        return sorted(src for src, dest in forced.items() if "/" not in dest)

    @property
    def package_dir(self) -> Path:
        return self.folder / self.import_name

    def python_files(self) -> list[Path]:
        """Every `.py` file the distribution ships (packages are found, namespaces too)."""
        return sorted(p for p in self.package_dir.rglob("*.py") if "__pycache__" not in p.parts)

    def package_data(self) -> list[str]:
        """The non-Python files the distribution ships (`[tool.setuptools.package-data]`),
        relative to its folder (`plax/errors.md`)."""
        patterns = self.pyproject.get("tool", {}).get("setuptools", {}).get("package-data", {})
        return sorted(p.relative_to(self.folder).as_posix()
                      for package, globs in patterns.items() for pattern in globs
                      for p in (self.folder / package.replace(".", "/")).glob(pattern))

    @property
    def requirements(self) -> list[Requirement]:
        return [Requirement(r) for r in self.project.get("dependencies", [])]

    @property
    def extras(self) -> dict[str, list[Requirement]]:
        optional = self.project.get("optional-dependencies", {})
        return {extra: [Requirement(r) for r in reqs] for extra, reqs in optional.items()}

    @property
    def entry_points(self) -> dict[str, dict[str, str]]:
        """`{group: {name: "module:attr"}}` as declared in `[project.entry-points.*]`."""
        return self.project.get("entry-points", {})


@functools.cache
def members() -> tuple[Member, ...]:
    root = read_toml(ROOT / "pyproject.toml")
    return tuple(Member(path) for path in root["tool"]["uv"]["workspace"]["members"])


def member_by_name() -> dict[str, Member]:
    return {m.name: m for m in members()}


def normalized(requirements) -> set[str]:
    """Requirements (strings or parsed) in one canonical spelling, for comparison."""
    return {str(Requirement(str(r))) for r in requirements}


def module_name(member: Member, file: Path) -> str:
    """`core/plax/_src/ir.py` → `plax._src.ir`; a package's `__init__.py` → the package."""
    parts = file.relative_to(member.folder).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
