"""`python -m plax.extend`: print the primitive coverage table (or, with `--list`, the
primitive ids)."""
import argparse

from plax._src.cli import print_to_pipe
from plax.extend import coverage, list_primitives


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m plax.extend",
        description="Print, for every primitive that plax and the installed plugins define, "
                    "the distribution that defines it, the modules its rules come from, "
                    "which rule kinds it has, and so which transforms work on it.")
    parser.add_argument("--list", action="store_true", help="print only the primitive ids")
    args = parser.parse_args()
    print_to_pipe("\n".join(list_primitives()) if args.list else coverage())


if __name__ == "__main__":  # not when a documentation tool imports every module
    main()
