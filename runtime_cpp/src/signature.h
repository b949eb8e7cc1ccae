// The value-dependent part of the jit cache key (see fastpath.cc).
#pragma once

#include <nanobind/nanobind.h>

namespace plax {

// Where plax's `Array` class (set once by `set_array_type`) keeps its `__slots__`: the
// byte offsets of the object pointers in its instances, read and written in place (no
// attribute lookup, no descriptor call). Only for instances of exactly that class.
struct ArraySlots {
  PyTypeObject* type = nullptr;
  Py_ssize_t impl = 0;
  Py_ssize_t aval = 0;
  Py_ssize_t sharding = 0;
  Py_ssize_t npy_value = 0;
  Py_ssize_t sig = 0;  // the Array's fast-path signature, cached (None until known)
};
extern ArraySlots array_slots;

// An interned Python string, kept for the process's life (throws on error).
PyObject* intern(const char* name);

// The value of the slot at byte `offset` of Array `obj` as a new reference
// (AttributeError when it was never set, as the slot's descriptor would raise).
nanobind::object get_slot(Py_ssize_t offset, PyObject* obj);

// Sets the slot at byte `offset` of Array `obj` to `value` (a new reference is kept).
void set_slot(Py_ssize_t offset, PyObject* obj, PyObject* value);

// The signature of a plax Array (`array_slots.type`), from its `_sig` slot or
// computed once and stored there: an Array's aval, sharding and commitment never change.
nanobind::object array_signature(PyObject* x, Py_ssize_t index);

// One hashable signature per argument of the sequence `args` (TypeError otherwise).
nanobind::object arg_signature(nanobind::handle args, bool x64);

// Builds the interned names and prebuilt scalar signatures; once, at import.
void init_signature();

}  // namespace plax
