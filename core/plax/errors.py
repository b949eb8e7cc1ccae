"""Public exception classes (JAX's names and hierarchy); `docs/errors.md` explains
each and its fixes."""
from jaxlib._jax import JaxRuntimeError  # noqa: F401  (XLA's runtime errors)

from plax._src.checking import JaxprTypeError  # noqa: F401
from plax._src.errors import (  # noqa: F401
    ConcretizationTypeError,
    DistributedError,
    InvalidShapeError,
    JAXIndexError,
    JAXTypeError,
    KeyReuseError,
    NonConcreteBooleanIndexError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
