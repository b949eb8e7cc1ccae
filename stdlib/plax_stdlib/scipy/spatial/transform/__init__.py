"""`plax.scipy.spatial.transform`: rotations in 3 dimensions (`Rotation`, stored as
unit quaternions, scalar last) and spherical linear interpolation between them
(`Slerp`), both pytrees, so they pass through `jit`, `vmap` and `grad`."""
from plax_stdlib.scipy.spatial.transform.rotation import Rotation as Rotation
from plax_stdlib.scipy.spatial.transform.slerp import Slerp as Slerp
