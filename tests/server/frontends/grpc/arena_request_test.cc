// ArenaRequest (server/src/arena_request.h): a parsed request lives in its arena, moving
// one in copies it (the source keeps its own), and Reset and move-assignment free what
// the old message held.
#include "frontends/grpc/arena_request.h"

#include <gtest/gtest.h>

#include <string>

#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/v1/myops.pb.h"

namespace myops::server {
namespace {

myops::v1::CallRequest WithData(const std::string& op, size_t bytes) {
  myops::v1::CallRequest request;
  request.set_op(op);
  request.set_request_id(7);
  request.add_arguments()->mutable_value()->mutable_tensor()->set_data(std::string(bytes, 'x'));
  return request;
}

TEST(ArenaRequest, ParsesIntoItsArena) {
  ArenaRequest<myops::v1::CallRequest> request;
  ASSERT_NE(request->GetArena(), nullptr);
  ASSERT_TRUE(request->ParseFromString(WithData("myops::scale_shift", 1024).SerializeAsString()));
  EXPECT_EQ(request->op(), "myops::scale_shift");
  EXPECT_EQ(request->arguments(0).value().tensor().data().size(), 1024u);
  EXPECT_EQ(request->GetArena(), request->arguments(0).GetArena());
}

// The requests of scale_shift over 1 KiB as the clients send them fit the inline block:
// no heap block for the head (the data's buffer is a string's own).
TEST(ArenaRequest, SmallRequestsNeedNoBlockBeyondTheInlineOne) {
  myops::v1::CallRequest call = WithData("myops::scale_shift", 1024);
  call.mutable_arguments(0)->mutable_value()->mutable_tensor()->add_shape(256);
  call.add_arguments()->mutable_value()->set_float_value(2);
  call.add_arguments()->mutable_value()->set_float_value(1);
  ArenaRequest<myops::v1::CallRequest> parsed_call;
  ASSERT_TRUE(parsed_call->ParseFromString(call.SerializeAsString()));
  EXPECT_EQ(parsed_call.arena_bytes(), parsed_call.inline_bytes());

  inference::ModelInferRequest infer;
  infer.set_model_name("myops::scale_shift");
  auto* x = infer.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(256);
  (*infer.mutable_parameters())["alpha"].set_double_param(2);
  (*infer.mutable_parameters())["beta"].set_double_param(1);
  infer.add_raw_input_contents(std::string(1024, 'x'));
  ArenaRequest<inference::ModelInferRequest> parsed_infer;
  ASSERT_TRUE(parsed_infer->ParseFromString(infer.SerializeAsString()));
  EXPECT_EQ(parsed_infer->parameters().at("beta").double_param(), 1);
  EXPECT_EQ(parsed_infer.arena_bytes(), parsed_infer.inline_bytes());
}

TEST(ArenaRequest, MoveAssignmentCopiesAndFreesTheOldMessage) {
  ArenaRequest<myops::v1::CallRequest> a, b;
  *a = WithData("ns::a", 1 << 20);
  *b = WithData("ns::b", 16);
  a = std::move(b);
  EXPECT_EQ(a->op(), "ns::b");
  EXPECT_EQ(a->arguments(0).value().tensor().data(), std::string(16, 'x'));
  EXPECT_EQ(b->op(), "ns::b");  // another arena: copied, not stolen
  EXPECT_EQ(a->GetArena(), a->arguments(0).GetArena());
  a = ArenaRequest<myops::v1::CallRequest>();
  EXPECT_EQ(a->arguments_size(), 0);
  EXPECT_EQ(a->op(), "");
}

TEST(ArenaRequest, ResetEmptiesTheMessage) {
  ArenaRequest<myops::v1::CallRequest> request;
  *request = WithData("ns::op", 4096);
  myops::v1::CallRequest out = std::move(*request);  // to the heap: copied
  request.Reset();
  EXPECT_EQ(request->arguments_size(), 0);
  EXPECT_EQ(request->request_id(), 0u);
  EXPECT_EQ(out.arguments(0).value().tensor().data().size(), 4096u);
  EXPECT_EQ(out.GetArena(), nullptr);
}

}  // namespace
}  // namespace myops::server
