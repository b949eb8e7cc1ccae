"""Which of JAX 0.10.2's public names plax has, module by module.

    python3 benchmarks/api_coverage.py            # the table
    python3 benchmarks/api_coverage.py --missing  # and the names plax lacks

Each library is imported in its own subprocess (they never share one). A module's
public names are those `dir()` lists without a leading underscore; names JAX keeps
only for deprecation (reached through its modules' `__getattr__`, absent from
`dir()`) are not counted, nor JAX's internal top-level modules.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

MODULES = ["", "numpy", "lax", "nn", "nn.initializers", "scipy.special", "scipy.stats",
           "scipy.linalg", "numpy.linalg", "numpy.fft", "random", "debug", "dtypes", "typing",
           "ops", "image", "export", "ffi", "custom_batching", "stages", "sharding",
           "tree_util", "tree", "experimental", "experimental.compute_on",
           "experimental.custom_partitioning", "experimental.layout", "experimental.profiler",
           "experimental.shard_alike", "experimental.topologies", "experimental.xla_metadata"]
# JAX's top-level modules that expose its internals rather than its API.
JAX_INTERNAL = {"core", "interpreters", "lib", "api_util", "ad", "extend", "version",
                "jaxlib", "util"}

_WORKER = r"""
import importlib, json, sys, types
lib, modules = sys.argv[1], sys.argv[2:]
out = {}
for name in modules:
    full = lib + ("." + name if name else "")
    try:
        module = importlib.import_module(full)
    except Exception as err:
        out[name] = None
        continue
    out[name] = sorted(n for n in dir(module) if not n.startswith("_"))
print(json.dumps(out))
"""


def public_names(lib: str) -> dict[str, list[str] | None]:
    proc = subprocess.run([sys.executable, "-c", _WORKER, lib, *MODULES],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"importing {lib} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list the missing names")
    args = parser.parse_args()
    try:
        theirs = public_names("jax")
    except RuntimeError as err:
        print(f"JAX is not installed or failed to import; nothing to compare ({err})")
        return
    mine = public_names("plax")
    print(f"{'module':20}{'jax':>6}{'plax':>6}{'coverage':>10}")
    for name in MODULES:
        jax_names = set(theirs.get(name) or ())
        if name == "":
            jax_names -= JAX_INTERNAL
        if not jax_names:
            continue
        have = jax_names & set(mine.get(name) or ())
        label = "plax" + ("." + name if name else "")
        print(f"{label:20}{len(jax_names):>6}{len(have):>6}{len(have) / len(jax_names):>10.0%}")
        if args.missing and jax_names - have:
            print("    missing: " + ", ".join(sorted(jax_names - have)))


if __name__ == "__main__":
    main()
