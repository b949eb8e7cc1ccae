"""A corpus of Pallas TPU kernels written once for any JAX-compatible library.

`corpus(jax)` takes the library (plax, or JAX itself in the reference subprocess and
on the chip) and returns `{name: (function, argument shapes and dtypes)}`; every
function calls `pallas_call` with `interpret=INTERPRET[0]`, so the same source runs
interpreted (the values' reference) and compiled for TPU; `arguments(name, shapes,
rng)` makes a kernel's inputs. Used by tests/test_pallas_tpu_aot.py and
benchmarks/tpu/pallas_on_chip.py.
"""
from __future__ import annotations

import functools
import importlib

import numpy as np

INTERPRET = [False]
# The (start, stop) row pairs the bounded-block pipeline copies (its `slices`).
ROW_SLICES = [[0, 2], [2, 3], [3, 5], [5, 8]]


def _modules(jax):
    name = jax.__name__
    jnp = importlib.import_module(f"{name}.numpy")
    lax = importlib.import_module(f"{name}.lax")
    pl = importlib.import_module(f"{name}.experimental.pallas")
    pltpu = importlib.import_module(f"{name}.experimental.pallas.tpu")
    return jnp, lax, pl, pltpu


def matmul(jax, bm=128, bn=128, bk=128, scratch=True):
    """The blocked matmul: a (m/bm, n/bn, k/bk) grid accumulating in f32 (a VMEM
    scratch buffer, or the f32 result itself), written on the last k step."""
    jnp, lax, pl, pltpu = _modules(jax)

    def kernel_scratch(x_ref, y_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
        def _():
            o_ref[...] = acc_ref[...].astype(o_ref.dtype)

    def kernel_in_place(x_ref, y_ref, o_ref):
        @pl.when(pl.program_id(2) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)

        o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    def call(x, y):
        (m, k), (_, n) = x.shape, y.shape
        return pl.pallas_call(
            kernel_scratch if scratch else kernel_in_place,
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype if scratch else jnp.float32),
            grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)] if scratch else [],
            compiler_params=pltpu.CompilerParams(
                dimension_semantics=("parallel", "parallel", "arbitrary")),
            interpret=INTERPRET[0])(x, y)
    return call


def flash_attention(jax, block_q=128, block_k=128):
    """Attention forward with the online softmax: a (batch*heads, seq/block_q) grid,
    each step looping (fori_loop) over the key blocks with a running max, sum and
    accumulator."""
    jnp, lax, pl, pltpu = _modules(jax)

    def kernel(q_ref, k_ref, v_ref, o_ref):
        q = q_ref[...].astype(jnp.float32) * (q_ref.shape[-1] ** -0.5)
        seq = k_ref.shape[0]

        def body(j, carry):
            m, total, acc = carry
            start = pl.multiple_of(j * block_k, block_k)
            k = k_ref[pl.ds(start, block_k), :]
            v = v_ref[pl.ds(start, block_k), :]
            s = lax.dot_general(q.astype(k.dtype), k, (((1,), (1,)), ((), ())),
                                preferred_element_type=jnp.float32)
            m_new = jnp.maximum(m, jnp.max(s, axis=-1, keepdims=True))
            p = jnp.exp(s - m_new)
            alpha = jnp.exp(m - m_new)
            total_new = alpha * total + jnp.sum(p, axis=-1, keepdims=True)
            acc = acc * alpha + jnp.dot(p.astype(v.dtype), v,
                                        preferred_element_type=jnp.float32)
            return m_new, total_new, acc

        d = q_ref.shape[-1]
        init = (jnp.full((block_q, 1), -jnp.inf, jnp.float32),
                jnp.zeros((block_q, 1), jnp.float32),
                jnp.zeros((block_q, d), jnp.float32))
        _, total, acc = lax.fori_loop(0, seq // block_k, body, init)
        o_ref[...] = (acc / total).astype(o_ref.dtype)

    def call(q, k, v):
        bh, seq, d = q.shape
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
            grid=(bh, seq // block_q),
            in_specs=[pl.BlockSpec((None, block_q, d), lambda b, i: (b, i, 0)),
                      pl.BlockSpec((None, seq, d), lambda b, i: (b, 0, 0)),
                      pl.BlockSpec((None, seq, d), lambda b, i: (b, 0, 0))],
            out_specs=pl.BlockSpec((None, block_q, d), lambda b, i: (b, i, 0)),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel")),
            interpret=INTERPRET[0])(q, k, v)
    return call


def arguments(name: str, shapes, rng) -> list[np.ndarray]:
    """NumPy arguments for the kernel `name` of the corpus: block numbers for scalar
    prefetch, `ROW_SLICES` for the bounded blocks, random values otherwise."""
    import ml_dtypes
    out = []
    for shape, dtype in shapes:
        if dtype == "int32" and name == "scalar_prefetch":
            out.append(rng.permutation(shape[0]).astype(np.int32))  # block numbers, scales
        elif dtype == "int32" and name == "emit_pipeline_bounded":
            out.append(np.array(ROW_SLICES, np.int32))
        elif dtype == "int32":
            out.append(rng.integers(-20, 20, shape).astype(np.int32))
        else:
            x = rng.standard_normal(shape).astype(np.float32)
            out.append(x.astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else x)
    return out


def pipelines(jax) -> dict:
    """Kernels that copy their own blocks: `pl.run_scoped` buffers, `pltpu.sync_copy`
    and `pltpu.emit_pipeline` (JAX's pipelining.md), `{name: (function, shapes)}`."""
    jnp, lax, pl, pltpu = _modules(jax)
    f32, i32 = "float32", "int32"
    anywhere = pl.BlockSpec(memory_space=pl.ANY)

    def scoped_kernel(x_ref, o_ref):
        def body(tmp_ref, count_ref):
            tmp_ref[...] = x_ref[...] * 2.0
            count_ref[0] = 3
            return tmp_ref[...] + count_ref[0].astype(jnp.float32)
        o_ref[...] = pl.run_scoped(body, pltpu.VMEM(x_ref.shape, jnp.float32),
                                   pltpu.SMEM((1,), jnp.int32))

    def scoped(x):
        """Scratch buffers of a region of the kernel (VMEM and SMEM) and its result."""
        return pl.pallas_call(scoped_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              interpret=INTERPRET[0])(x)

    def hbm_vmem_kernel(x_hbm_ref, out_vmem_ref, scratch_vmem_ref):
        pltpu.sync_copy(x_hbm_ref.at[0:1], scratch_vmem_ref)
        out_vmem_ref[...] = scratch_vmem_ref[...] + 1

    def first_row(x):
        """pipelining.md's first kernel: a row of `x` (in HBM) copied to VMEM, plus 1."""
        return pl.pallas_call(hbm_vmem_kernel, in_specs=[anywhere],
                              out_shape=jax.ShapeDtypeStruct((1, x.shape[1]), x.dtype),
                              scratch_shapes=(pltpu.VMEM((1, x.shape[1]), x.dtype),),
                              interpret=INTERPRET[0])(x)

    def matmul_pipeline_kernel(x_hbm, y_hbm, o_hbm, buffering=None):
        def body(x_ref, y_ref, o_ref):
            @pl.when(pl.program_id(2) == 0)
            def _():
                o_ref[...] = jnp.zeros_like(o_ref)

            o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        pltpu.emit_pipeline(
            body, grid=(x_hbm.shape[0] // 8, y_hbm.shape[1] // 128, x_hbm.shape[1] // 128),
            in_specs=[pl.BlockSpec((8, 128), lambda i, j, k: (i, k), pipeline_mode=buffering),
                      pl.BlockSpec((128, 128), lambda i, j, k: (k, j))],
            out_specs=pl.BlockSpec((8, 128), lambda i, j, k: (i, j), pipeline_mode=buffering),
        )(x_hbm, y_hbm, o_hbm)

    def matmul_pipeline(x, y, buffering=None):
        """An inner pipeline over HBM operands: a blocked matmul accumulating into the
        output block while consecutive steps share it (and reusing a fetched block);
        x's and the output's blocks in `buffering`'s buffers (`pl.Buffered(1)`: one)."""
        return pl.pallas_call(
            functools.partial(matmul_pipeline_kernel, buffering=buffering),
            in_specs=[anywhere, anywhere], out_specs=anywhere,
            out_shape=jax.ShapeDtypeStruct((x.shape[0], y.shape[1]), jnp.float32),
            interpret=INTERPRET[0])(x, y)

    def multiply(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] * y_ref[...]

    def split_kernel(x_hbm, y_hbm, o_hbm):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        pltpu.emit_pipeline(multiply, grid=(x_hbm.shape[0] // 8,), in_specs=[spec, spec],
                            out_specs=spec, core_axis=0,
                            dimension_semantics=(pltpu.PARALLEL,))(x_hbm, y_hbm, o_hbm)

    def split_among_steps(x, y):
        """pipelining.md's megacore template: the pipeline's grid split among the steps
        of the kernel's parallel grid axis (`core_axis`)."""
        return pl.pallas_call(
            split_kernel, grid=(2,), in_specs=[anywhere, anywhere], out_specs=anywhere,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
            interpret=INTERPRET[0])(x, y)

    def copy(x_vmem, o_vmem):
        o_vmem[...] = x_vmem[...]

    def dynamic_block_example_kernel(x_hbm, slices_hbm, o_hbm, slices_smem):
        pltpu.sync_copy(slices_hbm, slices_smem)

        def index_map(i):
            start = slices_smem[i, 0]
            return (pl.ds(start, slices_smem[i, 1] - start), 0)

        block_spec = pl.BlockSpec(block_shape=(pl.BoundedSlice(8), 128), index_map=index_map)
        pltpu.emit_pipeline(copy, grid=(slices_hbm.shape[0],), in_specs=[block_spec],
                            out_specs=block_spec)(x_hbm, o_hbm)

    def bounded_rows(x, slices):
        """pipelining.md's dynamic block shapes: rows copied in blocks of traced sizes
        (`pl.BoundedSlice`) that an index map reads from SMEM."""
        return pl.pallas_call(dynamic_block_example_kernel, in_specs=[anywhere, anywhere],
                              out_specs=anywhere, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              scratch_shapes=(pltpu.SMEM(slices.shape, jnp.int32),),
                              interpret=INTERPRET[0])(x, slices)

    return {
        "run_scoped_buffers": (scoped, [((8, 128), f32)]),
        "sync_copy_row": (first_row, [((8, 128), f32)]),
        "emit_pipeline_matmul": (matmul_pipeline, [((16, 256), f32), ((256, 256), f32)]),
        "emit_pipeline_single_buffered": (
            functools.partial(matmul_pipeline, buffering=pl.Buffered(1)),
            [((16, 256), f32), ((256, 256), f32)]),
        "emit_pipeline_core_axis": (split_among_steps, [((32, 128), f32)] * 2),
        "emit_pipeline_bounded": (bounded_rows, [((8, 128), f32), ((4, 2), i32)]),
    }


def corpus(jax) -> dict:
    """`{name: (function, [(shape, dtype name), ...])}` (module docstring)."""
    jnp, lax, pl, pltpu = _modules(jax)
    it = INTERPRET

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def add(x, y):
        spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
        return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8, x.shape[1] // 128), in_specs=[spec, spec],
                              out_specs=spec, interpret=it[0])(x, y)

    def softmax_kernel(x_ref, o_ref):
        x = x_ref[...]
        e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
        o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)

    def softmax(x):
        spec = pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0))
        return pl.pallas_call(softmax_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,), in_specs=[spec], out_specs=spec,
                              interpret=it[0])(x)

    def layer_norm_kernel(x_ref, w_ref, b_ref, o_ref):
        x = x_ref[...]
        mean = jnp.mean(x, axis=-1, keepdims=True)
        centered = x - mean
        var = jnp.mean(centered * centered, axis=-1, keepdims=True)
        o_ref[...] = centered * lax.rsqrt(var + 1e-5) * w_ref[...] + b_ref[...]

    def layer_norm(x, w, b, weights_mode=None):
        rows = pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0))
        whole = pl.BlockSpec((1, x.shape[1]), lambda i: (0, 0), pipeline_mode=weights_mode)
        return pl.pallas_call(layer_norm_kernel,
                              out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,), in_specs=[rows, whole, whole],
                              out_specs=rows, interpret=it[0])(x, w, b)

    def sum_kernel(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)

        acc_ref[...] += x_ref[...]

        @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
        def _():
            o_ref[...] = jnp.sum(acc_ref[...], axis=0, keepdims=True)

    def column_sum(x):
        return pl.pallas_call(
            sum_kernel, out_shape=jax.ShapeDtypeStruct((1, x.shape[1]), x.dtype),
            grid=(x.shape[0] // 8,), in_specs=[pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((1, x.shape[1]), lambda i: (0, 0)),
            scratch_shapes=[pltpu.VMEM((8, x.shape[1]), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("arbitrary",)),
            interpret=it[0])(x)

    def gather_kernel(idx_ref, scale_ref, x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = x_ref[...] * scale_ref[i].astype(jnp.float32) + idx_ref[i].astype(
            jnp.float32)

    def gather_rows(idx, scale, x):
        """Block `idx[i]` of `x`, scaled by `scale[i]`: the index map and the kernel
        read the scalar-prefetch operands from SMEM."""
        spec = pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2, grid=(idx.shape[0],),
            in_specs=[pl.BlockSpec((8, 128), lambda i, idx_ref, scale_ref: (idx_ref[i], 0))],
            out_specs=pl.BlockSpec((8, 128), lambda i, idx_ref, scale_ref: (i, 0)))
        return pl.pallas_call(gather_kernel, grid_spec=spec,
                              out_shape=jax.ShapeDtypeStruct((idx.shape[0] * 8, 128), x.dtype),
                              interpret=it[0])(idx, scale, x)

    def fused_kernel(x_ref, o_ref):
        x = x_ref[...]
        col = lax.broadcasted_iota(jnp.int32, x.shape, 1)
        y = jnp.where(x > 0, jnp.exp(-x), jnp.tanh(x) * 0.5)
        o_ref[...] = jnp.where(col < 64, y, jnp.log(jnp.abs(x) + 1.0))

    def fused(x):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(fused_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,), in_specs=[spec], out_specs=spec,
                              interpret=it[0])(x)

    def loop_kernel(x_ref, o_ref):
        def body(i, total):
            rows = pl.ds(pl.multiple_of(i * 8, 8), 8)
            block = x_ref[rows, :]
            o_ref[rows, :] = block * 2.0 + total
            return total + jnp.max(block)
        lax.fori_loop(0, x_ref.shape[0] // 8, body, jnp.float32(0))

    def loop_rows(x):
        return pl.pallas_call(loop_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              interpret=it[0])(x)

    def int_kernel(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = jnp.where(x % 3 == 0, x * 3, jnp.maximum(x, 7)) + (x > 5).astype(
            jnp.int32)

    def int_ops(x):
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(int_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,), in_specs=[spec], out_specs=spec,
                              compiler_params=pltpu.CompilerParams(vmem_limit_bytes=32 << 20),
                              interpret=it[0])(x)

    def strided_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[::2, :] + x_ref[1::2, :]

    def strided_rows(x):
        return pl.pallas_call(strided_kernel, interpret=it[0], out_shape=jax.ShapeDtypeStruct(
            (x.shape[0] // 2, x.shape[1]), x.dtype))(x)

    def double_buffer_kernel(x_hbm, o_ref, buf, sems):
        steps = x_hbm.shape[0] // 8

        def copy(i, slot):
            return pltpu.make_async_copy(x_hbm.at[pl.ds(pl.multiple_of(i * 8, 8), 8)],
                                         buf.at[slot], sems.at[slot])

        copy(0, 0).start()

        def body(i, total):
            slot = i % 2

            @pl.when(i + 1 < steps)
            def _():
                copy(i + 1, 1 - slot).start()

            copy(i, slot).wait()
            return total + buf[slot]

        o_ref[...] = lax.fori_loop(0, steps, body, jnp.zeros((8, 128), jnp.float32))

    def double_buffered_sum(x):
        """Rows of `x` (left in HBM: pl.ANY) summed by 8-row blocks, each block's copy
        into VMEM started while the previous one is added."""
        return pl.pallas_call(
            double_buffer_kernel, out_shape=jax.ShapeDtypeStruct((8, 128), x.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            scratch_shapes=[pltpu.VMEM((2, 8, 128), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
            interpret=it[0])(x)

    def shifts_kernel(x_ref, o_ref):
        x = x_ref[...]
        rolled = pltpu.roll(x, 3, 1) + pltpu.roll(x, 1, 0)
        rows = lax.broadcasted_iota(jnp.int32, (8, 256), 0)
        # JAX 0.10.2 does not export pltpu.repeat (plax does): the same concatenation.
        repeat = getattr(pltpu, "repeat", lambda v, n, axis: jnp.concatenate([v] * n, axis))
        pltpu.store(o_ref, repeat(rolled, 2, 1) * 2.0, mask=rows % 2 == 0)
        pltpu.store(o_ref.at[:, pl.ds(0, 128)], rolled, mask=rows[:, :128] % 2 == 1)
        pltpu.store(o_ref.at[:, pl.ds(128, 128)], -rolled, mask=rows[:, 128:] % 2 == 1)

    def shifts(x):
        """pltpu.roll along lanes and sublanes, pltpu.repeat, and masked stores."""
        return pl.pallas_call(shifts_kernel, interpret=it[0],
                              out_shape=jax.ShapeDtypeStruct((8, 256), x.dtype))(x)

    def cond_kernel(x_ref, o_ref):
        x = x_ref[...]
        first = pl.program_id(0) == 0
        o_ref[...] = lax.cond(first, lambda v: v * 2.0, lambda v: jnp.maximum(v, 0.0), x)

    def cond_values(x):
        """A lax.cond with results: the first block doubled, the others clipped at 0."""
        spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
        return pl.pallas_call(cond_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(x.shape[0] // 8,), in_specs=[spec], out_specs=spec,
                              interpret=it[0])(x)

    def permuting_broadcast_kernel(x_ref, o_ref):
        o_ref[...] = lax.broadcast_in_dim(x_ref[...], o_ref.shape, (2, 1))

    def permuting_broadcast(x):
        """`x.T` repeated twice: a broadcast_in_dim whose dimensions permute the
        operand's (JAX 0.10.2's own Mosaic lowering reshapes instead)."""
        return pl.pallas_call(permuting_broadcast_kernel, interpret=it[0],
                              out_shape=jax.ShapeDtypeStruct((2, *x.shape[::-1]), x.dtype))(x)

    f32, bf16, i32 = "float32", "bfloat16", "int32"
    add_jit = jax.jit(lambda x, y: add(x * 2.0, y) - 1.0)
    return {
        "add_2d_grid": (add, [((16, 256), f32), ((16, 256), f32)]),
        "matmul_f32": (matmul(jax, scratch=False), [((256, 256), f32), ((256, 256), f32)]),
        "matmul_bf16_scratch": (matmul(jax), [((256, 256), bf16), ((256, 256), bf16)]),
        "softmax_rows": (softmax, [((16, 256), f32)]),
        "layer_norm": (layer_norm, [((16, 256), f32), ((1, 256), f32), ((1, 256), f32)]),
        "single_buffered_weights": (functools.partial(layer_norm, weights_mode=pl.Buffered(1)),
                                    [((16, 256), f32), ((1, 256), f32), ((1, 256), f32)]),
        "sum_when_last": (column_sum, [((32, 256), f32)]),
        "scalar_prefetch": (gather_rows, [((4,), i32), ((4,), i32), ((32, 128), f32)]),
        "flash_attention": (flash_attention(jax), [((2, 256, 128), bf16)] * 3),
        "fused_where_exp": (fused, [((16, 128), f32)]),
        "fori_loop_rows": (loop_rows, [((32, 128), f32)]),
        "cond_with_results": (cond_values, [((24, 128), f32)]),
        "int32_ops": (int_ops, [((16, 128), i32)]),
        "strided_loads": (strided_rows, [((32, 128), f32)]),
        "double_buffered_copy": (double_buffered_sum, [((64, 128), f32)]),
        "roll_repeat_masked_store": (shifts, [((8, 128), f32)]),
        "permuting_broadcast": (permuting_broadcast, [((128, 256), f32)]),
        "add_under_jit": (add_jit, [((16, 256), f32), ((16, 256), f32)]),
        "add_under_vmap": (jax.vmap(add), [((3, 16, 256), f32), ((3, 16, 256), f32)]),
        "matmul_under_vmap": (jax.vmap(matmul(jax)), [((2, 256, 256), bf16)] * 2),
        **pipelines(jax),
    }
