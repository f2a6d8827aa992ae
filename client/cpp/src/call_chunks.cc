// CallStream results whose tensors come chunked (Tensor.chunked_byte_size, then
// CallStreamResponse.chunk messages right after the response; see
// proto/myops/v1/myops.proto): read and reassembled into one buffer per tensor, each
// chunk's data copied once into it (see call_codec.h).
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "call_codec.h"
#include "myops/wire/tensor_wire.h"

namespace myops::client::internal {
namespace {

namespace v1 = ::myops::v1;

// The result tensors of `response` announced as chunked, in the protocol's order.
std::vector<v1::Tensor*> ChunkedResults(v1::CallStreamResponse* response) {
  std::vector<v1::Tensor*> out;
  if (!response->has_response()) return out;
  for (v1::Value& value : *response->mutable_response()->mutable_outputs()) {
    if (value.has_tensor() && value.tensor().chunked_byte_size() != 0) {
      out.push_back(value.mutable_tensor());
    }
    if (value.has_tensor_list()) {
      for (v1::Tensor& t : *value.mutable_tensor_list()->mutable_tensors()) {
        if (t.chunked_byte_size() != 0) out.push_back(&t);
      }
    }
  }
  return out;
}

// Appends the data of the chunk message `bytes` to `out`, which it must continue:
// request `id`, tensor `index`, offset out->size(), at most `total` bytes in all.
absl::Status AppendChunk(const grpc::ByteBuffer& bytes, uint64_t id, uint32_t index, uint64_t total,
                         std::string* out) {
  v1::CallStreamResponse message;
  wire::TensorData data;
  if (absl::Status parsed = wire::ParseWithTensorData(
          bytes, v1::CallStreamResponse::kChunkFieldNumber, &message, &data);
      !parsed.ok()) {
    return absl::InternalError(
        absl::StrCat("the server's chunk of request ", id, ": ", parsed.message()));
  }
  const v1::TensorChunk& chunk = message.chunk();
  if (!message.has_chunk() || message.has_response() || message.has_error() ||
      chunk.request_id() != id || chunk.tensor_index() != index || chunk.offset() != out->size() ||
      data.size() == 0 || data.size() > total - out->size()) {
    return absl::InternalError(absl::StrCat(
        "the server sent a message other than the next chunk of request ", id, "'s result tensor ",
        index, " (at offset ", out->size(), " of ", total, " bytes)"));
  }
  data.AppendTo(out);
  return absl::OkStatus();
}

}  // namespace

CallStreamResult ReceiveCallStreamResponse(grpc::ByteBuffer* message,
                                           const std::function<bool()>& read_next,
                                           const RegionOf& region_of) {
  ParsedStreamResponse parsed = ParseCallStreamResponse(*message);
  const std::vector<v1::Tensor*> chunked =
      parsed.ok ? ChunkedResults(&parsed.response) : std::vector<v1::Tensor*>();
  if (chunked.empty()) {
    CallStreamResult result = TakeCallStreamResult(*message, parsed, region_of);
    message->Clear();  // Releases the received slices now rather than at the next Read.
    return result;
  }
  message->Clear();
  const uint64_t id = parsed.response.request_id();
  CallStreamResult failed;
  failed.request_id = id;
  for (size_t i = 0; i < chunked.size(); ++i) {
    const uint64_t total = chunked[i]->chunked_byte_size();
    auto expected = TensorByteSize(
        static_cast<DType>(chunked[i]->dtype()),
        std::vector<int64_t>(chunked[i]->shape().begin(), chunked[i]->shape().end()));
    if (!expected.ok() || *expected != total) {
      failed.result = absl::InternalError(
          absl::StrCat("request ", id, ": the server announced result tensor ", i, " with ", total,
                       " bytes, which its dtype and shape do not take"));
      return failed;
    }
    std::string bytes;
    try {
      bytes.reserve(total);  // Filled in order: no zero-fill first.
    } catch (const std::exception&) {
      failed.result = absl::ResourceExhaustedError(absl::StrCat(
          "request ", id, ": could not allocate ", total, " bytes for a result tensor"));
      return failed;
    }
    while (bytes.size() < total) {
      if (!read_next()) {
        failed.result = absl::UnavailableError(absl::StrCat(
            "the stream ended before all chunks of request ", id, "'s results arrived (",
            bytes.size(), " of ", total, " bytes of result tensor ", i,
            "); Receive() or Close() gives its final status"));
        return failed;
      }
      absl::Status appended = AppendChunk(*message, id, static_cast<uint32_t>(i), total, &bytes);
      message->Clear();
      if (!appended.ok()) {
        failed.result = std::move(appended);
        return failed;
      }
    }
    SetTensorData(parsed, chunked[i], std::move(bytes));
  }
  grpc::ByteBuffer none;
  return TakeCallStreamResult(none, parsed, region_of);
}

}  // namespace myops::client::internal
