"""plax's runtime: backends, `Array`, `device_put`, compile and execute.

Reading path: `backends.py` (the registry plugins join) → `cpu.py` → `array.py`
(`Array` around jaxlib's buffers) → `device_put.py` → `executable.py` → `api.py`.
Importing this package is cheap: no backend starts until a device is needed.
"""
