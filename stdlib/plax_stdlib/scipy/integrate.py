"""`plax.scipy.integrate`: the trapezoidal rule, SciPy's name for `plax.numpy.trapezoid`
(same promotion, sample points or spacing, and axis)."""
from __future__ import annotations

from plax_stdlib.numpy.differences import trapezoid as _trapezoid


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """∫ y along `axis` by the trapezoidal rule, at sample points `x` or spacing `dx`."""
    return _trapezoid(y, x, dx, axis)
