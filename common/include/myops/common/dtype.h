// The one table of tensor element types, used by the server, the C++ and Python clients,
// myops-cli and the load generator. Values equal the wire enum myops.v1.DType and never
// change; each entry gives the name used in messages and flags, the size of an element,
// NumPy's type string and whether the type is floating point.
//
// Self-contained and free of protobuf, gRPC and torch (the torch mapping lives in the
// server's runner, the only place that sees torch).
#ifndef MYOPS_COMMON_DTYPE_H_
#define MYOPS_COMMON_DTYPE_H_

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace myops {

// Element type. Values equal myops.v1.DType (0 is DTYPE_UNSPECIFIED, never a DType).
enum class DType : int32_t {
  kFloat32 = 1,   // IEEE-754 binary32.
  kFloat64 = 2,   // IEEE-754 binary64.
  kFloat16 = 3,   // IEEE-754 binary16.
  kBFloat16 = 4,  // bfloat16: the upper 16 bits of a binary32.
  kInt8 = 5,      // Two's complement, 1 byte.
  kInt16 = 6,     // Two's complement, 2 bytes.
  kInt32 = 7,     // Two's complement, 4 bytes.
  kInt64 = 8,     // Two's complement, 8 bytes.
  kUInt8 = 9,     // Unsigned, 1 byte.
  kBool = 10,     // 1 byte, 0 (false) or 1 (true).
};

// What is known about one DType.
struct DTypeInfo {
  DType dtype;
  // "float32", "int8", "bool": PyTorch's and NumPy's names, used in messages and flags.
  absl::string_view name;
  // Bytes per element.
  int64_t item_size;
  // NumPy's dtype.str (byte order + kind + size): "<f4", "|i1", "|b1". Empty for
  // bfloat16, which NumPy lacks (ml_dtypes and torch carry it; .npy files cannot).
  absl::string_view numpy_str;
  bool is_floating;
};

// Every DType, in wire order: kDTypeTable[i].dtype has wire value i + 1.
inline constexpr DTypeInfo kDTypeTable[] = {
    {DType::kFloat32, "float32", 4, "<f4", true}, {DType::kFloat64, "float64", 8, "<f8", true},
    {DType::kFloat16, "float16", 2, "<f2", true}, {DType::kBFloat16, "bfloat16", 2, "", true},
    {DType::kInt8, "int8", 1, "|i1", false},      {DType::kInt16, "int16", 2, "<i2", false},
    {DType::kInt32, "int32", 4, "<i4", false},    {DType::kInt64, "int64", 8, "<i8", false},
    {DType::kUInt8, "uint8", 1, "|u1", false},    {DType::kBool, "bool", 1, "|b1", false},
};
inline constexpr int kNumDTypes = static_cast<int>(std::size(kDTypeTable));

// The entry of `dtype`; nullptr for a value outside the enum (e.g. a cast wire integer).
constexpr const DTypeInfo* FindDTypeInfo(DType dtype) {
  const int32_t value = static_cast<int32_t>(dtype);
  return value >= 1 && value <= kNumDTypes ? &kDTypeTable[value - 1] : nullptr;
}

// The DType with wire value `value`; nullopt for 0 (unspecified) and unknown values.
constexpr std::optional<DType> DTypeFromWire(int64_t value) {
  if (value < 1 || value > kNumDTypes) return std::nullopt;
  return kDTypeTable[value - 1].dtype;
}

// The DType named `name` ("float32", ..., "bool"); nullopt for other names.
constexpr std::optional<DType> DTypeFromName(absl::string_view name) {
  for (const DTypeInfo& info : kDTypeTable) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

// The DType of NumPy type string `str` as DTypeInfo::numpy_str gives it; for one-byte
// types any byte-order character ('|', '<', '>', '=') is accepted. nullopt otherwise.
constexpr std::optional<DType> DTypeFromNumpyStr(absl::string_view str) {
  for (const DTypeInfo& info : kDTypeTable) {
    if (info.numpy_str.empty()) continue;
    if (str == info.numpy_str) return info.dtype;
    if (info.item_size == 1 && str.size() == 3 && str.substr(1) == info.numpy_str.substr(1) &&
        (str[0] == '<' || str[0] == '>' || str[0] == '=' || str[0] == '|')) {
      return info.dtype;
    }
  }
  return std::nullopt;
}

// Bytes per element; 0 for a value outside the enum.
constexpr int64_t ItemSize(DType dtype) {
  const DTypeInfo* info = FindDTypeInfo(dtype);
  return info == nullptr ? 0 : info->item_size;
}

// "float32", ..., "bool"; "unknown" for a value outside the enum.
constexpr absl::string_view DTypeName(DType dtype) {
  const DTypeInfo* info = FindDTypeInfo(dtype);
  return info == nullptr ? absl::string_view("unknown") : info->name;
}

// True for float32, float64, float16 and bfloat16.
constexpr bool IsFloatingDType(DType dtype) {
  const DTypeInfo* info = FindDTypeInfo(dtype);
  return info != nullptr && info->is_floating;
}

// "float32, float64, ..., bool": every name, in wire order, for "expected one of" messages;
// with `wire_names` the proto enum's names instead ("DTYPE_FLOAT32, ..., DTYPE_BOOL").
inline std::string DTypeNameList(bool wire_names = false) {
  std::string out;
  for (const DTypeInfo& info : kDTypeTable) {
    if (!out.empty()) out += ", ";
    if (!wire_names) {
      out.append(info.name.data(), info.name.size());
      continue;
    }
    out += "DTYPE_";
    for (char c : info.name) out += (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
  }
  return out;
}

}  // namespace myops

#endif  // MYOPS_COMMON_DTYPE_H_
