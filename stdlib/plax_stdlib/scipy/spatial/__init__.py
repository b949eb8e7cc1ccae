"""`plax.scipy.spatial`: spatial algorithms; `plax.scipy.spatial.transform` holds 3-D
rotations (`Rotation`) and their spherical interpolation (`Slerp`)."""
from plax_stdlib.scipy.spatial import transform as transform
