"""Exceptions users meet while tracing, with JAX's names and classes."""


class ConcretizationTypeError(TypeError):
    """A traced value was used where Python needs a concrete one."""


class TracerBoolConversionError(ConcretizationTypeError):
    """`bool(tracer)`, e.g. `if x > 0:` on a traced `x`."""


class TracerIntegerConversionError(TypeError):
    """`int(tracer)` or using a tracer as an index into a Python sequence."""


class TracerArrayConversionError(TypeError):
    """`np.asarray(tracer)`: the value does not exist while tracing."""


class UnexpectedTracerError(Exception):
    """A tracer was used outside the transformation that created it."""
