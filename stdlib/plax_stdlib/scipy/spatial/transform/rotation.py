"""`Rotation`: one or a batch of 3-D rotations held as unit quaternions (x, y, z, w),
with SciPy's constructors and conversions. A NamedTuple of its quaternions, so a
pytree that passes through `jit` and `vmap` and is differentiable in them.

Beyond JAX, shapes are checked (JAX answers a quaternion of 3 numbers, or vectors
that do not broadcast against the rotations, with garbage or a vectorize error),
`identity(num)` and `random(key, num)` are implemented, `concatenate` accepts
single rotations, and `mean` of a single rotation is that rotation."""
from __future__ import annotations

import typing

from plax_stdlib import numpy as jnp
from plax_stdlib import random
from plax_stdlib.numpy import util
from plax_stdlib.scipy.spatial.transform import euler, quaternions


def _inexact(fun_name: str, x, core_shape: tuple[int, ...], what: str):
    """`x` as an inexact array whose trailing axes are `core_shape`; ValueError
    naming `what` and the shape otherwise."""
    x = _strong_inexact(x)
    if x.shape[x.ndim - len(core_shape):] != core_shape or x.ndim < len(core_shape):
        raise ValueError(f"{fun_name}: expected `{what}` of shape {core_shape} or "
                         f"(..., {', '.join(map(str, core_shape))}), got shape {x.shape}")
    return x


def _strong_inexact(x):
    """`x` as an array of its inexact dtype, not weakly typed (as JAX's vectorized
    conversions return, even from Python scalars)."""
    x = jnp.asarray(x)
    return jnp.asarray(x, dtype=util.promote_dtypes_inexact(x)[0].dtype)


def _batch_shape(fun_name: str, *shapes):
    try:
        return util.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{fun_name}: {' and '.join(map(str, shapes))} do not broadcast; "
                         "give equal numbers of rotations and operands, or a single "
                         "one of either") from None


class Rotation(typing.NamedTuple):
    """Rotation(s) in 3 dimensions, as unit quaternions `quat` (..., 4), scalar last."""
    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """The rotations of each (single or batched) `Rotation` in turn, as one batch."""
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """From angles (..., len(seq)) about the axes of `seq`: 1 to 3 of 'xyz'
        (extrinsic) or 'XYZ' (intrinsic); a scalar for a single axis."""
        angles = jnp.atleast_1d(_strong_inexact(angles))
        return cls(euler.to_quaternion(seq, angles, degrees))

    @classmethod
    def from_matrix(cls, matrix):
        """From rotation matrices (..., 3, 3); a matrix that is not orthogonal gets
        the rotation its quaternion formula gives, normalized."""
        return cls(quaternions.from_matrix(_inexact("from_matrix", matrix, (3, 3), "matrix")))

    @classmethod
    def from_mrp(cls, mrp):
        """From modified Rodrigues parameters (..., 3)."""
        return cls(quaternions.from_mrp(_inexact("from_mrp", mrp, (3,), "mrp")))

    @classmethod
    def from_quat(cls, quat):
        """From quaternions (..., 4), scalar last, normalized (a zero one gives NaN)."""
        return cls(quaternions.normalize(_inexact("from_quat", quat, (4,), "quat")))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """From rotation vectors (..., 3): axis times angle."""
        rotvec = _inexact("from_rotvec", rotvec, (3,), "rotvec")
        return cls(quaternions.from_rotvec(rotvec, degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation, or `num` of them."""
        quat = jnp.array([0., 0., 0., 1.], dtype=dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Rotations drawn uniformly (Haar measure): normalized Gaussian quaternions."""
        shape = (4,) if num is None else (num, 4)
        return cls(quaternions.normalize(random.normal(random_key, shape)))

    def __getitem__(self, indexer):
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:
        """This rotation composed with `other` (other applied first)."""
        if not isinstance(other, Rotation):
            raise TypeError(f"Rotation * {type(other).__name__}: a Rotation composes only "
                            "with a Rotation")
        _batch_shape("Rotation.__mul__", self.quat.shape[:-1], other.quat.shape[:-1])
        return Rotation.from_quat(quaternions.compose(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """The rotated `vectors` (..., 3), by the inverse rotation if `inverse`."""
        vectors = _inexact("Rotation.apply", vectors, (3,), "vectors")
        _batch_shape("Rotation.apply", self.quat.shape[:-1], vectors.shape[:-1])
        matrix = self.as_matrix()
        return jnp.einsum("...ji,...j->...i" if inverse else "...ij,...j->...i",
                          matrix, vectors)

    def as_euler(self, seq: str, degrees: bool = False):
        """Angles (..., 3) about the three axes of `seq` ('xyz' extrinsic, 'XYZ'
        intrinsic); at gimbal lock the third angle is 0."""
        return euler.from_quaternion(self.quat, seq, degrees)

    def as_matrix(self):
        return quaternions.to_matrix(self.quat)

    def as_mrp(self):
        return quaternions.to_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False):
        return quaternions.to_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """The quaternions, scalar last (or first); `canonical` picks, of q and -q,
        the one whose w (then x, y, z where w is 0) is positive."""
        quat = quaternions.canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def inv(self):
        return Rotation(quaternions.conjugate(self.quat))

    def magnitude(self):
        """The angle of each rotation, in [0, pi]."""
        return quaternions.magnitude(self.quat)

    def mean(self, weights=None):
        """The rotation minimizing the weighted sum of squared chordal distances to
        these (Markley et al., 2007)."""
        quat = self.quat.reshape(-1, 4)
        if weights is None:
            weights = jnp.ones(quat.shape[0], quat.dtype)
        weights = jnp.asarray(weights, quat.dtype)
        if weights.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape "
                             f"{weights.shape}.")
        if weights.shape[0] != quat.shape[0]:
            raise ValueError("Expected `weights` to have number of values equal to number "
                             f"of rotations, got {weights.shape[0]} values and "
                             f"{quat.shape[0]} rotations.")
        return Rotation(quaternions.average(quat, weights))

    @property
    def single(self) -> bool:
        """Whether this holds one rotation rather than a batch."""
        return self.quat.ndim == 1
