"""`plax.experimental.colocated_python`: Python run on the hosts of a set of devices.

`colocated_python(fun)` runs `fun` where its argument arrays live: on the CPU devices
`colocated_cpu_devices` pairs with accelerators. In one process those hosts are this
one, so the function runs here, on the arrays themselves, as JAX's runtime does when it
has no colocated-Python backend (a multi-process, Pathways-style backend ships the
pickled function to the remote hosts instead). `colocated_python_class` does the same
for a class: the real instance is made on first method use and dropped with its wrapper.

Reading path: `devices.py` (which CPU devices), `pickling.py` (how a function is
shipped), `functions.py` (specialization and calls), `objects.py` (classes).
"""
from plax_sharding.colocated_python.devices import colocated_cpu_devices
from plax_sharding.colocated_python.functions import colocated_python
from plax_sharding.colocated_python.objects import colocated_python_class

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]
