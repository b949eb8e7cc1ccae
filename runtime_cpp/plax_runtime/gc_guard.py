"""The array garbage-collection guard (`jax_array_garbage_collection_guard`).

An Array should be freed by reference counting, the moment its last reference goes;
one caught in a reference cycle holds its device memory until Python's cycle
collector runs. With the guard at 'log' or 'fatal', Arrays made while it is on are
watched: if the collector frees one, an error is logged (and with 'fatal' the
process aborts), naming the array's type, so that the cycle can be broken.
Watching costs a finalizer per Array, so arrays are watched only while the guard is on.
"""
from __future__ import annotations

import gc
import logging
import os
import weakref

from plax.extend import config

logger = logging.getLogger("plax.gc_guard")

watching = False  # read by `Array._from_impl`: whether new Arrays are watched
_collecting = False


def _track_collections(phase: str, info: dict) -> None:
    global _collecting
    _collecting = phase == "start"


def _follow_level(level: str | None) -> None:
    global watching
    watching = level in ("log", "fatal")
    if watching and _track_collections not in gc.callbacks:
        gc.callbacks.append(_track_collections)


def watch(array) -> None:
    """Reports the collector freeing `array` (called on new Arrays while `watching`)."""
    weakref.finalize(array, _freed, array.aval.str_short())


def _freed(what: str) -> None:
    if not _collecting:
        return  # freed by reference counting: as it should be
    level = config.array_garbage_collection_guard.value
    if level not in ("log", "fatal"):
        return
    message = (f"plax.Array {what} was freed by Python's garbage collector instead of "
               "reference counting: a reference cycle kept it (and its device memory) "
               "alive. Break the cycle so that it is freed as soon as it is unused.")
    if level == "fatal":
        logger.critical("%s", message)
        os.abort()
    logger.error("%s", message)


config.array_garbage_collection_guard.add_update_hook(_follow_level)
