"""`plax.experimental.compilation_cache.compilation_cache`: turn the persistent
compilation cache on (`set_cache_dir`), reset this process's view of it
(`reset_cache`) and ask whether it is enabled (`is_initialized`). The cache itself
is `plax_runtime.persistent_cache`."""
from plax_runtime.persistent_cache import is_initialized, reset_cache, set_cache_dir

__all__ = ["is_initialized", "reset_cache", "set_cache_dir"]
