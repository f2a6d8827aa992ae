// The blocking raw unary call (see unary_call.h): gRPC's asynchronous call on a completion
// queue of its own, which the calling thread polls until the call has ended, as gRPC's
// synchronous calls do: no gRPC thread runs between the network and the caller.
#include "unary_call.h"

#include <memory>

#include <grpcpp/completion_queue.h>
#include <grpcpp/support/async_unary_call.h>

namespace myops::client::internal {

grpc::Status BlockingUnaryCall(grpc::GenericStub& stub, grpc::ClientContext* context,
                               const char* method, const grpc::ByteBuffer& request,
                               grpc::ByteBuffer* response) {
  grpc::CompletionQueue queue;
  grpc::Status status;
  {
    const std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
        stub.PrepareUnaryCall(context, method, request, &queue);
    call->StartCall();
    call->Finish(response, &status, &queue);  // The tag: any address.
  }
  void* tag;
  bool ok;
  queue.Next(&tag, &ok);  // The call's one event: it has ended (ok is always true).
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

}  // namespace myops::client::internal
