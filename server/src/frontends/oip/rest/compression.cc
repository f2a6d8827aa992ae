// gzip/deflate bodies of the REST binding (compression.h), over zlib.
#include "frontends/oip/rest/compression.h"

#include <zlib.h>

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace myops::server::kserve {
namespace {

// zlib's window bits: gzip's wrapper (16 + 15) or zlib's (15).
int WindowBits(Encoding e) { return e == Encoding::kGzip ? 16 + MAX_WBITS : MAX_WBITS; }

// Inflate grows its output by this much at a time (each step granted first).
constexpr int64_t kInflateStep = 256 << 10;

}  // namespace

const char* EncodingName(Encoding e) {
  switch (e) {
    case Encoding::kGzip:
      return "gzip";
    case Encoding::kDeflate:
      return "deflate";
    case Encoding::kIdentity:
      break;
  }
  return "identity";
}

absl::StatusOr<Encoding> ContentEncoding(const char* header) {
  if (header == nullptr) return Encoding::kIdentity;
  const std::string e = absl::AsciiStrToLower(absl::StripAsciiWhitespace(header));
  if (e.empty() || e == "identity") return Encoding::kIdentity;
  if (e == "gzip") return Encoding::kGzip;
  if (e == "deflate") return Encoding::kDeflate;
  return absl::UnimplementedError(absl::StrCat(
      "Content-Encoding '", header, "' is not accepted: send gzip, deflate or identity"));
}

Encoding AcceptedEncoding(const char* header) {
  if (header == nullptr) return Encoding::kIdentity;
  bool gzip = false, deflate = false;
  for (absl::string_view item : absl::StrSplit(header, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ';');
    const std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(parts[0]));
    double q = 1;
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view p = absl::StripAsciiWhitespace(parts[i]);
      if (absl::ConsumePrefix(&p, "q=") && !absl::SimpleAtod(p, &q)) q = 0;
    }
    if (q <= 0) continue;
    gzip |= name == "gzip";
    deflate |= name == "deflate";
  }
  return gzip ? Encoding::kGzip : deflate ? Encoding::kDeflate : Encoding::kIdentity;
}

absl::Status Inflate(Encoding e, absl::string_view in, int64_t max_bytes,
                     const std::function<absl::Status(int64_t)>& grow, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, WindowBits(e)) != Z_OK) {
    return absl::ResourceExhaustedError("could not start inflating the body");
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());  // bodies are below 2 GiB (the message limit)
  out->clear();
  int64_t granted = 0;
  absl::Status status;
  for (;;) {
    if (static_cast<int64_t>(out->size()) == granted) {
      if (granted >= max_bytes) {
        status = absl::ResourceExhaustedError(
            absl::StrCat("the ", EncodingName(e),
                         " body inflates to more than the largest message this "
                         "server accepts (",
                         max_bytes, " bytes, --max-message-bytes)"));
        break;
      }
      const int64_t step = std::min(kInflateStep, max_bytes - granted);
      if (status = grow(step); !status.ok()) break;
      granted += step;
    }
    const size_t before = out->size();
    out->resize(static_cast<size_t>(granted));
    z.next_out = reinterpret_cast<Bytef*>(out->data() + before);
    z.avail_out = static_cast<uInt>(granted - static_cast<int64_t>(before));
    const int rc = inflate(&z, Z_NO_FLUSH);
    out->resize(static_cast<size_t>(granted) - z.avail_out);
    if (rc == Z_STREAM_END) {
      if (z.avail_in != 0) {
        status = absl::InvalidArgumentError(absl::StrCat("the ", EncodingName(e), " body has ",
                                                         z.avail_in, " bytes after its end"));
      }
      break;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      status = absl::InvalidArgumentError(
          absl::StrCat("the ", EncodingName(e), " body ends before its compressed data does"));
      break;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "the body is not ", EncodingName(e), " data: ", z.msg != nullptr ? z.msg : "zlib error"));
      break;
    }
  }
  inflateEnd(&z);
  if (!status.ok()) out->clear();
  return status;
}

int64_t CompressBound(int64_t bytes) {
  return static_cast<int64_t>(deflateBound(nullptr, static_cast<uLong>(bytes))) + 32;
}

std::string Compress(Encoding e, absl::string_view in) {
  z_stream z{};
  deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, WindowBits(e), 8, Z_DEFAULT_STRATEGY);
  std::string out(static_cast<size_t>(CompressBound(static_cast<int64_t>(in.size()))), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);  // the bound holds the whole output: one call finishes
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace myops::server::kserve
