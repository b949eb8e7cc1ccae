"""Events and durations that plax records, and the listeners that receive them.

The API and the event names are JAX's (`jax.monitoring`), so tools written for JAX
observe plax unchanged: a top-level `jit` trace records
`/jax/core/compile/jaxpr_trace_duration`, a lowering to StableHLO
`/jax/core/compile/jaxpr_to_mlir_module_duration`, and a backend compile
`/jax/core/compile/backend_compile_duration`, each with `fun_name=`. Listeners are
called synchronously, in registration order, on the thread that records.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Protocol

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
"""Duration event of tracing a function to a Jaxpr (JAX's name, so JAX tools count it)."""
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
"""Duration event of lowering a Jaxpr to a StableHLO module."""
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
"""Duration event of compiling a module for a device assignment."""


class EventListener(Protocol):
    def __call__(self, event: str, **kwargs: str | int) -> None: ...


class EventDurationListener(Protocol):
    def __call__(self, event: str, duration_secs: float, **kwargs: str | int) -> None: ...


class EventTimeSpanListener(Protocol):
    def __call__(self, event: str, start_time: float, end_time: float,
                 **kwargs: str | int) -> None: ...


class ScalarListener(Protocol):
    def __call__(self, event: str, value: float | int, **kwargs: str | int) -> None: ...


_event_listeners: list[EventListener] = []
_duration_listeners: list[EventDurationListener] = []
_time_span_listeners: list[EventTimeSpanListener] = []
_scalar_listeners: list[ScalarListener] = []


def record_event(event: str, **kwargs: str | int) -> None:
    """Tells every event listener that `event` happened."""
    for listener in tuple(_event_listeners):
        listener(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Tells every duration listener that `event` took `duration` seconds."""
    for listener in tuple(_duration_listeners):
        listener(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
    """Tells every time-span listener when `event` started and ended (`time.time()`)."""
    for listener in tuple(_time_span_listeners):
        listener(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Tells every scalar listener the value `event` measured."""
    for listener in tuple(_scalar_listeners):
        listener(event, value, **kwargs)


def register_event_listener(callback: EventListener) -> None:
    _event_listeners.append(callback)


def register_event_duration_secs_listener(callback: EventDurationListener) -> None:
    _duration_listeners.append(callback)


def register_event_time_span_listener(callback: EventTimeSpanListener) -> None:
    _time_span_listeners.append(callback)


def register_scalar_listener(callback: ScalarListener) -> None:
    _scalar_listeners.append(callback)


def _unregister(listeners: list, callback: Callable, what: str) -> None:
    try:
        listeners.remove(callback)
    except ValueError:
        raise ValueError(f"{callback!r} is not a registered {what} listener") from None


def unregister_event_listener(callback: EventListener) -> None:
    _unregister(_event_listeners, callback, "event")


def unregister_event_duration_listener(callback: EventDurationListener) -> None:
    _unregister(_duration_listeners, callback, "event duration")


def unregister_event_time_span_listener(callback: EventTimeSpanListener) -> None:
    _unregister(_time_span_listeners, callback, "event time span")


def unregister_scalar_listener(callback: ScalarListener) -> None:
    _unregister(_scalar_listeners, callback, "scalar")


def get_event_listeners() -> list[EventListener]:
    return list(_event_listeners)


def get_event_duration_listeners() -> list[EventDurationListener]:
    return list(_duration_listeners)


def get_event_time_span_listeners() -> list[EventTimeSpanListener]:
    return list(_time_span_listeners)


def get_scalar_listeners() -> list[ScalarListener]:
    return list(_scalar_listeners)


def clear_event_listeners() -> None:
    """Removes every listener of every kind."""
    for listeners in (_event_listeners, _duration_listeners, _time_span_listeners,
                      _scalar_listeners):
        listeners.clear()


class timed_event:
    """Times a compile step as JAX does: records `event`'s start time (a scalar), its
    duration and its time span with `fun_name=`, and logs `message` (formatted with
    `fun_name` and `elapsed_time`) on `logger` at `level()` when that is enabled."""
    __slots__ = ("event", "fun_name", "message", "logger", "level", "start")

    def __init__(self, event: str, fun_name: str, message: str, logger: logging.Logger,
                 level: Callable[[], int]):
        self.event, self.fun_name, self.message = event, fun_name, message
        self.logger, self.level = logger, level

    def __enter__(self):
        self.start = time.time()
        record_scalar(self.event, self.start, fun_name=self.fun_name)
        return self

    def __exit__(self, exc_type, exc, tb):
        end = time.time()
        elapsed = end - self.start
        level = self.level()
        if self.logger.isEnabledFor(level):
            self.logger.log(level, self.message.format(fun_name=self.fun_name,
                                                       elapsed_time=elapsed))
        if exc_type is None:
            record_event_duration_secs(self.event, elapsed, fun_name=self.fun_name)
            record_event_time_span(self.event, self.start, end, fun_name=self.fun_name)
