// RMS normalization over the last axis, as XLA FFI handlers for the CPU:
//   y = x / sqrt(mean(x^2) + eps)
// Every leading axis is a batch axis, so one call handles a whole batch (which is what
// vmap_method="broadcast_all" hands it). The forward handler for reverse mode also
// returns the per-row scale r = 1 / sqrt(mean(x^2) + eps), which the backward handler
// uses: dx = r * ct - r^3 * x * mean(x * ct).
#include <cmath>
#include <cstdint>

#include "nanobind/nanobind.h"
#include "xla/ffi/api/ffi.h"

namespace nb = nanobind;
namespace ffi = xla::ffi;

namespace {

// The length of the normalized (last) axis and the number of rows before it.
ffi::Error RowsOf(ffi::Buffer<ffi::F32>& x, int64_t& rows, int64_t& cols) {
  auto dims = x.dimensions();
  if (dims.size() == 0) {
    return ffi::Error::InvalidArgument("rms_norm: the input must have at least one axis");
  }
  cols = dims.back();
  rows = cols == 0 ? 0 : static_cast<int64_t>(x.element_count()) / cols;
  return ffi::Error::Success();
}

float RowScale(const float* row, int64_t cols, float eps) {
  float sum = 0.0f;
  for (int64_t j = 0; j < cols; ++j) sum += row[j] * row[j];
  return 1.0f / std::sqrt(sum / static_cast<float>(cols) + eps);
}

ffi::Error Forward(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  int64_t rows, cols;
  if (auto err = RowsOf(x, rows, cols); err.failure()) return err;
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (int64_t i = 0; i < rows; ++i) {
    float r = RowScale(in + i * cols, cols, eps);
    for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = in[i * cols + j] * r;
  }
  return ffi::Error::Success();
}

ffi::Error ForwardWithScale(float eps, ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                            ffi::ResultBuffer<ffi::F32> scale) {
  int64_t rows, cols;
  if (auto err = RowsOf(x, rows, cols); err.failure()) return err;
  const float* in = x.typed_data();
  float* out = y->typed_data();
  float* r = scale->typed_data();
  for (int64_t i = 0; i < rows; ++i) {
    r[i] = RowScale(in + i * cols, cols, eps);
    for (int64_t j = 0; j < cols; ++j) out[i * cols + j] = in[i * cols + j] * r[i];
  }
  return ffi::Error::Success();
}

ffi::Error Backward(ffi::Buffer<ffi::F32> scale, ffi::Buffer<ffi::F32> x,
                    ffi::Buffer<ffi::F32> ct, ffi::ResultBuffer<ffi::F32> dx) {
  int64_t rows, cols;
  if (auto err = RowsOf(x, rows, cols); err.failure()) return err;
  const float* r = scale.typed_data();
  const float* in = x.typed_data();
  const float* g = ct.typed_data();
  float* out = dx->typed_data();
  for (int64_t i = 0; i < rows; ++i) {
    float dot = 0.0f;
    for (int64_t j = 0; j < cols; ++j) dot += in[i * cols + j] * g[i * cols + j];
    float mean = dot / static_cast<float>(cols);
    float r3 = r[i] * r[i] * r[i];
    for (int64_t j = 0; j < cols; ++j) {
      out[i * cols + j] = r[i] * g[i * cols + j] - r3 * in[i * cols + j] * mean;
    }
  }
  return ffi::Error::Success();
}

}  // namespace

// The handlers, exported as C symbols too (so ctypes can find them: plax.ffi.pycapsule);
// the module is built with hidden visibility, so they are declared visible first.
#define EXPORTED_HANDLER(fn) \
  extern "C" __attribute__((visibility("default"))) XLA_FFI_Error* fn(XLA_FFI_CallFrame*)
EXPORTED_HANDLER(RmsNorm);
EXPORTED_HANDLER(RmsNormFwd);
EXPORTED_HANDLER(RmsNormBwd);

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, Forward,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormFwd, ForwardWithScale,
                              ffi::Ffi::Bind()
                                  .Attr<float>("eps")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNormBwd, Backward,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// A user type id for FFI state, which plax.ffi.register_ffi_type_id fills in.
static XLA_FFI_TypeId state_type_id = XLA_FFI_UNKNOWN_TYPE_ID;

template <typename T>
nb::capsule Capsule(T* fn) {
  return nb::capsule(reinterpret_cast<void*>(fn));
}

NB_MODULE(_kernels, m) {
  m.def("registrations", []() {
    nb::dict targets;
    targets["rms_norm"] = Capsule(RmsNorm);
    targets["rms_norm_fwd"] = Capsule(RmsNormFwd);
    targets["rms_norm_bwd"] = Capsule(RmsNormBwd);
    return targets;
  });
  m.def("state_type_id", []() { return Capsule(&state_type_id); });
  m.def("state_type_id_value", []() { return state_type_id.type_id; });
}
