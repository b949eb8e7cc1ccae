"""A small Starlark interpreter for the Bazel files, which records every rule call.

Bazel itself is not needed: Starlark is nearly a subset of Python. A file is parsed
with `ast`, checked to use only Starlark's constructs (and in BUILD and MODULE files
only the statements Bazel allows there), then executed with Starlark's builtins and
nothing else. As in Bazel, a rule is in scope only once it is loaded or native. A
workspace `.bzl` file (`load("//bazel:plax_package.bzl", ...)`) is executed itself,
so its macros run and the rules they call are recorded for the BUILD file that
called them; a symbol loaded from an external repository (`@rules_python//...`)
records its calls, except the few functions in `EXTERNAL_FUNCTIONS`.
"""
from __future__ import annotations

import ast
import builtins
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

# What BUILD.bazel and MODULE.bazel files may call without a `load`.
BUILD_NATIVES = ("package", "filegroup", "alias", "exports_files")
MODULE_NATIVES = ("module", "bazel_dep", "use_repo")

STARLARK_BUILTINS = {name: getattr(builtins, name) for name in (
    "all", "any", "bool", "dict", "enumerate", "getattr", "hasattr", "int", "len", "list",
    "max", "min", "print", "range", "repr", "reversed", "sorted", "str", "tuple", "type",
    "zip")}

# Python constructs that Starlark does not have.
NOT_STARLARK = (ast.Import, ast.ImportFrom, ast.ClassDef, ast.While, ast.Try, ast.TryStar,
                ast.With, ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith, ast.Global,
                ast.Nonlocal, ast.Delete, ast.Assert, ast.Raise, ast.Match, ast.Yield,
                ast.YieldFrom, ast.Await, ast.JoinedStr, ast.Set, ast.SetComp,
                ast.GeneratorExp, ast.NamedExpr, ast.Is, ast.IsNot)


class StarlarkError(Exception):
    """A Bazel file that Bazel would reject, or a `fail()` it called."""


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
    loads: dict[str, str] = field(default_factory=dict)  # symbol → label it came from
    globals: dict = field(default_factory=dict)  # the file's top-level bindings

    def named(self, kind: str, name: str) -> Rule:
        for rule in self.rules:
            if rule.kind == kind and rule.kwargs.get("name") == name:
                return rule
        raise AssertionError(f"{self.path} has no {kind}(name = {name!r})")

    def of_kind(self, kind: str) -> list[Rule]:
        return [r for r in self.rules if r.kind == kind]


def requirement_label(name: str) -> str:
    """The label rules_python's `requirement("ml-dtypes")` stands for: `@pypi//ml_dtypes`."""
    return "@pypi//" + re.sub(r"[-_.]+", "_", name).lower()


EXTERNAL_FUNCTIONS = {("@pypi//:requirements.bzl", "requirement"): requirement_label}


class Package:
    """The BUILD (or MODULE) file being evaluated: where rule calls are recorded, and
    what `glob` and `native.package_name()` are relative to."""

    def __init__(self, out: StarlarkFile, root: Path):
        self.out, self.root, self.folder = out, root, out.path.parent

    def name(self) -> str:
        return self.folder.relative_to(self.root).as_posix() if self.folder != self.root else ""

    def recorder(self, kind: str):
        def record(*args, **kwargs):
            self.out.rules.append(Rule(kind, list(args), kwargs))
        record.__name__ = kind
        return record

    def glob(self, include, exclude=(), allow_empty=False):
        def matches(patterns):
            return {p.relative_to(self.folder).as_posix()
                    for pattern in patterns for p in self.folder.glob(pattern) if p.is_file()}
        found = sorted(matches(include) - matches(exclude))
        if not (found or allow_empty):
            raise StarlarkError(f"{self.out.path}: glob({include}) matches nothing")
        return found


class Native:
    """The `native` module of a .bzl file: package_name, glob and the native rules."""

    def __init__(self, package: Package):
        self.package_name, self.glob = package.name, package.glob
        for kind in BUILD_NATIVES:
            setattr(self, kind, package.recorder(kind))


class ModuleExtension:
    """What `use_extension(..., "pip")` returns: its tags record as `pip.<tag>`."""

    def __init__(self, package: Package, name: str):
        self._package, self._name = package, name

    def __getattr__(self, tag: str):
        return self._package.recorder(f"{self._name}.{tag}")


class Failed(StarlarkError):
    """Raised by Starlark's `fail()`."""


def fail(*message):
    raise Failed(" ".join(map(str, message)))


def check_dialect(tree: ast.Module, path: Path) -> list[ast.stmt]:
    """Reject what Bazel would; return the top-level `load(...)` statements."""
    is_bzl = path.suffix == ".bzl"
    top_level = (ast.Expr, ast.Assign, ast.FunctionDef) if is_bzl else (ast.Expr, ast.Assign)
    loads = []
    for stmt in tree.body:
        if not isinstance(stmt, top_level):
            kind = ".bzl" if is_bzl else "BUILD"
            raise StarlarkError(f"{path}:{stmt.lineno}: {type(stmt).__name__} is not "
                                f"allowed at the top level of a {kind} file")
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and ast.unparse(call.func) == "load":
            loads.append(stmt)
    for node in ast.walk(tree):
        bad = None
        if isinstance(node, NOT_STARLARK):
            bad = type(node).__name__
        elif isinstance(node, ast.Compare) and len(node.ops) > 1:
            bad = "a chained comparison"
        elif isinstance(node, ast.FunctionDef) and node.decorator_list:
            bad = "a decorator"
        elif isinstance(node, ast.Name) and node.id.startswith("__"):
            bad = node.id
        elif isinstance(node, ast.Attribute) and node.attr.startswith("__"):
            bad = node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "load" and not any(node is s.value for s in loads):
            bad = "a load() that is not a top-level statement"
        if bad:
            raise StarlarkError(f"{path}:{getattr(node, 'lineno', '?')}: {bad} is not Starlark")
    return loads


def resolve_bzl(label: str, package: Package, path: Path) -> Path:
    """`//bazel:plax_package.bzl` → that file; its folder must be a Bazel package."""
    pkg, sep, name = label.partition(":")
    if not sep or not name.endswith(".bzl") or not (pkg == "" or pkg.startswith("//")):
        raise StarlarkError(f"{path}: cannot load {label!r}")
    folder = package.root / pkg.removeprefix("//") if pkg else path.parent
    if not any((folder / build).is_file() for build in ("BUILD.bazel", "BUILD")):
        raise StarlarkError(f"{path}: {label}: {folder} is not a Bazel package (no BUILD file)")
    return folder / name


def load_symbols(stmt: ast.Expr, package: Package, path: Path) -> dict:
    call = stmt.value
    label, *symbols = [ast.literal_eval(a) for a in call.args]
    wanted = {s: s for s in symbols} | {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    if label.startswith("@"):
        return {local: EXTERNAL_FUNCTIONS.get((label, symbol)) or package.recorder(symbol)
                for local, symbol in wanted.items()}
    module = execute(resolve_bzl(label, package, path), package)
    bound = {}
    for local, symbol in wanted.items():
        if symbol.startswith("_") or symbol not in module.globals:
            raise StarlarkError(f"{path}:{stmt.lineno}: {label} has no public symbol {symbol!r}")
        bound[local] = module.globals[symbol]
    return bound


def execute(path: Path, package: Package) -> StarlarkFile:
    """Run one Starlark file in `package`'s context; return its top-level bindings."""
    tree = ast.parse(path.read_text(), filename=str(path))
    loads = check_dialect(tree, path)
    me = package.out if path == package.out.path else StarlarkFile(path)
    namespace = {"__builtins__": STARLARK_BUILTINS, "fail": fail, "select": Select}
    if path.suffix == ".bzl":
        namespace["native"] = Native(package)
    elif path.name == "MODULE.bazel":
        namespace |= {kind: package.recorder(kind) for kind in MODULE_NATIVES}
        namespace["use_extension"] = lambda bzl, name, **_: ModuleExtension(package, name)
    else:
        namespace |= {kind: package.recorder(kind) for kind in BUILD_NATIVES}
        namespace["glob"] = package.glob
    for stmt in loads:
        bound = load_symbols(stmt, package, path)
        me.loads |= {local: ast.literal_eval(stmt.value.args[0]) for local in bound}
        namespace |= bound
    body = ast.Module([s for s in tree.body if s not in loads], type_ignores=[])
    exec(compile(body, str(path), "exec"), namespace)  # the checked Starlark, nothing else
    me.globals = {k: v for k, v in namespace.items() if k != "__builtins__"}
    return me


def where(error: BaseException) -> str:
    """`core/BUILD.bazel:4 → bazel/plax_package.bzl:68`: the Starlark lines of a traceback."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if f.filename.endswith((".bazel", ".bzl", "BUILD"))]
    return " → ".join(f"{f.filename}:{f.lineno}" for f in frames) or "?"


def load_starlark(path: Path, root: Path) -> StarlarkFile:
    """Evaluate a BUILD.bazel, MODULE.bazel or .bzl file of the workspace at `root`."""
    out = StarlarkFile(path)
    try:
        return execute(path, Package(out, root))
    except NameError as e:  # an unloaded rule or an undefined name
        raise NameError(f"{where(e)}: {e.name} is used but neither loaded nor defined") from e
    except (Failed, TypeError, ValueError, KeyError, AttributeError) as e:
        raise StarlarkError(f"{where(e)}: {type(e).__name__}: {e}") from e
