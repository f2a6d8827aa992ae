// HTTP body compression of the REST binding, as Triton's: request bodies sent with
// Content-Encoding gzip or deflate (tritonclient's request_compression_algorithm; the
// Inference-Header-Content-Length then counts the uncompressed JSON), and responses
// compressed when Accept-Encoding asks (response_compression_algorithm). "deflate" is
// zlib's format (RFC 1950), as HTTP and tritonclient use it. Inflating is bounded: a
// small body that inflates past the message limit (a bomb) is refused, and every byte it
// grows by is granted first by the caller (the memory budget).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace myops::server::kserve {

enum class Encoding { kIdentity, kGzip, kDeflate };

const char* EncodingName(Encoding e);  // "identity", "gzip", "deflate"

// The request's Content-Encoding (null or "identity": none). UNIMPLEMENTED naming the
// accepted ones for any other.
absl::StatusOr<Encoding> ContentEncoding(const char* header);

// The response encoding an Accept-Encoding header asks for: gzip, else deflate, when
// listed (with a q-value above 0); identity otherwise (null too).
Encoding AcceptedEncoding(const char* header);

// Inflates `in` (compressed as `e`, not identity) into `out`. Before `out` grows it asks
// `grow` for the bytes it grows by (its refusal ends inflating with that status).
// INVALID_ARGUMENT for bytes that are not `e` (zlib's message) or end early;
// RESOURCE_EXHAUSTED when the result would pass `max_bytes`.
absl::Status Inflate(Encoding e, absl::string_view in, int64_t max_bytes,
                     const std::function<absl::Status(int64_t)>& grow, std::string* out);

// `in` compressed as `e` (not identity), zlib's default level.
std::string Compress(Encoding e, absl::string_view in);
// An upper bound of Compress's size for `bytes` input bytes (to budget it first).
int64_t CompressBound(int64_t bytes);

}  // namespace myops::server::kserve
