"""Public exception classes (JAX's names and hierarchy). The errors reference explains
each and its fixes: `python -m plax.errors NAME` prints its entry for NAME."""
from jaxlib._jax import JaxRuntimeError  # noqa: F401  (XLA's runtime errors)

from plax._src.checking import JaxprTypeError  # noqa: F401
from plax._src.traceback_util import SimplifiedTraceback, UnfilteredStackTrace  # noqa: F401
from plax._src.errors import (  # noqa: F401
    ConcretizationTypeError,
    DistributedError,
    InvalidShapeError,
    JAXIndexError,
    JAXTypeError,
    KeyReuseError,
    NonConcreteBooleanIndexError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)


def _main(argv: list[str]) -> int:
    """`python -m plax.errors [NAME...]`: the reference's entries for NAMEs (error
    classes or anchors such as `buffer-donation`), or, with no NAME, their list."""
    import sys

    from plax._src.cli import print_to_pipe
    from plax._src.errors import reference_entries, reference_entry
    if not argv or argv[0] in ("-h", "--help"):
        entries = "\n".join(f"  {name}" for name in reference_entries() if " " not in name)
        print_to_pipe("usage: python -m plax.errors NAME [NAME...]\n\nPrints the entry of the "
                      "plax errors reference for each NAME (an error class or a section, "
                      f"in any case). Entries:\n{entries}")
        return 0
    try:
        text = "\n\n".join(reference_entry(name) for name in argv)
    except KeyError as e:
        print(e.args[0], file=sys.stderr)
        return 2
    print_to_pipe(text)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(_main(sys.argv[1:]))
