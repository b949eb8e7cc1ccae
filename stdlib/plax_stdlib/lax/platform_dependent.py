"""`platform_dependent`: run the branch written for the platform the code is
compiled for. Every branch is traced; `platform_index_p` (a scalar with no
operands) becomes, when lowered, the constant index of the branch for the
lowering's platform, and the `cond` on it (which records each branch's platforms,
as JAX's) is lowered to that branch alone, so the compiler never sees the others."""
from __future__ import annotations

from typing import Callable

import numpy as np

from plax.extend.constructors import standard_primitive
from plax.extend.core import ShapedArray, Tracer
from plax.extend.mlir import mu
from plax_stdlib.lax.control_flow.cond import platform_switch


def _platform_index_lower(ctx, *, platforms):
    """The index of the branch for `ctx.platform`: the one naming it, else the
    default (a None, last)."""
    index = next((i for i, names in enumerate(platforms)
                  if names is None or ctx.platform in names), None)
    if index is None:
        raise NotImplementedError(
            f"platform_dependent has no branch for platform {ctx.platform!r} (branches: "
            f"{sorted(n for names in platforms for n in names)}) and no default")
    return mu.dense_constant(np.int32(index), np.int32)


platform_index_p = standard_primitive(
    "lax.platform_index", lambda *, platforms: ShapedArray((), np.dtype(np.int32)),
    _platform_index_lower)


def platform_dependent(*args, default: Callable | None = None, **per_platform: Callable):
    """Chooses an implementation by the platform the computation is compiled for.

    Each branch is traced; the lowering keeps the one for the platform (when
    lowering for several platforms, all of them, chosen at run time).

    Args:
        *args: the arguments passed to the chosen function.
        default: the function used for platforms not named.
        **per_platform: functions by platform name (`cpu`, `cuda`, `rocm`,
            `tpu`).

    Returns:
        The chosen function's result.

    Examples:
        >>> import plax
        >>> from plax import lax
        >>> plax.jit(lambda x: lax.platform_dependent(x, cpu=lambda v: v + 1,
        ...                                           default=lambda v: v - 1))(1.0)
        Array(2., dtype=float32, weak_type=True)
    """
    branches: list[tuple[list[str], Callable]] = []
    for name, branch in per_platform.items():
        if not callable(branch):
            raise TypeError(f"lax.platform_dependent: the {name!r} branch must be a callable.")
        if name == "gpu":
            raise ValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
        for names, fn in branches:
            if fn is branch:  # one branch serving several platforms is traced once
                names.append(name)
                break
        else:
            branches.append(([name], branch))
    if default is not None and not callable(default):
        raise TypeError("lax.platform_dependent: the default branch must be a callable.")
    functions = [fn for _, fn in branches] + ([default] if default is not None else [])
    if not functions:
        raise TypeError("lax.platform_dependent needs at least one branch")
    platforms = tuple(tuple(names) for names, _ in branches) + (
        (None,) if default is not None else ())
    index = platform_index_p.bind(platforms=platforms)
    if not isinstance(index, Tracer):  # run eagerly: the platform is known
        return functions[int(index)](*args)
    return platform_switch(index, functions, args, platforms)
