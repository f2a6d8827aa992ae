// The Open Inference Protocol's datatypes ("FP32", "INT64", ...) and the pipeline's
// dtypes they carry; private to the protocol front end (frontends/oip/codec.cc,
// frontends/oip/inputs.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "runtime/tensor_view.h"

namespace myops::server::kserve {

enum class Family { kBool, kSigned, kUnsigned, kFloat, kHalf };

// One datatype of the protocol: its element size, what it is, and the pipeline's tensor
// dtype when the pipeline carries it as a tensor.
struct Datatype {
  const char* name;
  int64_t size;
  Family family;
  std::optional<DType> tensor;
};

inline const Datatype kDatatypes[] = {
    {"BOOL", 1, Family::kBool, DType::kBool},     {"UINT8", 1, Family::kUnsigned, DType::kUInt8},
    {"INT8", 1, Family::kSigned, DType::kInt8},   {"INT16", 2, Family::kSigned, DType::kInt16},
    {"INT32", 4, Family::kSigned, DType::kInt32}, {"INT64", 8, Family::kSigned, DType::kInt64},
    {"FP16", 2, Family::kHalf, DType::kFloat16},  {"FP32", 4, Family::kFloat, DType::kFloat32},
    {"FP64", 8, Family::kFloat, DType::kFloat64}, {"BF16", 2, Family::kHalf, DType::kBFloat16},
};

inline const Datatype* FindDatatype(const std::string& name) {
  for (const Datatype& d : kDatatypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

inline const Datatype* DatatypeOf(DType dtype) {
  for (const Datatype& d : kDatatypes) {
    if (d.tensor == dtype) return &d;
  }
  return nullptr;
}

inline std::string DatatypeNames(bool tensors_only) {
  std::vector<std::string> names;
  for (const Datatype& d : kDatatypes) {
    if (!tensors_only || d.tensor) names.push_back(d.name);
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace myops::server::kserve
