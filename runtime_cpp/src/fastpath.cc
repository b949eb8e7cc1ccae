// plax_runtime._fastpath: the per-call work of a cached `jit` dispatch, in C++.
//
// `arg_signature` turns the flat arguments of a call into the hashable part of the
// jit cache key that depends on argument values: one (shape, dtype, weak_type)
// triple per argument, extended with the placement (sharding, committed) of device
// arrays, so that a cache hit also says where the call runs. It runs on every call of a jitted function, so it avoids
// Python-level attribute lookups, exceptions on misses, and per-call allocations
// for Python scalars.
#include "signature.h"

#include "dispatch.h"

namespace nb = nanobind;

namespace plax {

ArraySlots array_slots;

PyObject* intern(const char* name) {
  PyObject* s = PyUnicode_InternFromString(name);
  if (s == nullptr) throw nb::python_error();
  return s;
}

namespace {
PyObject** slot_at(Py_ssize_t offset, PyObject* obj) {
  return reinterpret_cast<PyObject**>(reinterpret_cast<char*>(obj) + offset);
}
}  // namespace

nb::object get_slot(Py_ssize_t offset, PyObject* obj) {
  PyObject* value = *slot_at(offset, obj);
  if (value == nullptr) {
    PyErr_Format(PyExc_AttributeError, "a %s has an unset slot", Py_TYPE(obj)->tp_name);
    throw nb::python_error();
  }
  return nb::borrow(value);
}

void set_slot(Py_ssize_t offset, PyObject* obj, PyObject* value) {
  PyObject** slot = slot_at(offset, obj);
  PyObject* previous = *slot;
  *slot = Py_NewRef(value);
  Py_XDECREF(previous);
}

namespace {

// Interned attribute names and the signatures of Python scalars, built once at
// import and kept for the life of the process (never freed, like the module).
struct Statics {
  PyObject* aval;
  PyObject* shape;
  PyObject* dtype;
  PyObject* weak_type;
  PyObject* sharding;   // "_sharding" of a plax Array
  PyObject* impl;       // "_impl": its jaxlib buffer holder
  PyObject* committed;  // "_committed" of that buffer holder
  PyObject* pjrt_layout;  // "_pjrt_layout" of that buffer holder
  PyObject* is_deleted;   // its "is_deleted" method
  PyObject* bool_sig;        // ((), dtype('bool'), False)
  PyObject* int_sig[2];      // indexed by x64: int32 / int64, weak
  PyObject* float_sig[2];    // float32 / float64, weak
  PyObject* complex_sig[2];  // complex64 / complex128, weak
};
Statics S;

// `obj.<name>` as a new reference, or an invalid object when the attribute is
// missing (without raising and clearing an AttributeError).
nb::object optional_attr(PyObject* obj, PyObject* name) {
  PyObject* out = nullptr;
#if PY_VERSION_HEX >= 0x030D0000
  int found = PyObject_GetOptionalAttr(obj, name, &out);
#else
  int found = _PyObject_LookupAttr(obj, name, &out);
#endif
  if (found < 0) throw nb::python_error();
  return nb::steal(out);
}

nb::object triple(PyObject* shape, PyObject* dtype, bool weak_type) {
  nb::object shape_tuple = PyTuple_CheckExact(shape)
                               ? nb::borrow(shape)
                               : nb::steal(PySequence_Tuple(shape));
  if (!shape_tuple.is_valid()) throw nb::python_error();
  PyObject* sig = PyTuple_Pack(3, shape_tuple.ptr(), dtype, weak_type ? Py_True : Py_False);
  if (sig == nullptr) throw nb::python_error();
  return nb::steal(sig);
}

PyObject* type_of(PyObject* x) { return reinterpret_cast<PyObject*>(Py_TYPE(x)); }

// The signature of a value whose `.aval` says what it is (plax Arrays, tracers).
nb::object signature_of_aval(PyObject* aval, Py_ssize_t index) {
  nb::object shape = optional_attr(aval, S.shape);
  nb::object dtype = optional_attr(aval, S.dtype);
  nb::object weak = optional_attr(aval, S.weak_type);
  if (!shape.is_valid() || !dtype.is_valid() || !weak.is_valid()) {
    PyErr_Format(PyExc_TypeError,
                 "Argument %zd has an aval of type %R that lacks .shape, .dtype or .weak_type",
                 index, type_of(aval));
    throw nb::python_error();
  }
  int is_weak = PyObject_IsTrue(weak.ptr());
  if (is_weak < 0) throw nb::python_error();
  return triple(shape.ptr(), dtype.ptr(), is_weak != 0);
}

// `sig` (shape, dtype, weak_type) followed by where the value is placed.
nb::object placed_signature(const nb::object& sig, PyObject* sharding, PyObject* committed) {
  PyObject* placed = PyTuple_Pack(5, PyTuple_GET_ITEM(sig.ptr(), 0), PyTuple_GET_ITEM(sig.ptr(), 1),
                                  PyTuple_GET_ITEM(sig.ptr(), 2), sharding, committed);
  if (placed == nullptr) throw nb::python_error();
  return nb::steal(placed);
}

// Whether Arrays' signatures hold their buffers' layouts (`sign_layouts`): from the
// first module that asks XLA for a layout, Arrays may have others than the default.
bool layouts_signed = false;

// `placed` followed by the layout of `impl`'s buffers (None where it cannot be read:
// a deleted Array, which the call then reports; jaxlib must not be asked for it).
nb::object with_layout(const nb::object& placed, PyObject* impl) {
  nb::object deleted = nb::steal(PyObject_CallMethodNoArgs(impl, S.is_deleted));
  if (!deleted.is_valid()) throw nb::python_error();
  PyObject* layout = deleted.ptr() == Py_True ? nullptr : PyObject_GetAttr(impl, S.pjrt_layout);
  if (layout == nullptr) {
    PyErr_Clear();
    layout = Py_NewRef(Py_None);
  }
  nb::object held = nb::steal(layout);
  PyObject* sig = PyTuple_Pack(6, PyTuple_GET_ITEM(placed.ptr(), 0),
                               PyTuple_GET_ITEM(placed.ptr(), 1), PyTuple_GET_ITEM(placed.ptr(), 2),
                               PyTuple_GET_ITEM(placed.ptr(), 3), PyTuple_GET_ITEM(placed.ptr(), 4),
                               layout);
  if (sig == nullptr) throw nb::python_error();
  return nb::steal(sig);
}

// A plax Array: its aval, sharding and committed flag, read from its slots (and its
// layout, once layouts are signed).
nb::object compute_array_signature(PyObject* x, Py_ssize_t index) {
  nb::object aval = get_slot(array_slots.aval, x);
  nb::object sig = signature_of_aval(aval.ptr(), index);
  nb::object sharding = get_slot(array_slots.sharding, x);
  nb::object impl = get_slot(array_slots.impl, x);
  nb::object committed = optional_attr(impl.ptr(), S.committed);
  if (!committed.is_valid()) return sig;
  nb::object placed = placed_signature(sig, sharding.ptr(), committed.ptr());
  return layouts_signed ? with_layout(placed, impl.ptr()) : placed;
}

}  // namespace

nb::object array_signature(PyObject* x, Py_ssize_t index) {
  nb::object cached = get_slot(array_slots.sig, x);
  if (!cached.is_none()) return cached;
  nb::object sig = compute_array_signature(x, index);
  set_slot(array_slots.sig, x, sig.ptr());
  return sig;
}

namespace {

nb::object signature_of(PyObject* x, Py_ssize_t index, bool x64) {
  // Exact Python scalars first: the most common non-array arguments, and the
  // cheapest (a shared, prebuilt tuple).
  PyTypeObject* type = Py_TYPE(x);
  if (type == &PyFloat_Type) return nb::borrow(S.float_sig[x64]);
  if (type == &PyLong_Type) return nb::borrow(S.int_sig[x64]);
  if (type == &PyBool_Type) return nb::borrow(S.bool_sig);
  if (type == &PyComplex_Type) return nb::borrow(S.complex_sig[x64]);
  if (type == array_slots.type) return array_signature(x, index);

  if (nb::object aval = optional_attr(x, S.aval); aval.is_valid()) {
    nb::object sig = signature_of_aval(aval.ptr(), index);
    nb::object sharding = optional_attr(x, S.sharding);
    nb::object impl = optional_attr(x, S.impl);
    if (!sharding.is_valid() || !impl.is_valid()) return sig;  // not placed on devices
    nb::object committed = optional_attr(impl.ptr(), S.committed);
    if (!committed.is_valid()) return sig;
    return placed_signature(sig, sharding.ptr(), committed.ptr());
  }
  if (nb::object shape = optional_attr(x, S.shape); shape.is_valid()) {
    nb::object dtype = optional_attr(x, S.dtype);
    if (dtype.is_valid()) return triple(shape.ptr(), dtype.ptr(), false);
  }
  // Subclasses of Python scalars without array attributes (e.g. IntEnum members)
  // trace like the scalar they derive from; NumPy scalars were handled above.
  if (PyLong_Check(x)) return nb::borrow(S.int_sig[x64]);
  if (PyFloat_Check(x)) return nb::borrow(S.float_sig[x64]);
  if (PyComplex_Check(x)) return nb::borrow(S.complex_sig[x64]);
  PyErr_Format(PyExc_TypeError, "Argument %zd of type %R is not a valid JAX type", index,
               type_of(x));
  throw nb::python_error();
}

}  // namespace

nb::object arg_signature(nb::handle args, bool x64) {
  nb::object seq = nb::steal(PySequence_Fast(args.ptr(), "arg_signature: args must be a sequence"));
  if (!seq.is_valid()) throw nb::python_error();
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  nb::object out = nb::steal(PyTuple_New(n));
  if (!out.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyTuple_SET_ITEM(out.ptr(), i, signature_of(items[i], i, x64).release().ptr());
  }
  return out;
}

namespace {

PyObject* scalar_signature(nb::handle np_dtype, const char* name, bool weak_type) {
  nb::object empty = nb::steal(PyTuple_New(0));
  nb::object dtype = np_dtype(name);
  return triple(empty.ptr(), dtype.ptr(), weak_type).release().ptr();
}


constexpr const char* kArgSignatureDoc = R"doc(
Return one hashable signature per argument, for the jit cache key.

Each signature is a triple ``(shape, dtype, weak_type)``: ``shape`` a tuple of
ints, ``dtype`` a ``numpy.dtype``, ``weak_type`` a bool. It is computed as:

* an object with ``.aval`` (tracers):
  ``(tuple(aval.shape), aval.dtype, bool(aval.weak_type))``;
* an object with ``.aval`` that is placed on devices (a plax Array: it has
  ``._sharding`` and ``._impl._committed``): that triple followed by its sharding
  object and committed flag, ``(shape, dtype, weak_type, sharding, committed)``,
  and, once ``sign_layouts()`` was called, by its buffers' ``PjRtLayout`` (None
  where unreadable);
* otherwise an object with ``.shape`` and ``.dtype`` (NumPy arrays and scalars):
  ``(tuple(x.shape), x.dtype, False)``; the dtype is reported as is, not
  canonicalized, so the cache key must also hold the x64 state;
* a Python ``int``/``float``/``complex`` (or a subclass with neither ``.aval``
  nor ``.shape``, e.g. an ``IntEnum`` member): the
  weakly typed scalar it is traced as, ``((), dtype, True)`` with dtype
  ``int32``/``float32``/``complex64``, or ``int64``/``float64``/``complex128``
  when ``x64`` is true;
* a Python ``bool``: ``((), dtype('bool'), False)`` (bools are not weak).

Anything else raises ``TypeError`` naming the argument's position and type.
)doc";

}  // namespace

void init_signature() {
  nb::object np_dtype = nb::module_::import_("numpy").attr("dtype");
  S.aval = intern("aval");
  S.shape = intern("shape");
  S.dtype = intern("dtype");
  S.weak_type = intern("weak_type");
  S.sharding = intern("_sharding");
  S.impl = intern("_impl");
  S.committed = intern("_committed");
  S.pjrt_layout = intern("_pjrt_layout");
  S.is_deleted = intern("is_deleted");
  S.bool_sig = scalar_signature(np_dtype, "bool", false);
  S.int_sig[0] = scalar_signature(np_dtype, "int32", true);
  S.int_sig[1] = scalar_signature(np_dtype, "int64", true);
  S.float_sig[0] = scalar_signature(np_dtype, "float32", true);
  S.float_sig[1] = scalar_signature(np_dtype, "float64", true);
  S.complex_sig[0] = scalar_signature(np_dtype, "complex64", true);
  S.complex_sig[1] = scalar_signature(np_dtype, "complex128", true);
}

}  // namespace plax

NB_MODULE(_fastpath, m) {
  m.doc() = "C++ hot paths of plax's jit and eager dispatch.";
  // Executors live in module-level caches until the interpreter exits: not leaks.
  nb::set_leak_warnings(false);
  plax::init_signature();
  m.def("arg_signature", &plax::arg_signature, nb::arg("args"), nb::arg("x64"),
        nb::sig("def arg_signature(args: collections.abc.Sequence[object], x64: bool) -> "
                "tuple[tuple[typing.Any, ...], ...]"),
        plax::kArgSignatureDoc);
  m.def("sign_layouts", [] { plax::layouts_signed = true; },
        "From now on, Arrays signed for the first time also give their buffers' layout "
        "(for processes where Arrays may have other layouts than the default).");
  plax::define_dispatch(m);
  plax::define_operators(m);
}
