// The value-dependent part of the jit cache key (see fastpath.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace plax {

// One hashable signature per argument of the sequence `args` (TypeError otherwise).
nanobind::object arg_signature(nanobind::handle args, bool x64);

// Builds the interned names and prebuilt scalar signatures; once, at import.
void init_signature();

}  // namespace plax
