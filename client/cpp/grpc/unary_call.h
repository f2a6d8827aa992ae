// The blocking raw unary call of every blocking call of the client (ScaleShift, Call,
// health) and of the load generator's KServe client: gRPC's generic stub,
// grpc::ByteBuffer in and out.
#ifndef MYOPS_CLIENT_GRPC_UNARY_CALL_H_
#define MYOPS_CLIENT_GRPC_UNARY_CALL_H_

#include <grpcpp/client_context.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

namespace myops::client::internal {

// Calls `method` ("/package.Service/Method") with `request` on `context` (deadline and
// metadata already set) and blocks until it has ended: its status, and when OK the
// response's bytes in `response`. The calling thread does the call's work.
grpc::Status BlockingUnaryCall(grpc::GenericStub& stub, grpc::ClientContext* context,
                               const char* method, const grpc::ByteBuffer& request,
                               grpc::ByteBuffer* response);

}  // namespace myops::client::internal

#endif  // MYOPS_CLIENT_GRPC_UNARY_CALL_H_
