// The HTTP/REST binding's response bodies (see frontends/oip/rest/json.h): outputs as JSON data or
// binary parts, and errors.
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "frontends/oip/rest/json.h"

namespace myops::server::kserve {

using Json = nlohmann::json;

namespace {

// Whether output `i` goes as binary data: its binary_data parameter, else the request's
// binary_data_output.
bool AsBinary(const RestInferRequest& request, size_t i) {
  if (i < request.output_binary.size() && request.output_binary[i]) {
    return *request.output_binary[i];
  }
  return request.binary_data_output;
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? std::numeric_limits<float>::infinity()
                              : std::numeric_limits<float>::quiet_NaN();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// The output's elements as a flat JSON array.
Json DataJson(const OutputTensor& o) {
  Json data = Json::array();
  const absl::string_view bytes = o.bytes();
  if (o.type == nullptr) {  // BYTES: one 4-byte length, then the string
    data.push_back(std::string(bytes.substr(std::min<size_t>(4, bytes.size()))));
    return data;
  }
  const Datatype& t = *o.type;
  const size_t n = bytes.size() / static_cast<size_t>(t.size);
  for (size_t k = 0; k < n; ++k) {
    const char* p = bytes.data() + k * static_cast<size_t>(t.size);
    switch (t.family) {
      case Family::kBool:
        data.push_back(*p != 0);
        break;
      case Family::kSigned:
        if (t.size == 1) data.push_back(Load<int8_t>(p));
        if (t.size == 2) data.push_back(Load<int16_t>(p));
        if (t.size == 4) data.push_back(Load<int32_t>(p));
        if (t.size == 8) data.push_back(Load<int64_t>(p));
        break;
      case Family::kUnsigned:
        data.push_back(Load<uint8_t>(p));
        break;
      case Family::kFloat:
        if (t.size == 4) {
          data.push_back(Load<float>(p));
        } else {
          data.push_back(Load<double>(p));
        }
        break;
      case Family::kHalf:
        if (std::strcmp(t.name, "BF16") == 0) {
          const uint32_t bits = static_cast<uint32_t>(Load<uint16_t>(p)) << 16;
          data.push_back(Load<float>(reinterpret_cast<const char*>(&bits)));
        } else {
          data.push_back(HalfToFloat(Load<uint16_t>(p)));
        }
        break;
    }
  }
  return data;
}

}  // namespace

int64_t JsonResponseBytes(const RestInferRequest& request,
                          const std::vector<OutputTensor>& outputs) {
  int64_t bytes = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (AsBinary(request, i) || outputs[i].in_shared_memory) continue;
    const OutputTensor& o = outputs[i];
    const auto n = static_cast<int64_t>(o.bytes().size());
    // BYTES: escaped text (up to 6 characters a byte, \u00XX) twice over (value, dump).
    bytes += o.type == nullptr ? 12 * n : kJsonBytesPerOutputElement * (n / o.type->size);
  }
  return bytes;
}

RestInferResponse EncodeInferResponseJson(const std::string& model, const RestInferRequest& request,
                                          const std::vector<OutputTensor>& outputs) {
  RestInferResponse response;
  Json j = {{"model_name", model}, {"model_version", kModelVersion}};
  if (!request.id.empty()) j["id"] = request.id;
  Json list = Json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OutputTensor& o = outputs[i];
    const bool binary = AsBinary(request, i);
    Json out = {{"name", o.name}, {"datatype", o.datatype()}, {"shape", o.shape}};
    if (o.in_shared_memory) {
      // As Triton answers: the region's parameters, no data.
      Json params = Json::object();
      for (const Parameter& p : request.output_shm.at(o.selected)) {
        if (p.kind == Parameter::Kind::kString) params[p.name] = p.string_value;
        if (p.kind == Parameter::Kind::kInt64) params[p.name] = p.int64_value;
        if (p.kind == Parameter::Kind::kUint64) params[p.name] = p.uint64_value;
      }
      out["parameters"] = std::move(params);
    } else if (binary) {
      out["parameters"] = {{"binary_data_size", o.bytes().size()}};
      response.binary.push_back(o.bytes());
      response.binary_bytes += static_cast<int64_t>(o.bytes().size());
    } else {
      out["data"] = DataJson(o);
    }
    list.push_back(std::move(out));
  }
  j["outputs"] = std::move(list);
  // Invalid UTF-8 (in a str result) is replaced rather than thrown.
  response.json = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  return response;
}

std::string ErrorJson(absl::string_view message) {
  return Json{{"error", message}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace myops::server::kserve
