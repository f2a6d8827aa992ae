// Parsing and printing of operator arguments on the command line (see call_args.h).
#include "call_args.h"

#include <cmath>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "npy.h"
#include "tensor_values.h"

namespace myops::cli {

const char kCallArgsHelp[] =
    "Arguments: each is VALUE (positional) or NAME=VALUE (by the schema's argument name;\n"
    "keyword arguments come after positional ones). VALUE is one of:\n"
    "  PATH.npy        a tensor read from a .npy file\n"
    "  SHAPE:DTYPE     a random tensor (--seed): 2x3:float32, 1024:int64, :float64 (0-d);\n"
    "                  floats uniform in [-1, 1), ints in [-100, 100], uint8 in [0, 200]\n"
    "  3, -2           an int\n"
    "  2.0, 1e-3, nan, inf, -inf   a float (a '.', an exponent, nan or inf make a float)\n"
    "  true, false     a bool\n"
    "  none            None (for optional arguments)\n"
    "  [1,2], [0.5,1]  an int list, or a float list when an element is a float; [] is an\n"
    "                  empty int list\n"
    "  [a.npy,2:float32]  a tensor list (every element a tensor)\n"
    "  dtype:NAME      a dtype (ScalarType), e.g. dtype:float16\n"
    "  str:TEXT        a string, TEXT as is; a bare word such as mean is a string too\n"
    "Words such as -1 or -inf are arguments; the tool's own options (--device, --target,\n"
    "...) may stand anywhere.";

namespace {

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !(absl::ascii_isalpha(s[0]) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(c) || c == '_')) return false;
  }
  return true;
}

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", text, "\": ", why,
                   "; expected PATH.npy, SHAPE:DTYPE, an int, a float, true, false, none, [list], "
                   "dtype:NAME or str:TEXT (see --help)"));
}

// "2x3" -> {2, 3}; "" -> {} (0-d).
absl::StatusOr<std::vector<int64_t>> ParseShape(absl::string_view text, absl::string_view word) {
  std::vector<int64_t> shape;
  if (text.empty()) return shape;
  for (absl::string_view part : absl::StrSplit(text, 'x')) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return Invalid(word, absl::StrCat("\"", part, "\" is not a size >= 0 in the shape"));
    }
    shape.push_back(dim);
  }
  return shape;
}

bool LooksLikeShape(absl::string_view s) {
  for (char c : s) {
    if (!(absl::ascii_isdigit(c) || c == 'x')) return false;
  }
  return true;
}

// An int when the text is all digits (with a sign); a float when it parses as one.
enum class Number { kNo, kInt, kFloat };
Number ParseNumber(absl::string_view text, int64_t* i, double* d) {
  if (absl::SimpleAtoi(text, i)) return Number::kInt;
  const std::string lower = absl::AsciiStrToLower(text);
  const bool special = lower == "nan" || lower == "inf" || lower == "-inf" || lower == "+inf";
  const bool numeric = !text.empty() && (absl::ascii_isdigit(text[0]) || text[0] == '-' ||
                                         text[0] == '+' || text[0] == '.');
  if ((special || numeric) && absl::SimpleAtod(text, d)) return Number::kFloat;
  return Number::kNo;
}

absl::StatusOr<client::Value> ParseList(absl::string_view text, absl::string_view inner,
                                        uint64_t seed) {
  if (absl::StripAsciiWhitespace(inner).empty()) return client::Value::IntList({});
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<client::Tensor> tensors;
  bool any_float = false;
  uint64_t index = 0;
  for (absl::string_view part : absl::StrSplit(inner, ',')) {
    part = absl::StripAsciiWhitespace(part);
    int64_t i = 0;
    double d = 0;
    const Number number = ParseNumber(part, &i, &d);
    if (number != Number::kNo) {
      if (!tensors.empty()) return Invalid(text, "a list mixes tensors and numbers");
      any_float = any_float || number == Number::kFloat;
      floats.push_back(number == Number::kInt ? static_cast<double>(i) : d);
      ints.push_back(i);
      continue;
    }
    absl::StatusOr<client::Value> element = ParseValue(part, seed + index++);
    if (!element.ok()) return element.status();
    if (element->kind() != client::Value::Kind::kTensor) {
      return Invalid(text, absl::StrCat("list element \"", part,
                                        "\" is not a number or a tensor; lists hold ints, "
                                        "floats or tensors"));
    }
    if (!floats.empty()) return Invalid(text, "a list mixes tensors and numbers");
    tensors.push_back(element->TakeTensor());
  }
  if (!tensors.empty()) return client::Value(std::move(tensors));
  if (any_float) return client::Value::FloatList(std::move(floats));
  return client::Value::IntList(std::move(ints));
}

}  // namespace

absl::StatusOr<client::Value> ParseValue(absl::string_view text, uint64_t seed) {
  if (absl::ConsumePrefix(&text, "str:")) return client::Value(std::string(text));
  if (text == "none") return client::Value();
  if (text == "true") return client::Value(true);
  if (text == "false") return client::Value(false);
  int64_t i = 0;
  double d = 0;
  switch (ParseNumber(text, &i, &d)) {
    case Number::kInt:
      return client::Value(i);
    case Number::kFloat:
      return client::Value(d);
    case Number::kNo:
      break;
  }
  if (absl::StartsWith(text, "[")) {
    if (!absl::EndsWith(text, "]")) return Invalid(text, "a list must end with ']'");
    return ParseList(text, text.substr(1, text.size() - 2), seed);
  }
  if (absl::EndsWith(text, ".npy")) {
    absl::StatusOr<client::Tensor> tensor = ReadNpyFile(std::string(text));
    if (!tensor.ok()) return tensor.status();
    return client::Value(*std::move(tensor));
  }
  if (absl::string_view name = text; absl::ConsumePrefix(&name, "dtype:")) {
    absl::StatusOr<client::DType> dtype = client::ParseDType(name);
    if (!dtype.ok()) return Invalid(text, dtype.status().message());
    return client::Value(*dtype);
  }
  if (const size_t colon = text.find(':'); colon != absl::string_view::npos) {
    const absl::string_view shape_text = text.substr(0, colon);
    if (!LooksLikeShape(shape_text)) {
      return Invalid(text, "a tensor is SHAPE:DTYPE with SHAPE like 2x3");
    }
    absl::StatusOr<client::DType> dtype = client::ParseDType(text.substr(colon + 1));
    if (!dtype.ok()) return Invalid(text, dtype.status().message());
    absl::StatusOr<std::vector<int64_t>> shape = ParseShape(shape_text, text);
    if (!shape.ok()) return shape.status();
    absl::StatusOr<client::Tensor> tensor = client::Tensor::Allocate(*dtype, *std::move(shape));
    if (!tensor.ok()) return Invalid(text, tensor.status().message());
    FillRandom(seed, &*tensor);
    return client::Value(*std::move(tensor));
  }
  if (IsIdentifier(text)) return client::Value(std::string(text));
  return Invalid(text, "not a value");
}

absl::StatusOr<CallArgs> ParseCallArgs(const std::vector<std::string>& words, uint64_t seed) {
  CallArgs args;
  for (size_t i = 0; i < words.size(); ++i) {
    absl::string_view word = words[i];
    absl::string_view name;
    if (const size_t eq = word.find('='); eq != absl::string_view::npos &&
                                          IsIdentifier(word.substr(0, eq)) &&
                                          !absl::StartsWith(word, "str:")) {
      name = word.substr(0, eq);
      word = word.substr(eq + 1);
    }
    absl::StatusOr<client::Value> value = ParseValue(word, seed + 1000 * i);
    if (!value.ok()) {
      return absl::Status(value.status().code(),
                          absl::StrCat("argument ", i + 1, ": ", value.status().message()));
    }
    if (name.empty()) {
      if (!args.named.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", i + 1, " (\"", words[i],
                         "\") is positional but follows a keyword argument; expected "
                         "positional arguments first"));
      }
      args.positional.push_back(*std::move(value));
    } else {
      args.named.push_back({std::string(name), *std::move(value)});
    }
  }
  return args;
}

std::string DescribeValue(const client::Value& value, int max_values) {
  using Kind = client::Value::Kind;
  auto tensor = [&](const client::TensorView& t) {
    return absl::StrCat(client::DTypeName(t.dtype), " ", client::ShapeToString(t.shape), " (",
                        t.size_bytes, " bytes): ", FormatValues(t, max_values));
  };
  switch (value.kind()) {
    case Kind::kNone:
      return "none";
    case Kind::kTensor:
      return tensor(value.tensor());
    case Kind::kInt:
      return absl::StrCat(value.int_value());
    case Kind::kFloat: {
      std::string s = absl::StrCat(value.float_value());
      const bool integral =
          std::isfinite(value.float_value()) && s.find_first_of(".e") == std::string::npos;
      return integral ? s + ".0" : s;  // A float reads as one.
    }
    case Kind::kBool:
      return value.bool_value() ? "true" : "false";
    case Kind::kString:
      return absl::StrCat("\"", value.string_value(), "\"");
    case Kind::kIntList:
      return absl::StrCat("[", absl::StrJoin(value.int_list(), ", "), "]");
    case Kind::kFloatList:
      return absl::StrCat("[", absl::StrJoin(value.float_list(), ", "), "]");
    case Kind::kTensorList: {
      const std::vector<client::TensorView> tensors = value.tensor_list();
      std::vector<std::string> parts;
      for (const client::TensorView& t : tensors) parts.push_back(tensor(t));
      return absl::StrCat(tensors.size(), " tensors", tensors.empty() ? "" : ": ",
                          absl::StrJoin(parts, "; "));
    }
    case Kind::kScalarType:
      return absl::StrCat("dtype ", client::DTypeName(value.scalar_type()));
  }
  return "?";
}

}  // namespace myops::cli
