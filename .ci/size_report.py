"""How big is each plax package? Code lines per package and sub-package, counted like
tinygrad's sz.py: lines that hold Python tokens, not blank lines, comments or
docstrings. The kernel (core/plax) has a budget; over it, this exits with status 1.

    python3 .ci/size_report.py [--kernel-budget 4760]
"""
from __future__ import annotations

import argparse
import ast
import functools
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the workspace as its packaging describes it
from workspace_layout import Member, members  # noqa: E402

KERNEL = "plax"
# Raised from 4,500 (2026-12-06): the Jaxpr printer that matches JAX's, the legacy-extension
# hooks (ShapedArray.to_tangent_aval, Trace.main) and traceback filtering joined the kernel.
# Raised to 4,750 (2026-12-06): JAX's configuration options (XLA's compiler settings, IR
# dumps, logging levels, check_vma and the accepted-and-ignored table) are defined where
# options are, in the kernel's config module, and avals carry their manual axis types.
# Raised to 4,760 (2026-12-06): JAX's public Primitive.impl and Primitive.get_bind_params
# (libraries that define primitives the JAX way call them) and round(Array)'s int result.
KERNEL_BUDGET = 4760
NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
OTHER_FOLDERS = ("tests", "benchmarks", "examples")


def docstring_spans(tree: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the bare string statements are: docstrings, and strings used as comments."""
    return [((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset))
            for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)]


def code_lines(source: str) -> int:
    spans = docstring_spans(ast.parse(source))
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in NOT_CODE or any(a <= token.start < b for a, b in spans):
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


@functools.cache
def file_code_lines(file: Path) -> int:
    """Each file is counted once per process: a package's total and its sub-package
    rows read the same files, and the tests run the report more than once."""
    return code_lines(file.read_text())


def measure(files: list[Path]) -> tuple[int, int]:
    """(files, code lines)."""
    return len(files), sum(file_code_lines(f) for f in files)


def groups(member: Member) -> dict[str, list[Path]]:
    """The package's files by direct sub-package; its own modules under its name."""
    found: dict[str, list[Path]] = {}
    for file in member.python_files():
        parts = file.relative_to(member.package_dir).parts
        key = f"{member.import_name}/{parts[0] if len(parts) > 1 else '*.py'}"
        found.setdefault(key, []).append(file)
    return dict(sorted(found.items()))


def report(kernel_budget: int) -> int:
    print("Python code lines (no blank lines, comments or docstrings)\n")
    print(f"{'package':<34}{'files':>7}{'lines':>9}")
    kernel_lines = None
    for member in members():
        n_files, n_lines = measure(member.python_files())
        print(f"{member.path + '/' + member.import_name:<34}{n_files:>7}{n_lines:>9,}"
              f"   {member.name}")
        parts = groups(member)
        for name, files in parts.items() if len(parts) > 1 else ():
            print(f"  {name:<32}{len(files):>7}{measure(files)[1]:>9,}")
        if member.name == KERNEL:
            kernel_lines = n_lines
    print()
    for folder in OTHER_FOLDERS:
        files = sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)
        if files:
            print(f"{folder + '/':<34}{len(files):>7}{measure(files)[1]:>9,}   (not shipped)")
    if kernel_lines is None:
        print(f"\nFAIL: no workspace package is the kernel distribution {KERNEL!r}")
        return 1
    verdict = "within" if kernel_lines <= kernel_budget else "OVER"
    print(f"\nkernel: {kernel_lines:,} code lines, {verdict} its budget of {kernel_budget:,}")
    if kernel_lines > kernel_budget:
        print(f"FAIL: the kernel is {kernel_lines - kernel_budget:,} lines over budget; "
              "move code that is not kernel to a layer above it")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel-budget", type=int, default=KERNEL_BUDGET)
    return report(parser.parse_args(argv).kernel_budget)


if __name__ == "__main__":
    sys.exit(main())
