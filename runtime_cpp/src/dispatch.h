// The cached jit call, the prepared eager call and Array operators, in C++
// (see dispatch.cc, operators.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace plax {

// Adds `configure`, `Executor` and `JitCache` to the extension module.
void define_dispatch(nanobind::module_& m);

// Whether a jitted function called now would run compiled: jit is not disabled and
// no transformation is active (throws on error).
bool jit_applies_here();

// `jitted(*operands[:n])` for a caller that has just seen `jit_applies_here()`: a plax
// jitted function goes straight to its cache lookup (throws on error).
nanobind::object call_jitted(PyObject* jitted, PyObject* const* operands, Py_ssize_t n);

// Adds `Operator` (operators.cc) to the extension module.
void define_operators(nanobind::module_& m);

}  // namespace plax
