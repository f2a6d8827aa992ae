// An in-process server of Call, CallStream and ListOperators written with protobuf's
// generated code (an implementation independent of the client's hand-written codec):
// "test::echo" returns its arguments' values in order, each keyword's value preceded by
// its name as a string; "test::wait" does the same after 5 ms, counting the calls in
// flight; "test::fail" ends with INVALID_ARGUMENT; other ops NOT_FOUND.
#ifndef MYOPS_TESTS_CLIENT_CALL_TEST_SERVER_H_
#define MYOPS_TESTS_CLIENT_CALL_TEST_SERVER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include "myops/v1/myops.grpc.pb.h"

namespace myops::testing {

// Starts on construction, shuts down on destruction. Thread-safe (the handlers share only
// test::wait's atomic counters).
class CallTestServer {
 public:
  CallTestServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.SetMaxSendMessageSize(64 << 20);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~CallTestServer() {
    if (server_ != nullptr) server_->Shutdown();
  }

  bool ok() const { return server_ != nullptr && port_ != 0; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  // The most test::wait calls that were in flight at once.
  int max_waiting() const { return service_.max_waiting.load(); }

 private:
  class Service final : public myops::v1::Myops::Service {
   public:
    std::atomic<int> waiting{0}, max_waiting{0};

   private:
    grpc::Status Call(grpc::ServerContext*, const myops::v1::CallRequest* request,
                      myops::v1::CallResponse* response) override {
      if (request->op() != "test::wait") return Answer(*request, response);
      const int now = ++waiting;
      int max = max_waiting.load();
      while (now > max && !max_waiting.compare_exchange_weak(max, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      --waiting;
      myops::v1::CallRequest echo = *request;
      echo.set_op("test::echo");
      return Answer(echo, response);
    }

    grpc::Status CallStream(grpc::ServerContext*,
                            grpc::ServerReaderWriter<myops::v1::CallStreamResponse,
                                                     myops::v1::CallRequest>* stream) override {
      myops::v1::CallRequest request;
      while (stream->Read(&request)) {
        myops::v1::CallStreamResponse response;
        response.set_request_id(request.request_id());
        grpc::Status status = Answer(request, response.mutable_response());
        if (!status.ok()) {
          response.mutable_error()->set_code(status.error_code());
          response.mutable_error()->set_message(status.error_message());
        }
        if (!stream->Write(response)) break;
      }
      return grpc::Status::OK;
    }

    grpc::Status ListOperators(grpc::ServerContext*, const myops::v1::ListOperatorsRequest*,
                               myops::v1::ListOperatorsResponse* response) override {
      myops::v1::OperatorInfo* op = response->add_operators();
      op->set_name("test::echo");
      op->set_schema("test::echo(Tensor x, *, float alpha=1.) -> Tensor");
      myops::v1::ArgumentInfo* x = op->add_arguments();
      x->set_name("x");
      x->set_type("Tensor");
      x->set_kind(myops::v1::VALUE_KIND_TENSOR);
      myops::v1::ArgumentInfo* alpha = op->add_arguments();
      alpha->set_name("alpha");
      alpha->set_type("float");
      alpha->set_kind(myops::v1::VALUE_KIND_FLOAT);
      alpha->set_has_default(true);
      alpha->set_default_value("1.");
      alpha->set_kwarg_only(true);
      myops::v1::ReturnInfo* ret = op->add_returns();
      ret->set_type("Tensor");
      ret->set_kind(myops::v1::VALUE_KIND_TENSOR);
      op->add_devices("cpu");
      op->set_served(true);
      myops::v1::OperatorInfo* fail = response->add_operators();
      fail->set_name("test::fail");
      fail->set_schema("test::fail(Tensor x) -> Tensor");
      fail->set_served(true);
      myops::v1::OperatorInfo* inplace = response->add_operators();
      inplace->set_name("test::echo_");
      inplace->set_schema("test::echo_(Tensor(a!) x) -> Tensor(a!)");
      inplace->set_reason("mutates argument x");
      myops::v1::OperatorInfo* wait = response->add_operators();
      *wait = response->operators(0);
      wait->set_name("test::wait");
      wait->set_schema("test::wait(Tensor x, *, float alpha=1.) -> Tensor");
      return grpc::Status::OK;
    }

    static grpc::Status Answer(const myops::v1::CallRequest& request,
                               myops::v1::CallResponse* response) {
      if (request.op() == "test::fail") {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "test::fail: argument \"x\"");
      }
      if (request.op() != "test::echo") {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown op " + request.op());
      }
      for (const myops::v1::Argument& arg : request.arguments()) {
        if (!arg.name().empty()) response->add_outputs()->set_string_value(arg.name());
        *response->add_outputs() = arg.value();
      }
      response->mutable_timing()->set_device(request.device().empty() ? "test" : request.device());
      response->set_request_id(request.request_id());
      return grpc::Status::OK;
    }
  };

  Service service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace myops::testing

#endif  // MYOPS_TESTS_CLIENT_CALL_TEST_SERVER_H_
