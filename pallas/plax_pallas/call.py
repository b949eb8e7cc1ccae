"""`pallas_call(kernel, out_shape, ...)`: the user's call, checked and traced.

The returned function flattens its arguments, matches them (and `out_shape`) with
the block specs, traces each index map and the kernel (on references to the
blocks, the program ids made current for `pl.program_id`) and binds the
`pallas_call` primitive; scratch buffers are results of the primitive that the
call drops (whole arrays, so they keep their contents across grid steps, and vmap
and jvp treat them as any result). What it traces is kept per argument types, so
calling it again with arrays of the same types reuses it (and its compiled code).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

import numpy as np

from plax.extend import tree_util
from plax.extend.core import (JaxprDebugInfo, ShapedArray, Tracer, fun_sourceinfo, get_aval,
                              stage_flat)
from plax_stdlib import numpy as jnp
from plax_pallas.grid_context import grid_context
from plax_pallas.memory import MemoryRef, scratch_aval, scratch_type
from plax_pallas.tpu import SMEM, freeze_compiler_params
from plax_pallas.primitive import pallas_call_p
from plax_pallas.specs import (INDEX_AVAL, BlockSpec, GridSpec, block_mapping,
                                          no_block_spec)
from plax_transforms.refs import AbstractRef


def _is_shape(x) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _grid(grid) -> tuple[int, ...]:
    if isinstance(grid, (int, np.integer)):
        grid = (grid,)
    try:
        return tuple(int(g) for g in grid)
    except TypeError:
        raise TypeError(f"pallas_call: grid must be a tuple of static ints (plax has no "
                        f"dynamic grids), got {grid!r}") from None


def _spec_leaves(specs, tree, what: str, of: str) -> list:
    """The block spec of each leaf of `tree` (`specs` given for the whole tree)."""
    n = tree.num_leaves
    if specs is no_block_spec:
        return [no_block_spec] * n
    spec_tree = tree_util.tree_structure(specs, is_leaf=lambda s: isinstance(s, BlockSpec)
                                         or s is no_block_spec)
    if spec_tree != tree:
        raise ValueError(f"Pytree for `{what}` and `{of}` do not match: `{what}` is "
                         f"{spec_tree} but `{of}` is {tree}.")
    return tree_util.tree_leaves(specs, is_leaf=lambda s: isinstance(s, BlockSpec)
                                 or s is no_block_spec)


def _leaf_names(prefix: str, tree, single: str | None = None) -> list[str]:
    if single is not None and tree.num_leaves == 1 and tree_util.treedef_is_leaf(tree):
        return [single]
    skeleton = tree_util.tree_unflatten(tree, [0] * tree.num_leaves)
    return [prefix + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(skeleton)[0]]


def _num_scalar_prefetch(grid_spec) -> int:
    n = getattr(grid_spec, "num_scalar_prefetch", 0)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise TypeError(f"num_scalar_prefetch must be a non-negative int, got {n!r}")
    return int(n)


def pallas_call(kernel: Callable[..., None], out_shape: Any, *, grid_spec: GridSpec | None = None,
                grid=(), in_specs=no_block_spec, out_specs=no_block_spec,
                scratch_shapes=(), input_output_aliases: Mapping[int, int] = {},  # noqa: B006
                debug: bool = False, interpret: Any = False, name: str | None = None,
                compiler_params: Any = None, cost_estimate: Any = None,
                metadata: Any = None) -> Callable[..., Any]:
    """Makes a function that runs the Pallas `kernel` once per point of `grid`, each time
    on the blocks of its operands and results that the block specs pick.

    The kernel receives references (`x_ref`), not arrays: it reads them by indexing
    (`x_ref[...]`, `x_ref[pl.ds(i, 4)]`) and writes its outputs the same way
    (`o_ref[...] = v`); it returns nothing. Grid steps run in row-major order;
    `pl.program_id(axis)` tells a step where it is. Each `BlockSpec` gives a block
    shape and an index map from the program ids to the block's position. With
    `interpret=True` the kernel runs as an ordinary program on any backend (this is
    how it runs on CPU); `interpret=False` compiles it where a platform package lowers
    Pallas (plax-tpu: Mosaic). The function works under `jit`, `vmap` (one more grid
    axis) and `jvp`.

    Args:
        kernel: `kernel(*in_refs, *out_refs, *scratch_refs)`.
        out_shape: a pytree of `plax.ShapeDtypeStruct` (or arrays) for the results.
        grid_spec: a `GridSpec` holding `grid`, the specs and the scratch shapes
            (instead of passing them separately).
        grid: the number of steps along each grid axis (an int or a tuple).
        in_specs: a `BlockSpec` per operand (a list or tuple); default: whole arrays.
        out_specs: a `BlockSpec` per result (matching `out_shape`); default: whole arrays.
        scratch_shapes: scratch buffer types (`pl.ANY((8,), jnp.float32)`, or a
            platform's memory spaces), passed after the output references; their
            contents persist from one step to the next.
        input_output_aliases: `{operand index: result index}`: results that reuse an
            operand's buffer.
        debug: print the kernel's Jaxpr when it is traced.
        interpret: run the kernel by interpretation instead of compiling it.
        name: a name for the kernel in programs and profiles.
        compiler_params: a platform's compiler parameters (e.g. `pltpu.CompilerParams`).
        cost_estimate: accepted and ignored.
        metadata: accepted and ignored.

    Returns:
        A function of the operands returning results of `out_shape`'s structure.

    Raises:
        ValueError: `grid_spec` given with `grid`/`in_specs`/`out_specs`; a block shape
            whose rank differs from its array's; an index map returning the wrong
            number of indices or non-integers; `interpret=False` on CPU.

    Examples:
        >>> from plax.experimental import pallas as pl
        >>> def add_kernel(x_ref, y_ref, o_ref):
        ...     o_ref[...] = x_ref[...] + y_ref[...]
        >>> block = pl.BlockSpec((4,), lambda i: (i,))  # step i sees elements 4i..4i+3
        >>> add = pl.pallas_call(add_kernel, out_shape=plax.ShapeDtypeStruct((8,), jnp.float32),
        ...                      grid=(2,), in_specs=[block, block], out_specs=block,
        ...                      interpret=True)
        >>> add(jnp.arange(8.0), jnp.ones(8))
        Array([1., 2., 3., 4., 5., 6., 7., 8.], dtype=float32)
    """
    del cost_estimate, metadata  # hints plax's compilers do not read
    num_prefetch = 0
    if grid_spec is not None:
        if grid != ():
            raise ValueError(f"If `grid_spec` is specified, then `grid` must be `()`. It is "
                             f"{grid}")
        if in_specs is not no_block_spec:
            raise ValueError("If `grid_spec` is specified, then `in_specs` must not be. It "
                             f"is {in_specs}")
        if out_specs is not no_block_spec:
            raise ValueError("If `grid_spec` is specified, then `out_specs` must not be. It "
                             f"is {out_specs}")
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
        num_prefetch = _num_scalar_prefetch(grid_spec)
    grid = _grid(grid)
    if in_specs is not no_block_spec and not isinstance(in_specs, (tuple, list)):
        raise ValueError(f"`in_specs` must be a tuple or a list. Found: {in_specs}")
    if isinstance(out_shape, list):
        out_shape = tuple(out_shape)
    if isinstance(out_specs, list):
        out_specs = tuple(out_specs)
    out_leaves, out_tree = tree_util.tree_flatten(out_shape, is_leaf=_is_shape)
    for leaf in out_leaves:
        if not _is_shape(leaf):
            raise ValueError(f"Invalid out_shape type: {type(leaf)}")
    out_avals = tuple(ShapedArray(tuple(o.shape), np.dtype(o.dtype)) for o in out_leaves)
    scratch_leaves, scratch_tree = tree_util.tree_flatten(
        tuple(scratch_shapes), is_leaf=lambda t: isinstance(t, MemoryRef))
    scratch_leaves = [scratch_type(t) for t in scratch_leaves]
    scratch_avals = [scratch_aval(t, f"scratch_shapes[{k}]") for k, t in enumerate(scratch_leaves)]
    out_specs = _spec_leaves(out_specs, out_tree, "out_specs", "out_shape")
    params = freeze_compiler_params(compiler_params)
    aliases = tuple(sorted(dict(input_output_aliases).items()))
    src = fun_sourceinfo(kernel)
    traced: dict = {}

    def call(*args):
        leaves, in_tree = tree_util.tree_flatten(args)
        leaves = [x if isinstance(x, Tracer) or hasattr(x, "aval") else jnp.asarray(x)
                  for x in leaves]
        avals = tuple(get_aval(x).update(weak_type=False) for x in leaves)
        key = (in_tree, avals)
        if key not in traced:
            traced[key] = _trace(kernel, src, grid, num_prefetch, in_specs, in_tree, avals,
                                 out_tree, out_specs, out_avals, scratch_tree, scratch_leaves,
                                 scratch_avals, aliases)
        outs = pallas_call_p.bind(*leaves, **traced[key], debug=debug,
                                  interpret=bool(interpret), name=name,
                                  compiler_params=params)
        return tree_util.tree_unflatten(out_tree, outs[:len(out_avals)])

    functools.update_wrapper(call, kernel, assigned=("__name__", "__qualname__", "__doc__"),
                             updated=())
    return call


def _trace(kernel, src: str, grid, num_prefetch: int, in_specs, in_tree, avals, out_tree,
           out_specs, out_avals, scratch_tree, scratch_types, scratch_avals, aliases) -> dict:
    names = _leaf_names("args", in_tree)
    if num_prefetch > len(avals):
        raise ValueError(f"num_scalar_prefetch={num_prefetch} but the call has only "
                         f"{len(avals)} operands")
    prefetch = avals[:num_prefetch]
    prefetch_mappings = [block_mapping(no_block_spec, a, grid, n, prefetch, memory_space=SMEM)
                         for a, n in zip(prefetch, names)]
    blocked_tree = in_tree
    if num_prefetch:  # the specs are for the operands after the scalar-prefetch ones
        blocked_tree = tree_util.tree_structure(tuple(range(len(avals) - num_prefetch)))
    specs = in_specs if in_specs is no_block_spec else tuple(in_specs)
    in_mappings = prefetch_mappings + [block_mapping(s, a, grid, n, prefetch) for s, a, n in zip(
        _spec_leaves(specs, blocked_tree, "in_specs", "inputs"), avals[num_prefetch:],
        names[num_prefetch:])]
    out_mappings = [block_mapping(s, a, grid, n, prefetch) for s, a, n in zip(
        out_specs, out_avals, _leaf_names("outputs", out_tree, single="outputs"))]
    scratch_mappings = [block_mapping(no_block_spec, a, grid, f"scratch_shapes[{k}]", prefetch,
                                      scratch=True, memory_space=t.memory_space)
                        for k, (t, a) in enumerate(zip(scratch_types, scratch_avals))]
    _check_aliases(aliases, avals, [m.array_aval for m in out_mappings])
    blocks = (*in_mappings, *out_mappings, *scratch_mappings)
    n_in, n_out = len(in_mappings), len(out_mappings)

    def flat(*xs):
        ids, refs = xs[:len(grid)], xs[len(grid):]
        ins = tree_util.tree_unflatten(in_tree, refs[:n_in])
        outs = tree_util.tree_unflatten(out_tree, refs[n_in:n_in + n_out])
        scratch = tree_util.tree_unflatten(scratch_tree, refs[n_in + n_out:])
        with grid_context(grid, ids):
            result = kernel(*ins, *(outs if isinstance(outs, tuple) else (outs,)), *scratch)
        if result is not None:
            raise ValueError(f"The kernel function in the pallas_call {src} should return "
                             f"None. It returns a PyTree: "
                             f"{tree_util.tree_structure(result)}")
        return []

    closed = stage_flat(flat, [INDEX_AVAL] * len(grid)
                        + [AbstractRef(b.kernel_aval) for b in blocks],
                        debug_info=JaxprDebugInfo("pallas_call", src, None, None))
    captured = [c for c in closed.consts if isinstance(c, Tracer)]
    if captured:
        raise ValueError(f"The kernel function in the pallas_call {src} captures constants "
                         f"[{', '.join(get_aval(c).str_short() for c in captured)}]. You "
                         "should pass them as inputs.")
    return dict(kernel=closed, grid=grid, blocks=blocks, num_inputs=n_in,
                num_scalar_prefetch=num_prefetch, input_output_aliases=aliases)


def _check_aliases(aliases, in_avals, out_avals) -> None:
    for i, o in aliases:
        if not 0 <= i < len(in_avals):
            raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with input "
                             f"index {i} outside the range [0, {len(in_avals)})")
        if not 0 <= o < len(out_avals):
            raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with "
                             f"output index {o} outside the range [0, {len(out_avals)})")
        a, b = in_avals[i], out_avals[o]
        if a.shape != b.shape or np.dtype(a.dtype) != np.dtype(b.dtype):
            raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' referring "
                             f"to input[{i}] with abstract value {a.str_short()} and to "
                             f"output with a different abstract value {b.str_short()}.")
