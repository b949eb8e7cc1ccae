"""plax's configuration for library authors: defining options (`Flag`s read once,
thread-local `State`s with context managers), the standard options, and the
trace/jit key contexts that caches include."""
from plax._src.config import (
    TRANSFER_DIRECTIONS, TRANSFER_GUARD_LEVELS, allow_f16_reductions,
    array_garbage_collection_guard, check_tracer_leaks, no_execution, no_tracing,
    transfer_guard_device_to_device, transfer_guard_device_to_host,
    transfer_guard_host_to_device,
    Config, Flag, State, StateContext, compilation_cache_dir,
    compilation_cache_include_metadata_in_key, compilation_cache_max_size, config,
    cpu_enable_async_dispatch, enable_compilation_cache,
    debug_infs, debug_nans, default_device, default_matmul_precision, default_prng_impl,
    disable_jit, enable_checks, enable_custom_prng, enable_pgle, enable_x64, env_var_names,
    explain_cache_misses, high_dynamic_range_gumbel, jit_key_context, legacy_prng_key, log_compiles,
    num_cpu_devices, numpy_dtype_promotion, numpy_rank_promotion,
    persistent_cache_min_compile_time_secs, persistent_cache_min_entry_size_bytes,
    pgle_profiling_runs, platforms, random_seed_offset, raise_persistent_cache_errors,
    softmax_custom_jvp, threefry_partitionable,
    trace_context, unset, use_shardy_partitioner)

__all__ = [
    "TRANSFER_DIRECTIONS", "TRANSFER_GUARD_LEVELS", "allow_f16_reductions",
    "array_garbage_collection_guard", "check_tracer_leaks", "no_execution", "no_tracing",
    "transfer_guard_device_to_device", "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
    "Config", "Flag", "State", "StateContext", "compilation_cache_dir",
    "compilation_cache_include_metadata_in_key", "compilation_cache_max_size", "config",
    "cpu_enable_async_dispatch", "enable_compilation_cache", "debug_infs", "debug_nans",
    "default_device",
    "default_matmul_precision", "default_prng_impl", "disable_jit", "enable_checks",
    "enable_custom_prng", "enable_pgle", "enable_x64", "env_var_names", "explain_cache_misses",
    "high_dynamic_range_gumbel", "jit_key_context", "legacy_prng_key", "log_compiles",
    "num_cpu_devices", "numpy_dtype_promotion", "numpy_rank_promotion",
    "persistent_cache_min_compile_time_secs", "persistent_cache_min_entry_size_bytes",
    "pgle_profiling_runs", "platforms", "random_seed_offset", "raise_persistent_cache_errors",
    "softmax_custom_jvp",
    "threefry_partitionable",
    "trace_context", "unset", "use_shardy_partitioner",
]
