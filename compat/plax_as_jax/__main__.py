"""`python -m plax_as_jax script.py [args]` / `python -m plax_as_jax -m module [args]`:
runs a program with the alias on."""
from __future__ import annotations

import runpy
import sys

import plax_as_jax

USAGE = "usage: python -m plax_as_jax (script.py | -m module | -c command) [args...]"


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        raise SystemExit(USAGE)
    plax_as_jax.install()
    if argv[0] in ("-m", "-c"):
        if len(argv) < 2:
            raise SystemExit(USAGE)
        if argv[0] == "-c":
            sys.argv = ["-c", *argv[2:]]
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
            return
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(argv)
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
