"""The configuration options JAX 0.10.2 defines, against plax's (JAX in a subprocess;
skipped where it is not installed).

Every option of JAX's is one of: an option plax implements (with its behaviour), one
plax accepts and ignores because it names nothing plax has (`IGNORED_JAX_OPTIONS`:
other backends, multi-host transports, jax2tf, JAX's internal implementation switches),
or one listed in `NOT_YET` below, meaningful in plax but not implemented (setting it
is an "Unrecognized config option" error). The lists are exact both ways.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import plax
import plax.numpy as jnp
from jax_differential import requires_jax
from plax.extend import config as plax_config

# Meaningful in plax, not implemented yet (each would need behaviour, not a name).
NOT_YET = {
    "eager_constant_folding", "jax_backend_target", "jax_captured_constants_report_frames",
    "jax_captured_constants_warn_bytes", "jax_check_proxy_envs", "jax_check_static_indices",
    "jax_compilation_cache_check_contents", "jax_cpu_get_global_topology_timeout_minutes",
    "jax_cpu_get_local_topology_timeout_minutes", "jax_disable_bwd_checks",
    "jax_disable_vmap_shmap_error", "jax_disallow_mesh_context_manager",
    "jax_distributed_debug", "jax_embedded_constants_max_bytes",
    "jax_error_checking_behavior_divide", "jax_error_checking_behavior_nan",
    "jax_error_checking_behavior_oob", "jax_experimental_unsafe_xla_runtime_errors",
    "jax_explicit_x64_dtypes", "jax_export_calling_convention_version",
    "jax_export_ignore_forward_compatibility", "jax_hlo_source_file_canonicalization_regex",
    "jax_include_debug_info_in_dumps", "jax_include_full_tracebacks_in_locations",
    "jax_log_checkpoint_residuals", "jax_mosaic_allow_hlo", "jax_mutable_array_checks",
    "jax_pallas_enable_debug_checks", "jax_pallas_poison_buffers", "jax_pallas_verbose_errors",
    "jax_persistent_cache_enable_xla_caches", "jax_pjrt_client_create_options",
    "jax_remove_custom_partitioning_ptr_from_cache_key", "jax_send_traceback_to_runtime",
    "jax_serialization_version", "jax_share_binary_between_hosts",
    "jax_sort_devices_by_process_index", "jax_source_url_schema",
    "jax_traceback_in_locations_limit", "jax_tracer_error_num_traceback_frames",
    "jax_xla_backend",
}
# plax's own options JAX does not have (jax_log_fastpath_misses once the fast path loads).
PLAX_ONLY = {"jax_coordinator_listen_on_all_interfaces", "jax_distributed_collective_timeout",
             "jax_log_fastpath_misses"}


@pytest.fixture(scope="module")
def jax_options() -> dict:
    """JAX's options and the repr of their default values."""
    code = ("import json, jax; print(json.dumps({k: repr(v) for k, v in "
            "jax.config.values.items()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JAX_PLATFORMS="cpu"), timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@requires_jax
def test_every_jax_option_is_implemented_ignored_or_listed(jax_options):
    mine = set(plax.config.values())
    assert NOT_YET <= set(jax_options) and not NOT_YET & mine, NOT_YET & mine
    assert set(jax_options) - mine == NOT_YET, sorted(set(jax_options) - mine ^ NOT_YET)
    assert mine - set(jax_options) <= PLAX_ONLY
    for name in NOT_YET:
        with pytest.raises(AttributeError, match="Unrecognized config option"):
            plax.config.update(name, jax_options[name])


@requires_jax
def test_ignored_options_have_jaxs_defaults(jax_options):
    ignored = plax_config.IGNORED_JAX_OPTIONS
    assert set(ignored) <= set(jax_options)
    assert {k: repr(v) for k, v in ignored.items()} == {k: jax_options[k] for k in ignored}
    assert all("ignored" in plax.config._holder(k).help for k in ignored)


@requires_jax
@pytest.mark.parametrize("name", ["jax_optimization_level", "jax_memory_fitting_level",
                                  "jax_exec_time_optimization_effort",
                                  "jax_memory_fitting_effort", "jax_compiler_enable_remat_pass",
                                  "jax_dump_ir_to", "jax_dump_ir_modes", "jax_logging_level",
                                  "jax_debug_log_modules", "check_vma", "jax_platform_name"])
def test_implemented_options_have_jaxs_defaults(jax_options, name):
    assert repr(plax.config.values()[name]) == jax_options[name]


def test_compiler_settings_reach_xla():
    from plax_runtime import executable
    with plax_config.optimization_level("O1"), plax_config.memory_fitting_effort(0.5), \
            plax_config.compiler_enable_remat_pass(False), \
            plax_config.disable_most_optimizations(True):
        settings = dict(executable._configured_build())
        f = plax.jit(lambda x: x * 2 + 1)
        np.testing.assert_array_equal(f(np.ones(3, np.float32)), [3, 3, 3])
        tuned = f.lower(np.ones(3, np.float32)).compile()
    assert settings["optimization_level"] == 19 and settings["memory_fitting_effort"] == 0.5
    assert settings["debug_options.xla_disable_hlo_passes"] == "rematerialization"
    assert settings["debug_options.xla_backend_optimization_level"] == 0
    plain = f.lower(np.ones(3, np.float32)).compile()
    assert tuned is not plain  # the settings are part of the compiled executable's key
    with pytest.raises(ValueError):
        plax.config.update("jax_optimization_level", "O7")


def test_dump_ir_to_writes_each_compiled_program(tmp_path):
    with plax_config.dump_ir_to(str(tmp_path)):
        plax.jit(lambda x: jnp.sin(x) + 3.0)(np.ones(2, np.float32))
    (dumped,) = os.listdir(tmp_path)
    assert dumped.endswith(".mlir") and "stablehlo.sine" in (tmp_path / dumped).read_text()
    with plax_config.dump_ir_to(str(tmp_path)), plax_config.dump_ir_modes("jaxpr"):
        plax.jit(lambda x: jnp.cos(x) + 4.0)(np.ones(2, np.float32))
    assert len(os.listdir(tmp_path)) == 1  # no StableHLO asked for


def test_logging_options_set_plax_loggers():
    try:
        plax.config.update("jax_logging_level", "DEBUG")
        assert logging.getLogger("plax").level == logging.DEBUG
        plax.config.update("jax_debug_log_modules", "plax_runtime.executable")
        assert logging.getLogger("plax_runtime.executable").level == logging.DEBUG
    finally:
        plax.config.update("jax_logging_level", "NOTSET")
        logging.getLogger("plax_runtime.executable").setLevel(logging.NOTSET)
        plax.config.update("jax_debug_log_modules", "")
    assert logging.getLogger("plax").level == logging.NOTSET


def test_check_vma_is_on_while_a_checked_shard_map_body_is_traced():
    mesh = plax.make_mesh((2,), ("i",), axis_types=(plax.sharding.AxisType.Auto,))
    seen = []

    def body(v):
        seen.append(plax.config.check_vma)
        return v
    for check in (True, False):
        plax.shard_map(body, mesh=mesh, in_specs=plax.sharding.PartitionSpec("i"),
                       out_specs=plax.sharding.PartitionSpec("i"),
                       check_vma=check)(jnp.arange(4.0))
    assert seen == [True, False] and plax.config.check_vma is False


def test_platform_name_chooses_the_default_backend():
    code = ("import plax; print(plax.default_backend(), plax.devices()[0].platform)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JAX_PLATFORM_NAME="cpu"), timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["cpu", "cpu"]
