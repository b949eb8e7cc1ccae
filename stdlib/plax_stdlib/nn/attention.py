"""`dot_product_attention`: softmax(q kᵀ · scale + bias, masked) v, as JAX's XLA path.

Shapes are (batch B, sequence T or S, heads N or K, head size H); query heads are
grouped over the key/value heads (N = K · G, grouped-query attention). Logits are
computed in at least float32 and the softmax in float32. Masked-out logits become
a large negative number rather than -inf, so a fully masked row averages the
values instead of producing NaNs, as in JAX.
"""
from __future__ import annotations

import numpy as np

from plax.extend import dtypes
from plax_stdlib import lax
from plax_stdlib import numpy as jnp
from plax_stdlib.nn.softmax_family import logsumexp, softmax


def _as_4d(x):
    x = jnp.asarray(x)
    return jnp.expand_dims(x, tuple(range(4 - x.ndim))) if x.ndim < 4 else x


def _check(x, shape, dtype, name: str) -> None:
    """`x` (if given) has len(shape) dimensions, matching `shape` where not -1."""
    if x is None:
        return
    if x.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {x.ndim}")
    if dtype is not None and x.dtype != dtype:
        raise ValueError(f"{name} dtype should be {np.dtype(dtype)}, but got {x.dtype}")
    if any(want not in (-1, got) for want, got in zip(shape, x.shape)):
        raise ValueError(f"{name} shape should be {tuple(shape)}: but got {x.shape}")


def _large_negative(dtype):
    """A finite stand-in for -inf that survives the cast to float32."""
    return -0.7 * min(float(dtypes.finfo(dtype).max), float(dtypes.finfo(np.float32).max))


def _combined_mask(T: int, S: int, mask, is_causal, q_lengths, kv_lengths, window):
    """The (B or 1, N or 1, T, S) boolean mask of the logits to keep, or None."""
    keep = None if mask is None else mask

    def both(m):
        return m if keep is None else jnp.logical_and(keep, m)
    q_pos = jnp.arange(T)[:, None]
    k_pos = jnp.arange(S)[None, :]
    if is_causal:
        keep = both((k_pos <= q_pos)[None, None])
    if window is not None:
        left, right = window
        keep = both(jnp.logical_and(q_pos <= k_pos + left, q_pos >= k_pos - right)[None, None])
    if q_lengths is not None:
        keep = both((jnp.arange(T)[None, :, None] < q_lengths[:, None, None])[:, None])
    if kv_lengths is not None:
        keep = both((jnp.arange(S)[None, None, :] < kv_lengths[:, None, None])[:, None])
    return keep


def _grouped(t, K: int, G: int):
    """(B, N or 1, T, S) → (B, K, G or 1, T, S), matching the grouped logits."""
    if t is None:
        return None
    tB, tN, tT, tS = t.shape
    return t[:, :, None] if tN == 1 else jnp.reshape(t, (tB, K, G, tT, tS))


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
    """Scaled dot-product attention of `query` (B, T, N, H) over `key` and `value`
    (B, S, K, H); the batch dimension may be left out. `bias` and boolean `mask`
    broadcast against the logits (B, N, T, S); `is_causal` keeps key positions ≤ the
    query position; `query_seq_lengths`/`key_value_seq_lengths` (int32, (B,)) mask
    padding; `local_window_size` (left, right) keeps a band. `scale` defaults to
    1/sqrt(H). With `return_residual` also returns the logsumexp of the logits
    (B, T, N)."""
    if implementation not in (None, "xla"):
        if implementation == "cudnn":
            raise NotImplementedError("dot_product_attention: the 'cudnn' implementation is "
                                      "not available in plax; use implementation='xla'")
        raise ValueError(f"Unsupported implementation option: {implementation}")
    output_shape = jnp.asarray(query).shape
    q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
    bias = None if bias is None else _as_4d(bias)
    mask = None if mask is None else _as_4d(mask)
    q_lengths = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
    kv_lengths = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    B, S, K, H = k.shape
    _check(v, (B, S, K, H), k.dtype, "value")
    _check(q, (B, -1, -1, H), k.dtype, "query")
    _check(mask, (-1,) * 4, np.dtype(bool), "mask")
    _check(bias, (-1,) * 4, None, "bias")
    _check(q_lengths, (B,), np.dtype(np.int32), "query_seq_lengths")
    _check(kv_lengths, (B,), np.dtype(np.int32), "key_value_seq_lengths")
    T, N = q.shape[1], q.shape[2]
    if N % K:
        raise ValueError("The number of query heads must be a multiple of key/value heads, "
                         f"but got {N} vs {K}")
    G = N // K
    scale = 1.0 / np.sqrt(H) if scale is None else scale

    logits_dtype = jnp.promote_types(q.dtype, np.float32)
    grouped_q = jnp.reshape(q, (B, T, K, G, H))
    logits = jnp.einsum("btkgh,bskh->bkgts", grouped_q, k, preferred_element_type=logits_dtype)
    logits = logits * jnp.asarray(scale, logits_dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, K, G)).astype(logits_dtype)
    keep = _combined_mask(T, S, mask, is_causal, q_lengths, kv_lengths, local_window_size)
    if keep is not None:
        logits = jnp.where(_grouped(keep, K, G), logits, _large_negative(logits_dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(k.dtype)
    encoded = jnp.einsum("bkgts,bskh->btkgh", probs, v)
    if q_lengths is not None:
        valid = jnp.arange(T)[None, :] < q_lengths[:, None]
        encoded = encoded * valid[:, :, None, None, None].astype(encoded.dtype)
    encoded = jnp.reshape(encoded, output_shape)
    if not return_residual:
        return encoded
    residual = jnp.transpose(logsumexp(logits, axis=-1), (0, 3, 1, 2))  # B T K G
    residual = jnp.reshape(residual.astype(k.dtype), output_shape[:-1])
    return encoded, lax.stop_gradient(residual)
