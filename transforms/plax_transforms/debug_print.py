"""`plax.debug.print`: print values from staged code, formatted when they are known.

`debug.print("x={x}", x=x)` formats like `str.format` at run time, with the NumPy
print options in force when it was called; a format string without placeholders
prints the values after it, separated by spaces. It is a `debug.debug_callback`
(so the same rules hold under jit, vmap, grad, scan...), writing to `sys.stdout`.
Arguments are checked when the call is staged: an argument the format string does
not use is a ValueError (the common mistake of passing an f-string). `debug.log`
sends the message to the `plax.debug` logger instead.
"""
from __future__ import annotations

import copy
import inspect
import logging
import string
import sys
from typing import Any

import numpy as np

from plax.extend.traceback_util import is_plax_file
from plax_transforms.debug_callback import debug_callback
from plax_transforms.host_callback import now_or_later

logger = logging.getLogger("plax.debug")


class _FormatChecker(string.Formatter):
    """Parses a format string against its arguments without formatting anything."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [a for i, a in enumerate(args) if i not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `plax.debug.print`: {unused}")
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused_kw:
            raise ValueError(
                f"Unused keyword arguments to `plax.debug.print`: {unused_kw}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `plax.debug.print` and instead "
                "should pass in a regular string.")


_checker = _FormatChecker()


def _has_placeholders(fmt: str) -> bool:
    return any(field is not None for _, field, _, _ in string.Formatter().parse(fmt))


class _Printer:
    """Formats and writes one message (the callback a print stages): to standard
    output, or as a copy of `record` to the `plax.debug` logger."""
    __slots__ = ("fmt", "printoptions", "placeholders", "record")
    __name__ = "print"

    def __init__(self, fmt: str, printoptions: dict, placeholders: bool,
                 record: logging.LogRecord | None):
        self.fmt, self.printoptions, self.placeholders = fmt, printoptions, placeholders
        self.record = record

    def __call__(self, *args, **kwargs) -> None:
        if self.placeholders:
            with np.printoptions(**self.printoptions):
                message = self.fmt.format(*args, **kwargs)
        else:
            message = " ".join((self.fmt, *map(str, args)))
        if self.record is None:
            sys.stdout.write(message + "\n")
        else:
            record = copy.copy(self.record)
            record.msg = message
            logger.handle(record)


def _user_record(level: int) -> logging.LogRecord:
    """A log record placed at the user's line that called `debug.log`."""
    frame = next((f for f in inspect.stack()[2:] if not is_plax_file(f.filename)), None)
    filename, line = (frame.filename, frame.lineno) if frame else ("(unknown file)", 0)
    return logger.makeRecord(logger.name, level, filename, line, "", (), None)


def debug_print(fmt: str | None = None, *args: Any, ordered: bool = False,
                partitioned: bool = False, skip_format_check: bool = False,
                _log_level: int | None = None, **kwargs: Any):
    """Print `fmt.format(*args, **kwargs)` when the values are computed, under any
    transformation; `ordered=True` keeps prints in program order. Also usable in two
    calls: `debug.print(ordered=True)("x={}", x)`."""
    def stage(fmt: str, *p_args: Any, **p_kwargs: Any) -> None:
        if not isinstance(fmt, str):
            raise TypeError(f"plax.debug.print: the format must be a string, got "
                            f"{type(fmt).__name__}")
        placeholders = _has_placeholders(fmt)
        if not skip_format_check:
            _checker.format(fmt, *p_args, **p_kwargs)
        if not placeholders and p_kwargs:
            raise ValueError("plax.debug.print: keyword arguments need placeholders in the "
                             f"format string; got {sorted(p_kwargs)}")
        record = None if _log_level is None else _user_record(_log_level)
        printer = _Printer(fmt, np.get_printoptions(), placeholders, record)
        debug_callback(printer, *p_args, ordered=ordered, partitioned=partitioned, **p_kwargs)

    return now_or_later(stage, fmt, args, kwargs, "plax.debug.print")


def debug_log(fmt: str | None = None, *args: Any, ordered: bool = False,
              partitioned: bool = False, skip_format_check: bool = False, **kwargs: Any):
    """`debug.print`, but the message goes to the `plax.debug` logger (level INFO),
    attributed to the user's line that called it."""
    return debug_print(fmt, *args, ordered=ordered, partitioned=partitioned,
                       skip_format_check=skip_format_check, _log_level=logging.INFO,
                       **kwargs)
