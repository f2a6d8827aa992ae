// Implements test_server.h.
#include "test_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>

#include "reference.h"

namespace myops::server::testing {

ServerOptions LoopbackOptions() {
  ServerOptions o;
  o.address = "127.0.0.1:0";
  o.executor.devices = "cpu";
  o.executor.cpu_workers = 2;
  o.limits.max_message_bytes = int64_t{1} << 30;
  o.limits.tensor.max_bytes = o.limits.max_message_bytes;
  // The budget is the tests' to fill from one client; shares have their own tests.
  o.limits.max_client_share = 1.0;
  return o;
}

std::shared_ptr<grpc::Channel> Connect(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(1 << 30);
  args.SetMaxSendMessageSize(1 << 30);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

TestServer StartServer(const ServerOptions& options, std::unique_ptr<Executor> executor) {
  TestServer t;
  auto server = executor ? Server::Start(options, std::move(executor)) : Server::Start(options);
  if (!server.ok()) {
    ADD_FAILURE() << "server did not start: " << server.status();
    return t;
  }
  t.server = std::move(*server);
  t.address = "127.0.0.1:" + std::to_string(t.server->port());
  t.channel = Connect(t.address);
  t.stub = myops::v1::Myops::NewStub(t.channel);
  return t;
}

myops::v1::ScaleShiftRequest MakeRequest(DType dtype, const std::vector<int64_t>& shape,
                                         double alpha, double beta, uint64_t seed) {
  myops::v1::ScaleShiftRequest r;
  auto* t = r.mutable_input();
  t->set_dtype(static_cast<myops::v1::DType>(dtype));
  int64_t numel = 1;
  for (int64_t d : shape) {
    t->add_shape(d);
    numel *= d;
  }
  *t->mutable_data() = RandomTensorBytes(dtype, numel, seed);
  r.set_alpha(alpha);
  r.set_beta(beta);
  r.set_request_id(seed);
  return r;
}

int HealthStatus(const std::shared_ptr<grpc::Channel>& channel, const std::string& service) {
  // HealthCheckRequest { string service = 1; }  HealthCheckResponse { enum status = 1; }
  std::string request = std::string(1, '\x0a') + static_cast<char>(service.size()) + service;
  grpc::Slice slice(request);
  grpc::ByteBuffer send(&slice, 1), recv;
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &send, &recv,
                 [&](grpc::Status s) {
                   std::lock_guard<std::mutex> lock(mu);
                   status = s;
                   done = true;
                   cv.notify_one();
                 });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  if (!status.ok()) return -1;
  std::vector<grpc::Slice> slices;
  recv.Dump(&slices);
  std::string bytes;
  for (auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  if (bytes.empty()) return 0;  // UNKNOWN (default value is not serialized)
  return bytes.size() >= 2 && bytes[0] == '\x08' ? bytes[1] : -1;
}

}  // namespace myops::server::testing
