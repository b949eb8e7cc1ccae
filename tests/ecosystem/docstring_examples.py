"""The examples in the docstrings of optax, flax (linen and nnx), chex, equinox and
einops, run once with JAX and once with `jax` resolved to plax (the opt-in alias,
`PLAX_AS_JAX=1`), compared example by example.

    python3 tests/ecosystem/docstring_examples.py [--libraries optax flax] [--show 5]

The libraries are those pinned in requirements.txt beside this file, installed in
this interpreter. tests/jax_docstring_examples.py does the work: it collects the
docstrings of each library's public modules (those of the objects the library
defines, not of JAX's functions it re-exports); their examples are the `>>>` ones,
and each top-level statement of a ```python block without `>>>` (as equinox writes
its examples). Each docstring's examples run in a namespace of their own: a copy of
the globals of the module defining it, as `doctest` gives, with `jax`, `jnp`, `lax`,
`np` and the library's usual imports below. An example's record is what it prints,
or the class of its exception, with memory addresses left out. Prints, per library,
how many docstrings and examples print the same under both, and the examples that
differ. The environment passes to both sides (JAX_ENABLE_X64=1 runs them in 64 bits).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from jax_docstring_examples import finish, runner, side_by_side  # noqa: E402

# Each library's package, and the names its examples use without importing them.
LIBRARIES = {
    "optax": "import optax",
    "flax": "import flax\nfrom flax import linen as nn\nfrom flax import nnx",
    "chex": "import chex",
    "equinox": "import equinox as eqx",
    "einops": "import einops\nfrom einops import rearrange, reduce, repeat",
}


def compare(library: str, folder: str) -> dict[str, tuple[list[str], list[str]]]:
    """{docstring: (JAX's records, plax's)} of the library's examples."""
    examples = os.path.join(folder, "examples.json")
    finish(runner(folder, "collect", examples, library, LIBRARIES[library], alias=False),
           timeout=600)
    return side_by_side(examples, folder, timeout=3600)


def report(library: str, printed: dict[str, tuple[list[str], list[str]]], show: int) -> None:
    examples = sum(len(theirs) for theirs, _ in printed.values())
    differing = [(name, i, theirs[i], ours[i]) for name, (theirs, ours) in printed.items()
                 for i in range(len(theirs)) if theirs[i] != ours[i]]
    docstrings_same = len(printed) - len({name for name, *_ in differing})
    raising = sum(record.startswith("!! ") or "\n!! " in record
                  for theirs, _ in printed.values() for record in theirs)
    print(f"{library}: {docstrings_same} of {len(printed)} docstrings and "
          f"{examples - len(differing)} of {examples} examples print the same "
          f"({raising} examples raise under JAX too)", flush=True)
    for name, i, theirs, ours in differing[:show]:
        print(f"  {name}, example {i}:\n  --- JAX\n{theirs[:1500]}\n  --- plax\n{ours[:1500]}",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--libraries", nargs="*", default=list(LIBRARIES),
                        choices=list(LIBRARIES))
    parser.add_argument("--show", type=int, default=20, help="differing examples shown each")
    parser.add_argument("--save", type=Path, help="a folder for each library's records (JSON)")
    args = parser.parse_args()
    for library in args.libraries:
        with tempfile.TemporaryDirectory() as folder:
            printed = compare(library, folder)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{library}.json").write_text(json.dumps(printed, indent=1))
        report(library, printed, args.show)


if __name__ == "__main__":
    main()
