// The echo implementation of myops.v1.Myops (see echo_service.h).
#include "echo_service.h"

#include <chrono>

namespace myops::echo {
namespace {

namespace v1 = ::myops::v1;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Copies the request's input into `response` with the timing of the copy.
void Echo(const v1::ScaleShiftRequest& request, v1::ScaleShiftResponse* response) {
  const int64_t start = NowNs();
  *response->mutable_output() = request.input();
  response->set_request_id(request.request_id());
  v1::Timing* timing = response->mutable_timing();
  timing->set_encode_ns(NowNs() - start);
  timing->set_total_ns(timing->encode_ns());
  timing->set_device("echo");
}

// Echoes each request of one stream in order: read one, write its response, read the
// next. Deletes itself when the call is done.
class EchoStreamReactor final
    : public grpc::ServerBidiReactor<v1::ScaleShiftRequest, v1::ScaleShiftStreamResponse> {
 public:
  EchoStreamReactor() { StartRead(&request_); }

  void OnReadDone(bool ok) override {
    if (!ok) {  // The client half-closed (or the call ended): all responses are written.
      Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    response_.set_request_id(request_.request_id());
    Echo(request_, response_.mutable_response());
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "echo stream: write failed"));
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  v1::ScaleShiftRequest request_;
  v1::ScaleShiftStreamResponse response_;
};

}  // namespace

grpc::ServerUnaryReactor* EchoService::ScaleShift(grpc::CallbackServerContext* context,
                                                  const v1::ScaleShiftRequest* request,
                                                  v1::ScaleShiftResponse* response) {
  Echo(*request, response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerBidiReactor<v1::ScaleShiftRequest, v1::ScaleShiftStreamResponse>*
EchoService::ScaleShiftStream(grpc::CallbackServerContext* /*context*/) {
  return new EchoStreamReactor();
}

grpc::ServerUnaryReactor* EchoService::ServerInfo(grpc::CallbackServerContext* context,
                                                  const v1::ServerInfoRequest* /*request*/,
                                                  v1::ServerInfoResponse* response) {
  response->set_myops_version("echo");
  v1::Device* device = response->add_devices();
  device->set_name("cpu");
  device->set_description("echo server: returns the input unchanged, computes nothing");
  v1::Operator* op = response->add_operators();
  op->set_name("myops::scale_shift");
  op->set_schema("echo: returns x unchanged (no computation, no validation)");
  response->mutable_limits()->set_max_message_bytes(options_.max_message_bytes);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace myops::echo
