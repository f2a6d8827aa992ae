// End to end with the real myops-server binary: the startup line, health, info, and
// SIGTERM: health turns NOT_SERVING, RPCs arriving during --drain-delay are served, then
// new RPCs get UNAVAILABLE while those in flight finish (unary calls and an open stream),
// and the process exits 0; or, when --grace-period runs out, what is still in flight is
// cancelled and the process still exits 0.
#include <signal.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "reference.h"
#include "server_process.h"
#include "test_server.h"

namespace myops::server {
namespace {

using myops::v1::ScaleShiftRequest;
using myops::v1::ScaleShiftResponse;
using testing::ServerProcess;

using Stream = grpc::ClientReaderWriter<ScaleShiftRequest, myops::v1::ScaleShiftStreamResponse>;

// One request on `stream` and its answer, checked against the CPU operator.
void Exchange(Stream* stream, uint64_t id) {
  ScaleShiftRequest request = testing::MakeRequest(DType::kFloat32, {1024}, 2.0, 1.0, id);
  ASSERT_TRUE(stream->Write(request));
  myops::v1::ScaleShiftStreamResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.request_id(), id);
  ASSERT_TRUE(response.has_response()) << response.error().message();
  EXPECT_TRUE(
      response.response().output().data() ==
      testing::ReferenceScaleShift(DType::kFloat32, {1024}, request.input().data(), 2.0, 1.0));
}

grpc::Status SmallCall(myops::v1::Myops::Stub* stub) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  ScaleShiftResponse response;
  auto request = testing::MakeRequest(DType::kFloat32, {64}, 2.0, 1.0, 99);
  grpc::Status status = stub->ScaleShift(&ctx, request, &response);
  if (status.ok()) {
    EXPECT_TRUE(response.output().data() == testing::ReferenceScaleShift(DType::kFloat32, {64},
                                                                         request.input().data(),
                                                                         2.0, 1.0));
  }
  return status;
}

TEST(EndToEndTest, ServesThenDrainsOnSigtermWithoutLosingRequests) {
  ServerProcess server({"--address", "127.0.0.1:0", "--devices", "cpu", "--cpu-workers", "1",
                        "--drain-delay", "5", "--grace-period", "60", "--max-message-bytes",
                        "536870912"});
  const int port = server.WaitForPort();
  ASSERT_GT(port, 0) << "server did not start:\n" << server.output();
  const std::string& line = server.startup_line();
  EXPECT_NE(line.find("listening on 127.0.0.1:" + std::to_string(port)), std::string::npos);
  EXPECT_NE(line.find("devices: cpu"), std::string::npos) << line;
  EXPECT_NE(line.find("torch "), std::string::npos) << line;
  EXPECT_NE(line.find("max_inflight="), std::string::npos) << line;
  const std::string address = "127.0.0.1:" + std::to_string(port);
  auto channel = testing::Connect(address);
  auto stub = myops::v1::Myops::NewStub(channel);
  EXPECT_EQ(testing::HealthStatus(channel, ""), 1);
  {
    grpc::ClientContext ctx;
    myops::v1::ServerInfoResponse info;
    ASSERT_TRUE(stub->ServerInfo(&ctx, {}, &info).ok());
    EXPECT_EQ(info.operators_size(), 1);
  }
  // A stream opened before SIGTERM and kept open through the whole drain.
  grpc::ClientContext stream_ctx;
  stream_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
  auto stream = stub->ScaleShiftStream(&stream_ctx);
  ASSERT_NO_FATAL_FAILURE(Exchange(stream.get(), 1));
  // Eight 16 MiB requests at once on one worker; once the first answer is back, every
  // call has been started on the server (HTTP/2 sends all headers first): SIGTERM then.
  constexpr int kCalls = 8;
  struct Call {
    grpc::ClientContext ctx;
    ScaleShiftRequest request;
    ScaleShiftResponse response;
    grpc::Status status;
  };
  std::vector<std::unique_ptr<Call>> calls;
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  for (int i = 0; i < kCalls; ++i) {
    auto c = std::make_unique<Call>();
    c->request = testing::MakeRequest(DType::kFloat32, {4 << 20}, 2.0, -1.0, i + 1);
    c->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    calls.push_back(std::move(c));
  }
  for (auto& c : calls) {
    stub->async()->ScaleShift(&c->ctx, &c->request, &c->response, [&, p = c.get()](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      p->status = s;
      ++finished;
      cv.notify_all();
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished >= 1; });
    ASSERT_LT(finished, kCalls) << "all calls finished before SIGTERM; nothing was in flight";
  }
  server.Signal(SIGTERM);
  // Draining: health reports NOT_SERVING (2) while the server still answers.
  int health = 1;
  for (int i = 0; i < 2000 && health == 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    health = testing::HealthStatus(channel, "");
  }
  EXPECT_EQ(health, 2);
  // An RPC arriving during --drain-delay, from a client that has not noticed (a new
  // connection), is served.
  {
    auto fresh = myops::v1::Myops::NewStub(testing::Connect(address));
    grpc::Status during = SmallCall(fresh.get());
    EXPECT_TRUE(during.ok()) << during.error_message();
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished == kCalls; });
  }
  for (auto& c : calls) {
    ASSERT_TRUE(c->status.ok()) << c->status.error_message();
    EXPECT_TRUE(c->response.output().data() ==
                testing::ReferenceScaleShift(DType::kFloat32, {4 << 20}, c->request.input().data(),
                                             2.0, -1.0));
  }
  // After the drain delay, new RPCs are refused with UNAVAILABLE; the open stream keeps
  // the process alive meanwhile.
  grpc::Status late;
  for (int i = 0; i < 1200 && late.ok(); ++i) {
    late = SmallCall(stub.get());
    if (late.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Refused: UNAVAILABLE once the client has the server's GOAWAY; CANCELLED when the call
  // crossed it on the wire (gRPC's server cancels calls it receives after its shutdown
  // began with RST_STREAM). Either way the call was not served.
  EXPECT_TRUE(late.error_code() == grpc::StatusCode::UNAVAILABLE ||
              late.error_code() == grpc::StatusCode::CANCELLED)
      << late.error_code() << ": " << late.error_message();
  EXPECT_TRUE(server.Running());
  // The stream, in flight since before SIGTERM, is still served and completes.
  ASSERT_NO_FATAL_FAILURE(Exchange(stream.get(), 2));
  ASSERT_TRUE(stream->WritesDone());
  grpc::Status finish = stream->Finish();
  EXPECT_TRUE(finish.ok()) << finish.error_message();
  EXPECT_EQ(server.Wait(), 0) << server.output();
  EXPECT_NE(server.output().find("myops-server: stopped"), std::string::npos) << server.output();
}

// When --grace-period runs out, what is still in flight (a stream its client keeps open)
// is cancelled and the process still exits 0.
TEST(EndToEndTest, GracePeriodExpiryCancelsWhatIsInFlightAndExitsZero) {
  ServerProcess server({"--address", "127.0.0.1:0", "--devices", "cpu", "--drain-delay", "0",
                        "--grace-period", "1"});
  const int port = server.WaitForPort();
  ASSERT_GT(port, 0) << "server did not start:\n" << server.output();
  auto stub = myops::v1::Myops::NewStub(testing::Connect("127.0.0.1:" + std::to_string(port)));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(300));
  auto stream = stub->ScaleShiftStream(&ctx);
  ASSERT_NO_FATAL_FAILURE(Exchange(stream.get(), 1));
  server.Signal(SIGTERM);
  myops::v1::ScaleShiftStreamResponse response;
  EXPECT_FALSE(stream->Read(&response));  // Returns once the server cancels the stream.
  grpc::Status status = stream->Finish();
  // The server's hard stop closes the connection: the client sees UNAVAILABLE.
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  EXPECT_EQ(server.Wait(), 0) << server.output();
}

}  // namespace
}  // namespace myops::server
