// The HTTP/REST binding's request bodies (see frontends/oip/rest/json.h); responses are in
// frontends/oip/rest/json_response.cc.
#include "frontends/oip/rest/json.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace myops::server::kserve {
namespace {

using Json = nlohmann::json;

// Whether `text` nests arrays and objects at most `max` deep (strings skipped).
bool DepthWithin(absl::string_view text, int max) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

absl::Status Invalid(const std::string& where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, " ", what));
}

// The JSON value's kind, for messages: "a JSON array", "the string \"x\"" is too long.
std::string KindOf(const Json& j) {
  if (j.is_array()) return "a JSON array";
  if (j.is_object()) return "a JSON object";
  if (j.is_null()) return "null";
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a bool";
  return "a number";
}

Parameter ToParameter(const std::string& name, const Json& j) {
  Parameter p;
  p.name = name;
  using P = Parameter::Kind;
  switch (j.type()) {
    case Json::value_t::boolean:
      p.kind = P::kBool, p.bool_value = j.get<bool>();
      break;
    case Json::value_t::number_integer:
      p.kind = P::kInt64, p.int64_value = j.get<int64_t>();
      break;
    case Json::value_t::number_unsigned:
      p.kind = P::kUint64, p.uint64_value = j.get<uint64_t>();
      break;
    case Json::value_t::number_float:
      p.kind = P::kDouble, p.double_value = j.get<double>();
      break;
    case Json::value_t::string:
      p.kind = P::kString, p.string_value = j.get<std::string>();
      break;
    case Json::value_t::null:
      break;
    default:
      p.kind = P::kOther, p.other = KindOf(j);
  }
  return p;
}

// The number of leaves of `data` (nested arrays flattened); stops counting past `limit`.
int64_t CountLeaves(const Json& data, int64_t limit) {
  if (!data.is_array()) return 1;
  int64_t n = 0;
  for (const Json& item : data) {
    n += CountLeaves(item, limit - n);
    if (n > limit) break;
  }
  return n;
}

// Writes element `k` (`j`) of a tensor of `type` at `out`; INVALID_ARGUMENT naming it.
absl::Status WriteElement(const Json& j, const Datatype& type, int64_t k, const std::string& field,
                          char* out) {
  auto bad = [&](absl::string_view takes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": data[", k, "] is ", j.dump(), "; ", type.name, " takes ", takes));
  };
  switch (type.family) {
    case Family::kBool:
      if (!j.is_boolean()) return bad("true or false");
      *out = j.get<bool>() ? 1 : 0;
      return absl::OkStatus();
    case Family::kSigned:
    case Family::kUnsigned: {
      const int bits = static_cast<int>(type.size * 8);
      const bool is_signed = type.family == Family::kSigned;
      const uint64_t hi = is_signed ? (uint64_t{1} << (bits - 1)) - 1
                                    : (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1);
      const int64_t lo = is_signed ? -static_cast<int64_t>(hi) - 1 : 0;
      const auto range = [&] { return absl::StrCat("integers from ", lo, " to ", hi); };
      int64_t v = 0;
      if (j.is_number_unsigned()) {
        const auto u = j.get<uint64_t>();
        if (u > hi) return bad(range());
        v = static_cast<int64_t>(u);
      } else if (j.is_number_integer()) {
        v = j.get<int64_t>();
        if (v < lo) return bad(range());
      } else {
        return bad(range());
      }
      std::memcpy(out, &v, static_cast<size_t>(type.size));  // little-endian: the low bytes
      return absl::OkStatus();
    }
    case Family::kFloat:
      if (!j.is_number()) return bad("numbers");
      if (type.size == 4) {
        const auto f = j.get<float>();
        std::memcpy(out, &f, 4);
      } else {
        const auto d = j.get<double>();
        std::memcpy(out, &d, 8);
      }
      return absl::OkStatus();
    case Family::kHalf:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", type.name, ", which travels only as binary data"));
}

// Flattens `data` row-major into `out` (count elements of `type`).
absl::Status WriteData(const Json& data, const Datatype& type, const std::string& field, char* out,
                       int64_t* k) {
  if (!data.is_array()) {
    if (absl::Status s = WriteElement(data, type, *k, field, out + *k * type.size); !s.ok()) {
      return s;
    }
    ++*k;
    return absl::OkStatus();
  }
  for (const Json& item : data) {
    if (absl::Status s = WriteData(item, type, field, out, k); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The shared memory parameters (frontends/oip/shm.h) among a tensor's `params`.
std::vector<Parameter> SharedMemoryParameters(const Json& params) {
  std::vector<Parameter> out;
  for (const char* name :
       {"shared_memory_region", "shared_memory_offset", "shared_memory_byte_size"}) {
    if (const auto p = params.find(name); p != params.end()) out.push_back(ToParameter(name, *p));
  }
  return out;
}

// The 'shape' of input `j` into `shape`: integers, at most limits.max_dims of them.
absl::Status ParseShape(const Json& j, const std::string& field, const TensorLimits& limits,
                        std::vector<int64_t>* shape) {
  const auto dims = j.find("shape");
  if (dims == j.end() || !dims->is_array()) return Invalid(field, "has no 'shape' array");
  if (dims->size() > static_cast<size_t>(limits.max_dims)) {
    return Invalid(field, absl::StrCat("has ", dims->size(), " dimensions; at most ",
                                       limits.max_dims, " are supported"));
  }
  for (const Json& d : *dims) {
    if (!d.is_number_integer()) return Invalid(field, "has a 'shape' that is not all integers");
    if (d.is_number_unsigned() && d.get<uint64_t>() > uint64_t{1} << 62) {
      return Invalid(field, absl::StrCat("has a dimension of ", d.dump(), ", too large"));
    }
    shape->push_back(d.get<int64_t>());
  }
  return absl::OkStatus();
}

// Points `in` (type and count set) at the next `size` bytes of `*binary`, checked as its
// raw data, and takes them off `*binary`. Bytes the body puts at an address that is not a
// multiple of the datatype's size (the binary part follows a JSON header of any length)
// are copied into `scratch` first: operators may assume aligned elements.
absl::Status TakeBinaryData(uint64_t size, const std::string& field, absl::string_view* binary,
                            InputTensor* in, Scratch* scratch) {
  if (size > binary->size()) {
    return Invalid(field, absl::StrCat("has binary_data_size ", size, " but only ", binary->size(),
                                       " bytes of binary data are left"));
  }
  const absl::string_view bytes = binary->substr(0, static_cast<size_t>(size));
  binary->remove_prefix(bytes.size());
  if (absl::Status s = CheckRawData(*in, bytes, field, "binary data"); !s.ok()) return s;
  in->data = bytes.data();
  if (reinterpret_cast<uintptr_t>(bytes.data()) % static_cast<uintptr_t>(in->type->size) != 0) {
    auto& aligned = scratch->emplace_back(new char[bytes.empty() ? 1 : bytes.size()]);
    std::memcpy(aligned.get(), bytes.data(), bytes.size());
    in->data = aligned.get();
  }
  return absl::OkStatus();
}

// Copies JSON `data` (flat or nested, exactly in->count elements) into a buffer of
// in->type kept in `scratch`, and points `in` at it.
absl::Status CopyJsonData(const Json& data, const std::string& field, InputTensor* in,
                          Scratch* scratch) {
  if (in->type->family == Family::kHalf) {
    return Invalid(field,
                   absl::StrCat("is ", in->type->name, ", which travels only as binary data"));
  }
  const int64_t leaves = CountLeaves(data, in->count);
  if (leaves != in->count) {
    return Invalid(field,
                   absl::StrCat("has ", leaves > in->count ? "more than " : "",
                                std::min(leaves, in->count), " elements in 'data' but shape ",
                                ShapeString(in->shape), " needs ", in->count));
  }
  auto& buffer = scratch->emplace_back(new char[static_cast<size_t>(in->count * in->type->size)]);
  int64_t k = 0;
  if (absl::Status s = WriteData(data, *in->type, field, buffer.get(), &k); !s.ok()) return s;
  in->data = buffer.get();
  return absl::OkStatus();
}

// Input `j` of the request into `in`, its binary data (if any) taken from `*binary`; an
// input in shared memory gets its shared memory parameters in `shm` and no data.
absl::Status ParseInput(const Json& j, size_t index, const std::string& model,
                        const TensorLimits& limits, absl::string_view* binary, InputTensor* in,
                        std::vector<Parameter>* shm, Scratch* scratch) {
  const std::string where = absl::StrCat("inputs[", index, "] of the request for model ", model);
  if (!j.is_object()) return Invalid(where, "is not a JSON object");
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return Invalid(where, "has no string 'name'");
  in->name = name->get<std::string>();
  const std::string field = InputField(in->name, model);
  const auto datatype = j.find("datatype");
  if (datatype == j.end() || !datatype->is_string())
    return Invalid(field, "has no string 'datatype'");
  if (absl::Status shaped = ParseShape(j, field, limits, &in->shape); !shaped.ok()) return shaped;
  auto type = ParseDatatype(datatype->get<std::string>(), field);
  if (!type.ok()) return type.status();
  in->type = *type;
  std::optional<uint64_t> binary_size;
  if (const auto params = j.find("parameters"); params != j.end()) {
    if (!params->is_object()) return Invalid(field, "has 'parameters' that are not an object");
    if (const auto size = params->find("binary_data_size"); size != params->end()) {
      if (!size->is_number_unsigned()) {
        return Invalid(field, "has a binary_data_size that is not a non-negative integer");
      }
      binary_size = size->get<uint64_t>();
    }
    *shm = SharedMemoryParameters(*params);
  }
  const auto data = j.find("data");
  if (!shm->empty()) {
    // Its bytes are in a region (the front end resolves it): the region bounds its size,
    // its elements are limited as any tensor's.
    if (binary_size || data != j.end()) {
      return Invalid(field, "names a shared memory region and also carries data");
    }
    auto numel = Elements(in->shape, in->type->size, field, limits.InRegion());
    if (!numel.ok()) return numel.status();
    in->count = *numel;
    return absl::OkStatus();
  }
  auto numel = Elements(in->shape, in->type->size, field, limits);
  if (!numel.ok()) return numel.status();
  in->count = *numel;
  in->stride = in->type->size;
  if (binary_size) {
    if (data != j.end()) return Invalid(field, "has both 'data' and binary_data_size");
    return TakeBinaryData(*binary_size, field, binary, in, scratch);
  }
  if (data == j.end()) return Invalid(field, "has neither 'data' nor binary_data_size");
  return CopyJsonData(*data, field, in, scratch);
}

}  // namespace

absl::StatusOr<BodyParts> SplitBody(absl::string_view body,
                                    std::optional<absl::string_view> header_length) {
  if (!header_length) return BodyParts{body, {}};
  uint64_t n = 0;
  if (header_length->empty() ||
      !std::all_of(header_length->begin(), header_length->end(),
                   [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(*header_length, &n) || n > body.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Inference-Header-Content-Length is '", header_length->substr(0, 32),
        "'; expected the JSON header's length in bytes, at most the body's ", body.size()));
  }
  return BodyParts{body.substr(0, n), body.substr(n)};
}

absl::Status ParseInferRequestJson(const std::string& model, BodyParts body,
                                   const TensorLimits& limits, RestInferRequest* out) {
  if (!DepthWithin(body.json, kMaxJsonDepth)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request's JSON nests arrays and objects more than ", kMaxJsonDepth, " deep"));
  }
  Json j;
  try {
    j = Json::parse(body.json.begin(), body.json.end());
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request body is not valid JSON: ", e.what()));
  }
  if (!j.is_object()) return absl::InvalidArgumentError("the request body is not a JSON object");
  const std::string where = absl::StrCat("the request for model ", model);
  if (const auto id = j.find("id"); id != j.end()) {
    if (!id->is_string()) return Invalid(where, "has an 'id' that is not a string");
    out->id = id->get<std::string>();
  }
  if (const auto params = j.find("parameters"); params != j.end()) {
    if (!params->is_object()) return Invalid(where, "has 'parameters' that are not an object");
    for (const auto& [name, value] : params->items()) {
      if (name == "binary_data_output") {
        if (!value.is_boolean())
          return Invalid(where, "has a binary_data_output that is not a bool");
        out->binary_data_output = value.get<bool>();
      } else {
        out->parameters.push_back(ToParameter(name, value));
      }
    }
  }
  const auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array()) return Invalid(where, "has no 'inputs' array");
  absl::string_view binary = body.binary;
  for (size_t i = 0; i < inputs->size(); ++i) {
    InputTensor& in = out->inputs.emplace_back();
    if (absl::Status s = ParseInput((*inputs)[i], i, model, limits, &binary, &in,
                                    &out->input_shm.emplace_back(), &out->scratch);
        !s.ok()) {
      return s;
    }
  }
  if (!binary.empty()) {
    return Invalid(where, absl::StrCat("has ", binary.size(),
                                       " bytes of binary data that no input's binary_data_size "
                                       "claims"));
  }
  if (const auto outputs = j.find("outputs"); outputs != j.end()) {
    if (!outputs->is_array()) return Invalid(where, "has 'outputs' that are not an array");
    for (const Json& o : *outputs) {
      const auto name = o.is_object() ? o.find("name") : o.end();
      if (!o.is_object() || name == o.end() || !name->is_string()) {
        return Invalid(where, "has an output that is not an object with a string 'name'");
      }
      out->outputs.push_back(name->get<std::string>());
      std::optional<bool> binary_data;
      auto& shm = out->output_shm.emplace_back();
      if (const auto params = o.find("parameters"); params != o.end() && params->is_object()) {
        shm = SharedMemoryParameters(*params);
        if (const auto c = params->find("classification"); c != params->end()) {
          shm.push_back(ToParameter("classification", *c));
        }
        if (const auto b = params->find("binary_data"); b != params->end()) {
          if (!b->is_boolean()) {
            return Invalid(absl::StrCat("output '", out->outputs.back(), "' of ", where),
                           "has a binary_data parameter that is not a bool");
          }
          binary_data = b->get<bool>();
        }
      }
      out->output_binary.push_back(binary_data);
    }
  }
  return absl::OkStatus();
}

}  // namespace myops::server::kserve
