"""`plax.monitoring`: listen to the events and durations plax records (JAX's
`jax.monitoring` API and event names).

For example, counting backend compiles::

    compiles = []
    plax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: compiles.append(kw["fun_name"])
        if event == "/jax/core/compile/backend_compile_duration" else None)
"""
from plax._src.monitoring import (
    clear_event_listeners,
    get_event_duration_listeners,
    get_event_listeners,
    get_event_time_span_listeners,
    get_scalar_listeners,
    record_event,
    record_event_duration_secs,
    record_event_time_span,
    record_scalar,
    register_event_duration_secs_listener,
    register_event_listener,
    register_event_time_span_listener,
    register_scalar_listener,
    unregister_event_duration_listener,
    unregister_event_listener,
    unregister_event_time_span_listener,
    unregister_scalar_listener,
)

__all__ = [
    "clear_event_listeners", "get_event_duration_listeners", "get_event_listeners",
    "get_event_time_span_listeners", "get_scalar_listeners", "record_event",
    "record_event_duration_secs", "record_event_time_span", "record_scalar",
    "register_event_duration_secs_listener", "register_event_listener",
    "register_event_time_span_listener", "register_scalar_listener",
    "unregister_event_duration_listener", "unregister_event_listener",
    "unregister_event_time_span_listener", "unregister_scalar_listener",
]
