"""orbax-checkpoint saving and restoring a pytree of arrays, sharded ones included,
with its standard checkpointer; run with JAX or through the alias (PLAX_AS_JAX=1),
in the ecosystem venv. Prints one line per check and exits non-zero on a mismatch.
"""
from __future__ import annotations

import os
import sys
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import orbax.checkpoint as ocp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def tree():
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    split = NamedSharding(mesh, P("x", "y"))
    return {
        "dense": {"w": jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4),
                  "b": jnp.ones((4,), jnp.bfloat16)},
        "sharded": jax.device_put(jnp.arange(64, dtype=jnp.int32).reshape(8, 8), split),
        "row_split": jax.device_put(jnp.linspace(0, 1, 32).reshape(4, 8),
                                    NamedSharding(mesh, P(None, "y"))),
        "step": 7,
    }


def main() -> int:
    state = tree()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt")
        with ocp.StandardCheckpointer() as checkpointer:
            checkpointer.save(path, state)
            checkpointer.wait_until_finished()
            abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
            restored = checkpointer.restore(path, abstract)
    for key_path, original in jax.tree_util.tree_leaves_with_path(state):
        got = restored
        for entry in key_path:
            got = got[entry.key]
        name = jax.tree_util.keystr(key_path)
        same = np.array_equal(np.asarray(got), np.asarray(original))
        if isinstance(original, jax.Array):
            same = same and got.dtype == original.dtype and isinstance(got, jax.Array)
            same = same and got.sharding.is_equivalent_to(original.sharding, original.ndim)
        print(f"{name}: {'ok' if same else 'MISMATCH'} {type(got).__module__}")
        failures += not same
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
