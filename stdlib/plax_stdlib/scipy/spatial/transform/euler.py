"""Euler angles: rotations composed of elementary rotations about basis axes, in an
intrinsic ('XYZ': about the rotating frame's axes) or extrinsic ('xyz': about the
fixed frame's) sequence, and their recovery from a quaternion by the method of
Bernardes and Viollet (2022), with JAX's choice of angles at gimbal lock."""
from __future__ import annotations

import re

import numpy as np

from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.spatial.transform import quaternions

# |middle angle| (or |middle - pi|) at most this is treated as gimbal lock.
_GIMBAL_LOCK = 1e-7


def parse_sequence(seq: str, exactly_three: bool) -> tuple[list[int], bool]:
    """The basis axes of `seq` and whether it is extrinsic; ValueError naming `seq`
    when it is not 1 to 3 (or exactly 3) axes from one case without repeats."""
    if not isinstance(seq, str):
        raise TypeError(f"Expected the axis sequence `seq` to be a string, got {seq!r}")
    if exactly_three and len(seq) != 3:
        raise ValueError(f"Expected 3 axes, got {seq}.")
    if not 1 <= len(seq) <= 3:
        raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                         f"characters, got {seq}")
    extrinsic = re.fullmatch("[xyz]+", seq) is not None
    if not extrinsic and re.fullmatch("[XYZ]+", seq) is None:
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return ["xyz".index(a) for a in seq.lower()], extrinsic


def to_quaternion(seq: str, angles, degrees: bool):
    """The quaternion of `angles` (..., len(seq)) about the axes of `seq`."""
    axes, extrinsic = parse_sequence(seq, exactly_three=False)
    if angles.shape[-1] != len(axes):
        raise ValueError(f"Expected angles of shape (..., {len(axes)}) for the axis sequence "
                         f"{seq!r}, got shape {angles.shape}")
    if degrees:
        angles = jnp.deg2rad(angles)
    result = quaternions.elementary(axes[0], angles[..., 0])
    for position, axis in enumerate(axes[1:], start=1):
        step = quaternions.elementary(axis, angles[..., position])
        result = (quaternions.compose(step, result) if extrinsic
                  else quaternions.compose(result, step))
    return result


def from_quaternion(q, seq: str, degrees: bool):
    """Angles (..., 3) about the axes of `seq` whose rotation is `q`, each in
    [-pi, pi): the middle one in [0, pi) for symmetric sequences such as 'zxz' (a
    half turn reads -pi, as in JAX; SciPy says pi) or in [-pi/2, pi/2]. At gimbal
    lock the third angle, no longer determined, is 0."""
    axes, extrinsic = parse_sequence(seq, exactly_three=True)
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    if symmetric:
        a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
    else:
        a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
        c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    at_zero = jnp.abs(middle) <= _GIMBAL_LOCK
    locked = at_zero | (jnp.abs(middle - np.pi) <= _GIMBAL_LOCK)
    # Locked: the whole rotation about the outer axes goes to the first angle of
    # `seq`; the third is 0 (`first` and `third` are in extrinsic order).
    locked_angle = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    first = jnp.where(locked, locked_angle if extrinsic else 0, half_sum - half_diff)
    third = jnp.where(locked, 0 if extrinsic else locked_angle, half_sum + half_diff)
    if not symmetric:
        third = third * sign
        middle = middle - np.pi / 2
    ordered = (first, middle, third) if extrinsic else (third, middle, first)
    angles = (jnp.stack(ordered, axis=-1) + np.pi) % (2 * np.pi) - np.pi
    return jnp.rad2deg(angles) if degrees else angles
