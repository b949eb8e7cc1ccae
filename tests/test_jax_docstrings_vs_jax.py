"""JAX's own documented examples run unchanged on plax and print what they print on JAX.

The `>>>` examples of JAX 0.10.2's docstrings (every public name of jax, jax.numpy,
lax, random, nn, scipy, tree_util, ...: about 600 docstrings, 3,700 examples, written
by JAX's authors, not ours) run in a subprocess under plax through the `jax` alias,
and each example's printed output must be the text JAX printed (an exception: the same
class). What JAX prints is recorded once (`tests/recorded/`, see
`tests/jax_docstring_examples.py`), since the pinned JAX never prints otherwise; where
JAX is installed, the record is checked against it: the same docstrings, and a sample
of them rerun under JAX prints as recorded.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import tempfile

import pytest
from jax_differential import requires_jax
from jax_docstring_examples import RECORD, finish, runner

# Docstrings whose examples still print otherwise under plax, and why.
KNOWN_DIFFERENCES: dict[str, str] = {
    "jax.errors.UnexpectedTracerError":
        "with jax_check_tracer_leaks, JAX raises a bare Exception ('Leaked trace'); plax "
        "raises UnexpectedTracerError (an Exception too) naming the leaked tracers",
}
# Every how-many-th recorded docstring the record check reruns under JAX.
SAMPLE_EVERY = 10


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(RECORD.read_text())


def _printed_under(recorded: dict, alias: bool) -> dict[str, list[str]]:
    """What each docstring's examples print under plax (`alias`) or JAX."""
    with tempfile.TemporaryDirectory() as tmp:
        examples, out = os.path.join(tmp, "examples.json"), os.path.join(tmp, "out.json")
        with open(examples, "w") as f:
            json.dump(recorded, f)
        finish(runner(tmp, "run", examples, out, alias=alias,
                      xla_flags=recorded["xla_flags"]), timeout=900)
        with open(out) as f:
            return json.load(f)


def _first_difference(name: str, theirs: list[str], ours: list[str]) -> str:
    for i, (their, our) in enumerate(zip(theirs, ours)):
        if their != our:
            return f"{name}, example {i}:\n--- JAX\n{their}\n--- plax\n{our}"
    return f"{name}: {len(theirs)} outputs under JAX, {len(ours)} under plax"


@pytest.mark.timeout(1200)  # minutes of CPU beside the test workers
def test_examples_print_as_under_jax(recorded):
    assert len(recorded["docstrings"]) > 550
    ours = _printed_under(recorded, alias=True)
    theirs = {d["name"]: d["printed"] for d in recorded["docstrings"]}
    differ = {name for name in theirs if theirs[name] != ours[name]}
    unexpected = sorted(differ - set(KNOWN_DIFFERENCES))
    assert not unexpected, (f"{len(unexpected)} docstrings print otherwise under plax:\n\n"
                            + "\n\n".join(_first_difference(n, theirs[n], ours[n])
                                          for n in unexpected[:10]))
    now_same = sorted(set(KNOWN_DIFFERENCES) - differ)
    assert not now_same, f"now printed as under JAX, drop from KNOWN_DIFFERENCES: {now_same}"


@requires_jax
def test_record_is_what_jax_prints(recorded):
    """The record holds the installed JAX's docstring examples, and a sample of them
    prints under JAX what the record says. When JAX's pin changes, record again:
    `cd $(mktemp -d) && python .../tests/jax_docstring_examples.py record`."""
    assert recorded["jax"] == importlib.metadata.version("jax"), "JAX's pin changed: record again"
    with tempfile.TemporaryDirectory() as tmp:
        finish(runner(tmp, "collect", collection := os.path.join(tmp, "c.json"),
                      alias=False), timeout=120)
        with open(collection) as f:
            installed = json.load(f)["docstrings"]
    assert ({d["name"]: d["examples"] for d in recorded["docstrings"]}
            == {d["name"]: d["examples"] for d in installed})
    sample = dict(recorded, docstrings=recorded["docstrings"][::SAMPLE_EVERY])
    rerun = _printed_under(sample, alias=False)
    differ = [d["name"] for d in sample["docstrings"] if rerun[d["name"]] != d["printed"]]
    assert not differ, f"JAX prints otherwise than recorded for {differ}"
