"""Unit-quaternion arithmetic (scalar last, batched over leading axes) behind
`Rotation`: products, conversions to and from matrices, rotation vectors and
modified Rodrigues parameters. Rotation vectors at and near the identity use
series, with the other branch kept finite, so derivatives there are finite too.

Each formula rounds as JAX's does (the same operations in the same order; squared
norms as dot products), so the values are JAX's bit for bit on the CPU."""
from __future__ import annotations

from plax_stdlib import lax
from plax_stdlib import numpy as jnp

# Below this angle (radians) rotation vectors use their Taylor series.
_SMALL_ANGLE = 1e-3


def _parts(q):
    return q[..., 0], q[..., 1], q[..., 2], q[..., 3]


def _dot(u, v):
    """The dot products of u and v over the last axis (one batched dot_general)."""
    batch = tuple(range(u.ndim - 1))
    return lax.dot_general(u, v, (((u.ndim - 1,), (v.ndim - 1,)), (batch, batch)),
                           preferred_element_type=u.dtype)


def _norm(v):
    """|v| over the last axis, with derivative 0 (not NaN) at v = 0."""
    squared = _dot(v, v)
    zero = squared == 0
    return jnp.where(zero, 0, jnp.sqrt(jnp.where(zero, 1, squared)))


def normalize(q):
    return q / jnp.sqrt(_dot(q, q))[..., None]


def compose(p, q):
    """The quaternion of rotating by q, then by p (the Hamilton product p q)."""
    px, py, pz, pw = _parts(p)
    qx, qy, qz, qw = _parts(q)
    cross = jnp.cross(p[..., :3], q[..., :3])
    return jnp.stack([pw * qx + qw * px + cross[..., 0], pw * qy + qw * py + cross[..., 1],
                      pw * qz + qw * pz + cross[..., 2],
                      pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def conjugate(q):
    return q * jnp.array([-1, -1, -1, 1], q.dtype)


def canonical(q):
    """The one of ±q whose first nonzero entry, in the order w, x, y, z, is positive."""
    x, y, z, w = _parts(q)
    negate = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return jnp.where(negate[..., None], -q, q)


def elementary(axis: int, angle):
    """The quaternion of a rotation by `angle` about basis axis `axis` (0, 1 or 2)."""
    half = angle / 2
    zero = jnp.zeros_like(half)
    parts = [zero, zero, zero, jnp.cos(half)]
    parts[axis] = jnp.sin(half)
    return jnp.stack(parts, axis=-1)


def to_matrix(q):
    x, y, z, w = _parts(q)
    xx, yy, zz, ww = x * x, y * y, z * z, w * w
    xy, xz, xw, yz, yw, zw = x * y, x * z, x * w, y * z, y * w, z * w
    rows = [[xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww]]
    return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)


def from_matrix(m):
    """The unit quaternion nearest a rotation matrix, computed from whichever of its
    diagonal entries or its trace is largest (the best-conditioned of four formulas)."""
    trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        parts = [None] * 4
        parts[i] = 1 - trace + 2 * m[..., i, i]
        parts[j] = m[..., j, i] + m[..., i, j]
        parts[k] = m[..., k, i] + m[..., i, k]
        parts[3] = m[..., k, j] - m[..., j, k]
        candidates.append(jnp.stack(parts, axis=-1))
    candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                 m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
    decision = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
    choice = jnp.argmax(decision, axis=-1)
    stacked = jnp.stack(candidates, axis=-2)
    return normalize(jnp.take_along_axis(stacked, choice[..., None, None], axis=-2)[..., 0, :])


def to_rotvec(q, degrees: bool):
    """The rotation vector (axis times angle in [0, pi]) of each quaternion."""
    q = jnp.where(q[..., 3:] < 0, -q, q)
    angle = 2 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
    small = angle <= _SMALL_ANGLE
    squared = angle * angle
    series = 2 + squared / 12 + 7 * squared * squared / 2880
    safe = jnp.where(small, 1, angle)
    scale = jnp.where(small, series, safe / jnp.sin(safe / 2))
    if degrees:
        scale = jnp.rad2deg(scale)
    return scale[..., None] * q[..., :3]


def from_rotvec(rotvec, degrees: bool):
    if degrees:
        rotvec = jnp.deg2rad(rotvec)
    angle = _norm(rotvec)
    small = angle <= _SMALL_ANGLE
    squared = angle * angle
    safe = jnp.where(small, 1, angle)
    scale = jnp.where(small, 0.5 - squared / 48 + squared * squared / 3840,
                      jnp.sin(safe / 2) / safe)
    return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def to_mrp(q):
    """Modified Rodrigues parameters, of the quaternion with w >= 0 (norm <= 1)."""
    sign = jnp.where(q[..., 3:] < 0, -1, 1).astype(q.dtype)
    return sign * q[..., :3] / (1 + sign * q[..., 3:])


def from_mrp(p):
    squared_plus_1 = (_dot(p, p) + 1)[..., None]
    return jnp.concatenate([2 * p, 2 - squared_plus_1], axis=-1) / squared_plus_1


def magnitude(q):
    """Each rotation's angle, in [0, pi]."""
    return 2 * jnp.arctan2(_norm(q[..., :3]), jnp.abs(q[..., 3]))


def average(q, weights):
    """The unit quaternion maximizing the weighted sum of squared dot products with
    the rows of `q` (N, 4): the top eigenvector of sum_i w_i q_i q_i^T."""
    outer = jnp.dot(weights[None, :] * q.T, q)
    return jnp.linalg.eigh(outer)[1][..., -1]

