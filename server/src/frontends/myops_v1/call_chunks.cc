// Chunked tensors on myops.v1 CallStream (see frontends/myops_v1/call_chunks.h).
#include "frontends/myops_v1/call_chunks.h"

#include <algorithm>
#include <limits>
#include <new>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "frontends/myops_v1/call_codec.h"
#include "frontends/myops_v1/codec.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/tensor_wire.h"

namespace myops::server {
namespace {

// The byte a chunk message starts with: CallRequest.chunk's key (field 6, length-delimited).
constexpr uint8_t kChunkKey = (myops::v1::CallRequest::kChunkFieldNumber << 3) | 2;
// A chunk message's bytes besides its data, at most: keys, lengths, ids and offset.
constexpr uint64_t kChunkOverheadBytes = 64;
// The largest result chunk message: small enough that the client copies one while the
// next arrives, large enough that the cost per message is small against the copies.
constexpr uint64_t kMaxResultChunkBytes = uint64_t{4} << 20;

// Chunked tensors are bounded by the memory budget, not by the message size.
TensorLimits Unbounded(TensorLimits limits) {
  limits.max_bytes = std::numeric_limits<int64_t>::max();
  return limits;
}

absl::StatusOr<int64_t> ChunkedBytes(const myops::v1::Tensor& t, const std::string& field,
                                     const TensorLimits& limits) {
  if (!t.data().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has both data and chunked_byte_size; expected one of them"));
  }
  if (t.has_shared_memory()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " has both shared_memory and chunked_byte_size; expected one of them"));
  }
  auto view = DecodeTensorHead(t, t.chunked_byte_size(), field, Unbounded(limits));
  if (!view.ok()) return view.status();
  return view->bytes;
}

}  // namespace

absl::StatusOr<ChunkedSizes> FindChunkedTensors(const myops::v1::CallRequest& request,
                                                const TensorLimits& limits) {
  ChunkedSizes sizes;
  auto add = [&](const myops::v1::Tensor& t, const std::string& field) -> absl::Status {
    if (t.chunked_byte_size() == 0) return absl::OkStatus();
    auto bytes = ChunkedBytes(t, field, limits);
    if (!bytes.ok()) return bytes.status();
    if (__builtin_add_overflow(sizes.total, *bytes, &sizes.total)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": the request's chunked tensors take more bytes than fit in int64"));
    }
    sizes.bytes.push_back(*bytes);
    return absl::OkStatus();
  };
  for (int i = 0; i < request.arguments_size(); ++i) {
    const myops::v1::Argument& arg = request.arguments(i);
    const std::string field = arg.name().empty() ? absl::StrCat("argument ", i + 1)
                                                 : absl::StrCat("argument '", arg.name(), "'");
    const myops::v1::Value& value = arg.value();
    if (value.has_tensor()) {
      if (absl::Status s = add(value.tensor(), field); !s.ok()) return s;
    }
    const auto& list = value.tensor_list().tensors();
    for (int j = 0; j < list.size(); ++j) {
      if (absl::Status s = add(list[j], absl::StrCat(field, "[", j, "]")); !s.ok()) return s;
    }
  }
  return sizes;
}

uint64_t AnnouncedChunkedBytes(const myops::v1::CallRequest& request) {
  uint64_t total = 0;
  auto add = [&total](const myops::v1::Tensor& t) {
    if (__builtin_add_overflow(total, t.chunked_byte_size(), &total)) {
      total = std::numeric_limits<uint64_t>::max();
    }
  };
  for (const myops::v1::Argument& arg : request.arguments()) {
    add(arg.value().tensor());
    for (const myops::v1::Tensor& t : arg.value().tensor_list().tensors()) add(t);
  }
  return total;
}

absl::StatusOr<TensorView> DecodeChunkedTensor(const myops::v1::Tensor& t, const std::string& field,
                                               const TensorLimits& limits, ChunkedTensors* chunks) {
  if (chunks == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     " has chunked_byte_size set: chunked tensors travel on CallStream only, "
                     "followed by their chunks; send the data in Tensor.data"));
  }
  auto bytes = ChunkedBytes(t, field, limits);
  if (!bytes.ok()) return bytes.status();
  if (chunks->next >= chunks->tensors.size() || chunks->tensors[chunks->next].bytes != *bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " is a chunked tensor its request's chunks did not fill"));
  }
  const ChunkedTensors::Buffer& buffer = chunks->tensors[chunks->next++];
  auto view = DecodeTensorHead(t, t.chunked_byte_size(), field, Unbounded(limits));
  if (!view.ok()) return view;
  view->data = buffer.data.get();
  if (view->dtype == DType::kBool) {
    const uint8_t* data = buffer.data.get();
    if (std::any_of(data, data + buffer.bytes, [](uint8_t b) { return b > 1; })) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " is a bool tensor with a byte other than 0 or 1"));
    }
  }
  return view;
}

bool IsChunkMessage(const grpc::ByteBuffer& bytes) {
  std::vector<grpc::Slice> slices;
  if (!bytes.Dump(&slices).ok()) return false;
  for (const grpc::Slice& s : slices) {
    if (s.size() != 0) return s.begin()[0] == kChunkKey;
  }
  return false;
}

absl::Status ChunkAssembly::Start(Request request, const ChunkedSizes& sizes) {
  const uint64_t id = request.request.request_id();
  if (entries_.count(id) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("request_id ", id,
                     " is taken by a chunked request still receiving chunks on this stream; "
                     "expected a request_id of its own"));
  }
  Entry entry;
  entry.remaining = sizes.total;
  auto refuse = [&](absl::Status status) {
    entries_[id] = std::move(entry);
    ++unfinished_;  // Drop counts it down.
    Drop(id, &entries_[id]);
    return status;
  };
  if (unfinished_ >= kMaxChunkedPerStream) {
    return refuse(absl::ResourceExhaustedError(absl::StrCat(
        "request ", id, ": ", unfinished_,
        " chunked requests are still receiving chunks on this stream, the most it holds; send "
        "the chunks of one before the next header")));
  }
  entry.request = std::make_unique<Request>(std::move(request));
  ChunkedTensors& chunks = entry.request->chunks;
  if (absl::Status reserved = reserve_(sizes.total, &chunks.reservation); !reserved.ok()) {
    return refuse(reserved);
  }
  for (int64_t bytes : sizes.bytes) {
    ChunkedTensors::Buffer& buffer = chunks.tensors.emplace_back();
    buffer.bytes = bytes;
    buffer.data.reset(new (std::nothrow) uint8_t[static_cast<size_t>(bytes)]);
    if (buffer.data == nullptr) {
      return refuse(absl::ResourceExhaustedError(
          absl::StrCat("request ", id, ": the server could not allocate ", bytes,
                       " bytes for a chunked tensor")));
    }
  }
  entries_[id] = std::move(entry);
  ++unfinished_;
  return absl::OkStatus();
}

void ChunkAssembly::Refuse(uint64_t id, uint64_t bytes) {
  if (bytes == 0 || entries_.count(id) != 0) return;
  Entry& entry = entries_[id];
  entry.remaining = static_cast<int64_t>(
      std::min<uint64_t>(bytes, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
  ++unfinished_;  // Drop counts it down.
  Drop(id, &entry);
}

void ChunkAssembly::Drop(uint64_t id, Entry* entry) {
  entry->request.reset();  // Releases its buffers and budget now.
  entry->order = refusals_++;
  --unfinished_;
  if (entry->remaining <= 0) {
    entries_.erase(id);
    return;
  }
  if (++dropped_ <= kMaxDroppedPerStream) return;
  auto oldest = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.request == nullptr &&
        (oldest == entries_.end() || it->second.order < oldest->second.order)) {
      oldest = it;
    }
  }
  entries_.erase(oldest);
  --dropped_;
}

ChunkAssembly::Added ChunkAssembly::Add(const grpc::ByteBuffer& bytes, Request* done, uint64_t* id,
                                        absl::Status* error) {
  *id = 0;
  myops::v1::CallRequest message;
  wire::TensorData data;
  if (absl::Status parsed = wire::ParseWithTensorData(
          bytes, myops::v1::CallRequest::kChunkFieldNumber, &message, &data);
      !parsed.ok()) {
    *error = parsed;
    return Added::kFailed;
  }
  const myops::v1::TensorChunk chunk = message.chunk();
  *id = chunk.request_id();
  message.clear_chunk();
  if (message.ByteSizeLong() != 0) {
    *error = absl::InvalidArgumentError(
        absl::StrCat("a chunk of request ", *id,
                     " in a CallRequest that sets other fields too; expected "
                     "the chunk alone"));
    return Added::kFailed;
  }
  auto it = entries_.find(*id);
  if (it == entries_.end()) {
    *error = absl::InvalidArgumentError(absl::StrCat(
        "a chunk of request ", *id,
        ", which has no chunked tensor receiving chunks on this stream (a request's chunks "
        "follow its header, and none follows its last)"));
    return Added::kFailed;
  }
  Entry& entry = it->second;
  const int64_t n = static_cast<int64_t>(data.size());  // < 2 GiB: one message
  if (entry.request == nullptr) {                       // refused: dropped
    if ((entry.remaining -= n) <= 0) {
      entries_.erase(it);
      --dropped_;
    }
    return Added::kConsumed;
  }
  ChunkedTensors::Buffer& buffer = entry.request->chunks.tensors[entry.tensor];
  auto fail = [&](absl::Status status) {
    entry.remaining -= n;
    Drop(*id, &entry);
    *error = std::move(status);
    return Added::kFailed;
  };
  if (chunk.tensor_index() != entry.tensor ||
      chunk.offset() != static_cast<uint64_t>(buffer.received)) {
    return fail(absl::InvalidArgumentError(
        absl::StrCat("request ", *id, ": a chunk of chunked tensor ", chunk.tensor_index(),
                     " at offset ", chunk.offset(), "; expected tensor ", entry.tensor,
                     " at offset ", buffer.received, " (chunks come in order, without gaps)")));
  }
  if (n == 0) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "request ", *id, ": a chunk without data; expected at least one byte per chunk")));
  }
  if (n > buffer.bytes - buffer.received) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "request ", *id, ": a chunk of ", n, " bytes at offset ", buffer.received,
        " of chunked tensor ", entry.tensor, ", past its chunked_byte_size of ", buffer.bytes)));
  }
  data.CopyTo(buffer.data.get() + buffer.received);
  buffer.received += n;
  entry.remaining -= n;
  if (buffer.received == buffer.bytes) ++entry.tensor;
  if (entry.remaining > 0) return Added::kConsumed;
  *done = std::move(*entry.request);
  entries_.erase(it);
  --unfinished_;
  return Added::kComplete;
}

bool ChunkAssembly::TakeUnfinished(uint64_t* id, absl::Status* error) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.request == nullptr) continue;
    int64_t total = 0, received = 0;
    for (const ChunkedTensors::Buffer& b : it->second.request->chunks.tensors) {
      total += b.bytes;
      received += b.received;
    }
    *id = it->first;
    *error = absl::InvalidArgumentError(
        absl::StrCat("the client closed the stream's sending side before all chunks of request ",
                     *id, " arrived (", received, " of ", total, " bytes)"));
    entries_.erase(it);
    --unfinished_;
    return true;
  }
  return false;
}

int64_t ResultChunkDataBytes(uint64_t limit) {
  return static_cast<int64_t>(
      std::min(std::max(limit, 2 * kChunkOverheadBytes), kMaxResultChunkBytes) -
      kChunkOverheadBytes);
}

std::vector<grpc::ByteBuffer> EncodeResultChunks(grpc::ByteBuffer response, uint64_t request_id,
                                                 const std::vector<TensorView>& chunked,
                                                 uint64_t limit) {
  std::vector<grpc::ByteBuffer> out;
  out.push_back(std::move(response));
  const int64_t piece = ResultChunkDataBytes(limit);
  for (size_t i = 0; i < chunked.size(); ++i) {
    const TensorView& t = chunked[i];
    for (int64_t offset = 0; offset < t.bytes; offset += piece) {
      TensorView part = t;
      part.data = static_cast<const uint8_t*>(t.data) + offset;
      part.bytes = std::min(piece, t.bytes - offset);
      myops::v1::TensorChunk head, tail;
      head.set_request_id(request_id);
      head.set_tensor_index(static_cast<uint32_t>(i));
      tail.set_offset(static_cast<uint64_t>(offset));
      wire::MessageWriter chunk;
      chunk.AppendBytes(head.SerializeAsString());
      chunk.AppendData(myops::v1::TensorChunk::kDataFieldNumber, TensorSlice(part));
      chunk.AppendBytes(tail.SerializeAsString());
      wire::MessageWriter message;
      message.AppendMessage(myops::v1::CallStreamResponse::kChunkFieldNumber, std::move(chunk));
      out.push_back(message.Finish());
    }
  }
  return out;
}

}  // namespace myops::server
