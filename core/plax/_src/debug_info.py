"""Debug info: the user's names for a traced function and its inputs and outputs.

While a function is traced, a `TracingDebugInfo` records what it is
(`"f at /path/file.py:12"`) and one name per flattened dynamic argument, computed
from the call's own `args`/`kwargs` (`x`, `params['w']`, `args[1]`, `kw['k']`).
Once the output is known, `finalize` adds one path per output leaf (`result`,
`result[0]`, `result['c']`) and gives the `JaxprDebugInfo` that the Jaxpr keeps.
Transformations keep one name per invar/outvar (or drop the names altogether),
and lowering names MLIR arguments and results from them.

Both records are plain tuples of strings: hashable and free of object addresses,
so they can be part of tracing- and lowering-cache keys.
"""
from __future__ import annotations

import functools
import inspect
import operator
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from plax._src import tree_util

_P = inspect.Parameter


# --- the records ---------------------------------------------------------------------

def _func_name(self) -> str:
    """The traced function's name: `func_src_info` up to `" at "`."""
    return self.func_src_info.partition(" at ")[0]


def _func_location(self) -> tuple[str | None, int | None]:
    _, at, location = self.func_src_info.partition(" at ")
    filename, colon, line = location.rpartition(":")
    if not at or not colon or not line.isdigit():
        return None, None
    return filename, int(line)


def _safe_arg_name(self, i: int) -> str:
    """Name of flat input `i`, or `""` when names are unknown or `i` is out of range."""
    names = self.arg_names
    return names[i] if names is not None and 0 <= i < len(names) else ""


def _str(self) -> str:
    return f"{self.func_src_info} for {self.traced_for}"


class TracingDebugInfo(NamedTuple):
    """What is known about a function while it is being traced (before its output)."""
    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...] | None

    func_name = property(_func_name)
    safe_arg_name = _safe_arg_name
    __str__ = _str


class JaxprDebugInfo(NamedTuple):
    """Debug info a Jaxpr carries: one `arg_names` entry per invar and one
    `result_paths` entry per outvar, or `None` where names are unknown.

    `traced_for` is the API that traced it ("jit", "make_jaxpr", "vmap"...);
    `func_src_info` is `"name at file:line"`, a builtin's name, or `"<unknown>"`.
    `str(dbg)` reads `"f at file.py:3 for jit"`, for error messages.
    """
    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None

    func_name = property(_func_name)
    safe_arg_name = _safe_arg_name
    __str__ = _str

    func_filename = property(lambda self: _func_location(self)[0])
    func_lineno = property(lambda self: _func_location(self)[1])

    def safe_result_path(self, i: int) -> str:
        """Path of flat output `i`, or `""` when unknown or out of range."""
        paths = self.result_paths
        return paths[i] if paths is not None and 0 <= i < len(paths) else ""

    def with_unknown_names(self) -> JaxprDebugInfo:
        return self._replace(arg_names=None, result_paths=None)

    def with_arg_names(self, names: Iterable[str] | None) -> JaxprDebugInfo:
        return self._replace(arg_names=None if names is None else tuple(names))

    def with_result_paths(self, paths: Iterable[str] | None) -> JaxprDebugInfo:
        return self._replace(result_paths=None if paths is None else tuple(paths))

    def filter_arg_names(self, keep: Sequence[bool]) -> JaxprDebugInfo:
        """Keeps the names of the inputs where `keep` is true (e.g. after DCE)."""
        return self._replace(arg_names=_filter(self.arg_names, keep, "arg_names"))

    def filter_result_paths(self, keep: Sequence[bool]) -> JaxprDebugInfo:
        """Keeps the paths of the outputs where `keep` is true."""
        return self._replace(result_paths=_filter(self.result_paths, keep, "result_paths"))

    def replace_func_name(self, name: str) -> JaxprDebugInfo:
        """The same source location under another function name."""
        _, at, location = self.func_src_info.partition(" at ")
        return self._replace(func_src_info=f"{name}{at}{location}")


def _filter(names: tuple[str, ...] | None, keep: Sequence[bool], what: str):
    if names is None:
        return None
    keep = list(keep)
    if len(keep) != len(names):
        raise ValueError(f"filtering {what}: got {len(keep)} keep flags for "
                         f"{len(names)} {what}")
    return tuple(n for n, k in zip(names, keep) if k)


def check_debug_info_counts(dbg: JaxprDebugInfo, n_in: int, n_out: int) -> None:
    """Raises ValueError unless `dbg` names exactly `n_in` inputs and `n_out` outputs."""
    if not isinstance(dbg, JaxprDebugInfo):
        raise TypeError(f"expected a JaxprDebugInfo, got {type(dbg).__name__}")
    for what, names, n, kind in (("arg_names", dbg.arg_names, n_in, "invars"),
                                 ("result_paths", dbg.result_paths, n_out, "outvars")):
        if names is not None and len(names) != n:
            raise ValueError(f"debug info of {dbg} has {len(names)} {what} for {n} "
                             f"{kind}: {names}")


# --- where a function comes from ---------------------------------------------------

def fun_sourceinfo(fun: Callable) -> str:
    """`"name at file:line"` for Python functions (through partials and wrappers),
    the name of a builtin or of a named callable object (a class, a `jnp.ufunc`: the
    name JAX prints for a jit of it), else `"<unknown>"`: never an object address."""
    while isinstance(fun, functools.partial):
        fun = fun.func
    try:
        fun = inspect.unwrap(fun)
    except ValueError:  # a cycle of __wrapped__
        return "<unknown>"
    code = getattr(fun, "__code__", None)
    if isinstance(code, types.CodeType):
        name = getattr(fun, "__name__", code.co_name)
        return f"{name} at {code.co_filename}:{code.co_firstlineno}"
    builtin = isinstance(fun, types.BuiltinFunctionType)
    name = getattr(fun, "__qualname__" if builtin else "__name__", None)
    return name if isinstance(name, str) else "<unknown>"


def _signature(fun: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (ValueError, TypeError):  # some builtins have none
        return None


# --- static arguments --------------------------------------------------------------

def _as_tuple(value, kind: type, what: str) -> tuple:
    """`value` (one item, a sequence of them, or None) as a tuple of ints or strs."""
    if value is None:
        return ()
    items = value if isinstance(value, Iterable) and not isinstance(value, kind) else (value,)
    try:
        return tuple(_as_int(x) if kind is int else _as_str(x) for x in items)
    except TypeError:
        raise TypeError(f"{what} must be {'an int' if kind is int else 'a str'} or a "
                        f"sequence of them, got {value!r}") from None


def _as_int(x) -> int:
    if isinstance(x, bool):
        raise TypeError
    return operator.index(x)


def _as_str(x) -> str:
    if not isinstance(x, str):
        raise TypeError
    return x


def resolve_argnums(fun: Callable, static_argnums: int | Iterable[int] | None = None,
                    static_argnames: str | Iterable[str] | None = None, *,
                    option: str = "static") -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Checks `static_argnums`/`static_argnames` against `fun`'s signature and completes
    each from the other.

    When only one of the two is given, the other is filled in from the
    positional-or-keyword parameters, so an argument static by position is also static
    when passed by keyword (and vice versa). Negative numbers count from the last
    positional parameter. Returns sorted, duplicate-free tuples. `option` names the
    pair in error messages (`"donate"` for `donate_argnums`/`donate_argnames`).
    """
    nums = _as_tuple(static_argnums, int, f"{option}_argnums")
    names = _as_tuple(static_argnames, str, f"{option}_argnames")
    sig = _signature(fun)
    if sig is None:  # nothing to check against
        return tuple(sorted(set(nums))), tuple(sorted(set(names)))
    params = list(sig.parameters.values())
    positional = [p for p in params if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    has_var_args = any(p.kind is _P.VAR_POSITIONAL for p in params)
    has_var_kwargs = any(p.kind is _P.VAR_KEYWORD for p in params)
    name_of = fun_sourceinfo(fun)

    n_pos = len(positional)
    resolved_nums = []
    for i in nums:
        if -n_pos <= i < 0:
            i += n_pos
        elif i < 0 or (i >= n_pos and not has_var_args):
            raise ValueError(f"{option}_argnums={nums} is out of range for {name_of}, which "
                             f"takes {n_pos} positional argument{'s' * (n_pos != 1)}")
        resolved_nums.append(i)
    keywordable = {p.name for p in params if p.kind in (_P.POSITIONAL_OR_KEYWORD,
                                                        _P.KEYWORD_ONLY)}
    for name in names:
        if has_var_kwargs or name in keywordable:
            continue
        param = sig.parameters.get(name)
        reason = ("is not a parameter" if param is None
                  else f"is a {param.kind.description} parameter, never passed by keyword,")
        raise ValueError(f"{option}_argnames contains {name!r}, which {reason} of {name_of}")

    by_position_or_keyword = [(i, p.name) for i, p in enumerate(params)
                              if p.kind is _P.POSITIONAL_OR_KEYWORD]
    if static_argnames is None:
        names = tuple(n for i, n in by_position_or_keyword if i in resolved_nums)
    if static_argnums is None:
        resolved_nums = [i for i, n in by_position_or_keyword if n in names]
    return tuple(sorted(set(resolved_nums))), tuple(sorted(set(names)))


# --- argument names ------------------------------------------------------------------

def _path_str(path: tree_util.KeyPath) -> str:
    """A leaf's key path as it appears in an argument name (`[0]` for flat indices)."""
    return "".join(f"[{k.key}]" if isinstance(k, tree_util.FlattenedIndexKey) else str(k)
                   for k in path)


def _ordered_arguments(sig: inspect.Signature | None, args: Sequence[Any],
                       kwargs: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(name, value) for each top-level argument, in the order they are flattened:
    positional ones, then keyword ones sorted by keyword."""
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError:
            sig = None
    if sig is None:
        return ([(f"args[{i}]", x) for i, x in enumerate(args)]
                + [(f"kwargs[{k!r}]", kwargs[k]) for k in sorted(kwargs)])
    params = list(sig.parameters.values())
    positional = [p.name for p in params
                  if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    var_args = next((p.name for p in params if p.kind is _P.VAR_POSITIONAL), None)
    var_kwargs = next((p.name for p in params if p.kind is _P.VAR_KEYWORD), None)
    keywordable = {p.name for p in params if p.kind in (_P.POSITIONAL_OR_KEYWORD,
                                                        _P.KEYWORD_ONLY)}
    named = [(positional[i] if i < len(positional) else f"{var_args}[{i - len(positional)}]", x)
             for i, x in enumerate(args)]
    named += [(k if k in keywordable else f"{var_kwargs}[{k!r}]", kwargs[k])
              for k in sorted(kwargs)]
    return named


def make_tracing_debug_info(traced_for: str, fun: Callable, args: Sequence[Any],
                            kwargs: Mapping[str, Any], *,
                            static_argnums: Iterable[int] = (),
                            static_argnames: Iterable[str] = ()) -> TracingDebugInfo:
    """Debug info for tracing `fun(*args, **kwargs)`, static arguments excluded.

    One name per leaf of the dynamic arguments, in the order plax flattens them:
    positional arguments first, then keyword arguments sorted by keyword.
    `static_argnums` index the passed positional arguments (negative ones count from
    the end); `static_argnames` name passed keyword arguments.
    """
    n = len(args)
    static_pos = {i + n if i < 0 else i for i in static_argnums}
    static_kw = set(static_argnames)
    is_static = [i in static_pos for i in range(n)] + [k in static_kw for k in sorted(kwargs)]
    named = _ordered_arguments(_signature(fun), args, kwargs)
    names = tuple(name + _path_str(path)
                  for (name, value), static in zip(named, is_static) if not static
                  for path, _ in tree_util.registry.flatten_with_path(value)[0])
    return TracingDebugInfo(traced_for, fun_sourceinfo(fun), names)


# --- result paths --------------------------------------------------------------------

class _Placeholder:
    """Stands for a leaf when output paths are computed from a treedef alone."""


def result_paths_from_tree(out: Any) -> tuple[str, ...] | None:
    """`("result",)` for a single output, `("result[0]", "result['c']", ...)` for a
    pytree of outputs. `out` is the output value or its `PyTreeDef`; with a treedef
    whose custom nodes cannot be rebuilt from placeholder leaves the paths are unknown
    (`None`)."""
    if isinstance(out, tree_util.PyTreeDef):
        try:
            out = out.unflatten([_Placeholder()] * out.num_leaves)
        except Exception:  # a user's unflatten rejected the placeholders
            return None
    return tuple("result" + _path_str(path)
                 for path, _ in tree_util.registry.flatten_with_path(out)[0])


def finalize(tracing_info: TracingDebugInfo,
             result_paths: Iterable[str] | None) -> JaxprDebugInfo:
    """The Jaxpr's debug info, once the traced function's output paths are known."""
    return JaxprDebugInfo(tracing_info.traced_for, tracing_info.func_src_info,
                          tracing_info.arg_names,
                          None if result_paths is None else tuple(result_paths))


# --- names of values that transformations introduce ----------------------------------

def derived_debug_info(dbg: JaxprDebugInfo | None, arg_names, result_paths
                       ) -> JaxprDebugInfo | None:
    """`dbg` with new names for a transformed Jaxpr (None stays None; a None list
    leaves those names unknown)."""
    if dbg is None:
        return None
    return dbg._replace(arg_names=None if arg_names is None else tuple(arg_names),
                        result_paths=None if result_paths is None else tuple(result_paths))


def tangent_name(name: str) -> str:
    """The name of the tangent of a value named `name` (`t:x`)."""
    return f"t:{name}" if name else ""


def residual_name(i: int) -> str:
    """The name of the `i`th residual of a partial evaluation (`residual[0]`)."""
    return f"residual[{i}]"
