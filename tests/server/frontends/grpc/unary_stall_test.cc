// Unary responses the client does not take: a client whose HTTP/2 window stays shut (it
// never asks for the response) must not keep a unary call's memory for the connection's
// life. Once a finished call's response has waited --stall-timeout-ms, the call is
// cancelled and its budget returns; a client that reads gets its response as before.
// Against the real server in-process, for myops.v1 Call and ScaleShift and the Open
// Inference Protocol's ModelInfer.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "kserve/v2/grpc_predict_v2.grpc.pb.h"
#include "myops/v1/myops.grpc.pb.h"
#include "test_server.h"

namespace myops::server {
namespace {

constexpr int64_t kElements = int64_t{4} << 20;  // 16 MiB of float32 each way

class UnaryStallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options = testing::LoopbackOptions();
    options.limits.max_inflight_bytes = int64_t{512} << 20;
    options.limits.stall_timeout_ms = 300;
    options.limits.tensor.max_elements = kElements;
    t_ = testing::StartServer(options);
    ASSERT_TRUE(t_.server);
    // A client whose window stays at 64 KiB unless it reads: no BDP probing.
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(1 << 30);
    args.SetMaxSendMessageSize(1 << 30);
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
    channel_ = grpc::CreateCustomChannel(t_.address, grpc::InsecureChannelCredentials(), args);
    generic_ = std::make_unique<grpc::GenericStub>(channel_);
  }
  void TearDown() override {
    queue_.Shutdown();
    void* tag;
    bool ok;
    while (queue_.Next(&tag, &ok)) {
    }
  }

  int64_t Held() const { return t_.server->pipeline().budget().held(); }

  // Polls until the budget is idle; false when it stays held for `limit`.
  bool IdleWithin(std::chrono::milliseconds limit) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (Held() != 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Held() == 0;
  }
  bool HeldWithin(std::chrono::milliseconds limit) const {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (Held() == 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return Held() != 0;
  }
  std::string Stalled() const { return t_.server->pipeline().metrics().Render(); }

  // Sends `request` to the unary `method` as raw HTTP/2 (a generic call: headers, the
  // message, end of stream) and never reads: the response waits in the server.
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> SendAndNeverRead(
      grpc::ClientContext* ctx, const std::string& method,
      const google::protobuf::Message& request) {
    grpc::ByteBuffer bytes;
    bool own = false;
    const grpc::Status serialized =
        grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(request, &bytes,
                                                                                   &own);
    EXPECT_TRUE(serialized.ok());
    auto call = generic_->PrepareCall(ctx, method, &queue_);
    void* tag;
    bool ok;
    call->StartCall(reinterpret_cast<void*>(1));
    EXPECT_TRUE(queue_.Next(&tag, &ok) && ok);
    call->WriteLast(bytes, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    EXPECT_TRUE(queue_.Next(&tag, &ok) && ok);  // sent; nothing polls or reads from here
    return call;
  }

  testing::TestServer t_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::CompletionQueue queue_;
  std::unique_ptr<grpc::GenericStub> generic_;
};

myops::v1::CallRequest BigCall() {
  myops::v1::CallRequest request;
  request.set_op("myops::scale_shift");
  auto* t = request.add_arguments()->mutable_value()->mutable_tensor();
  t->set_dtype(myops::v1::DTYPE_FLOAT32);
  t->add_shape(kElements);
  t->set_data(std::string(static_cast<size_t>(kElements) * 4, '\0'));
  request.add_arguments()->mutable_value()->set_float_value(2.0);
  request.add_arguments()->mutable_value()->set_float_value(1.0);
  return request;
}

TEST_F(UnaryStallTest, ACallWhoseResponseIsNotTakenIsCancelledAndItsBudgetReturns) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto call = SendAndNeverRead(&ctx, "/myops.v1.Myops/Call", BigCall());
  ASSERT_TRUE(HeldWithin(std::chrono::seconds(10)));
  EXPECT_TRUE(IdleWithin(std::chrono::seconds(5))) << Held() << " bytes still held";
  EXPECT_NE(Stalled().find("myops_responses_stalled_total 1"), std::string::npos);
  ctx.TryCancel();
}

TEST_F(UnaryStallTest, AModelInferWhoseResponseIsNotTakenIsCancelledToo) {
  inference::ModelInferRequest request;
  request.set_model_name("myops::scale_shift");
  auto* x = request.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(kElements);
  request.add_raw_input_contents(std::string(static_cast<size_t>(kElements) * 4, '\0'));
  (*request.mutable_parameters())["alpha"].set_double_param(2.0);
  (*request.mutable_parameters())["beta"].set_double_param(1.0);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto call = SendAndNeverRead(&ctx, "/inference.GRPCInferenceService/ModelInfer", request);
  ASSERT_TRUE(HeldWithin(std::chrono::seconds(10)));
  EXPECT_TRUE(IdleWithin(std::chrono::seconds(5))) << Held() << " bytes still held";
  ctx.TryCancel();
}

TEST_F(UnaryStallTest, AClientThatReadsGetsItsResponse) {
  auto stub = myops::v1::Myops::NewStub(channel_);
  grpc::ClientContext ctx;
  myops::v1::CallResponse response;
  grpc::Status status = stub->Call(&ctx, BigCall(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).tensor().data().size(), static_cast<size_t>(kElements) * 4);
  EXPECT_TRUE(IdleWithin(std::chrono::seconds(5)));
  EXPECT_EQ(Stalled().find("myops_responses_stalled_total 1"), std::string::npos);
}

}  // namespace
}  // namespace myops::server
