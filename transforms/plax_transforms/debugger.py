"""`plax.debug.breakpoint`: stop a running program at a line and look at its values.

`breakpoint()` records the user's stack frames where it is called (plax's own frames
are left out). Their local variables that are traced values become the operands of
a `debug.callback`, so when the computation reaches that point (eagerly, or inside
a compiled `jit`) the callback rebuilds the frames with the values computed and
opens a pdb-like prompt, `(jdb) `, on standard input and output:

    p EXPR / pp EXPR   print (pretty-print) an expression over the frame's variables
    EXPR               the same as `p EXPR`
    u(p) / d(own)      move to the caller's frame / back
    l(ist)             the source around the current line
    w(here) / bt       the stack, innermost last
    c(ont(inue))       resume the program
    q(uit) / exit      stop the program (SystemExit)
"""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import pprint
import sys
import threading
import traceback
import warnings
from typing import IO, Any

from plax.extend import tree_util
from plax.extend.core import Tracer
from plax.extend.traceback_util import is_plax_file
from plax_transforms.debug_callback import debug_callback
from plax_transforms.pure_callback import pure_callback


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
    """One stack frame as the debugger shows it."""
    filename: str
    locals: dict[str, Any]
    source: list[str]
    lineno: int
    offset: int | None  # the current line's index in `source`, when it is known

    @classmethod
    def capture(cls, info: inspect.FrameInfo) -> DebuggerFrame:
        try:
            lines, start = inspect.getsourcelines(info.frame)
            source = [line.rstrip("\n") for line in lines]
            offset = info.lineno - max(start, 1)
            if not 0 <= offset < len(source):
                source, offset = [], None
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), source, info.lineno, offset)


class CliDebugger(cmd.Cmd):
    """The `(jdb)` prompt over a list of frames (innermost first)."""
    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], thread_id: int | None = None,
                 stdin: IO[str] | None = None, stdout: IO[str] | None = None):
        super().__init__(stdin=stdin, stdout=stdout)
        self.use_rawinput = stdin is None
        self.frames = frames
        self.frame_index = 0
        where = f" (thread {thread_id})" if thread_id is not None else ""
        self.intro = f"Entering jdb{where}:"

    def _print(self, text: str) -> None:
        print(text, file=self.stdout)

    def evaluate(self, expr: str) -> Any:
        return eval(expr, {}, dict(self.frames[self.frame_index].locals))

    def _show(self, expr: str, pretty: bool) -> None:
        try:
            value = self.evaluate(expr)
            self._print(pprint.pformat(value) if pretty else repr(value))
        except Exception:
            exc = sys.exc_info()
            self._print("*** " + traceback.format_exception_only(*exc[:2])[-1].strip())

    def default(self, line):
        self._show(line, pretty=False)

    def emptyline(self):
        pass

    def do_p(self, arg):
        """p expression: print the value of an expression."""
        self._show(arg, pretty=False)

    def do_pp(self, arg):
        """pp expression: pretty-print the value of an expression."""
        self._show(arg, pretty=True)

    def do_up(self, arg):
        """u(p): move to the caller's frame."""
        if self.frame_index == len(self.frames) - 1:
            self._print("At topmost frame.")
        else:
            self.frame_index += 1
        self.print_context()
    do_u = do_up

    def do_down(self, arg):
        """d(own): move back towards the breakpoint's frame."""
        if self.frame_index == 0:
            self._print("At bottommost frame.")
        else:
            self.frame_index -= 1
        self.print_context()
    do_d = do_down

    def do_list(self, arg):
        """l(ist): the source around the current line."""
        self.print_context(num_lines=5)
    do_l = do_list

    def do_where(self, arg):
        """w(here): the stack, innermost frame last."""
        lines = ["Traceback:"]
        for frame in reversed(self.frames):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    " + (frame.source[frame.offset].strip()
                                   if frame.offset is not None else "<no source>"))
        self._print("\n".join(lines))
    do_w = do_bt = do_where

    def do_continue(self, arg):
        """c(ont(inue)): resume the program."""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg):
        """q(uit): stop the program."""
        sys.exit(0)
    do_q = do_exit = do_EOF = do_quit

    def print_context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - num_lines <= i <= frame.offset + num_lines:
                    lines.append(("->  " if i == frame.offset else "    ") + line)
        self._print("\n".join(lines))


_prompt_lock = threading.Lock()  # callbacks of several devices or threads take turns


def _run_debugger(frames: list[DebuggerFrame], **kwargs) -> None:
    thread = threading.current_thread()
    thread_id = None if thread is threading.main_thread() else thread.ident
    with _prompt_lock:
        debugger = CliDebugger(frames, thread_id, **kwargs)
        debugger.cmdloop()


class _Opaque:
    """A local variable kept whole (one whose pytree flattening fails)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _flattenable(value) -> Any:
    try:
        tree_util.tree_flatten(value)
        return value
    except Exception:  # a user's pytree node may raise anything: show it unflattened
        return _Opaque(value)


def _split_frames(frames: list[DebuggerFrame]):
    """(treedef, traced leaves, {position: other leaf}) of the frames' locals."""
    with warnings.catch_warnings():  # locals may hold generators etc.: leaves, quietly
        warnings.simplefilter("ignore", DeprecationWarning)
        trees = [{k: _flattenable(v) for k, v in f.locals.items()} for f in frames]
        leaves, tree = tree_util.tree_flatten(trees)
    traced, static = [], {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tracer):
            traced.append(leaf)
        else:
            static[i] = leaf
    return tree, traced, static


def _rebuild(frames, tree, static, traced_values) -> list[DebuggerFrame]:
    it = iter(traced_values)
    leaves = [static[i] if i in static else next(it)
              for i in range(len(static) + len(traced_values))]
    leaves = [x.value if isinstance(x, _Opaque) else x for x in leaves]
    return [dataclasses.replace(f, locals=loc)
            for f, loc in zip(frames, tree_util.tree_unflatten(tree, leaves))]


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None,
               **kwargs):
    """Enter the `(jdb)` prompt when the program reaches this point (see the module
    docstring for its commands). `num_frames` limits the frames shown; `ordered`
    orders the stop among other ordered callbacks; with `token` (a pytree of arrays),
    the stop happens once `token` is computed and `token` is returned, to be used
    later (if it is not, the stop may be pruned). `kwargs` go to the debugger
    (`stdin=`, `stdout=`)."""
    if backend not in (None, "cli"):
        raise ValueError(f"debug.breakpoint: unknown debugger backend {backend!r}; "
                         "plax has the 'cli' debugger")
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = inspect.stack()[1:]
    frames = [DebuggerFrame.capture(i) for i in infos
              if not (filter_frames and is_plax_file(i.filename))]
    del infos
    if num_frames is not None:
        frames = frames[:num_frames]
    tree, traced, static = _split_frames(frames)

    def show(*values):
        _run_debugger(_rebuild(frames, tree, static, values), **kwargs)

    if token is None:
        debug_callback(show, *traced, ordered=ordered)
        return None

    def show_then_pass(token_value, *values):
        show(*values)
        return token_value
    return pure_callback(show_then_pass, token, token, *traced, vmap_method="sequential")
