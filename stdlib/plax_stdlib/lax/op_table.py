"""Rows of lax's elementwise tables: each row makes a primitive and its public function.

    sin_p, sin = unary_op("sin", INEXACT, hlo_rule("sine"), "Elementwise sine.",
                          jvp=lambda g, ans, x: mul(g, cos(x)))

A row gives the primitive's name (its id is `lax.<name>`), the dtype kinds it
accepts, its lowering and the public function's docstring; keywords give the rest:

* `jvp`: the partial derivatives, each `partial(g, ans, *operands)` giving that
  operand's share of the result's tangent for its tangent `g` — one function for a
  unary op, a pair for a binary one (None where the result does not depend on that
  operand differentiably); or `LINEAR` (the tangent is the op applied to the
  tangents); or `PIECEWISE_CONSTANT` (the tangent is zero: floor, sign, and the ops
  with bool or integer results, JAX's `defjvp_zero`). Without `jvp` the op has no jvp
  rule: differentiating it raises as soon as an operand has a tangent.
* `transpose`, `result_dtype`: as `plax.extend.constructors.unary/binary` take them.
* `function`: the public function's name where it is not the primitive's
  (`bitwise_and` for `and`, a Python keyword).
* `accuracy=True` (transcendental unary ops): the public function takes
  `accuracy=` (see `plax_stdlib.lax.accuracy`), bound as a parameter only when given,
  and the lowering marks its result op with it; partial derivatives then take
  `accuracy` as a keyword.
* `example=(call, output)`: a doctest line and its printed result; the public
  function's docstring is the row's one-line `doc` followed by Args, Returns and
  Raises written from the row (its dtypes and result dtype) and this example.

The public function of a binary op gives Python scalars the other operand's dtype
(`lax.mul(x, 2.0)`, see `match_python_scalars`). Each row is an assignment, so the
names it defines are visible to readers, linters and `import`.
"""
from __future__ import annotations

import textwrap
from typing import Callable

from plax.extend.ad import defjvp, linear_jvp
from plax.extend.constructors import binary, unary
from plax.extend.core import Primitive
from plax_stdlib.lax.accuracy import check_accuracy, with_result_accuracy
from plax_stdlib.lax.conversion import match_python_scalars

# Rules registered through these rows belong to the module that writes the row.
__plax_rule_helper__ = True

LINEAR = "linear"
PIECEWISE_CONSTANT = "piecewise constant"


def unary_op(name: str, dtypes: frozenset, lower: Callable, doc: str, *,
             jvp=None, function: str | None = None, accuracy: bool = False,
             example: tuple[str, str] | None = None, **rules) -> tuple[Primitive, Callable]:
    """`(name_p, name)`: an elementwise primitive of one operand and `name(x)`
    (`name(x, *, accuracy=None)` with `accuracy=True`)."""
    if accuracy:
        lower = with_result_accuracy(name, lower)
    prim = unary(f"lax.{name}", dtypes=dtypes, lower=lower, **_jvp_rule(jvp, 1), **rules)

    def apply(x):
        return prim.bind(x)

    def apply_with_accuracy(x, *, accuracy=None):
        if accuracy is None:
            return prim.bind(x)
        check_accuracy(name, accuracy)
        return prim.bind(x, accuracy=accuracy)
    doc = _docstring(doc, dtypes, 1, rules.get("result_dtype"), accuracy, example)
    return prim, _public(apply_with_accuracy if accuracy else apply, prim, function, doc)


def binary_op(name: str, dtypes: frozenset, lower: Callable, doc: str, *,
              jvp=None, function: str | None = None, example: tuple[str, str] | None = None,
              **rules) -> tuple[Primitive, Callable]:
    """`(name_p, name)`: an elementwise primitive of two operands and `name(x, y)`."""
    prim = binary(f"lax.{name}", dtypes=dtypes, lower=lower, **_jvp_rule(jvp, 2), **rules)

    def apply(x, y):
        return prim.bind(*match_python_scalars(name, x, y, strict=True))
    doc = _docstring(doc, dtypes, 2, rules.get("result_dtype"), False, example)
    return prim, _public(apply, prim, function, doc)


def _jvp_rule(jvp, arity: int) -> dict:
    if jvp is None:
        return {}
    if jvp is LINEAR:
        return {"jvp": linear_jvp()}
    if jvp is PIECEWISE_CONSTANT:
        return {"jvp": defjvp(*[None] * arity)}
    if arity > 1 and callable(jvp):  # the whole rule: (primals, tangents) -> (out, tangent)
        return {"jvp": jvp}
    partials = (jvp,) if arity == 1 else tuple(jvp)
    if len(partials) != arity or not all(p is None or callable(p) for p in partials):
        raise TypeError(f"jvp of an op of {arity} operand(s) takes {arity} partial "
                        f"derivative(s), LINEAR or PIECEWISE_CONSTANT; got {jvp!r}")
    return {"jvp": defjvp(*partials)}


def _public(fn: Callable, prim: Primitive, function: str | None, doc: str) -> Callable:
    """`fn` dressed as the public function of the module that defined `prim`."""
    fn.__name__ = fn.__qualname__ = function or prim.name
    fn.__module__ = prim.module
    fn.__doc__ = doc
    return fn


# How the docstrings name a row's dtype kinds, in this order.
_KIND_WORDS = {"bool": "bool", "signed": "signed integer", "unsigned": "unsigned integer",
               "float": "floating-point", "float32": "float32", "float64": "float64",
               "complex": "complex", "extended": "extended (e.g. PRNG key)"}


def _docstring(summary: str, dtypes: frozenset, arity: int, result_dtype, accuracy: bool,
               example: tuple[str, str] | None) -> str:
    """A row's public docstring: its one-line summary, then sections made from the row."""
    kinds = [word for kind, word in _KIND_WORDS.items() if kind in dtypes]
    kinds = ", ".join(kinds[:-1]) + " or " + kinds[-1] if len(kinds) > 1 else kinds[0]
    args = [f"x: an array (or scalar) of a {kinds} dtype."]
    if arity == 2:
        args.append("y: an array of `x`'s dtype, of `x`'s shape (either may instead be "
                    "a scalar, broadcast to the other's shape); a Python scalar takes "
                    "the other operand's dtype.")
    if accuracy:
        args.append("accuracy: optional request for how accurate the implementation must "
                    "be: `lax.AccuracyMode.HIGHEST`, `DEFAULT`, or a `lax.Tolerance` "
                    "(passed to the compiler as StableHLO's `result_accuracy`).")
    operands = "the operands'" if arity == 2 else "`x`'s"
    what = {"to_bool": "a bool array", "real_dtype": "an array of the real dtype of "
            "`x` (float32 for complex64)", "complex_dtype": "a complex array (complex64 "
            "for float32 parts)"}.get(getattr(result_dtype, "__name__", None),
                                      f"an array of {operands} dtype")
    same = ("; the operands must have one dtype (lax does not promote: convert first, "
            "or use `jnp`)" if arity == 2 else "")
    shape = "the operands' (broadcast)" if arity == 2 else "`x`'s"
    returns = f"{what[0].upper() + what[1:]}, of {shape} shape."
    raises = f"TypeError: a dtype outside those above{same}."
    lines = [summary, "", "Args:", *map(_item, args), "", "Returns:", _item(returns), "",
             "Raises:", _item(raises)]
    if example is not None:
        call, output = example
        lines += ["", "Examples:", "    >>> import plax.numpy as jnp",
                  "    >>> from plax import lax", f"    >>> {call}", f"    {output}"]
    return "\n".join(lines)


def _item(text: str) -> str:
    return textwrap.fill(text, 84, initial_indent="    ", subsequent_indent="        ")
