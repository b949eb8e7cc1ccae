"""The standard primitives. Importing this package defines them all; the
`plax.primitives` entry point `lax` names it, so the plugin registry loads it too."""
from plax._src.lax import (  # noqa: F401  (imported to define the primitives)
    bitwise, comparison, conversion, creation, cumulative, dot, elementwise, gather, parallel,
    reductions, scatter, shape_ops, slicing, sorting)
