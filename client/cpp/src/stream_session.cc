// StreamSession and CallStreamSession: pipelined ScaleShift calls on one ScaleShiftStream
// RPC and pipelined generic Calls on one CallStream RPC (see myops/client/client.h and
// stream_session_impl.h).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "call_codec.h"
#include "codec.h"
#include "shm_call.h"
#include "stream_session_impl.h"

namespace myops::client {
namespace {

// The most tensor data in one chunk message: one that any server with the usual limits
// (gRPC's default receive limit is 4 MiB) takes, large enough that the per-message cost
// is small against copying the data.
constexpr int64_t kChunkDataBytes = (int64_t{4} << 20) - 1024;

}  // namespace

StreamSession::Impl::Impl(std::shared_ptr<internal::ClientCore> core, const CallOptions& options)
    : StreamCall(std::move(core), options,
                 [this](grpc::ClientContext* context, grpc::CompletionQueue* queue) {
                   return this->core()->stub->PrepareAsyncScaleShiftStream(context, queue);
                 }) {}

StreamSession::StreamSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StreamSession::~StreamSession() = default;

absl::StatusOr<uint64_t> StreamSession::Send(const TensorView& x, double alpha, double beta) {
  // The id is not known before the lock: its largest encoding stands in for it.
  if (absl::Status status = internal::ValidateRequest(x, alpha, beta, impl_->device(),
                                                      std::numeric_limits<uint64_t>::max(),
                                                      impl_->core()->options.max_message_bytes);
      !status.ok()) {
    return status;
  }
  return impl_->Send([&](uint64_t id, myops::v1::ScaleShiftRequest* request) {
    internal::EncodeRequest(x, alpha, beta, impl_->device(), id, request);
  });
}

absl::Status StreamSession::CloseSend() { return impl_->CloseSend(); }

absl::StatusOr<StreamResult> StreamSession::Receive() {
  absl::StatusOr<StreamResult> result =
      impl_->Receive([](myops::v1::ScaleShiftStreamResponse* response) {
        return internal::TakeStreamResult(response);
      });
  if (result.ok() && result->result.ok()) result->result->timing.replica = impl_->replica();
  return result;
}

absl::Status StreamSession::Close() { return impl_->Close(); }

int64_t StreamSession::discarded_responses() const { return impl_->discarded_responses(); }

void StreamSession::Cancel() { impl_->Cancel(); }

CallStreamSession::Impl::Impl(std::shared_ptr<internal::ClientCore> core,
                              const CallOptions& options)
    : StreamCall(std::move(core), options,
                 [this](grpc::ClientContext* context, grpc::CompletionQueue* queue) {
                   return this->core()->generic_stub->PrepareCall(
                       context, internal::kCallStreamMethod, queue);
                 }),
      in_place_(options.results_in_shared_memory) {}

CallStreamSession::CallStreamSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

CallStreamSession::~CallStreamSession() = default;

absl::StatusOr<uint64_t> CallStreamSession::Send(absl::string_view op, absl::Span<const Value> args,
                                                 absl::Span<const NamedArg> kwargs) {
  const int max_message_bytes = impl_->core()->options.max_message_bytes;
  // The id is not known before the lock: its largest encoding stands in for it.
  internal::CallFields call{op, args, kwargs, impl_->device(),
                            std::numeric_limits<uint64_t>::max()};
  call.max_response_message_bytes = static_cast<uint64_t>(std::min<int64_t>(
      int64_t{max_message_bytes} + kResponseOverheadBytes, std::numeric_limits<int>::max()));
  if (absl::Status status = internal::ValidateCall(call, max_message_bytes, /*chunkable=*/true);
      !status.ok()) {
    return status;
  }
  internal::SendBufferPool& pool = *impl_->core()->send_buffers;
  // Tensors in shared memory (ClientOptions::shared_memory) when they go in one message.
  absl::StatusOr<std::shared_ptr<internal::ShmCall>> shm =
      internal::PlaceCall(impl_->core()->shm.get(), call);
  if (!shm.ok()) return shm.status();
  call.placement = internal::PlacementOf(*shm);
  uint64_t size = internal::EncodedCallSize(call);
  if (*shm != nullptr && size > static_cast<uint64_t>(max_message_bytes)) {
    call.placement = nullptr;  // too large even so: chunked, its data in the messages
    shm->reset();
    size = internal::EncodedCallSize(call);
  }
  if (size <= static_cast<uint64_t>(max_message_bytes)) {
    return impl_->Send([&](uint64_t id, grpc::ByteBuffer* request) {
      call.request_id = id;
      *request = internal::EncodeCallRequest(call, pool);
      if (*shm != nullptr) impl_->KeepRegion(id, *shm);
    });
  }
  // Too large for one message: the header, then each tensor's data in chunks.
  call.chunked = true;
  const std::vector<TensorView> tensors = internal::ChunkedTensors(call);
  const size_t piece = static_cast<size_t>(
      std::max<int64_t>(1, std::min<int64_t>(kChunkDataBytes, int64_t{max_message_bytes} - 64)));
  size_t tensor = 0, offset = 0;
  bool header = true;
  return impl_->SendPieces([&](uint64_t id, grpc::ByteBuffer* request) {
    if (header) {
      call.request_id = id;
      *request = internal::EncodeCallRequest(call, pool);
      header = false;
      return true;
    }
    if (tensor == tensors.size()) return false;
    const TensorView& t = tensors[tensor];
    const size_t n = std::min(piece, t.size_bytes - offset);
    *request = internal::EncodeCallChunk(id, static_cast<uint32_t>(tensor), offset,
                                         static_cast<const uint8_t*>(t.data) + offset, n, pool);
    offset += n;
    if (offset == t.size_bytes) {
      ++tensor;
      offset = 0;
    }
    return true;
  });
}

absl::Status CallStreamSession::CloseSend() { return impl_->CloseSend(); }

absl::StatusOr<CallStreamResult> CallStreamSession::Receive() {
  absl::StatusOr<CallStreamResult> result = impl_->ReceivePieces(
      [this](grpc::ByteBuffer* response, const std::function<bool()>& read_next) {
        return internal::ReceiveCallStreamResponse(
            response, read_next, [this](uint64_t id) { return impl_->TakeRegion(id); });
      });
  if (result.ok() && result->result.ok()) result->result->timing.replica = impl_->replica();
  return result;
}

absl::Status CallStreamSession::Close() { return impl_->Close(); }

int64_t CallStreamSession::discarded_responses() const { return impl_->discarded_responses(); }

void CallStreamSession::Cancel() { impl_->Cancel(); }

}  // namespace myops::client
