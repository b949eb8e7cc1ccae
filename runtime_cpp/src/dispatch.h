// The cached jit call and the prepared eager call, in C++ (see dispatch.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace plax {

// Adds `configure`, `Executor` and `JitCache` to the extension module.
void define_dispatch(nanobind::module_& m);

}  // namespace plax
