"""`jax.experimental.array_serialization.serialization`: the interface of an
asynchronous checkpoint manager, which orbax tests checkpointers against
(`isinstance`). plax ships no implementation of it (orbax's own checkpointers
save plax Arrays)."""
from __future__ import annotations

import abc

PLAX_MODULE = None


class GlobalAsyncCheckpointManagerBase(abc.ABC):
    """Saves and restores arrays asynchronously, one checkpoint in flight at a time."""

    @abc.abstractmethod
    def check_for_errors(self):
        """Raises the error of the last asynchronous save, if it failed."""

    @abc.abstractmethod
    def wait_until_finished(self):
        """Blocks until the save in flight has finished."""

    @abc.abstractmethod
    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback):
        """Starts saving `arrays`; `on_commit_callback` runs once they are written."""

    @abc.abstractmethod
    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None):
        """Reads arrays back with `shardings`."""
