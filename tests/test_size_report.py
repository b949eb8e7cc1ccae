"""The size report (.ci/size_report.py) counts code lines only, reports every
package, and holds the kernel to its budget, so `pytest tests` enforces it too."""
from __future__ import annotations

import importlib.util

from workspace_layout import ROOT, members

SCRIPT = ROOT / ".ci" / "size_report.py"
spec = importlib.util.spec_from_file_location("size_report", SCRIPT)
size_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(size_report)

SAMPLE = '''"""Module docstring,
over two lines."""
import os  # a comment


# only a comment
class C:
    """Class docstring."""

    def f(self, x):
        "one-line docstring"
        y = (x +
             1)
        """a string used as a comment"""
        return f"{y}" + """a multi-line
string value"""
'''


def test_counts_only_lines_that_hold_code():
    # import, class, def, y = (x +, 1), return f"...", string value
    assert size_report.code_lines(SAMPLE) == 7


def test_kernel_within_budget_and_every_package_reported(capsys):
    assert size_report.main([]) == 0
    out = capsys.readouterr().out
    for member in members():
        assert f"{member.path}/{member.import_name}" in out
    assert f"within its budget of {size_report.KERNEL_BUDGET:,}" in out


def test_kernel_over_budget_fails(capsys):
    assert size_report.main(["--kernel-budget", "100"]) == 1
    assert "FAIL: the kernel is" in capsys.readouterr().out
