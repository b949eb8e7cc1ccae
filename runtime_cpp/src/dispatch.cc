// plax_runtime._fastpath dispatch: a cached call of a jitted function, and a prepared
// eager call of a primitive, each a single C++ call from Python.
//
// `JitCache` is one jitted function's fast-path cache. A call flattens its arguments
// with plax's pytree registry, builds the key (pytree structure, static values, one
// signature per leaf, trace context, mesh in context), finds the entry, runs it and
// unflattens the outputs. Every other call goes to the Python slow path: a new key,
// an argument the key cannot describe, a call inside a transformation. Those calls
// are counted per reason (`stats()`), logged once per reason when the configured
// state says so, and never switch the fast path off.
//
// `Executor` runs one compiled executable on flat arguments: Arrays already laid out
// as the executable expects give their buffers, host values (NumPy, Python scalars)
// are placed by a Python callback (a scalar seen before reuses its buffer), then
// `execute_sharded`, the output handlers, and one plax Array per output, built here
// without running Python code, its fast-path signature already attached.
#include "dispatch.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <structmember.h>  // T_OBJECT_EX, READONLY: the slots set_array_type finds

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "signature.h"

namespace nb = nanobind;

namespace plax {
namespace {

// Interned attribute names, made once at import and kept for the process's life.
struct Names {
  PyObject* value;
  PyObject* impl;
  PyObject* aval;
  PyObject* sharding;
  PyObject* npy_value;
  PyObject* sig;
  PyObject* execute_sharded;
  PyObject* consume_with_handlers;
  PyObject* unflatten;
  PyObject* delete_;
  PyObject* call_python;
  PyObject* dtype;
  PyObject* tobytes;
  PyObject* shape;
  PyObject* direct;
  PyObject* jax;             // "jax", looked up in sys.modules
  PyObject* enable_x64_kw;   // ("enable_x64",): the keyword names of a direct put
  PyObject* numpy_generic;  // the type numpy.generic
  PyObject* numpy_ndarray;  // the type numpy.ndarray
};
Names N;

nb::object check(PyObject* result) {
  if (result == nullptr) throw nb::python_error();
  return nb::steal(result);
}

ArraySlots& A = array_slots;

// The byte offset of `type`'s writable object slot `name` (a `__slots__` entry).
Py_ssize_t slot_offset(PyTypeObject* type, PyObject* name) {
  PyObject* descr = _PyType_Lookup(type, name);  // borrowed
  if (descr == nullptr || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
    PyErr_Format(PyExc_TypeError, "set_array_type: %R has no slot %R", type, name);
    throw nb::python_error();
  }
  PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
  if (member->type != T_OBJECT_EX || (member->flags & READONLY) != 0) {
    PyErr_Format(PyExc_TypeError, "set_array_type: %R's slot %R is not a writable object slot",
                 type, name);
    throw nb::python_error();
  }
  return member->offset;
}

// What every dispatch consults, given once by plax-transforms (`configure`). Held
// for the process's life (never destroyed: no Python calls at interpreter exit).
struct Env {
  nb::object flatten;        // registry.flatten: x -> (leaves, treedef)
  nb::object disable_jit;    // config States, read through `.value`
  nb::object enable_x64;
  nb::object log_misses;
  nb::object current_trace;  // () -> the current trace
  nb::object eval_trace;     // the trace outside every transformation
  nb::object trace_context;  // () -> the trace-affecting config
  nb::object concrete_mesh;  // () -> the mesh in context, or None
  nb::object miss_reason;    // (key, previous keys) -> why a key is new
  nb::object log_miss;       // (function name, reason) -> None
};
Env* E = nullptr;

Env& env() {
  if (E == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "plax_runtime._fastpath.configure was not called");
    throw nb::python_error();
  }
  return *E;
}

bool state_value(const nb::object& state) {
  nb::object value = check(PyObject_GetAttr(state.ptr(), N.value));
  int truth = PyObject_IsTrue(value.ptr());
  if (truth < 0) throw nb::python_error();
  return truth != 0;
}

}  // namespace

bool jit_applies_here() {
  Env& e = env();
  if (state_value(e.disable_jit)) return false;
  nb::object trace = check(PyObject_CallNoArgs(e.current_trace.ptr()));
  return trace.is(e.eval_trace);
}

namespace {

void configure(nb::object registry_flatten, nb::object disable_jit, nb::object enable_x64,
               nb::object log_misses, nb::object current_trace, nb::object eval_trace,
               nb::object trace_context, nb::object concrete_mesh, nb::object miss_reason,
               nb::object log_miss) {
  // A previous Env is leaked on purpose: configure runs once per process.
  E = new Env{std::move(registry_flatten), std::move(disable_jit), std::move(enable_x64),
              std::move(log_misses), std::move(current_trace), std::move(eval_trace),
              std::move(trace_context), std::move(concrete_mesh), std::move(miss_reason),
              std::move(log_miss)};
}

void set_array_type(nb::handle array_type) {
  if (!PyType_Check(array_type.ptr())) throw nb::type_error("set_array_type: not a class");
  auto* type = reinterpret_cast<PyTypeObject*>(array_type.ptr());
  ArraySlots slots;
  slots.type = type;
  slots.impl = slot_offset(type, N.impl);
  slots.aval = slot_offset(type, N.aval);
  slots.sharding = slot_offset(type, N.sharding);
  slots.npy_value = slot_offset(type, N.npy_value);
  slots.sig = slot_offset(type, N.sig);
  Py_INCREF(type);  // held for the process's life: the offsets describe its instances
  A = slots;
}

// A plax Array holding jaxlib array `impl`, its slots filled directly (no Python runs).
nb::object new_array(PyObject* impl, PyObject* aval, PyObject* sharding, PyObject* sig) {
  nb::object array = check(A.type->tp_alloc(A.type, 0));
  set_slot(A.impl, array.ptr(), impl);
  set_slot(A.aval, array.ptr(), aval);
  set_slot(A.sharding, array.ptr(), sharding);
  set_slot(A.npy_value, array.ptr(), Py_None);
  set_slot(A.sig, array.ptr(), sig);
  return array;
}

// `Array._from_impls`: one Array per jaxlib array of `impls`, all of one aval and sharding.
nb::object wrap_arrays(nb::handle impls, nb::handle aval, nb::handle sharding) {
  if (A.type == nullptr) throw nb::type_error("set_array_type was not called");
  nb::object seq = check(PySequence_Fast(impls.ptr(), "wrap_arrays: impls must be a sequence"));
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
  PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
  nb::object arrays = check(PyList_New(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyList_SET_ITEM(arrays.ptr(), i,
                    new_array(items[i], aval.ptr(), sharding.ptr(), Py_None).release().ptr());
  }
  return arrays;
}

// --- running an executable ------------------------------------------------------------

class Executor {
 public:
  Executor(nb::object loaded, nb::list handlers, std::vector<nb::object> out_avals,
           std::vector<nb::object> out_shardings, std::vector<nb::object> consts,
           std::vector<Py_ssize_t> kept, std::vector<Py_ssize_t> donated, Py_ssize_t num_flat,
           nb::object place_host, nb::object host_guard, nb::object on_error, nb::object before,
           nb::object after)
      : handlers_(std::move(handlers)), out_avals_(std::move(out_avals)),
        out_shardings_(std::move(out_shardings)), consts_(std::move(consts)),
        kept_(std::move(kept)), donated_(std::move(donated)), num_flat_(num_flat),
        place_host_(std::move(place_host)), host_guard_(std::move(host_guard)),
        on_error_(std::move(on_error)), before_(std::move(before)), after_(std::move(after)) {
    execute_sharded_ = check(PyObject_GetAttr(loaded.ptr(), N.execute_sharded));
    if (out_avals_.size() != out_shardings_.size()) {
      throw nb::value_error("Executor: one sharding per output aval is needed");
    }
    for (Py_ssize_t i : kept_) {
      if (i < 0 || i >= num_flat_) throw nb::value_error("Executor: kept index out of range");
    }
    Py_ssize_t n_consts = static_cast<Py_ssize_t>(consts_.size());
    Py_ssize_t num_args = n_consts + static_cast<Py_ssize_t>(kept_.size());
    reusable_scalar_.assign(kept_.size(), true);
    direct_.resize(kept_.size());
    direct_asked_.assign(kept_.size(), false);
    for (Py_ssize_t i : donated_) {
      if (i < 0 || i >= num_args) throw nb::value_error("Executor: donated index out of range");
      if (i >= n_consts) reusable_scalar_[i - n_consts] = false;  // a donated buffer goes
    }
  }

  // flat arguments (a list or tuple) -> one plax Array per output.
  nb::object run(PyObject* flat) const {
    if (A.type == nullptr) {
      PyErr_SetString(PyExc_RuntimeError, "plax_runtime._fastpath.set_array_type was not called");
      throw nb::python_error();
    }
    nb::object seq = check(PySequence_Fast(flat, "Executor: arguments must be a sequence"));
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq.ptr());
    if (n != num_flat_) {
      PyErr_Format(PyExc_TypeError, "the executable takes %zd arguments, got %zd", num_flat_, n);
      throw nb::python_error();
    }
    PyObject** items = PySequence_Fast_ITEMS(seq.ptr());
    Py_ssize_t n_consts = static_cast<Py_ssize_t>(consts_.size());
    nb::object impls = check(PyList_New(n_consts + static_cast<Py_ssize_t>(kept_.size())));
    for (Py_ssize_t i = 0; i < n_consts; ++i) {
      PyList_SET_ITEM(impls.ptr(), i, consts_[i].inc_ref().ptr());
    }
    for (size_t j = 0; j < kept_.size(); ++j) {
      PyObject* x = items[kept_[j]];
      nb::object impl = Py_TYPE(x) == A.type ? get_slot(A.impl, x) : place_host(x, j);
      PyList_SET_ITEM(impls.ptr(), n_consts + static_cast<Py_ssize_t>(j), impl.release().ptr());
    }
    if (donates_twice(impls.ptr())) {  // the runtime would crash on it: let Python say why
      check(PyObject_CallOneArg(on_error_.ptr(), seq.ptr()));
      PyErr_SetString(PyExc_ValueError, "a donated buffer is passed twice");
      throw nb::python_error();
    }
    if (before_.is_valid() && !before_.is_none()) check(PyObject_CallNoArgs(before_.ptr()));
    PyObject* results = PyObject_CallOneArg(execute_sharded_.ptr(), impls.ptr());
    if (results == nullptr) {
      // A deleted or donated argument: let Python name it in plain words.
      PyObject *type, *value, *traceback;
      PyErr_Fetch(&type, &value, &traceback);
      PyObject* explained = PyObject_CallOneArg(on_error_.ptr(), seq.ptr());
      if (explained == nullptr) {  // on_error raised its clearer error
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        throw nb::python_error();
      }
      Py_DECREF(explained);
      PyErr_Restore(type, value, traceback);
      throw nb::python_error();
    }
    nb::object owned_results = nb::steal(results);
    nb::object outs = check(PyObject_CallMethodOneArg(results, N.consume_with_handlers,
                                                      handlers_.ptr()));
    if (after_.is_valid() && !after_.is_none()) check(PyObject_CallOneArg(after_.ptr(), outs.ptr()));
    for (Py_ssize_t k : donated_) {
      if (k < n_consts) continue;
      PyObject* x = items[kept_[k - n_consts]];
      if (Py_TYPE(x) == A.type) check(PyObject_CallMethodNoArgs(x, N.delete_));
    }
    nb::object out_seq = check(PySequence_Fast(outs.ptr(), "consume_with_handlers: not a list"));
    Py_ssize_t n_out = PySequence_Fast_GET_SIZE(out_seq.ptr());
    if (n_out != static_cast<Py_ssize_t>(out_avals_.size())) {
      PyErr_Format(PyExc_RuntimeError, "the executable returned %zd outputs, expected %zu",
                   n_out, out_avals_.size());
      throw nb::python_error();
    }
    PyObject** out_items = PySequence_Fast_ITEMS(out_seq.ptr());
    bool sigs_known = !out_sigs_.empty();
    nb::object wrapped = check(PyList_New(n_out));
    for (Py_ssize_t i = 0; i < n_out; ++i) {
      PyList_SET_ITEM(wrapped.ptr(), i,
                      new_array(out_items[i], out_avals_[i].ptr(), out_shardings_[i].ptr(),
                                sigs_known ? out_sigs_[i].ptr() : Py_None).release().ptr());
    }
    if (!sigs_known) {  // every run's outputs have the same signatures: work them out once
      std::vector<nb::object> sigs;  // (computing them may run Python: another thread may
      for (Py_ssize_t i = 0; i < n_out; ++i) {  // store its own copy first)
        sigs.push_back(array_signature(PyList_GET_ITEM(wrapped.ptr(), i), i));
      }
      if (out_sigs_.empty()) out_sigs_ = std::move(sigs);
    }
    return wrapped;
  }

 private:
  static constexpr Py_ssize_t kMaxScalars = 64;

  // Whether a donated argument's buffer is also another argument (identical buffers:
  // the PJRT runtime refuses it on one device and crashes on several).
  bool donates_twice(PyObject* impls) const {
    Py_ssize_t n = PyList_GET_SIZE(impls);
    for (Py_ssize_t k : donated_) {
      PyObject* donated = PyList_GET_ITEM(impls, k);
      for (Py_ssize_t i = 0; i < n; ++i) {
        if (i != k && PyList_GET_ITEM(impls, i) == donated) return true;
      }
    }
    return false;
  }

  // The buffer of host value `x`, the module's argument at kept position `j`. The
  // buffers of scalars are kept by exact value: passing the same Python or NumPy
  // scalar again (a step size, the constant of `x * 1.0001`) reuses the buffer (an
  // executable never writes its inputs) unless the position is donated or the
  // host-to-device transfer guard wants to see every transfer.
  nb::object place_host(PyObject* x, size_t j) const {
    if (Py_TYPE(x) == reinterpret_cast<PyTypeObject*>(N.numpy_ndarray)) return place_array(x, j);
    nb::object key;
    if (reusable_scalar_[j] && !host_guard_active()) key = scalar_key(x, static_cast<Py_ssize_t>(j));
    if (key.is_valid()) {
      PyObject* kept = PyDict_GetItemWithError(scalars_.ptr(), key.ptr());  // borrowed
      if (kept != nullptr) return nb::borrow(kept);
      if (PyErr_Occurred()) throw nb::python_error();
    }
    nb::object impl = check(PyObject_CallFunction(place_host_.ptr(), "On", x,
                                                  static_cast<Py_ssize_t>(j)));
    if (key.is_valid()) {
      if (PyDict_GET_SIZE(scalars_.ptr()) >= kMaxScalars) PyDict_Clear(scalars_.ptr());
      if (PyDict_SetItem(scalars_.ptr(), key.ptr(), impl.ptr()) < 0) throw nb::python_error();
    }
    return impl;
  }

  // NumPy array `x` at kept position `j`: placed here with one jaxlib call when the
  // position's prepared put (asked for once, after the first placement) is for
  // arrays of its dtype and shape, else by the Python callback.
  nb::object place_array(PyObject* x, size_t j) const {
    const nb::object& direct = direct_[j];
    if (direct.is_valid() && !direct.is_none() && !host_guard_active() && !jax_imported()) {
      nb::object placed = place_directly(direct.ptr(), x);
      if (placed.is_valid()) return placed;
    }
    nb::object impl = check(PyObject_CallFunction(place_host_.ptr(), "On", x,
                                                  static_cast<Py_ssize_t>(j)));
    if (!direct_asked_[j]) {
      direct_asked_[j] = true;
      nb::object position = check(PyLong_FromSsize_t(static_cast<Py_ssize_t>(j)));
      direct_[j] = check(PyObject_CallMethodOneArg(place_host_.ptr(), N.direct, position.ptr()));
    }
    return impl;
  }

  // `put(*head, [x] * copies, *tail, enable_x64=x64.value)` from `_HostValues.direct`'s
  // (dtype, shape, put, head, tail, copies, x64); invalid when `x` has another dtype
  // or shape.
  static nb::object place_directly(PyObject* direct, PyObject* x) {
    nb::object dtype = check(PyObject_GetAttr(x, N.dtype));
    if (!equal(dtype.ptr(), PyTuple_GET_ITEM(direct, 0))) return nb::object();
    nb::object shape = check(PyObject_GetAttr(x, N.shape));
    if (!equal(shape.ptr(), PyTuple_GET_ITEM(direct, 1))) return nb::object();
    PyObject* head = PyTuple_GET_ITEM(direct, 3);
    PyObject* tail = PyTuple_GET_ITEM(direct, 4);
    Py_ssize_t copies = PyLong_AsSsize_t(PyTuple_GET_ITEM(direct, 5));
    nb::object shards = check(PyList_New(copies));
    for (Py_ssize_t i = 0; i < copies; ++i) PyList_SET_ITEM(shards.ptr(), i, Py_NewRef(x));
    PyObject* x64 = state_value(nb::borrow(PyTuple_GET_ITEM(direct, 6))) ? Py_True : Py_False;
    PyObject* call[8] = {PyTuple_GET_ITEM(head, 0), PyTuple_GET_ITEM(head, 1), shards.ptr(),
                         PyTuple_GET_ITEM(tail, 0), PyTuple_GET_ITEM(tail, 1),
                         PyTuple_GET_ITEM(tail, 2), PyTuple_GET_ITEM(tail, 3), x64};
    return check(PyObject_Vectorcall(PyTuple_GET_ITEM(direct, 2), call, 7, N.enable_x64_kw));
  }

  static bool equal(PyObject* a, PyObject* b) {
    int same = a == b ? 1 : PyObject_RichCompareBool(a, b, Py_EQ);
    if (same < 0) throw nb::python_error();
    return same != 0;
  }

  // Whether JAX is loaded: it sets jaxlib's own transfer guard, which plax's calls
  // are kept out of (transfer_guard.unguarded); the direct put then steps aside.
  static bool jax_imported() {
    PyObject* found = PyDict_GetItemWithError(PyImport_GetModuleDict(), N.jax);  // borrowed
    if (found == nullptr && PyErr_Occurred()) throw nb::python_error();
    return found != nullptr;
  }

  bool host_guard_active() const {
    nb::object level = check(PyObject_GetAttr(host_guard_.ptr(), N.value));
    return !level.is_none() && PyUnicode_CompareWithASCIIString(level.ptr(), "allow") != 0;
  }

  // What identifies scalar `x` exactly (-0.0 and 0.0 differ, a NaN is itself), or an
  // invalid object when `x` is not a scalar whose buffer may be reused.
  static nb::object scalar_key(PyObject* x, Py_ssize_t j) {
    PyTypeObject* type = Py_TYPE(x);
    nb::object value;
    if (type == &PyFloat_Type) {
      value = float_bits(PyFloat_AS_DOUBLE(x));
    } else if (type == &PyLong_Type || type == &PyBool_Type) {
      value = nb::borrow(x);  // exact by value; the type keeps True and 1 apart
    } else if (type == &PyComplex_Type) {
      Py_complex c = PyComplex_AsCComplex(x);
      value = check(PyTuple_Pack(2, float_bits(c.real).ptr(), float_bits(c.imag).ptr()));
    } else if (PyObject_TypeCheck(x, reinterpret_cast<PyTypeObject*>(N.numpy_generic))) {
      nb::object dtype = check(PyObject_GetAttr(x, N.dtype));
      nb::object bytes = check(PyObject_CallMethodNoArgs(x, N.tobytes));
      value = check(PyTuple_Pack(2, dtype.ptr(), bytes.ptr()));
    } else {
      return nb::object();
    }
    nb::object position = check(PyLong_FromSsize_t(j));
    return check(PyTuple_Pack(3, position.ptr(), reinterpret_cast<PyObject*>(type), value.ptr()));
  }

  static nb::object float_bits(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    return check(PyLong_FromUnsignedLongLong(bits));
  }

  nb::object execute_sharded_;
  nb::list handlers_;
  std::vector<nb::object> out_avals_;
  std::vector<nb::object> out_shardings_;
  std::vector<nb::object> consts_;     // buffers of hoisted constants, passed first
  std::vector<Py_ssize_t> kept_;       // flat argument positions the module takes
  std::vector<Py_ssize_t> donated_;    // positions among the module's arguments
  Py_ssize_t num_flat_;
  nb::object place_host_;              // (value, position among kept) -> buffer
  nb::object host_guard_;              // the host-to-device transfer guard's config state
  std::vector<bool> reusable_scalar_;  // per kept position: not donated
  mutable std::vector<nb::object> direct_;   // per kept position: _HostValues.direct(j)
  mutable std::vector<bool> direct_asked_;   // whether it was asked for yet
  mutable nb::dict scalars_;           // scalar_key -> the buffer placed for it
  mutable std::vector<nb::object> out_sigs_;  // the outputs' signatures, after one run
  nb::object on_error_;                // (flat) -> raises a clear error where it can
  nb::object before_;                  // None, or () -> None before each execution
  nb::object after_;                   // None, or (output buffers) -> None
};

// The outputs of `caller(args)`: an Executor runs here, any other callable is called.
nb::object run_caller(PyObject* caller, PyObject* args) {
  if (nb::isinstance<Executor>(caller)) return nb::inst_ptr<Executor>(caller)->run(args);
  return check(PyObject_CallOneArg(caller, args));
}

// --- eager primitives whose caller is at hand --------------------------------------------

// The front of plax-transforms' eager callers (`dispatch._callers.front`: key -> caller,
// the key being (primitive, tuple(params.items()), signature, trace context, mesh)).
// Applying a primitive found there is one C++ call: key, lookup, run.
class EagerFront {
 public:
  EagerFront(nb::dict front, nb::object trace_context, nb::object concrete_mesh,
             nb::object enable_x64)
      : front_(std::move(front)), trace_context_(std::move(trace_context)),
        concrete_mesh_(std::move(concrete_mesh)), enable_x64_(std::move(enable_x64)) {}

  // The outputs of `prim(*args, **params)` if its caller is in front, else None (the
  // caller is not prepared yet, or a parameter or argument is unhashable or invalid:
  // the Python path decides).
  nb::object call(nb::handle prim, nb::handle params, nb::handle args) const {
    nb::object key;
    try {
      nb::object items = check(PyMapping_Items(params.ptr()));
      nb::object params_key = check(PyList_AsTuple(items.ptr()));
      nb::object sig = arg_signature(args, state_value(enable_x64_));
      nb::object context = check(PyObject_CallNoArgs(trace_context_.ptr()));
      nb::object mesh = check(PyObject_CallNoArgs(concrete_mesh_.ptr()));
      key = check(PyTuple_Pack(5, prim.ptr(), params_key.ptr(), sig.ptr(), context.ptr(),
                               mesh.ptr()));
    } catch (nb::python_error& err) {
      if (!err.matches(PyExc_TypeError)) throw;
      return nb::none();
    }
    PyObject* caller = PyDict_GetItemWithError(front_.ptr(), key.ptr());  // borrowed
    if (caller == nullptr) {
      if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
        PyErr_Clear();
      }
      return nb::none();
    }
    nb::object hold = nb::borrow(caller);  // the cache may drop it while it runs
    return run_caller(caller, args.ptr());
  }

 private:
  nb::dict front_;
  nb::object trace_context_;  // () -> the trace-affecting config values
  nb::object concrete_mesh_;  // () -> the mesh in context, or None
  nb::object enable_x64_;     // the config state
};

// --- a jitted function's fast-path cache -------------------------------------------------

// The base class of plax's jitted functions (`JitWrapped` in plax-transforms). Its
// call slot is the fast path; the Python subclass gives the slow path
// (`_call_python(*args, **kwargs)`).
class JitCache {
 public:
  JitCache(std::string name, std::vector<Py_ssize_t> static_argnums,
           nb::frozenset static_argnames, size_t max_entries)
      : name_(std::move(name)), static_argnums_(std::move(static_argnums)),
        static_argnames_(std::move(static_argnames)),
        has_statics_(!static_argnums_.empty() || nb::len(static_argnames_) > 0),
        max_entries_(max_entries) {}

  // The call slot: a C++ error becomes the matching Python exception.
  static PyObject* tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
    try {
      JitCache* cache = nb::inst_ptr<JitCache>(self);
      return cache->call(self, args, kwargs).release().ptr();
    } catch (nb::python_error& err) {
      err.restore();
    } catch (const std::exception& err) {
      PyErr_SetString(PyExc_RuntimeError, err.what());
    }
    return nullptr;
  }

  // (flat arguments, key) of a call, as the fast path computes them; TypeError when
  // the call's arguments or static values cannot be described.
  static nb::tuple key(nb::handle self, nb::tuple args, nb::dict kwargs) {
    auto [flat, key] = nb::inst_ptr<JitCache>(self)->compute_key(self.ptr(), args.ptr(),
                                                                 kwargs.ptr());
    return nb::make_tuple(flat, key);
  }

  void insert(nb::handle key, nb::handle runner, nb::handle out_tree) {
    if (PyDict_GET_SIZE(entries_.ptr()) >= static_cast<Py_ssize_t>(max_entries_)) {
      clear();
    }
    // A single-leaf output needs no unflattening: its outputs list holds the result.
    nb::object num_nodes = check(PyObject_GetAttrString(out_tree.ptr(), "num_nodes"));
    bool leaf = PyLong_AsLong(num_nodes.ptr()) == 1;
    nb::object entry = check(PyTuple_Pack(3, runner.ptr(), out_tree.ptr(), leaf ? Py_True : Py_False));
    if (PyDict_SetItem(entries_.ptr(), key.ptr(), entry.ptr()) < 0) throw nb::python_error();
  }

  void clear() {
    forget_last_hit();
    PyDict_Clear(entries_.ptr());
  }

  nb::dict entries() const { return entries_; }

  nb::dict stats() const {
    nb::dict slow_path;
    for (const auto& [reason, count] : slow_counts_) slow_path[nb::str(reason.c_str())] = count;
    nb::dict out;
    out["hits"] = hits_;
    out["slow_path"] = slow_path;
    return out;
  }

  void reset_stats() {
    hits_ = 0;
    slow_counts_.clear();
    logged_.clear();
  }

  // Cyclic garbage collection: entries may refer to anything.
  static int traverse(PyObject* self, visitproc visit, void* arg) {
    Py_VISIT(Py_TYPE(self));
    if (!nb::inst_ready(self)) return 0;
    JitCache* cache = nb::inst_ptr<JitCache>(self);
    Py_VISIT(cache->entries_.ptr());
    Py_VISIT(cache->last_hit_.ptr());
    return 0;
  }

  static int clear_refs(PyObject* self) {
    nb::inst_ptr<JitCache>(self)->clear();
    return 0;
  }

  // A call from C++ (an Array operator) that has already checked `jit_applies_here`.
  nb::object call_checked(PyObject* self, PyObject* args) { return dispatch(self, args, nullptr); }

 private:
  nb::object call(PyObject* self, PyObject* args, PyObject* kwargs) {
    Env& e = env();
    if (state_value(e.disable_jit)) return slow(self, args, kwargs);
    nb::object trace = check(PyObject_CallNoArgs(e.current_trace.ptr()));
    if (!trace.is(e.eval_trace)) return miss("called inside a transformation", self, args, kwargs);
    return dispatch(self, args, kwargs);
  }

  nb::object dispatch(PyObject* self, PyObject* args, PyObject* kwargs) {
    Env& e = env();
    nb::object flat, key;
    try {
      std::tie(flat, key) = compute_key(self, args, kwargs);
    } catch (nb::python_error& err) {
      if (!err.matches(PyExc_TypeError)) throw;
      return miss("an argument or static value the key cannot describe", self, args, kwargs);
    }
    // (held: the entry may be evicted, and the last hit replaced, while it runs)
    nb::object hold = same_as_last_hit(key);
    if (!hold.is_valid()) {
      PyObject* found = PyDict_GetItemWithError(entries_.ptr(), key.ptr());  // borrowed
      if (found == nullptr) {
        if (PyErr_Occurred()) {
          if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
          PyErr_Clear();
          return miss("an unhashable static argument", self, args, kwargs);
        }
        nb::object reason = check(PyObject_CallFunctionObjArgs(
            e.miss_reason.ptr(), key.ptr(), entries_.ptr(), nullptr));
        return miss(nb::cast<std::string>(reason), self, args, kwargs);
      }
      hold = nb::borrow(found);
      last_hit_ = check(PyTuple_Pack(2, key.ptr(), found));  // one object: replaced at once
    }
    ++hits_;
    PyObject* entry = hold.ptr();
    nb::object outs = run_caller(PyTuple_GET_ITEM(entry, 0), flat.ptr());
    if (PyTuple_GET_ITEM(entry, 2) == Py_True && PyList_CheckExact(outs.ptr()) &&
        PyList_GET_SIZE(outs.ptr()) == 1) {
      return nb::borrow(PyList_GET_ITEM(outs.ptr(), 0));
    }
    return check(PyObject_CallMethodOneArg(PyTuple_GET_ITEM(entry, 1), N.unflatten, outs.ptr()));
  }

  std::pair<nb::object, nb::object> compute_key(PyObject* self, PyObject* args,
                                                PyObject* kwargs) {
    Env& e = env();
    nb::object leaves, tree_key;
    nb::object statics = nb::none();
    bool no_kwargs = kwargs == nullptr || PyDict_GET_SIZE(kwargs) == 0;
    if (!has_statics_ && no_kwargs && all_plain_leaves(args)) {
      // The common call, positional Arrays and host values: their count is the whole
      // structure (a treedef is never an int), so no flattening is needed.
      leaves = check(PySequence_List(args));
      tree_key = check(PyLong_FromSsize_t(PyTuple_GET_SIZE(args)));
    } else if (!has_statics_ && no_kwargs && (tree_key = shallow_structure(args)).is_valid()) {
      leaves = shallow_leaves(args);
    } else {
      nb::object dyn_args = nb::borrow(args);
      nb::object dyn_kwargs = kwargs != nullptr ? nb::borrow(kwargs) : check(PyDict_New());
      if (has_statics_) std::tie(dyn_args, dyn_kwargs, statics) = split_static(args, dyn_kwargs);
      nb::object tree = check(PyTuple_Pack(2, dyn_args.ptr(), dyn_kwargs.ptr()));
      nb::object flattened = check(PyObject_CallOneArg(e.flatten.ptr(), tree.ptr()));
      if (!PyTuple_Check(flattened.ptr()) || PyTuple_GET_SIZE(flattened.ptr()) != 2) {
        PyErr_SetString(PyExc_TypeError, "flatten must return (leaves, treedef)");
        throw nb::python_error();
      }
      leaves = nb::borrow(PyTuple_GET_ITEM(flattened.ptr(), 0));
      tree_key = nb::borrow(PyTuple_GET_ITEM(flattened.ptr(), 1));
    }
    nb::object sig = arg_signature(leaves, state_value(e.enable_x64));
    nb::object context = check(PyObject_CallNoArgs(e.trace_context.ptr()));
    nb::object mesh = check(PyObject_CallNoArgs(e.concrete_mesh.ptr()));
    nb::object key = check(PyTuple_Pack(5, tree_key.ptr(), statics.ptr(), sig.ptr(),
                                        context.ptr(), mesh.ptr()));
    return {std::move(leaves), std::move(key)};
  }

  // (dynamic args, dynamic kwargs, statics) of a call, as `split_static` of plax's
  // arguments module splits them: statics are the static positions' (index, value)
  // pairs (negative static_argnums count from the end) and the static keywords'
  // (name, value) pairs sorted by name.
  std::tuple<nb::object, nb::object, nb::object> split_static(PyObject* args,
                                                              nb::handle kwargs) const {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    std::vector<bool> is_static(n, false);
    for (Py_ssize_t i : static_argnums_) {
      Py_ssize_t position = i >= 0 ? i : i + n;
      if (position >= 0 && position < n) is_static[position] = true;
    }
    nb::list dyn_args, static_args, static_kwargs;
    for (Py_ssize_t i = 0; i < n; ++i) {
      nb::handle arg = PyTuple_GET_ITEM(args, i);
      if (is_static[i]) {
        static_args.append(nb::make_tuple(i, arg));
      } else {
        dyn_args.append(arg);
      }
    }
    nb::dict dyn_kwargs;
    PyObject *name, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kwargs.ptr(), &pos, &name, &value)) {
      int found = PySet_Contains(static_argnames_.ptr(), name);
      if (found < 0) throw nb::python_error();
      if (found) {
        static_kwargs.append(nb::make_tuple(nb::handle(name), nb::handle(value)));
      } else {
        dyn_kwargs[name] = nb::handle(value);
      }
    }
    if (PyList_Sort(static_kwargs.ptr()) < 0) throw nb::python_error();
    nb::object statics = nb::make_tuple(nb::tuple(static_args), nb::tuple(static_kwargs));
    return {nb::tuple(dyn_args), std::move(dyn_kwargs), std::move(statics)};
  }

  // Whether `x` is a leaf of every pytree registry: a plax Array, a NumPy array or
  // scalar, or an exact Python scalar.
  static bool plain_leaf(PyObject* x) {
    PyTypeObject* type = Py_TYPE(x);
    return type == A.type || type == &PyFloat_Type || type == &PyLong_Type ||
           type == &PyBool_Type || type == &PyComplex_Type ||
           type == reinterpret_cast<PyTypeObject*>(N.numpy_ndarray) ||
           PyObject_TypeCheck(x, reinterpret_cast<PyTypeObject*>(N.numpy_generic));
  }

  static bool all_plain_leaves(PyObject* args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; ++i) {
      if (!plain_leaf(PyTuple_GET_ITEM(args, i))) return false;
    }
    return true;
  }

  // The structure of positional arguments that are plain leaves or exact lists and
  // tuples of plain leaves (`f(params_list)`, `f(x, (a, b))`), without flattening:
  // a tuple with one int per argument, -1 for a leaf, n for a list of n leaves,
  // -2 - n for a tuple of n. A treedef is never a tuple of ints, so the two kinds of
  // key cannot meet. Invalid when an argument is anything else.
  static nb::object shallow_structure(PyObject* args) {
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    nb::object structure = check(PyTuple_New(n));
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* x = PyTuple_GET_ITEM(args, i);
      Py_ssize_t code = -1;
      if (PyList_CheckExact(x) || PyTuple_CheckExact(x)) {
        Py_ssize_t size = PySequence_Fast_GET_SIZE(x);
        PyObject** items = PySequence_Fast_ITEMS(x);
        for (Py_ssize_t j = 0; j < size; ++j) {
          if (!plain_leaf(items[j])) return nb::object();
        }
        code = PyList_CheckExact(x) ? size : -2 - size;
      } else if (!plain_leaf(x)) {
        return nb::object();
      }
      PyTuple_SET_ITEM(structure.ptr(), i, check(PyLong_FromSsize_t(code)).release().ptr());
    }
    return structure;
  }

  // The leaves of arguments `shallow_structure` describes, in the registry's order.
  static nb::object shallow_leaves(PyObject* args) {
    nb::object leaves = check(PyList_New(0));
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* x = PyTuple_GET_ITEM(args, i);
      int added = PyList_CheckExact(x) || PyTuple_CheckExact(x)
                      ? PyList_SetSlice(leaves.ptr(), PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, x)
                      : PyList_Append(leaves.ptr(), x);
      if (added < 0) throw nb::python_error();
    }
    return leaves;
  }

  // The entry of the previous hit when `key` equals its key, else invalid. A key is
  // hashed anew on every call (a tuple does not keep its hash), while comparing it
  // with the last hit's is a few identity checks: an Array's signature is one object
  // for its life, shared by every output of the same executable. So a function called
  // again as it was called last skips hashing and the dict lookup.
  nb::object same_as_last_hit(const nb::object& key) {
    // Held first: comparing may run Python (a sharding's __eq__), and so let another
    // thread record its own hit meanwhile.
    nb::object last_hit = last_hit_;
    if (!last_hit.is_valid()) return nb::object();
    int same = PyObject_RichCompareBool(key.ptr(), PyTuple_GET_ITEM(last_hit.ptr(), 0), Py_EQ);
    if (same < 0) PyErr_Clear();  // e.g. a static value's __eq__: the dict lookup decides
    return same > 0 ? nb::borrow(PyTuple_GET_ITEM(last_hit.ptr(), 1)) : nb::object();
  }

  void forget_last_hit() { last_hit_.reset(); }

  nb::object slow(PyObject* self, PyObject* args, PyObject* kwargs) {  // kwargs may be NULL
    nb::object method = check(PyObject_GetAttr(self, N.call_python));
    return check(PyObject_Call(method.ptr(), args, kwargs));
  }

  nb::object miss(const std::string& reason, PyObject* self, PyObject* args, PyObject* kwargs) {
    ++slow_counts_[reason];
    Env& e = env();
    if (state_value(e.log_misses) && logged_.insert(reason).second) {
      check(PyObject_CallFunction(e.log_miss.ptr(), "ss", name_.c_str(), reason.c_str()));
    }
    return slow(self, args, kwargs);
  }

  std::string name_;
  std::vector<Py_ssize_t> static_argnums_;
  nb::frozenset static_argnames_;
  bool has_statics_;
  size_t max_entries_;
  nb::dict entries_;  // key -> (runner, output treedef, whether it is a single leaf)
  nb::object last_hit_;  // (key, entry) of the latest hit found in entries_, or invalid
  uint64_t hits_ = 0;
  std::map<std::string, uint64_t> slow_counts_;
  std::set<std::string> logged_;
};

}  // namespace

nb::object call_jitted(PyObject* jitted, PyObject* const* operands, Py_ssize_t n) {
  if (!nb::isinstance<JitCache>(jitted)) {
    return check(PyObject_Vectorcall(jitted, operands, n, nullptr));
  }
  nb::object args = check(PyTuple_New(n));
  for (Py_ssize_t i = 0; i < n; ++i) PyTuple_SET_ITEM(args.ptr(), i, Py_NewRef(operands[i]));
  return nb::inst_ptr<JitCache>(jitted)->call_checked(jitted, args.ptr());
}

void define_dispatch(nb::module_& m) {
  N.value = intern("value");
  N.impl = intern("_impl");
  N.aval = intern("_aval");
  N.sharding = intern("_sharding");
  N.npy_value = intern("_npy_value");
  N.sig = intern("_sig");
  N.execute_sharded = intern("execute_sharded");
  N.consume_with_handlers = intern("consume_with_handlers");
  N.unflatten = intern("unflatten");
  N.delete_ = intern("delete");
  N.call_python = intern("_call_python");
  N.dtype = intern("dtype");
  N.tobytes = intern("tobytes");
  N.shape = intern("shape");
  N.direct = intern("direct");
  N.jax = intern("jax");
  N.enable_x64_kw = check(PyTuple_Pack(1, intern("enable_x64"))).release().ptr();
  nb::module_ numpy = nb::module_::import_("numpy");
  N.numpy_generic = nb::object(numpy.attr("generic")).release().ptr();
  N.numpy_ndarray = nb::object(numpy.attr("ndarray")).release().ptr();

  m.def("configure", &configure, nb::arg("registry_flatten"), nb::arg("disable_jit"),
        nb::arg("enable_x64"), nb::arg("log_misses"), nb::arg("current_trace"),
        nb::arg("eval_trace"), nb::arg("trace_context"), nb::arg("concrete_mesh"),
        nb::arg("miss_reason"), nb::arg("log_miss"),
        "Give jit dispatch what it consults on every call (once per process).");
  m.def("set_array_type", &set_array_type, nb::arg("array_type"),
        "The class of the Arrays that Executors take buffers from and return (once).");
  m.def("wrap_arrays", &wrap_arrays, nb::arg("impls"), nb::arg("aval"), nb::arg("sharding"),
        "One Array per jaxlib array of impls, all of this aval and sharding (unchecked).");

  nb::class_<Executor>(m, "Executor",
                       "One compiled executable run on flat arguments, outputs as plax Arrays.")
      .def(nb::init<nb::object, nb::list, std::vector<nb::object>, std::vector<nb::object>,
                    std::vector<nb::object>, std::vector<Py_ssize_t>, std::vector<Py_ssize_t>,
                    Py_ssize_t, nb::object, nb::object, nb::object, nb::object, nb::object>(),
           nb::arg("loaded"), nb::arg("handlers"), nb::arg("out_avals"),
           nb::arg("out_shardings"), nb::arg("consts"), nb::arg("kept"), nb::arg("donated"),
           nb::arg("num_flat"), nb::arg("place_host"), nb::arg("host_guard"), nb::arg("on_error"),
           nb::arg("before").none() = nb::none(), nb::arg("after").none() = nb::none())
      .def("__call__", [](const Executor& self, nb::handle flat) { return self.run(flat.ptr()); },
           nb::arg("flat"));

  nb::class_<EagerFront>(m, "EagerFront",
                         "The eager callers' front dict, looked up and run in one call.")
      .def(nb::init<nb::dict, nb::object, nb::object, nb::object>(), nb::arg("front"),
           nb::arg("trace_context"), nb::arg("concrete_mesh"), nb::arg("enable_x64"))
      .def("__call__", &EagerFront::call, nb::arg("prim"), nb::arg("params"),
           nb::arg("args"));

  static PyType_Slot jit_cache_slots[] = {
      {Py_tp_call, reinterpret_cast<void*>(&JitCache::tp_call)},
      {Py_tp_traverse, reinterpret_cast<void*>(&JitCache::traverse)},
      {Py_tp_clear, reinterpret_cast<void*>(&JitCache::clear_refs)},
      {0, nullptr}};
  nb::class_<JitCache>(m, "JitCache", nb::type_slots(jit_cache_slots),
                       "The base class of jitted functions: its call is the fast path.")
      .def(nb::init<std::string, std::vector<Py_ssize_t>, nb::frozenset, size_t>(),
           nb::arg("name"), nb::arg("static_argnums"), nb::arg("static_argnames"),
           nb::arg("max_entries"))
      .def("_fast_key", &JitCache::key, nb::arg("args"), nb::arg("kwargs"))
      .def("_fast_insert", &JitCache::insert, nb::arg("key"), nb::arg("runner"),
           nb::arg("out_tree"))
      .def("_fast_clear", &JitCache::clear)
      .def("_fast_entries", &JitCache::entries)
      .def("_fast_stats", &JitCache::stats)
      .def("_fast_reset_stats", &JitCache::reset_stats);
}

}  // namespace plax
