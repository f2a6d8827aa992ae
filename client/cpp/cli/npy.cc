// .npy reading and writing for myops-cli (see npy.h). The header is a Python dict literal,
// e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }, parsed by a small
// recursive-descent reader that accepts exactly what NumPy writes (and minor spacing).
#include "npy.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "myops/common/dtype.h"

namespace myops::cli {
namespace {

using ::myops::DType;
using ::myops::DTypeInfo;
using ::myops::kDTypeTable;

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlignment = 64;  // NumPy pads the preamble + header to this.

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed .npy file: ", what));
}

// "'<f4' (float32), ..., '|b1' (bool)": every type .npy files can carry.
std::string AcceptedDescrs() {
  std::string out;
  for (const DTypeInfo& info : kDTypeTable) {
    if (info.numpy_str.empty()) continue;
    absl::StrAppend(&out, out.empty() ? "" : ", ", "'", info.numpy_str, "' (", info.name, ")");
  }
  return out;
}

absl::StatusOr<DType> DTypeFromDescr(absl::string_view descr) {
  if (std::optional<DType> dtype = DTypeFromNumpyStr(descr)) return *dtype;
  std::string hint;
  if (!descr.empty() && descr[0] == '>') {
    hint = absl::StrCat(" (big-endian data: convert with .astype('<", descr.substr(1), "'))");
  }
  return absl::InvalidArgumentError(absl::StrCat(".npy dtype '", descr, "' is not supported", hint,
                                                 "; expected one of ", AcceptedDescrs()));
}

// Reads the header dict. Grammar (whitespace allowed between tokens):
//   dict  := '{' (key ':' value (',' key ':' value)* ','?)? '}'
//   value := string | 'True' | 'False' | '(' (int (',' int)* ','?)? ')'
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : text_(text) {}

  struct Header {
    std::optional<std::string> descr;
    std::optional<bool> fortran_order;
    std::optional<std::vector<int64_t>> shape;
  };

  absl::StatusOr<Header> Parse() {
    Header header;
    if (!Consume('{')) return Malformed("header does not start with '{'");
    while (!Consume('}')) {
      absl::StatusOr<std::string> key = ParseString();
      if (!key.ok()) return key.status();
      if (!Consume(':')) return Malformed(absl::StrCat("expected ':' after key '", *key, "'"));
      if (*key == "descr") {
        absl::StatusOr<std::string> descr = ParseString();
        if (!descr.ok()) return descr.status();
        header.descr = *descr;
      } else if (*key == "fortran_order") {
        absl::StatusOr<bool> value = ParseBool();
        if (!value.ok()) return value.status();
        header.fortran_order = *value;
      } else if (*key == "shape") {
        absl::StatusOr<std::vector<int64_t>> shape = ParseShape();
        if (!shape.ok()) return shape.status();
        header.shape = *std::move(shape);
      } else {
        return Malformed(absl::StrCat("unexpected header key '", *key,
                                      "'; expected 'descr', 'fortran_order' and 'shape'"));
      }
      if (!Consume(',')) {
        if (!Consume('}')) return Malformed("expected ',' or '}' in the header");
        break;
      }
    }
    SkipSpace();
    if (pos_ != text_.size()) return Malformed("unexpected text after the header dict");
    if (!header.descr || !header.fortran_order || !header.shape) {
      return Malformed("header lacks one of 'descr', 'fortran_order', 'shape'");
    }
    return header;
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }

  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool ConsumeWord(absl::string_view word) {
    SkipSpace();
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  absl::StatusOr<std::string> ParseString() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Malformed("expected a quoted string in the header");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Malformed("unterminated string in the header");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  absl::StatusOr<bool> ParseBool() {
    if (ConsumeWord("True")) return true;
    if (ConsumeWord("False")) return false;
    return Malformed("expected True or False for 'fortran_order'");
  }

  absl::StatusOr<std::vector<int64_t>> ParseShape() {
    if (!Consume('(')) return Malformed("expected a tuple for 'shape'");
    std::vector<int64_t> shape;
    while (!Consume(')')) {
      SkipSpace();
      const size_t start = pos_;
      while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      }
      int64_t dim = 0;
      // Python 2 era files may write 3L; accept the suffix.
      if (!absl::SimpleAtoi(text_.substr(start, pos_ - start), &dim)) {
        return Malformed("expected non-negative integers in 'shape'");
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      shape.push_back(dim);
      if (!Consume(',')) {
        if (!Consume(')')) return Malformed("expected ',' or ')' in 'shape'");
        break;
      }
    }
    return shape;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

uint32_t ReadLittleEndian(absl::string_view bytes, size_t offset, size_t size) {
  uint32_t value = 0;
  for (size_t i = 0; i < size; ++i) {
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

absl::Status IoError(absl::string_view action, const std::string& path, int error) {
  std::string message = absl::StrCat("cannot ", action, " ", path, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnknownError(message);
}

}  // namespace

absl::StatusOr<client::Tensor> ParseNpy(absl::string_view bytes) {
  if (bytes.size() < kMagicSize + 2 || bytes.substr(0, kMagicSize) != kMagic) {
    return Malformed("missing the \\x93NUMPY magic string (not a .npy file?)");
  }
  const int major = static_cast<uint8_t>(bytes[kMagicSize]);
  const int minor = static_cast<uint8_t>(bytes[kMagicSize + 1]);
  if (major < 1 || major > 3 || minor != 0) {
    return absl::InvalidArgumentError(absl::StrCat(".npy format version ", major, ".", minor,
                                                   " is not supported; expected 1.0, 2.0 "
                                                   "or 3.0"));
  }
  const size_t length_size = major == 1 ? 2 : 4;
  const size_t header_start = kMagicSize + 2 + length_size;
  if (bytes.size() < header_start) return Malformed("truncated before the header length");
  const size_t header_size = ReadLittleEndian(bytes, kMagicSize + 2, length_size);
  if (bytes.size() - header_start < header_size) {
    return Malformed(absl::StrCat("header length ", header_size, " exceeds the file (",
                                  bytes.size(), " bytes)"));
  }
  absl::StatusOr<HeaderParser::Header> header =
      HeaderParser(bytes.substr(header_start, header_size)).Parse();
  if (!header.ok()) return header.status();
  if (*header->fortran_order) {
    return absl::InvalidArgumentError(
        ".npy array is in Fortran order (fortran_order: True); expected C order (save "
        "np.ascontiguousarray(x))");
  }
  absl::StatusOr<DType> dtype = DTypeFromDescr(*header->descr);
  if (!dtype.ok()) return dtype.status();
  absl::StatusOr<size_t> size = client::TensorByteSize(*dtype, *header->shape);
  if (!size.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(".npy shape: ", size.status().message()));
  }
  const absl::string_view data = bytes.substr(header_start + header_size);
  if (data.size() != *size) {
    return absl::InvalidArgumentError(
        absl::StrCat(".npy data is ", data.size(), " bytes; expected ", *size, " for shape ",
                     client::ShapeToString(*header->shape), " of ", client::DTypeName(*dtype)));
  }
  return client::Tensor(*dtype, *std::move(header->shape), std::string(data));
}

absl::StatusOr<std::string> SerializeNpy(const client::TensorView& tensor) {
  if (absl::Status status = client::ValidateTensorView(tensor); !status.ok()) return status;
  const absl::string_view descr = FindDTypeInfo(tensor.dtype)->numpy_str;
  if (descr.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(DTypeName(tensor.dtype), " cannot be written as .npy (NumPy has no ",
                     DTypeName(tensor.dtype), " type); expected one of ", AcceptedDescrs()));
  }
  std::string shape = absl::StrJoin(tensor.shape, ", ");
  if (tensor.shape.size() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Version 1.0 has a 2-byte header length; 2.0 a 4-byte one.
  size_t preamble = kMagicSize + 2 + 2;
  int major = 1;
  if (preamble + header.size() + 1 > 0xffff) {
    preamble = kMagicSize + 2 + 4;
    major = 2;
  }
  const size_t total = (preamble + header.size() + 1 + kAlignment - 1) / kAlignment * kAlignment;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');

  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const uint32_t length = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < preamble - kMagicSize - 2; ++i) {
    out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  }
  out += header;
  out.append(static_cast<const char*>(tensor.data), tensor.size_bytes);
  return out;
}

absl::StatusOr<client::Tensor> ReadNpyFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return IoError("open", path, errno);
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return IoError("read", path, errno);
  absl::StatusOr<client::Tensor> tensor = ParseNpy(contents.str());
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(),
                        absl::StrCat(path, ": ", tensor.status().message()));
  }
  return tensor;
}

absl::Status WriteNpyFile(const std::string& path, const client::TensorView& tensor) {
  absl::StatusOr<std::string> bytes = SerializeNpy(tensor);
  if (!bytes.ok()) return bytes.status();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return IoError("create", path, errno);
  file.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  file.close();
  if (!file) return IoError("write", path, errno);
  return absl::OkStatus();
}

}  // namespace myops::cli
