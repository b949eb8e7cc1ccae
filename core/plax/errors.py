"""Public exception classes (JAX's names)."""
from plax._src.errors import (ConcretizationTypeError, TracerArrayConversionError,  # noqa: F401
                              TracerBoolConversionError, TracerIntegerConversionError,
                              UnexpectedTracerError)
from plax._src.checking import JaxprTypeError  # noqa: F401
from jaxlib._jax import JaxRuntimeError  # noqa: F401  (errors the runtime reports, as in JAX)
