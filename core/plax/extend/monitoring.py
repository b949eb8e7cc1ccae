"""Recording plax's compile-step events from other packages: the event names and
`timed_event`, which records a step's start, duration and time span and logs it."""
from plax._src.monitoring import (BACKEND_COMPILE_EVENT, JAXPR_TO_MLIR_MODULE_EVENT,
                                  JAXPR_TRACE_EVENT, timed_event)

__all__ = ["BACKEND_COMPILE_EVENT", "JAXPR_TO_MLIR_MODULE_EVENT", "JAXPR_TRACE_EVENT",
           "timed_event"]
