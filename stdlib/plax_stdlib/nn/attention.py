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
    """Scaled dot-product attention: `softmax(query · keyᵀ * scale + bias, masked) · value`.

    Shapes use B for batch, T for the query length, S for the key/value length, N for
    the query heads, K for the key/value heads and H for the head size: `query` is
    (B, T, N, H), `key` and `value` are (B, S, K, H); the batch axis may be left out of
    all three. When N is a multiple of K, groups of N // K query heads share one
    key/value head (grouped-query attention). Logits are formed in at least float32
    and the softmax runs in float32; masked-out logits become a large negative
    number, so a fully masked row averages the values instead of producing NaN.

    Args:
        query: (B, T, N, H) or (T, N, H).
        key: (B, S, K, H) or (S, K, H).
        value: the same shape and dtype as `key`.
        bias: added to the logits; broadcastable to (B, N, T, S).
        mask: boolean, broadcastable to (B, N, T, S): False logits are masked out.
        scale: multiplies the logits; default `1 / sqrt(H)`.
        is_causal: keep only key positions at or before each query position.
        query_seq_lengths: int32 (B,): valid query lengths (padding gives zeros).
        key_value_seq_lengths: int32 (B,): valid key/value lengths.
        local_window_size: an int or `(left, right)`: keep keys within this band around
            each query position.
        implementation: None or "xla" (the only one plax has).
        return_residual: also return the logsumexp of the logits, (B, T, N).

    Returns:
        The attention output, of `query`'s shape; with `return_residual`, a pair
        `(output, logsumexp)`.

    Raises:
        ValueError: shapes or dtypes that do not match, N not a multiple of K, or an
            unknown `implementation`.
        NotImplementedError: `implementation="cudnn"`.

    Examples:
        Three positions, one head of size 2, attending causally: each position
        averages the values at or before it.

        >>> q = k = jnp.ones((3, 1, 2))
        >>> v = jnp.arange(6.0).reshape(3, 1, 2)
        >>> plax.nn.dot_product_attention(q, k, v, is_causal=True)[:, 0]
        Array([[0., 1.],
               [1., 2.],
               [2., 3.]], dtype=float32)
    """
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
