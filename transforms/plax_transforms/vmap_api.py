"""`vmap`: map a function over an axis of its arguments, with JAX's `in_axes`,
`out_axes`, `axis_name` and `axis_size` semantics.

The function runs once, on `BatchTracer`s (see `batching`); nothing is looped.
`in_axes` is a prefix of the positional arguments' pytree (an int or None standing
for a whole subtree); keyword arguments are always mapped over their axis 0.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable

from plax.extend.traceback_util import api_boundary
from plax.extend import tree_util
from plax.extend.batching import (
    AxisData,
    canonicalize_axis_names,
    extend_axis_env,
    move_to,
    not_mapped,
)
from plax.extend.core import (
    check_callable,
    check_no_leaks,
    fun_sourceinfo,
    get_aval,
    make_tracing_debug_info,
    result_paths_from_tree,
    set_current_trace,
)
from plax.extend.sharding import abstract_mesh, sharding_from_spec
from plax_stdlib.lax.out_sharding import with_batch_dim
from plax_stdlib.lax.reductions import reduce_sum
from plax_transforms.batching import BatchTrace
from plax_transforms.jit import JitWrapped


def _is_none(x) -> bool:
    return x is None


def _check_axes_spec(spec, what: str) -> None:
    for leaf in tree_util.tree_leaves(spec, is_leaf=_is_none):
        if leaf is not None and (not isinstance(leaf, int) or isinstance(leaf, bool)):
            raise ValueError(f"vmap {what} must be an int, None, or (nested) container with "
                             f"those types as leaves, but got {spec!r}")



def _wraps(fun: Callable) -> Callable:
    """As JAX's: the wrapper takes `fun`'s name, docstring and module, each where it can
    be set (a callable object's `__name__` may be anything), and the object's own
    attributes (`vmap(module).field`), but not a jitted function's internals."""
    def decorate(wrapper):
        for attr in functools.WRAPPER_ASSIGNMENTS:
            try:
                setattr(wrapper, attr, getattr(fun, attr))
            except (AttributeError, TypeError):
                pass
        own = getattr(fun, "__dict__", None)
        if isinstance(own, dict) and not isinstance(fun, JitWrapped):
            wrapper.__dict__.update(own)
        wrapper.__wrapped__ = fun
        return wrapper
    return decorate

def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size: int | None = None,
         spmd_axis_name=None, sum_match: bool = False) -> Callable:
    """Vectorizes `fun` over an axis of its inputs.

    `vmap(f)(xs)` computes what stacking `f(x)` over the slices `x` of `xs` would,
    but as one batched computation: every primitive `f` applies is rewritten to
    work on the whole batch at once (no Python loop, no per-example dispatch).

    Args:
        fun: the function to vectorize; arguments and results are pytrees.
        in_axes: which axis of each argument is mapped: an int for all, None for
            an argument passed whole to every example, or a tuple with one entry
            (an int, None, or a pytree prefix of the argument) per positional
            argument. Negative axes count from the end.
        out_axes: where the mapped axis goes in each output (the same forms); None
            for an output that does not depend on the mapped axis.
        axis_name: a name for the mapped axis, for collectives inside `fun`
            (`plax.lax.psum(x, axis_name)`...).
        axis_size: the batch size, needed when no argument is mapped.
        spmd_axis_name: mesh axis name(s) the batch dimension is split over inside
            sharding constraints.
        sum_match: an output whose `out_axes` entry is None but which varies over
            the mapped axis is summed over it (by default that is an error).

    Returns:
        A function with `fun`'s signature whose outputs have the mapped axis at
        `out_axes`.

    Raises:
        ValueError: the mapped axes of the arguments have different sizes, an axis
            is out of range, or `in_axes` does not match the arguments' structure.

    Examples:
        >>> import plax, plax.numpy as jnp
        >>> xs, ys = jnp.ones((3, 4)), jnp.arange(4.0)
        >>> plax.vmap(jnp.dot, in_axes=(0, None))(xs, ys)
        Array([6., 6., 6.], dtype=float32)
        >>> plax.vmap(lambda x: x.sum(), in_axes=1)(jnp.arange(6.0).reshape(2, 3))
        Array([3., 5., 7.], dtype=float32)
    """
    check_callable(fun, "vmap")
    if isinstance(in_axes, list):  # a list can never be a prefix of the args tuple
        in_axes = tuple(in_axes)
    _check_axes_spec(in_axes, "in_axes")
    _check_axes_spec(out_axes, "out_axes")
    if axis_size is not None and (not isinstance(axis_size, int) or axis_size < 0):
        raise ValueError(f"vmap axis_size must be a non-negative int, got {axis_size!r}")
    if axis_name is not None:
        canonicalize_axis_names(axis_name)  # hashable

    @_wraps(fun)  # outermost, so that __wrapped__ is `fun` (as in JAX)
    @api_boundary
    def vmap_f(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                "vmap in_axes must be an int, None, or a tuple of entries corresponding to "
                f"the positional arguments passed to the function, but got "
                f"len(in_axes)={len(in_axes)}, len(args)={len(args)}")
        flat, in_tree = tree_util.tree_flatten((args, kwargs))
        try:
            axes = tree_util.broadcast_prefix((in_axes, 0), (args, kwargs), is_leaf=_is_none)
        except ValueError:
            raise ValueError(
                "vmap in_axes specification must be a tree prefix of the corresponding "
                f"value, got specification {in_axes!r} for value tree "
                f"{tree_util.tree_structure(args)}.") from None
        names = _ArgNames(fun, args, kwargs)
        dims = [_canonical_in_axis(x, a, names, i) for i, (x, a) in enumerate(zip(flat, axes))]
        size = _mapped_size(fun, flat, dims, names, axis_size)
        mesh_axis = _mapped_mesh_axis(flat, dims, names)
        spmd = spmd_axis_name
        if spmd is not None and mesh_axis is not None:
            if (spmd if isinstance(spmd, tuple) else (spmd,)) != mesh_axis:
                raise ValueError(
                    "Only one of spmd_axis_name or arrays sharded on `Explicit` mesh axis "
                    f"type is allowed. Got spmd_axis_name={spmd!r} and arrays sharded on "
                    f"explicit_mesh_axis={mesh_axis}")
            spmd = None
        axis_data = AxisData(size, axis_name, spmd, mesh_axis)
        trace = BatchTrace(axis_data)
        bound = (contextlib.nullcontext() if axis_name is None
                 else extend_axis_env(axis_name, size))
        try:
            with bound:
                with set_current_trace(trace):
                    a, kw = tree_util.tree_unflatten(
                        in_tree, [trace.wrap(x, d) for x, d in zip(flat, dims)])
                    out = fun(*a, **kw)
                result = _outputs(trace, out, out_axes, sum_match)
        finally:
            trace.invalidate()
        del a, kw, out  # so that only leaked tracers stay alive
        check_no_leaks(trace)
        return result

    return vmap_f


class _ArgNames:
    """The names of vmap's flat arguments, for its errors (`names[i]`): the debug info
    they come from, which inspects the function's signature, is made on first use."""

    def __init__(self, fun: Callable, args: tuple, kwargs: dict):
        self._call = (fun, args, kwargs)
        self._debug_info = None

    def __getitem__(self, i: int) -> str:
        if self._debug_info is None:
            self._debug_info = make_tracing_debug_info("vmap", *self._call)
        return self._debug_info.safe_arg_name(i) or f"argument {i}"


def _canonical_in_axis(x, axis, names: _ArgNames, i: int) -> int | None:
    if axis is None:
        return not_mapped
    try:
        ndim = get_aval(x).ndim
    except TypeError:
        raise TypeError(f"vmap: argument {names[i]} is a {type(x).__name__}, which is not an "
                        "array; pass arrays (or mark it unmapped with in_axes=None)") from None
    if not -ndim <= axis < ndim:
        raise ValueError(f"vmap was requested to map its argument {names[i]} along axis {axis}, "
                         f"which implies that its rank should be at least "
                         f"{axis + 1 if axis >= 0 else -axis}, but is only {ndim} (its shape "
                         f"is {get_aval(x).shape})")
    return axis % ndim


def _spec_entry(x, dim: int):
    """The entry of dimension `dim` in the spec of `x`'s type (None if unsplit)."""
    sharding = getattr(get_aval(x), "typed_sharding", None)
    spec = () if sharding is None else tuple(sharding.spec)
    return spec[dim] if dim < len(spec) else None


def _mapped_mesh_axis(flat, dims, names: _ArgNames) -> tuple | None:
    """The `Explicit` mesh axes (a tuple) that split the mapped dimension of every
    mapped argument (None where none does), as JAX takes them: the mapped arguments
    must agree, and no unmapped one may be split over them (ValueErrors)."""
    entries = [(_spec_entry(x, d), i) for i, (x, d) in enumerate(zip(flat, dims))
               if d is not not_mapped]
    if not entries:
        return None
    found = entries[0][0]
    for entry, i in entries[1:]:
        if entry != found:
            raise ValueError("Mapped away dimension of inputs passed to vmap should be "
                             f"sharded the same. Got inconsistent axis specs: {found} vs "
                             f"{entry} (argument {names[i]})")
    if found is None:
        return None
    axes = found if isinstance(found, tuple) else (found,)
    for i, (x, d) in enumerate(zip(flat, dims)):
        if d is not_mapped and hasattr(x, "shape"):
            aval = get_aval(x)
            spec = [_spec_entry(x, d) for d in range(aval.ndim)]
            used = {a for e in spec if e is not None
                    for a in (e if isinstance(e, tuple) else (e,))}
            if used & set(axes):
                raise ValueError(
                    "Unmapped values passed to vmap cannot be sharded along the mesh axis "
                    f"you are vmapping over. Got type: {aval.str_short()} ({names[i]}), "
                    f"in_axes: None and vmapped mesh axis: {axes}")
    return axes


def _mapped_size(fun, flat, dims, names: _ArgNames, axis_size) -> int:
    sizes = [(i, get_aval(x).shape, d) for i, (x, d) in enumerate(zip(flat, dims))
             if d is not not_mapped]
    if not sizes and axis_size is None:
        raise ValueError(f"vmap of {fun_sourceinfo(fun)} must have at least one "
                         "non-None value in in_axes, or an axis_size")
    found = {shape[d] for _, shape, d in sizes} | ({axis_size} if axis_size is not None
                                                    else set())
    if len(found) > 1:
        lines = [f"  * argument {names[i]} has shape {shape} and axis {d} is to be mapped "
                 f"(size {shape[d]})" for i, shape, d in sizes]
        if axis_size is not None:
            lines.append(f"  * axis_size={axis_size} was given")
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + "\n".join(lines))
    return found.pop()


def _outputs(trace: BatchTrace, out: Any, out_axes, sum_match: bool):
    leaves, out_tree = tree_util.tree_flatten(out)
    try:
        axes = tree_util.broadcast_prefix(out_axes, out, is_leaf=_is_none)
    except ValueError:
        raise ValueError("vmap out_axes specification must be a tree prefix of the "
                         f"corresponding value, got specification {out_axes!r} for value "
                         f"tree {out_tree}.") from None
    size = trace.axis_data.size
    results = []
    with set_current_trace(trace.parent):
        for i, (leaf, axis) in enumerate(zip(leaves, axes)):
            val, dim = trace.to_batch_info(leaf)
            try:
                ndim = get_aval(val).ndim + (dim is not_mapped)
            except TypeError:
                raise TypeError(f"vmap: output {_output_path(out_tree, i)} is a "
                                f"{type(leaf).__name__}, which is not an array") from None
            if axis is None:
                if dim is not not_mapped and not sum_match:  # (JAX's message)
                    where = tree_util.keystr(tree_util.tree_flatten_with_path(out)[0][i][0])
                    raise ValueError(f"at vmap out_axes{where}, got axis spec None but "
                                     f"output was batched on axis {dim}")
                results.append(val if dim is not_mapped else reduce_sum(val, (dim,)))
                continue
            if not -ndim <= axis < ndim:
                raise ValueError(f"vmap out_axes {axis} is out of bounds for output "
                                 f"{_output_path(out_tree, i)} of rank {ndim} (including the "
                                 "mapped axis)")
            if (dim is not_mapped and trace.axis_data.explicit_mesh_axis is not None
                    and _mesh_in_context()):
                results.append(_broadcast_split(val, axis % ndim, size, trace.axis_data))
            else:
                results.append(move_to(val, dim, axis % ndim, size))
    return tree_util.tree_unflatten(out_tree, results)


def _output_path(out_tree, i: int) -> str:
    """The path of output leaf `i` in errors ("" where the tree cannot say it)."""
    paths = result_paths_from_tree(out_tree)
    return "" if paths is None else paths[i]


def _mesh_in_context() -> bool:
    mesh = abstract_mesh()
    return mesh is not None and not mesh.empty


def _broadcast_split(x, dst: int, size: int, axis_data: AxisData):
    """An output the same for every batch member, broadcast along the mapped axis at
    `dst` and split over the mesh axes the mapped inputs are split over there (as
    JAX types it)."""
    from plax import lax
    aval = get_aval(x)
    spec = with_batch_dim(() if aval.typed_sharding is None else aval.typed_sharding.spec,
                          dst, axis_data)
    shape = list(aval.shape)
    shape.insert(dst, size)
    kept = tuple(i for i in range(len(shape)) if i != dst)
    return lax.broadcast_in_dim(x, tuple(shape), kept, out_sharding=sharding_from_spec(
        spec, "vmap's broadcast of an unmapped output"))
