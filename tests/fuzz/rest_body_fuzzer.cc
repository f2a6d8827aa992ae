// Fuzz target: the REST binding's compressed request bodies (frontends/oip/rest/
// compression.h) as a client sends them: the first input byte's low bit says gzip or
// deflate, the rest is the body. Inflate with a 1 MiB limit and a budget of 512 KiB
// granted in its steps. Beyond "no crash, no sanitizer report", checks: it asks for no
// more than the budget grants; its output stays within the limit and what was granted;
// refusals are INVALID_ARGUMENT (not the encoding), RESOURCE_EXHAUSTED (the limit or the
// budget); what inflates compresses back to bytes that inflate to the same.
#include <cstdint>
#include <cstdio>
#include <string>

#include "frontends/oip/rest/compression.h"

namespace {

[[noreturn]] void Fail(const char* what) {
  fprintf(stderr, "fuzz property violated: %s\n", what);
  __builtin_trap();
}

constexpr int64_t kLimit = 1 << 20;
constexpr int64_t kBudget = 512 << 10;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace k = myops::server::kserve;
  if (size < 1) return 0;
  const k::Encoding e = (data[0] & 1) != 0 ? k::Encoding::kGzip : k::Encoding::kDeflate;
  const absl::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  int64_t granted = 0;
  auto grow = [&](int64_t bytes) {
    if (bytes <= 0) Fail("asked to grow by nothing");
    if (granted + bytes > kBudget) return absl::ResourceExhaustedError("over the budget");
    granted += bytes;
    return absl::OkStatus();
  };
  std::string out;
  const absl::Status s = k::Inflate(e, body, kLimit, grow, &out);
  if (static_cast<int64_t>(out.size()) > granted) Fail("output beyond what was granted");
  if (!s.ok()) {
    if (!absl::IsInvalidArgument(s) && !absl::IsResourceExhausted(s)) Fail("unexpected code");
    if (!out.empty()) Fail("output kept after a refusal");
    return 0;
  }
  const std::string again = k::Compress(e, out);
  if (static_cast<int64_t>(again.size()) > k::CompressBound(static_cast<int64_t>(out.size()))) {
    Fail("compressed beyond its bound");
  }
  std::string round;
  if (!k::Inflate(
           e, again, kLimit, [](int64_t) { return absl::OkStatus(); }, &round)
           .ok() ||
      round != out) {
    Fail("compress then inflate changed the bytes");
  }
  return 0;
}
