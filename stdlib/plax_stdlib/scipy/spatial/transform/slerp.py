"""`Slerp`: rotations interpolated between key rotations at key times, along the
shortest arc at constant angular velocity within each interval. A NamedTuple, so a
pytree that passes through `jit` and `vmap`.

Build it with `Slerp.init(times, rotations)` (JAX's spelling) or
`Slerp(times, rotations)` (SciPy's). Times outside the key times extrapolate the
first or last interval (JAX reads past its arrays beyond the last key time);
known key times that do not increase raise ValueError, as in SciPy."""
from __future__ import annotations

import typing

import numpy as np

from plax.extend.core import Tracer
from plax_stdlib import numpy as jnp
from plax_stdlib.scipy.spatial.transform.rotation import Rotation


class _Fields(typing.NamedTuple):
    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any


class Slerp(_Fields):
    """Spherical linear interpolation of `rotations` (N >= 2) at `times` (N,)."""
    __slots__ = ()

    def __new__(cls, times, *fields, **named):
        if len(fields) == 1 and not named:
            return cls.init(times, fields[0])
        return super().__new__(cls, times, *fields, **named)

    @classmethod
    def init(cls, times, rotations: Rotation):
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance, got "
                            f"{type(rotations).__name__}.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        if rotations.quat.ndim != 2:
            raise ValueError("`rotations` must be a 1-D sequence of rotations, got "
                             f"quaternions of shape {rotations.quat.shape}.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        if not isinstance(times, Tracer) and np.any(np.diff(np.asarray(times)) <= 0):
            raise ValueError(f"Times must be in strictly increasing order, got {times}.")
        starts = rotations[:-1]
        return super().__new__(cls, times, jnp.diff(times), starts,
                               (starts.inv() * rotations[1:]).as_rotvec())

    def __call__(self, times):
        """The interpolated rotation at each of `times` (a scalar or 1-D)."""
        times = jnp.asarray(times, dtype=self.times.dtype)
        if times.ndim > 1:
            raise ValueError(f"`times` must be at most 1-dimensional, got shape {times.shape}.")
        single = times.ndim == 0
        times = jnp.atleast_1d(times)
        interval = jnp.clip(jnp.searchsorted(self.times, times) - 1, 0,
                            self.timedelta.shape[0] - 1)
        fraction = (times - self.times[interval]) / self.timedelta[interval]
        step = Rotation.from_rotvec(self.rotvecs[interval] * fraction[:, None])
        result = self.rotations[interval] * step
        return result[0] if single else result
