"""Each package folder's README lists its entry points exactly as its pyproject.toml
declares them, so the READMEs stay true as packages grow.

The list is the README's bullets `- \\`plax.<group>\\`: \\`name\\`, \\`name\\` (a note)...;`
(a bullet may continue on indented lines; text in parentheses is commentary).
"""
from __future__ import annotations

import re

import pytest
from workspace_layout import members

MEMBERS = members()

_BULLET = re.compile(r"^- `(plax\.[a-z_]+)`:(.*?)(?=^- |^\S|\Z)", re.MULTILINE | re.DOTALL)


def _without_parentheticals(text: str) -> str:
    while True:
        shorter = re.sub(r"\([^()]*\)", "", text)
        if shorter == text:
            return text
        text = shorter


def readme_entry_points(text: str) -> dict[str, set[str]]:
    """`{group: {name, ...}}` from a README's entry-point bullets."""
    found: dict[str, set[str]] = {}
    for group, body in _BULLET.findall(text):
        assert group not in found, f"two bullets for {group}"
        found[group] = set(re.findall(r"`([^`]+)`", _without_parentheticals(body)))
    return found


def test_the_parser_reads_names_and_skips_notes():
    text = ("Entry points:\n\n- `plax.modules`: `a`, `b.c` (the `d` of\n  `e`), `f`;\n"
            "- `plax.backends`: `cpu`.\n\nLater text with `g`.\n")
    assert readme_entry_points(text) == {"plax.modules": {"a", "b.c", "f"},
                                         "plax.backends": {"cpu"}}


@pytest.mark.parametrize("member", MEMBERS, ids=[m.name for m in MEMBERS])
def test_readme_lists_the_entry_points_of_pyproject(member):
    readme = readme_entry_points((member.folder / "README.md").read_text())
    declared = {group: set(names) for group, names in member.entry_points.items()}
    for group in sorted(set(readme) | set(declared)):
        missing = sorted(declared.get(group, set()) - readme.get(group, set()))
        extra = sorted(readme.get(group, set()) - declared.get(group, set()))
        assert not missing and not extra, (
            f"{member.path}/README.md, `{group}`: missing {missing}, not in pyproject {extra}")
