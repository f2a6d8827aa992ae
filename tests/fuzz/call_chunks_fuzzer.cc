// Fuzz target: CallStream's chunked tensors as one stream receives them (call_chunks.h).
// The input is a sequence of messages, each a 2-byte little-endian length and that many
// bytes (a CallRequest: a header, parsed with ParseCallRequest, or a chunk); each goes
// where the server sends it (ChunkAssembly::Start for a header with chunked tensors,
// Refuse for one whose chunked tensors are malformed, Add for a chunk), then the stream
// closes (TakeUnfinished). Beyond "no crash, no sanitizer
// report", checks what the server relies on: errors are INVALID_ARGUMENT or
// RESOURCE_EXHAUSTED; the budget never holds more than its limit; a completed request's
// chunked tensors are full and decode (or are refused with INVALID_ARGUMENT); once the
// stream is done, nothing is held.
#include <algorithm>
#include <string>

#include "frontends/myops_v1/call_chunks.h"
#include "frontends/myops_v1/call_codec.h"
#include "myops/v1/myops.pb.h"
#include "slices.h"

namespace {

using myops::fuzz::Fail;
using myops::server::ChunkAssembly;

constexpr int64_t kBudgetBytes = 1 << 20;

void CheckCode(const absl::Status& s) {
  if (s.code() != absl::StatusCode::kInvalidArgument &&
      s.code() != absl::StatusCode::kResourceExhausted) {
    Fail("a refusal with a code other than INVALID_ARGUMENT or RESOURCE_EXHAUSTED");
  }
}

grpc::ByteBuffer Buffer(const uint8_t* bytes, size_t n) {
  grpc::Slice slice(bytes, n);
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) { return myops::fuzz::QuietProtobufLogs(); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  myops::server::MemoryBudget budget(kBudgetBytes);
  myops::server::TensorLimits limits;
  limits.max_elements = 1 << 20;
  {
    ChunkAssembly assembly(limits, [&budget](int64_t n, myops::server::BudgetReservation* out) {
      return budget.TryReserve(n, out) ? absl::OkStatus()
                                       : absl::ResourceExhaustedError("over the budget");
    });
    size_t pos = 0;
    while (pos + 2 <= size) {
      const size_t n = std::min<size_t>(bytes[pos] | (bytes[pos + 1] << 8), size - pos - 2);
      const grpc::ByteBuffer message = Buffer(bytes + pos + 2, n);
      pos += 2 + n;
      if (myops::server::IsChunkMessage(message)) {
        ChunkAssembly::Request done;
        uint64_t id = 0;
        absl::Status error;
        switch (assembly.Add(message, &done, &id, &error)) {
          case ChunkAssembly::Added::kConsumed:
            break;
          case ChunkAssembly::Added::kFailed:
            CheckCode(error);
            break;
          case ChunkAssembly::Added::kComplete: {
            for (const auto& t : done.chunks.tensors) {
              if (t.received != t.bytes) Fail("a request completed with a tensor not full");
            }
            auto args = myops::server::DecodeArguments(done.request, limits, nullptr, &done.chunks);
            if (!args.ok() && args.status().code() != absl::StatusCode::kInvalidArgument) {
              Fail("a completed request failed to decode with an unexpected code");
            }
            break;
          }
        }
      } else {
        ChunkAssembly::Request request;
        if (!myops::server::ParseCallRequest(message, &request.request).ok()) continue;
        auto sizes = myops::server::FindChunkedTensors(request.request, limits);
        if (!sizes.ok()) {
          CheckCode(sizes.status());
          assembly.Refuse(request.request.request_id(),
                          myops::server::AnnouncedChunkedBytes(request.request));
          continue;
        }
        if (sizes->bytes.empty()) continue;
        if (absl::Status started = assembly.Start(std::move(request), *sizes); !started.ok()) {
          CheckCode(started);
        }
      }
      if (budget.held() > kBudgetBytes) Fail("the budget holds more than its limit");
    }
    uint64_t id = 0;
    absl::Status error;
    while (assembly.TakeUnfinished(&id, &error)) CheckCode(error);
    if (assembly.unfinished() != 0) Fail("requests left unfinished after the stream closed");
  }
  if (budget.held() != 0) Fail("memory held after the stream was done");
  return 0;
}
