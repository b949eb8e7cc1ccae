// plax_runtime._fastpath.Operator: an arithmetic operator of plax Arrays (`x * 1.0001`,
// `-x`) that, outside every transformation, calls its jitted NumPy function from C++.
//
// Installed as `Array.__mul__`, `Array.__neg__` and the like. CPython calls an
// operator's method unbound when its type is a method descriptor, so `x * s` and `-x`
// cost no Python frame: the operands are checked here and handed to the jitted
// function's fast path. Any other case (an operand that is not an Array or an exact
// Python scalar, a call inside a trace, `disable_jit`) runs the generic operator it
// replaces.
#include <nanobind/nanobind.h>

#include "dispatch.h"
#include "signature.h"

namespace nb = nanobind;

namespace plax {
namespace {

struct OperatorObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* resolve;   // () -> the jitted NumPy function, asked once
  PyObject* jitted;    // its answer, or NULL until the first fast call
  PyObject* generic;   // (x, other) -> result: the operator this one speeds up
  int reflected;       // x is the right operand (`__rmul__`)
};

bool plain_operand(PyObject* x) {
  PyTypeObject* type = Py_TYPE(x);
  return type == array_slots.type || type == &PyFloat_Type || type == &PyLong_Type ||
         type == &PyBool_Type || type == &PyComplex_Type;
}

PyObject* operator_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf,
                              PyObject* kwnames) {
  auto* op = reinterpret_cast<OperatorObject*>(self);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  if ((nargs == 1 || (nargs == 2 && plain_operand(args[1]))) && kwnames == nullptr &&
      Py_TYPE(args[0]) == array_slots.type) {
    try {
      if (jit_applies_here()) {
        if (op->jitted == nullptr) {
          op->jitted = PyObject_CallNoArgs(op->resolve);
          if (op->jitted == nullptr) return nullptr;
        }
        if (nargs == 2 && op->reflected) {
          PyObject* swapped[2] = {args[1], args[0]};
          return call_jitted(op->jitted, swapped, 2).release().ptr();
        }
        return call_jitted(op->jitted, args, nargs).release().ptr();
      }
    } catch (nb::python_error& err) {
      err.restore();
      return nullptr;
    }
  }
  return PyObject_Vectorcall(op->generic, args, nargsf, kwnames);
}

PyObject* operator_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return PyVectorcall_Call(self, args, kwargs);
}

// `x.__mul__` (attribute access, not the operator): a bound method, as for functions.
PyObject* operator_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

int operator_traverse(PyObject* self, visitproc visit, void* arg) {
  auto* op = reinterpret_cast<OperatorObject*>(self);
  Py_VISIT(op->resolve);
  Py_VISIT(op->jitted);
  Py_VISIT(op->generic);
  return 0;
}

int operator_clear(PyObject* self) {
  auto* op = reinterpret_cast<OperatorObject*>(self);
  Py_CLEAR(op->resolve);
  Py_CLEAR(op->jitted);
  Py_CLEAR(op->generic);
  return 0;
}

void operator_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  operator_clear(self);
  Py_TYPE(self)->tp_free(self);
}

PyObject* operator_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* names[] = {"resolve", "generic", "reflected", nullptr};
  PyObject *resolve, *generic;
  int reflected;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOp:Operator", const_cast<char**>(names),
                                   &resolve, &generic, &reflected)) {
    return nullptr;
  }
  if (!PyCallable_Check(resolve) || !PyCallable_Check(generic)) {
    PyErr_SetString(PyExc_TypeError, "Operator: resolve and generic must be callable");
    return nullptr;
  }
  auto* op = reinterpret_cast<OperatorObject*>(type->tp_alloc(type, 0));
  if (op == nullptr) return nullptr;
  op->vectorcall = operator_vectorcall;
  op->resolve = Py_NewRef(resolve);
  op->jitted = nullptr;
  op->generic = Py_NewRef(generic);
  op->reflected = reflected;
  return reinterpret_cast<PyObject*>(op);
}

PyTypeObject OperatorType = {PyVarObject_HEAD_INIT(nullptr, 0)};

}  // namespace

void define_operators(nb::module_& m) {
  OperatorType.tp_name = "plax_runtime._fastpath.Operator";
  OperatorType.tp_basicsize = sizeof(OperatorObject);
  OperatorType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                          Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
  OperatorType.tp_doc = PyDoc_STR(
      "Operator(resolve, generic, reflected): an Array operator whose calls outside every "
      "transformation (unary, or with an Array or Python scalar beside the Array) go to "
      "the jitted function resolve() returns.");
  OperatorType.tp_vectorcall_offset = offsetof(OperatorObject, vectorcall);
  OperatorType.tp_call = operator_call;
  OperatorType.tp_descr_get = operator_get;
  OperatorType.tp_traverse = operator_traverse;
  OperatorType.tp_clear = operator_clear;
  OperatorType.tp_dealloc = operator_dealloc;
  OperatorType.tp_new = operator_new;
  if (PyType_Ready(&OperatorType) < 0) throw nb::python_error();
  Py_INCREF(&OperatorType);
  m.attr("Operator") = nb::handle(reinterpret_cast<PyObject*>(&OperatorType));
}

}  // namespace plax
