"""Helpers of plax's command-line entry points (`python -m plax.errors`, `-m plax.extend`)."""
from __future__ import annotations

import os
import sys


def print_to_pipe(text: str) -> None:
    """Prints `text`; when the reader goes away first (`... | head`), stops quietly
    instead of ending in a BrokenPipeError traceback."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that fails not.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
