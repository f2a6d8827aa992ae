// The peer of bench/vs_triton.sh: a hand-written NVIDIA Triton backend ("scaleshift") for
// scale_shift, y = alpha * x + beta on FP32, as lean as such a backend gets, so that the
// comparison measures Triton's serving path, not a slow kernel. It reads x where Triton
// holds it (one CPU buffer, or each of several in turn), computes straight into the
// response's output buffer with one fused multiply-add per element (as myops's CPU kernel
// does: bit-for-bit the same results), and reports Triton's per-request and batch
// statistics. alpha and beta come as request parameters (double or int) or as one-element
// FP64 inputs (myops-loadtest --protocol kserve --kserve-scalars parameters|inputs). The
// output is "output__0", as myops's Open Inference Protocol front end names it.
//
// No torch, no Triton library: the TRITONSERVER_*/TRITONBACKEND_* functions are resolved
// from the tritonserver process when it loads this library; only the TRITONBACKEND_*
// entry points are exported (-fvisibility=hidden, MYOPS_TRITON_EXPORT).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "triton_api.h"

namespace {

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

TRITONSERVER_Error* Error(TRITONSERVER_Error_Code code, const std::string& message) {
  return TRITONSERVER_ErrorNew(code, message.c_str());
}

#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    if (TRITONSERVER_Error* e_ = (expr)) return e_; \
  } while (false)

// The element loop, cloned per instruction set and chosen at load (ifunc): vfmadd on
// AVX-512 or AVX2+FMA, the C library's fmaf elsewhere. One rounding either way. The clones
// are x86-64 levels, which the resolver tests by CPU feature; an `arch=<CPU>` clone is
// chosen only on that CPU model (__builtin_cpu_is), so with arch=skylake-avx512 and
// arch=haswell an AMD EPYC with AVX-512 ran the default clone, a call to fmaf per element.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void ScaleShift(
    const float* __restrict__ x, float* __restrict__ y, uint64_t n, float alpha, float beta) {
  for (uint64_t i = 0; i < n; ++i) y[i] = std::fma(alpha, x[i], beta);
}

bool OnHost(TRITONSERVER_MemoryType type) {
  return type == TRITONSERVER_MEMORY_CPU || type == TRITONSERVER_MEMORY_CPU_PINNED;
}

// A scalar of the request: alpha or beta.
struct Scalar {
  const char* name;
  double value = 0;
  bool found = false;
};

TRITONSERVER_Error* ReadScalarInput(TRITONBACKEND_Input* input, TRITONSERVER_DataType datatype,
                                    uint64_t byte_size, uint32_t buffer_count, Scalar* scalar) {
  if (datatype != TRITONSERVER_TYPE_FP64 || byte_size != sizeof(double)) {
    return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("input '") + scalar->name +
                                                     "' must be one FP64 element, got " +
                                                     TRITONSERVER_DataTypeString(datatype) +
                                                     " of " + std::to_string(byte_size) + " bytes");
  }
  auto* to = reinterpret_cast<char*>(&scalar->value);
  for (uint32_t b = 0; b < buffer_count; ++b) {
    const void* data = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &data, &size, &type, &type_id));
    if (!OnHost(type)) {
      return Error(TRITONSERVER_ERROR_INVALID_ARG,
                   std::string("input '") + scalar->name + "' must be in CPU memory");
    }
    std::memcpy(to, data, size);
    to += size;
  }
  scalar->found = true;
  return nullptr;
}

// Runs one request; its response, when created, goes into *response (sent by the caller).
TRITONSERVER_Error* Execute(TRITONBACKEND_Request* request, TRITONBACKEND_Response** response,
                            uint64_t* compute_start_ns, uint64_t* compute_end_ns) {
  Scalar alpha{"alpha"}, beta{"beta"};
  TRITONBACKEND_Input* x = nullptr;
  const int64_t* shape = nullptr;
  uint32_t dims = 0, x_buffers = 0;
  uint64_t x_bytes = 0;

  uint32_t count = 0;
  RETURN_IF_ERROR(TRITONBACKEND_RequestParameterCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* key = nullptr;
    TRITONSERVER_ParameterType type = TRITONSERVER_PARAMETER_STRING;
    const void* value = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestParameter(request, i, &key, &type, &value));
    Scalar* scalar = std::strcmp(key, "alpha") == 0  ? &alpha
                     : std::strcmp(key, "beta") == 0 ? &beta
                                                     : nullptr;
    if (scalar == nullptr) continue;
    if (type == TRITONSERVER_PARAMETER_DOUBLE) {
      scalar->value = *static_cast<const double*>(value);
    } else if (type == TRITONSERVER_PARAMETER_INT) {
      scalar->value = static_cast<double>(*static_cast<const int64_t*>(value));
    } else {
      return Error(TRITONSERVER_ERROR_INVALID_ARG,
                   std::string("parameter '") + key + "' must be a double or an int");
    }
    scalar->found = true;
  }

  RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    TRITONBACKEND_Input* input = nullptr;
    const char* name = nullptr;
    TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
    const int64_t* input_shape = nullptr;
    uint32_t input_dims = 0, buffers = 0;
    uint64_t byte_size = 0;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInputByIndex(request, i, &input));
    RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, &name, &datatype, &input_shape,
                                                  &input_dims, &byte_size, &buffers));
    if (std::strcmp(name, "x") == 0) {
      if (datatype != TRITONSERVER_TYPE_FP32) {
        return Error(TRITONSERVER_ERROR_INVALID_ARG, std::string("input 'x' must be FP32, got ") +
                                                         TRITONSERVER_DataTypeString(datatype));
      }
      x = input, shape = input_shape, dims = input_dims, x_bytes = byte_size, x_buffers = buffers;
    } else if (std::strcmp(name, "alpha") == 0 || std::strcmp(name, "beta") == 0) {
      Scalar* scalar = name[0] == 'a' ? &alpha : &beta;
      RETURN_IF_ERROR(ReadScalarInput(input, datatype, byte_size, buffers, scalar));
    }
  }
  if (x == nullptr) return Error(TRITONSERVER_ERROR_INVALID_ARG, "input 'x' is missing");
  for (const Scalar* s : {&alpha, &beta}) {
    if (!s->found) {
      return Error(TRITONSERVER_ERROR_INVALID_ARG,
                   std::string("'") + s->name +
                       "' is missing: give it as a request parameter or a one-element FP64 input");
    }
  }

  RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(response, request));
  TRITONBACKEND_Output* output = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(*response, &output, "output__0",
                                               TRITONSERVER_TYPE_FP32, shape, dims));
  void* out = nullptr;
  TRITONSERVER_MemoryType out_type = TRITONSERVER_MEMORY_CPU;
  int64_t out_type_id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &out, x_bytes, &out_type, &out_type_id));
  if (x_bytes != 0 && !OnHost(out_type)) {
    return Error(TRITONSERVER_ERROR_UNSUPPORTED, "the output buffer is not in CPU memory");
  }

  *compute_start_ns = NowNs();
  auto* y = static_cast<float*>(out);
  const auto a = static_cast<float>(alpha.value);
  const auto b = static_cast<float>(beta.value);
  for (uint32_t i = 0; i < x_buffers; ++i) {
    const void* data = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(x, i, &data, &size, &type, &type_id));
    if (!OnHost(type)) {
      return Error(TRITONSERVER_ERROR_UNSUPPORTED, "input 'x' is not in CPU memory");
    }
    if (size % sizeof(float) != 0) {
      return Error(TRITONSERVER_ERROR_INVALID_ARG,
                   "input 'x' arrived in a buffer that splits an element");
    }
    ScaleShift(static_cast<const float*>(data), y, size / sizeof(float), a, b);
    y += size / sizeof(float);
  }
  *compute_end_ns = NowNs();
  return nullptr;
}

}  // namespace

extern "C" {

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend*) {
  uint32_t major = 0, minor = 0;
  RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != MYOPS_TRITONBACKEND_API_MAJOR || minor < MYOPS_TRITONBACKEND_API_MINOR) {
    return Error(TRITONSERVER_ERROR_UNSUPPORTED,
                 "the scaleshift backend needs TRITONBACKEND API " +
                     std::to_string(MYOPS_TRITONBACKEND_API_MAJOR) + "." +
                     std::to_string(MYOPS_TRITONBACKEND_API_MINOR) + "+; this server has " +
                     std::to_string(major) + "." + std::to_string(minor));
  }
  return nullptr;
}

MYOPS_TRITON_EXPORT TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
    const uint32_t request_count) {
  const uint64_t exec_start_ns = NowNs();
  uint64_t first_compute_ns = 0, last_compute_ns = 0;
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Response* response = nullptr;
    const uint64_t request_start_ns = r == 0 ? exec_start_ns : NowNs();
    uint64_t compute_start_ns = 0, compute_end_ns = 0;
    TRITONSERVER_Error* error = Execute(request, &response, &compute_start_ns, &compute_end_ns);
    if (compute_end_ns == 0) compute_start_ns = compute_end_ns = NowNs();  // Failed before.
    if (response == nullptr && error != nullptr &&
        TRITONBACKEND_ResponseNew(&response, request) != nullptr) {
      response = nullptr;  // Nothing to send the error with; Triton answers INTERNAL.
    }
    const bool success = error == nullptr;
    if (response != nullptr) {
      // Takes `error`; the error travels with the response to the client.
      if (TRITONSERVER_Error* e =
              TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error)) {
        TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__,
                                TRITONSERVER_ErrorMessage(e));
        TRITONSERVER_ErrorDelete(e);
      }
    } else if (error != nullptr) {
      TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__,
                              TRITONSERVER_ErrorMessage(error));
      TRITONSERVER_ErrorDelete(error);
    }
    const uint64_t request_end_ns = NowNs();
    if (r == 0) first_compute_ns = compute_start_ns;
    last_compute_ns = compute_end_ns;
    if (TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(
            instance, request, success, request_start_ns, compute_start_ns, compute_end_ns,
            request_end_ns)) {
      TRITONSERVER_ErrorDelete(e);
    }
    if (TRITONSERVER_Error* e =
            TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL)) {
      TRITONSERVER_ErrorDelete(e);
    }
  }
  if (request_count > 0) {
    if (TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(
            instance, request_count, exec_start_ns, first_compute_ns, last_compute_ns, NowNs())) {
      TRITONSERVER_ErrorDelete(e);
    }
  }
  return nullptr;  // Every request was released; errors went out with their responses.
}

}  // extern "C"
