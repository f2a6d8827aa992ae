// The Open Inference Protocol's binding-independent rules for a response's outputs and
// for the names of Tensor[] elements (see frontends/oip/args.h).
#include <algorithm>
#include <cstring>
#include <numeric>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/oip/args.h"
#include "frontends/oip/datatypes.h"

namespace myops::server::kserve {
namespace {

using K = Value::Kind;

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace

std::string ElementName(const std::string& name, size_t index) {
  return absl::StrCat(name, "__", index);
}

std::optional<ElementRef> SplitElementName(const std::string& name) {
  const size_t split = name.rfind("__");
  if (split == std::string::npos || split == 0) return std::nullopt;
  const absl::string_view digits = absl::string_view(name).substr(split + 2);
  if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) {
    return std::nullopt;
  }
  int index = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + (c - '0');
  }
  return ElementRef{name.substr(0, split), index};
}

absl::StatusOr<std::vector<OutputRef>> SelectOutputs(const OpInfo& op,
                                                     const std::vector<std::string>& requested) {
  const std::vector<std::string> names = OutputNames(op);
  std::vector<OutputRef> selected;
  if (requested.empty()) {
    for (size_t i = 0; i < names.size(); ++i) selected.push_back({static_cast<int>(i), -1});
  }
  std::vector<bool> whole(names.size(), false);   // results selected whole
  std::vector<int> elements_of(names.size(), 0);  // elements selected, by result
  std::unordered_set<int64_t> elements;           // (result << 32) | element, selected
  auto find = [&names](const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  };
  for (const std::string& wanted : requested) {
    OutputRef ref{find(wanted), -1};
    if (ref.result < 0) {
      if (auto element = SplitElementName(wanted); element) {
        const int list = find(element->name);
        if (list >= 0 && op.returns[static_cast<size_t>(list)].kind == ArgKind::kTensorList) {
          ref = {list, element->index};
        }
      }
    }
    if (ref.result < 0) {
      std::vector<std::string> listed;
      for (size_t i = 0; i < names.size(); ++i) {
        listed.push_back(op.returns[i].kind == ArgKind::kTensorList
                             ? absl::StrCat(names[i], " (or ", ElementName(names[i], 0), ", ",
                                            ElementName(names[i], 1), ", ...)")
                             : names[i]);
      }
      return absl::InvalidArgumentError(
          absl::StrCat("model ", op.QualifiedName(), " has no output '", wanted,
                       "' (outputs: ", absl::StrJoin(listed, ", "), ")"));
    }
    // Twice: a result already selected whole, a whole list some of whose elements are,
    // or one element again (constant time per output, not a scan of those before).
    const auto r = static_cast<size_t>(ref.result);
    const bool twice =
        whole[r] ||
        (ref.element < 0 ? elements_of[r] > 0
                         : !elements.insert((int64_t{ref.result} << 32) | ref.element).second);
    if (twice) {
      return absl::InvalidArgumentError(
          absl::StrCat("output '", wanted, "' is requested twice (or as part of its whole list)"));
    }
    if (ref.element < 0) {
      whole[r] = true;
    } else {
      ++elements_of[r];
    }
    selected.push_back(ref);
  }
  return selected;
}

// Result `v` (no tensor) of `op` as output `name`: a 1-element (list: 1-D) tensor of
// INT64, FP64, BOOL or BYTES, encoded into `owned`. UNIMPLEMENTED for a kind the protocol
// does not carry.
absl::StatusOr<OutputTensor> NonTensorOutput(const OpInfo& op, const Value& v,
                                             const std::string& name, size_t r) {
  OutputTensor out;
  out.name = name;
  out.result = r;
  switch (v.kind) {
    case K::kInt:
      out.type = FindDatatype("INT64"), out.shape = {1};
      out.owned = Bytes(std::vector<int64_t>{v.int_value});
      break;
    case K::kFloat:
      out.type = FindDatatype("FP64"), out.shape = {1};
      out.owned = Bytes(std::vector<double>{v.float_value});
      break;
    case K::kBool:
      out.type = FindDatatype("BOOL"), out.shape = {1};
      out.owned = std::string(1, v.bool_value ? '\1' : '\0');
      break;
    case K::kIntList:
      out.type = FindDatatype("INT64");
      out.shape = {static_cast<int64_t>(v.int_list.size())};
      out.owned = Bytes(v.int_list);
      break;
    case K::kFloatList:
      out.type = FindDatatype("FP64");
      out.shape = {static_cast<int64_t>(v.float_list.size())};
      out.owned = Bytes(v.float_list);
      break;
    case K::kString: {
      out.type = nullptr, out.shape = {1};  // BYTES
      out.owned.assign(4, '\0');
      const auto n = static_cast<uint32_t>(v.string_value.size());
      std::memcpy(out.owned.data(), &n, 4);  // little-endian length, as Triton's BYTES
      out.owned += v.string_value;
      break;
    }
    default:
      return absl::UnimplementedError(absl::StrCat("output '", out.name, "' of model ",
                                                   op.QualifiedName(), " is a ", op.returns[r].type,
                                                   ", which this protocol front end does not "
                                                   "carry"));
  }
  return out;
}

absl::StatusOr<std::vector<OutputTensor>> ResultOutputs(const OpInfo& op, const OpCall& call,
                                                        const std::vector<OutputRef>& selected) {
  const std::vector<std::string> names = OutputNames(op);
  std::vector<OutputTensor> outputs;
  for (size_t k = 0; k < selected.size(); ++k) {
    const OutputRef& ref = selected[k];
    const auto r = static_cast<size_t>(ref.result);
    if (r >= call.results.size() || r >= names.size()) {
      return absl::InternalError(absl::StrCat(op.QualifiedName(), " returned ", call.results.size(),
                                              " results, not ", names.size()));
    }
    const Value& v = call.results[r];
    // A tensor output: the whole result, or element `j` of a list.
    auto tensor = [&](const TensorView& t, const std::string& name, int element) {
      OutputTensor out;
      out.name = name;
      out.result = r;
      out.element = element;
      out.selected = k;
      out.type = DatatypeOf(t.dtype);
      if (out.type == nullptr) {
        return absl::StatusOr<OutputTensor>(absl::UnimplementedError(
            absl::StrCat("output '", name, "' has dtype ", DTypeName(t.dtype),
                         ", which this protocol front end does not carry yet")));
      }
      out.shape = t.shape;
      out.is_tensor = true;
      out.tensor_data = t.data;
      out.tensor_bytes = t.bytes;
      return absl::StatusOr<OutputTensor>(std::move(out));
    };
    if (v.kind == K::kNone) continue;  // an optional result that is None: left out
    if (v.kind == K::kTensor || v.kind == K::kTensorList) {
      const bool list = v.kind == K::kTensorList;
      const size_t n = list ? v.tensor_list.size() : 1;
      if (list && ref.element >= 0 && static_cast<size_t>(ref.element) >= n) {
        return absl::InvalidArgumentError(
            absl::StrCat("output '", ElementName(names[r], static_cast<size_t>(ref.element)),
                         "' was requested, but ", op.QualifiedName(), " returned ", n,
                         " tensors as '", names[r], "' (", ElementName(names[r], 0), " to ",
                         ElementName(names[r], n == 0 ? 0 : n - 1), ")"));
      }
      const size_t first = list && ref.element >= 0 ? static_cast<size_t>(ref.element) : 0;
      const size_t last = list && ref.element >= 0 ? first + 1 : n;
      for (size_t j = first; j < last; ++j) {
        auto out = list ? tensor(v.tensor_list[j], ElementName(names[r], j), static_cast<int>(j))
                        : tensor(v.tensor, names[r], -1);
        if (!out.ok()) return out.status();
        outputs.push_back(std::move(*out));
      }
      continue;
    }
    auto out = NonTensorOutput(op, v, names[r], r);
    if (!out.ok()) return out.status();
    out->selected = k;
    outputs.push_back(*std::move(out));
  }
  return outputs;
}

absl::StatusOr<int64_t> ClassificationCount(const std::vector<Parameter>& params,
                                            const std::string& field) {
  for (const Parameter& p : params) {
    if (p.name != "classification") continue;
    if (p.kind == Parameter::Kind::kInt64 && p.int64_value >= 0) return p.int64_value;
    if (p.kind == Parameter::Kind::kUint64) {
      return static_cast<int64_t>(std::min<uint64_t>(p.uint64_value, uint64_t{1} << 62));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": parameter 'classification' is the number of classes; expected an integer >= 0"));
  }
  return 0;
}

namespace {

template <typename T>
std::vector<std::string> TopClasses(const void* data, size_t n, size_t count) {
  const T* values = static_cast<const T*>(data);
  std::vector<size_t> index(n);
  std::iota(index.begin(), index.end(), size_t{0});
  std::sort(index.begin(), index.end(),
            [values](size_t a, size_t b) { return values[a] > values[b]; });
  std::vector<std::string> out;
  for (size_t k = 0; k < std::min(n, count); ++k) {
    out.push_back(std::to_string(values[index[k]]) + ":" + std::to_string(index[k]));
  }
  return out;
}

}  // namespace

absl::Status Classify(int64_t count, OutputTensor* out) {
  const std::string type = out->datatype();
  const Datatype* d = out->type;
  if (!out->is_tensor || d == nullptr || d->family == Family::kBool || d->family == Family::kHalf) {
    return absl::InvalidArgumentError(
        absl::StrCat("class result not available for output due to unsupported type '", type, "'"));
  }
  const size_t n = static_cast<size_t>(out->tensor_bytes / d->size);
  if (n > 1'000'000) return absl::InvalidArgumentError("classification output tensor too large");
  const size_t k = static_cast<size_t>(count);
  std::vector<std::string> classes;
  const std::string name = d->name;
  if (name == "UINT8") classes = TopClasses<uint8_t>(out->tensor_data, n, k);
  if (name == "INT8") classes = TopClasses<int8_t>(out->tensor_data, n, k);
  if (name == "INT16") classes = TopClasses<int16_t>(out->tensor_data, n, k);
  if (name == "INT32") classes = TopClasses<int32_t>(out->tensor_data, n, k);
  if (name == "INT64") classes = TopClasses<int64_t>(out->tensor_data, n, k);
  if (name == "FP32") classes = TopClasses<float>(out->tensor_data, n, k);
  if (name == "FP64") classes = TopClasses<double>(out->tensor_data, n, k);
  out->owned.clear();
  for (const std::string& c : classes) {
    const auto len = static_cast<uint32_t>(c.size());
    char prefix[4];
    std::memcpy(prefix, &len, 4);  // little-endian length, as Triton's BYTES
    out->owned.append(prefix, 4);
    out->owned += c;
  }
  out->type = nullptr;  // BYTES
  out->shape = {static_cast<int64_t>(classes.size())};
  out->is_tensor = false;
  out->tensor_data = nullptr;
  out->tensor_bytes = 0;
  return absl::OkStatus();
}

}  // namespace myops::server::kserve
