"""`jax.experimental.array_serialization.serialization`: Arrays saved to and restored
from TensorStore zarr stores, each process writing the shards it holds.

`GlobalAsyncCheckpointManager` is what flax's checkpoints save multi-process arrays
with (`flax.training.checkpoints`, `gda_manager=`); `GlobalAsyncCheckpointManagerBase`
is the interface orbax tests checkpointers against (`isinstance`). A save returns once
the shards are copied out; their commit to storage, the barrier of all processes and
the `on_commit_callback` (run by process 0) happen on a thread, which
`wait_until_finished` joins. TensorStore (a dependency of orbax, not of plax) is
imported when a store is first opened.
"""
from __future__ import annotations

import abc
import itertools
import os
import re
import threading

import numpy as np

import plax
from plax_runtime.distributed import global_state

PLAX_MODULE = None

_CHECKPOINT_SUCCESS = "checkpoint_write_success"
_saves = itertools.count()  # each save's barrier and key-value store key


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


def get_tensorstore_spec(ckpt_path) -> dict:
    """The spec of a zarr array at `ckpt_path`: a local folder, or `gs://bucket/path`
    (Google Cloud Storage) or `s3://bucket/path`."""
    path = re.sub(r"^(gs|s3):/", r"\1://", os.path.normpath(str(ckpt_path)))
    bucket = re.fullmatch(r"(gs|s3)://([^/]*)/(.*)", path)
    if bucket:
        kvstore = {"driver": "gcs" if bucket[1] == "gs" else "s3", "bucket": bucket[2],
                   "path": bucket[3]}
    else:
        kvstore = {"driver": "file", "path": path}
    return {"driver": "zarr", "kvstore": kvstore}


def _tensorstore():
    import tensorstore
    return tensorstore


def _write(array, spec: dict) -> list:
    """Writes this process's shards of `array` (one replica of each) to the store of
    `spec`, chunked by shard; → the futures of their commits to storage."""
    ts = _tensorstore()
    spec = {"dtype": np.dtype(array.dtype).name, **spec}
    spec.setdefault("metadata", {
        "compressor": {"id": "zstd"}, "shape": list(array.shape),
        "chunks": [max(1, n) for n in array.sharding.shard_shape(array.shape)]})
    store = ts.open(ts.Spec(spec), create=True, open=True).result()
    commits = []
    for shard in array.addressable_shards:
        if shard.replica_id == 0:
            write = store[shard.index].write(np.asarray(shard.data))
            write.copy.result()  # the array may change or go once copied out
            commits.append(write.commit)
    return commits


def _read(sharding, spec, global_shape=None, dtype=None):
    """The array stored at `spec`, placed by `sharding`: `global_shape` (the stored
    one by default) may exceed the stored shape, the rest zeros; cast to `dtype`."""
    ts = _tensorstore()
    store = ts.open(ts.Spec(spec) if isinstance(spec, dict) else spec, open=True).result()
    shape = tuple(store.shape if global_shape is None else global_shape)
    dtype = plax.dtypes.canonicalize_dtype(store.dtype.numpy_dtype if dtype is None else dtype)

    def shard(index):
        wanted = ts.IndexTransform(input_shape=shape)[index].domain
        stored = store.domain.intersect(wanted)
        out = np.zeros(wanted.shape, store.dtype.numpy_dtype)
        out[tuple(slice(lo - origin, hi - origin) for lo, hi, origin in zip(
            stored.inclusive_min, stored.exclusive_max, wanted.origin))] = \
            store[stored].read().result()
        return out.astype(dtype)
    return plax.make_array_from_callback(shape, sharding, shard)


class GlobalAsyncCheckpointManager(GlobalAsyncCheckpointManagerBase):
    """Saves arrays to TensorStore asynchronously and restores them; in a
    multi-process run, every process saves its shards and the checkpoint is done
    once all have committed (`plax.distributed.initialize` must have run)."""

    def __init__(self, timeout_secs: int = 300):
        if plax.process_count() > 1 and global_state.client is None:
            raise ValueError("a multi-process checkpoint needs the distributed system: "
                             "call plax.distributed.initialize() first")
        self._timeout_ms = timeout_secs * 1000
        self._thread: threading.Thread | None = None
        self._exception: BaseException | None = None
        self._key: str | None = None

    def serialize(self, arrays, tensorstore_specs, *, on_commit_callback=None):
        """Starts saving `arrays` (each to the store of its spec); returns once their
        shards are copied out, and `on_commit_callback` runs on process 0 once every
        process has committed them to storage."""
        self.wait_until_finished()
        commits = [c for a, s in zip(arrays, tensorstore_specs, strict=True)
                   for c in _write(a, s)]
        self._key = f"plax_checkpoint_{next(_saves)}"
        self._thread = threading.Thread(target=self._commit,
                                        args=(commits, self._key, on_commit_callback))
        self._thread.start()

    def _commit(self, commits, key, on_commit_callback):
        try:
            for commit in commits:
                commit.result()
            if plax.process_count() > 1:
                global_state.client.wait_at_barrier(key, self._timeout_ms)
            if plax.process_index() == 0:
                if on_commit_callback is not None:
                    on_commit_callback()
                if plax.process_count() > 1:
                    global_state.client.key_value_set(key, _CHECKPOINT_SUCCESS)
        except Exception as e:  # raised by check_for_errors, in the caller's thread
            self._exception = e

    def check_for_errors(self):
        """Raises (once) the error of the last save, if it failed."""
        exception, self._exception = self._exception, None
        if exception is not None:
            raise exception

    def wait_until_finished(self):
        """Blocks until the last save is committed everywhere (and its callback ran)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check_for_errors()
        if plax.process_count() > 1 and self._key is not None:
            global_state.client.blocking_key_value_get(self._key, self._timeout_ms)

    def serialize_with_paths(self, arrays, paths, *, on_commit_callback=None):
        return self.serialize(arrays, [get_tensorstore_spec(p) for p in paths],
                              on_commit_callback=on_commit_callback)

    def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                    concurrent_gb: int = 32):
        """The arrays of the stores, placed by `shardings` (after the last save)."""
        del concurrent_gb  # (JAX's bound on the bytes read at once; reads are sequential)
        self.wait_until_finished()
        n = len(tensorstore_specs)
        return [_read(*args) for args in zip(shardings, tensorstore_specs,
                                             global_shapes or [None] * n,
                                             dtypes or [None] * n, strict=True)]

    def deserialize_with_paths(self, shardings, paths, global_shapes=None, dtypes=None,
                               concurrent_gb: int = 32):
        return self.deserialize(shardings, [get_tensorstore_spec(p) for p in paths],
                                global_shapes, dtypes, concurrent_gb)
