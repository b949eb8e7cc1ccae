"""The Python packaging: one distribution per package folder, all installed editable
from this tree by one command with current metadata, and every entry point naming
a module (and attribute) that exists here.
"""
from __future__ import annotations

import ast
import importlib.metadata as metadata
import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from workspace_layout import ROOT, Member, member_by_name, members, normalized

from plax.extend.registry import GROUPS

MEMBERS = members()
member_ids = [m.name for m in MEMBERS]
REINSTALL = "re-run `python3 -m pip install -r requirements-dev.txt`"
# Example third-party packages: outside the workspace (they depend on plax the way an
# outside package does), but installed for development so their tests run.
EXAMPLES = {p.parent.relative_to(ROOT).as_posix()
            for p in (ROOT / "examples").glob("*/pyproject.toml")}


def test_every_package_folder_is_a_workspace_member_or_an_example():
    # (hidden folders: .git, a local .venv, tests/ecosystem's .eco-cache)
    skip = {"build", "tests"}
    folders = {p.parent.relative_to(ROOT).as_posix() for p in ROOT.rglob("pyproject.toml")
               if not any(part in skip or part.startswith(".")
                          for part in p.relative_to(ROOT).parts)
               and p.parent != ROOT}
    assert folders == {m.path for m in MEMBERS} | EXAMPLES
    assert not EXAMPLES & {m.path for m in MEMBERS}


def test_requirements_dev_installs_every_member_and_example_editable():
    lines = (ROOT / "requirements-dev.txt").read_text().splitlines()
    editable = {line.split()[1].removeprefix("./") for line in lines if line.startswith("-e ")}
    assert editable == {m.path for m in MEMBERS} | EXAMPLES


def test_readme_starts_with_the_two_commands_that_ci_runs():
    readme = (ROOT / "README.md").read_text()
    title, rest = readme.split("\n", 1)
    assert title.startswith("# ") and rest.lstrip().startswith("```"), (
        "README.md must open with its two commands")
    block = re.match(r"\s*```\w*\n(.*?)```", rest, re.S).group(1)
    install, test = [line for line in block.splitlines() if line.strip()]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "set -euo pipefail" in ci
    assert install.split(" && ")[0] in ci, ".ci/run must install the way the README does"
    assert test in ci, ".ci/run must run exactly the README's test command"


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_project_metadata(member):
    assert member.project["requires-python"] == ">=3.11"
    assert (member.package_dir / "__init__.py").is_file()
    by_name = member_by_name()
    for req in member.requirements:
        dep = by_name.get(canonicalize_name(req.name))
        if dep is not None:  # workspace packages move in lockstep
            assert str(req.specifier) == f"=={dep.version}", f"{member.name}: {req}"
    everything = member.requirements + [r for rs in member.extras.values() for r in rs]
    assert "jax" not in {canonicalize_name(r.name) for r in everything}


@pytest.mark.parametrize("member, runtime", [("plax-cuda12", "jax-cuda12-pjrt==0.10.2"),
                                             ("plax-tpu", "libtpu==0.0.42.*")])
def test_accelerator_runtimes_are_opt_in(member, runtime):
    member = member_by_name()[member]
    assert normalized(member.extras["runtime"]) == {runtime}
    assert all(canonicalize_name(r.name) in member_by_name() for r in member.requirements)


def installed(member: Member) -> metadata.Distribution:
    try:
        return metadata.distribution(member.name)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{member.name} is not installed: {REINSTALL}")


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_installed_editable_from_this_tree(member):
    dist = installed(member)
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    assert direct_url.get("dir_info", {}).get("editable"), f"{member.name} is not editable"
    assert Path(unquote(urlparse(direct_url["url"]).path)) == member.folder, (
        f"{member.name} is installed from {direct_url['url']}, not this tree: {REINSTALL}")


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_installed_metadata_is_current(member):
    dist = installed(member)
    assert dist.version == member.version, REINSTALL
    entry_points = {}
    for ep in dist.entry_points:
        entry_points.setdefault(ep.group, {})[ep.name] = ep.value
    assert entry_points == member.entry_points, f"stale entry points: {REINSTALL}"
    declared = member.requirements + [Requirement(f'{r}; extra == "{extra}"')
                                      for extra, reqs in member.extras.items() for r in reqs]
    assert normalized(dist.requires or []) == normalized(declared), f"stale: {REINSTALL}"


def top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds at import time (descending into if/try/with blocks)."""
    names = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            stack += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
            stack += [s for h in getattr(node, "handlers", []) for s in h.body]
    return names


@pytest.mark.parametrize("member", MEMBERS, ids=member_ids)
def test_entry_points_name_modules_in_this_tree(member):
    problems = []
    for ep in installed(member).entry_points:
        where = f"[{ep.group}] {ep.name} = {ep.value}"
        if ep.group not in GROUPS:
            problems.append(f"{where}: plax reads only the groups {GROUPS}")
        if ep.module.split(".")[0] != member.import_name:
            problems.append(f"{where}: points outside {member.import_name}")
            continue
        base = member.folder.joinpath(*ep.module.split("."))
        file = next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()),
                    None)
        if file is None:
            problems.append(f"{where}: module {ep.module} does not exist")
            continue
        if ep.attr:
            names = top_level_names(ast.parse(file.read_text(), filename=str(file)))
            if ep.attr.split(".")[0] not in names and "__getattr__" not in names:
                problems.append(f"{where}: {file.relative_to(ROOT)} defines no {ep.attr}")
    assert not problems, "\n".join(problems)
