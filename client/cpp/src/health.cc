// Hand-encoded grpc.health.v1 messages and the blocking Check call (see health.h).
//
//   message HealthCheckRequest { string service = 1; }
//   message HealthCheckResponse { ServingStatus status = 1; }
#include "health.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include "absl/strings/str_cat.h"
#include "myops/wire/tensor_wire.h"

namespace myops::client::internal {
namespace {

using google::protobuf::io::CodedInputStream;

// Wire types of the protobuf encoding.
constexpr int kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

bool SkipField(uint32_t tag, CodedInputStream* in) {
  uint64_t varint = 0;
  uint32_t length = 0;
  switch (tag & 7) {
    case kVarint:
      return in->ReadVarint64(&varint);
    case kFixed64:
      return in->Skip(8);
    case kLengthDelimited:
      return in->ReadVarint32(&length) && in->Skip(static_cast<int>(length));
    case kFixed32:
      return in->Skip(4);
    default:
      return false;
  }
}

}  // namespace

grpc::ByteBuffer EncodeHealthCheckRequest(const std::string& service) {
  std::string bytes;
  if (!service.empty()) {  // proto3: the default value is not written.
    bytes.push_back(static_cast<char>((1 << 3) | kLengthDelimited));
    wire::AppendVarint(service.size(), &bytes);
    bytes += service;
  }
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

absl::StatusOr<ServingStatus> DecodeHealthCheckResponse(const grpc::ByteBuffer& response) {
  std::string bytes;
  if (!wire::Flatten(response, &bytes)) return absl::InternalError("unreadable health response");
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                      static_cast<int>(bytes.size()));
  uint64_t status = 0;
  bool ok = true;
  while (ok) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) {  // End of input, or a malformed tag before it.
      ok = in.CurrentPosition() == static_cast<int>(bytes.size());
      break;
    }
    ok = tag == ((1 << 3) | kVarint) ? in.ReadVarint64(&status) : SkipField(tag, &in);
  }
  if (!ok) {
    return absl::InternalError(
        absl::StrCat("malformed grpc.health.v1.HealthCheckResponse (", bytes.size(), " bytes)"));
  }
  return status <= 3 ? static_cast<ServingStatus>(status) : ServingStatus::kUnknown;
}

grpc::Status CallHealthCheck(grpc::GenericStub& stub, grpc::ClientContext* context,
                             const grpc::ByteBuffer& request, grpc::ByteBuffer* response) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status result;
  stub.UnaryCall(context, kHealthCheckMethod, grpc::StubOptions(), &request, response,
                 [&](grpc::Status status) {
                   std::lock_guard<std::mutex> lock(mu);
                   result = std::move(status);
                   done = true;
                   cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return result;
}

}  // namespace myops::client::internal
