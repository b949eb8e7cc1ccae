"""The XLA flags the suite runs under (tests/conftest.py sets them when the environment
has none): eight virtual CPU devices, so multi-device code is tested without
accelerators, and cheap compilation. The suite's cost is compiling many small programs
whose machine code the tests do not measure: LLVM's optimizations off (XLA's HLO passes
still run; about a quarter of the CPU time) and XLA:CPU's older loop emitters in place
of its MLIR fusion emitters (about 30% less CPU per small compile). Subprocesses
inherit them, so JAX references compile the same way; recorded JAX outputs
(tests/recorded/) are made under them too."""
XLA_FLAGS = ("--xla_force_host_platform_device_count=8 --xla_backend_optimization_level=0 "
             "--xla_cpu_use_fusion_emitters=false")
