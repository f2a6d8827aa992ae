// An in-process server that answers every method through the generic callback API from
// a script: the first `failures` calls end with `failure_code`, later ones with the
// method's canned response bytes (empty by default). It records each call's method and
// "authorization" metadata, so tests observe the client's attempts and what it sent.
#ifndef MYOPS_TESTS_CLIENT_SCRIPTED_TEST_SERVER_H_
#define MYOPS_TESTS_CLIENT_SCRIPTED_TEST_SERVER_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/byte_buffer.h>

namespace myops::testing {

// Starts on construction, shuts down on destruction. Thread-safe: the script is fixed
// before the first call, the record is guarded by a mutex.
class ScriptedTestServer {
 public:
  struct Call {
    std::string method;         // e.g. "/myops.v1.Myops/ScaleShift"
    std::string authorization;  // the metadata's value; "<none>" when absent
  };

  ScriptedTestServer(int failures, grpc::StatusCode failure_code,
                     std::map<std::string, std::string> responses = {})
      : service_(this),
        failures_(failures),
        failure_code_(failure_code),
        responses_(std::move(responses)) {
    // grpc.health.v1 goes to the script too: no default health service, which an
    // EchoTestServer built before in the process would otherwise have switched on.
    grpc::EnableDefaultHealthCheckService(false);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
  }

  ~ScriptedTestServer() {
    if (server_ != nullptr) server_->Shutdown();
  }

  bool ok() const { return server_ != nullptr && port_ != 0; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }

  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  // One call: reads the request (if any), then fails or answers, and deletes itself.
  class Reactor final : public grpc::ServerGenericBidiReactor {
   public:
    Reactor(bool fail, grpc::StatusCode code, const std::string& response)
        : fail_(fail), code_(code) {
      grpc::Slice slice(response);
      response_ = grpc::ByteBuffer(&slice, 1);
      StartRead(&request_);
    }
    void OnReadDone(bool /*ok*/) override {
      if (fail_) {
        Finish(grpc::Status(code_, "scripted failure"));
      } else {
        StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
      }
    }
    void OnDone() override { delete this; }

   private:
    const bool fail_;
    const grpc::StatusCode code_;
    grpc::ByteBuffer request_, response_;
  };

  class Service final : public grpc::CallbackGenericService {
   public:
    explicit Service(ScriptedTestServer* owner) : owner_(owner) {}
    grpc::ServerGenericBidiReactor* CreateReactor(
        grpc::GenericCallbackServerContext* context) override {
      return owner_->Start(context);
    }

   private:
    ScriptedTestServer* const owner_;
  };

  grpc::ServerGenericBidiReactor* Start(grpc::GenericCallbackServerContext* context) {
    const auto& metadata = context->client_metadata();
    const auto found = metadata.find("authorization");
    Call call{context->method(), found == metadata.end()
                                     ? "<none>"
                                     : std::string(found->second.data(), found->second.size())};
    std::lock_guard<std::mutex> lock(mu_);
    const bool fail = static_cast<int>(calls_.size()) < failures_;
    calls_.push_back(call);
    const auto response = responses_.find(call.method);
    return new Reactor(fail, failure_code_,
                       response == responses_.end() ? std::string() : response->second);
  }

  Service service_;
  const int failures_;
  const grpc::StatusCode failure_code_;
  const std::map<std::string, std::string> responses_;
  mutable std::mutex mu_;
  std::vector<Call> calls_;  // Guarded by mu_.
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace myops::testing

#endif  // MYOPS_TESTS_CLIENT_SCRIPTED_TEST_SERVER_H_
