"""JAX's own documented examples run unchanged on plax and print what they print on JAX.

The `>>>` examples of JAX 0.10.2's docstrings (every public name of jax, jax.numpy,
lax, random, nn, scipy, tree_util, ...: about 600 docstrings, 3,700 examples, written
by JAX's authors, not ours) run twice in subprocesses, under JAX and under plax
through the `jax` alias, and each example's printed output must be the same text
(an exception: the same class). `tests/jax_docstring_examples.py` collects and runs
them. Skipped where JAX is not installed.
"""
from __future__ import annotations

import os
import tempfile

import pytest
from jax_differential import requires_jax
from jax_docstring_examples import finish, runner, side_by_side

pytestmark = requires_jax

# Docstrings whose examples still print otherwise under plax, and why.
KNOWN_DIFFERENCES: dict[str, str] = {
    "jax.errors.UnexpectedTracerError":
        "with jax_check_tracer_leaks, JAX raises a bare Exception ('Leaked trace'); plax "
        "raises UnexpectedTracerError (an Exception too) naming the leaked tracers",
}


@pytest.fixture(scope="module")
def printed():
    """{name: (JAX's outputs, plax's outputs)} for every docstring with examples."""
    with tempfile.TemporaryDirectory() as tmp:
        examples = os.path.join(tmp, "examples.json")
        finish(runner(tmp, "collect", examples, alias=False), timeout=120)
        return side_by_side(examples, tmp)


def _first_difference(name: str, outputs: tuple[list[str], list[str]]) -> str:
    for i, (theirs, ours) in enumerate(zip(*outputs)):
        if theirs != ours:
            return f"{name}, example {i}:\n--- JAX\n{theirs}\n--- plax\n{ours}"
    return f"{name}: {len(outputs[0])} outputs under JAX, {len(outputs[1])} under plax"


@pytest.mark.timeout(1800)  # minutes of CPU, JAX's and plax's side beside the test workers
def test_examples_print_as_under_jax(printed):
    assert len(printed) > 550  # the collection found JAX's docstrings
    differ = {name for name, (theirs, ours) in printed.items() if theirs != ours}
    unexpected = sorted(differ - set(KNOWN_DIFFERENCES))
    assert not unexpected, (f"{len(unexpected)} docstrings print otherwise under plax:\n\n"
                            + "\n\n".join(_first_difference(n, printed[n])
                                          for n in unexpected[:10]))
    now_same = sorted(set(KNOWN_DIFFERENCES) - differ)
    assert not now_same, f"now printed as under JAX, drop from KNOWN_DIFFERENCES: {now_same}"
