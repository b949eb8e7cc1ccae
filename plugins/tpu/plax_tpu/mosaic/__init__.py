"""Pallas kernels compiled for TPU: a kernel's Jaxpr lowered to Mosaic (`kernel.py`)
and wrapped in the `tpu_custom_call` libtpu compiles (`custom_call.py`)."""
