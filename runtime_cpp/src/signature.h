// The value-dependent part of the jit cache key (see fastpath.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace plax {

// The slot descriptors of plax's `Array` class (set once by `set_array_type`), read
// and written directly: no attribute lookups, no Python properties.
struct ArraySlots {
  PyTypeObject* type = nullptr;
  PyObject* impl = nullptr;
  PyObject* aval = nullptr;
  PyObject* sharding = nullptr;
  PyObject* npy_value = nullptr;
  PyObject* sig = nullptr;  // the Array's fast-path signature, cached (None until known)
};
extern ArraySlots array_slots;

// An interned Python string, kept for the process's life (throws on error).
PyObject* intern(const char* name);

// `descr.__get__(obj)` as a new reference (throws on error).
nanobind::object get_slot(PyObject* descr, PyObject* obj);

// `descr.__set__(obj, value)` (throws on error).
void set_slot(PyObject* descr, PyObject* obj, PyObject* value);

// The signature of a plax Array (`array_slots.type`), from its `_sig` slot or
// computed once and stored there: an Array's aval, sharding and commitment never change.
nanobind::object array_signature(PyObject* x, Py_ssize_t index);

// One hashable signature per argument of the sequence `args` (TypeError otherwise).
nanobind::object arg_signature(nanobind::handle args, bool x64);

// Builds the interned names and prebuilt scalar signatures; once, at import.
void init_signature();

}  // namespace plax
