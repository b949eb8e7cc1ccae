"""MkDocs hook: the API reference pages, rendered from the installed packages.

An API page holds a line `::: api plax.numpy`; this hook replaces it with one entry
per public name of that module (its `__all__`, else every public attribute that is
not a module), each with its signature and docstring, under a heading whose anchor
is the public path (`plax.numpy.add`). The names are read by importing the public
module, so the facade's modules (`plax.numpy` is plax-stdlib's) and names resolved
through entry points (`plax.jit`) are documented where users find them.

Docstrings are Markdown with Google-style sections: `Args:`, `Returns:`, `Raises:`
and `Examples:` (doctest lines, shown as Python code).
"""
from __future__ import annotations

import importlib
import inspect
import re
import textwrap
import types

_DIRECTIVE = re.compile(r"^::: api (\S+)\s*$", re.MULTILINE)
_SECTIONS = ("Args", "Arguments", "Parameters", "Returns", "Yields", "Raises", "Examples",
             "Example", "Note", "Notes", "Attributes")


def public_names(module_name: str) -> list[str]:
    """The names the reference documents for `module_name` (tests use this too)."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None or module_name == "plax":  # plax's names come from entry points
        names = [n for n in dir(module) if not n.startswith("_")
                 and not isinstance(getattr(module, n, None), types.ModuleType)]
    return sorted(set(names), key=str.lower)


def _signature(name: str, obj) -> str:
    target = obj.__init__ if inspect.isclass(obj) and "__init__" in vars(obj) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return ""
    params = list(sig.parameters.values())
    if target is not obj and params and params[0].name == "self":
        sig = sig.replace(parameters=params[1:])
    text = re.sub(r" at 0x[0-9a-f]+", "", str(sig.replace(return_annotation=sig.empty)))
    return f"```python\n{name}{text}\n```\n"


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def _markdown_docstring(doc: str) -> str:
    """Google-style sections as Markdown: arguments as a list, examples as code."""
    lines = inspect.cleandoc(doc).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        header = lines[i].strip().rstrip(":")
        if lines[i].strip().endswith(":") and header in _SECTIONS:
            body = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                body.append(lines[i])
                i += 1
            body = textwrap.dedent("\n".join(body)).strip("\n").splitlines()
            out.append(f"**{header}**\n")
            if header.startswith("Example"):
                out.extend(["```python", *body, "```", ""])
            else:
                out.extend(_section_items(body))
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


def _section_items(body: list[str]) -> list[str]:
    """`name: text` items (continued by indented lines) as a Markdown list."""
    items: list[str] = []
    for line in body:
        if line and not line.startswith(" "):
            name, sep, text = line.partition(":")
            items.append(f"- `{name.strip()}`: {text.strip()}" if sep and " " not in
                         name.strip() else f"- {line.strip()}")
        elif line.strip() and items:
            items[-1] += " " + line.strip()
    return items + [""]


def render(module_name: str) -> str:
    module = importlib.import_module(module_name)
    parts = []
    for name in public_names(module_name):
        obj = getattr(module, name)
        path = f"{module_name}.{name}"
        option_help = getattr(obj, "help", None)  # a config option: its help text
        own_doc = getattr(obj, "__dict__", {}).get("__doc__")  # an option's, with examples
        doc = ((own_doc or option_help) if isinstance(option_help, str) and hasattr(obj, "value")
               else inspect.getdoc(obj) if _kind(obj) != "value" else None)
        if doc is None and _kind(obj) == "value":
            doc = f"`{type(obj).__name__}` value."
        parts.append(f"## `{name}` {{#{path}}}\n\n*{_kind(obj)}* `{path}`\n\n"
                     f"{_signature(path, obj) if _kind(obj) != 'value' else ''}\n"
                     f"{_markdown_docstring(doc or 'No docstring yet.')}\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return _DIRECTIVE.sub(lambda m: render(m.group(1)), markdown)
