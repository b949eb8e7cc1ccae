"""The standard primitives. Importing this package defines them all; the
`plax.primitives` entry point `lax` names it, so the plugin registry loads it too."""
from plax._src.lax import (bitwise, comparison, conversion, creation, cumulative, dot,
                           elementwise, gather, parallel, reductions, shape_ops, slicing,
                           sorting)  # noqa: F401
