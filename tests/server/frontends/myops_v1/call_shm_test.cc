// myops.v1's shared memory references in generic calls, on the real server in-process:
// argument tensors read from registered regions (float in place, integers copied),
// results written to regions (in place through scale_shift.out, whose layout follows from
// its input) and answered as references without data, and the errors.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "shm_object.h"
#include "test_server.h"

namespace myops::server {
namespace {

using myops::v1::CallRequest;
using myops::v1::CallResponse;

void SetTensor(myops::v1::Value* v, int64_t n, const std::string& region) {
  auto* t = v->mutable_tensor();
  t->set_dtype(myops::v1::DTYPE_FLOAT32);
  t->add_shape(n);
  t->mutable_shared_memory()->set_region(region);
  t->mutable_shared_memory()->set_byte_size(static_cast<uint64_t>(n) * 4);
}

CallRequest ScaleShift(int64_t n, const std::string& in, const std::string& out) {
  CallRequest r;
  r.set_op("myops::scale_shift");
  SetTensor(r.add_arguments()->mutable_value(), n, in);
  r.add_arguments()->mutable_value()->set_float_value(3.0);
  r.add_arguments()->mutable_value()->set_float_value(-1.0);
  if (!out.empty()) {
    r.add_result_regions()->set_region(out);
    r.mutable_result_regions(0)->set_byte_size(static_cast<uint64_t>(n) * 4);
  }
  return r;
}

class CallShmTest : public ::testing::Test {
 protected:
  void Start(bool allow, int64_t max_elements = TensorLimits{}.max_elements) {
    ServerOptions options = testing::LoopbackOptions();
    options.shared_memory.allow = allow;
    options.limits.tensor.max_elements = max_elements;
    options.executor.ops = "myops::*,aten::add.Tensor,aten::size";
    t_ = testing::StartServer(options);
    ASSERT_TRUE(t_.server);
    kserve_ = inference::GRPCInferenceService::NewStub(t_.channel);
  }
  grpc::Status Call(const CallRequest& request, CallResponse* response) {
    grpc::ClientContext ctx;
    return t_.stub->Call(&ctx, request, response);
  }
  testing::TestServer t_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> kserve_;
};

TEST_F(CallShmTest, ArgumentsAndResultsInRegions) {
  Start(true);
  for (int64_t n : {int64_t{8}, int64_t{1} << 16}) {
    SCOPED_TRACE(n);
    const std::string tag = "v1_" + std::to_string(n);
    testing::ShmObject in("in" + tag, n * 4), out("out" + tag, n * 4);
    for (int64_t i = 0; i < n; ++i) in.floats()[i] = static_cast<float>(i % 13);
    ASSERT_TRUE(testing::RegisterRegion(*kserve_, "in" + tag, in, n * 4).ok());
    ASSERT_TRUE(testing::RegisterRegion(*kserve_, "out" + tag, out, n * 4).ok());
    CallResponse response;
    grpc::Status status = Call(ScaleShift(n, "in" + tag, "out" + tag), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.outputs_size(), 1);
    const myops::v1::Tensor& y = response.outputs(0).tensor();
    EXPECT_TRUE(y.data().empty());
    EXPECT_EQ(y.shared_memory().region(), "out" + tag);
    EXPECT_EQ(y.shared_memory().byte_size(), static_cast<uint64_t>(n) * 4);
    ASSERT_EQ(y.shape_size(), 1);
    EXPECT_EQ(y.shape(0), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out.floats()[i], 3.0f * static_cast<float>(i % 13) - 1.0f) << i;
    }
    // The same input with the result in the response.
    status = Call(ScaleShift(n, "in" + tag, ""), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.outputs(0).tensor().data().size(), static_cast<size_t>(n) * 4);
  }
}

TEST_F(CallShmTest, IntegerArgumentsAreCopiedOutOfTheirRegion) {
  Start(true);
  testing::ShmObject a("v1_int", 64);
  auto* values = reinterpret_cast<int64_t*>(a.floats());
  for (int i = 0; i < 8; ++i) values[i] = i * 10;
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "ints", a, 64).ok());
  CallRequest r;
  r.set_op("aten::add.Tensor");
  for (int k = 0; k < 2; ++k) {
    auto* t = r.add_arguments()->mutable_value()->mutable_tensor();
    t->set_dtype(myops::v1::DTYPE_INT64);
    t->add_shape(8);
    t->mutable_shared_memory()->set_region("ints");
    t->mutable_shared_memory()->set_byte_size(64);
  }
  CallResponse response;
  grpc::Status status = Call(r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const std::string& sum = response.outputs(0).tensor().data();
  ASSERT_EQ(sum.size(), 64u);
  for (int i = 0; i < 8; ++i) {
    int64_t v = 0;
    std::memcpy(&v, sum.data() + 8 * i, 8);
    EXPECT_EQ(v, 20 * i);
  }
}

// A bool tensor in a region obeys the rule of every bool tensor (each byte 0 or 1): the
// bytes are copied out first, so the client cannot change them after the check.
TEST_F(CallShmTest, ABoolTensorWithAByteOtherThan0Or1IsRefused) {
  Start(true);
  testing::ShmObject flags("v1_bool", 16);
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "flags", flags, 16).ok());
  CallRequest r;
  r.set_op("aten::size.int");  // size(Tensor self, int dim): any dtype
  auto* t = r.add_arguments()->mutable_value()->mutable_tensor();
  t->set_dtype(myops::v1::DTYPE_BOOL);
  t->add_shape(16);
  t->mutable_shared_memory()->set_region("flags");
  t->mutable_shared_memory()->set_byte_size(16);
  r.add_arguments()->mutable_value()->set_int_value(0);
  auto* bytes = reinterpret_cast<unsigned char*>(flags.floats());
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(i % 2);
  CallResponse response;
  grpc::Status status = Call(r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  bytes[15] = 2;
  status = Call(r, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("a bool tensor with a byte other than 0 or 1"),
            std::string::npos)
      << status.error_message();
}

TEST_F(CallShmTest, ErrorsNameTheProblem) {
  Start(true);
  testing::ShmObject in("v1_err", 64);
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "err", in, 64).ok());
  CallResponse response;
  CallRequest too_big = ScaleShift(32, "err", "");  // 128 bytes from a 64-byte region
  grpc::Status status = Call(too_big, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("pass its end"), std::string::npos);
  CallRequest both = ScaleShift(16, "err", "");
  both.mutable_arguments(0)->mutable_value()->mutable_tensor()->set_data(std::string(64, '\0'));
  status = Call(both, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("both data and shared_memory"), std::string::npos);
  status = Call(ScaleShift(16, "err", "missing"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("result_regions[0]"), std::string::npos);
  testing::ShmObject small("v1_small", 16);
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "small", small, 16).ok());
  CallRequest small_result = ScaleShift(16, "err", "small");
  small_result.mutable_result_regions(0)->set_byte_size(16);  // 64 bytes to write
  status = Call(small_result, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("result 0"), std::string::npos);
}

// A tensor in a region obeys --max-elements as an inline one does, on both protocols:
// an operator is never asked to compute on more elements than the server allows (its
// bytes are bounded by the region instead of the message size).
TEST_F(CallShmTest, RegionTensorsObeyTheElementLimit) {
  Start(true, /*max_elements=*/8);
  testing::ShmObject in("v1_limit", 64);
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "limit", in, 64).ok());
  CallResponse response;
  grpc::Status status = Call(ScaleShift(16, "limit", ""), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("limit is 8"), std::string::npos) << status.error_message();
  EXPECT_TRUE(Call(ScaleShift(8, "limit", ""), &response).ok());

  inference::ModelInferRequest infer;
  infer.set_model_name("myops::scale_shift");
  auto* x = infer.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(16);
  (*x->mutable_parameters())["shared_memory_region"].set_string_param("limit");
  (*x->mutable_parameters())["shared_memory_byte_size"].set_int64_param(64);
  (*infer.mutable_parameters())["alpha"].set_double_param(2.0);
  (*infer.mutable_parameters())["beta"].set_double_param(0.5);
  inference::ModelInferResponse infer_response;
  grpc::ClientContext ctx;
  status = kserve_->ModelInfer(&ctx, infer, &infer_response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("8 elements"), std::string::npos) << status.error_message();
}

// inline_unfit_results: a result that does not fit its region (or is no tensor) comes
// back as data, the call succeeds; one that fits still goes to the region.
TEST_F(CallShmTest, UnfitResultsComeInlineWhenAsked) {
  Start(true);
  testing::ShmObject in("v1_unfit_in", 64), small("v1_unfit_out", 64);
  for (int i = 0; i < 16; ++i) in.floats()[i] = static_cast<float>(i);
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "unfit_in", in, 64).ok());
  ASSERT_TRUE(testing::RegisterRegion(*kserve_, "unfit_out", small, 64).ok());
  CallRequest r = ScaleShift(16, "unfit_in", "unfit_out");
  r.mutable_result_regions(0)->set_byte_size(32);  // 64 bytes to write
  r.set_inline_unfit_results(true);
  CallResponse response;
  grpc::Status status = Call(r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const myops::v1::Tensor& y = response.outputs(0).tensor();
  EXPECT_FALSE(y.has_shared_memory());
  ASSERT_EQ(y.data().size(), 64u);
  float v = 0;
  std::memcpy(&v, y.data().data() + 4 * 5, 4);
  EXPECT_EQ(v, 3.0f * 5 - 1.0f);
  r.mutable_result_regions(0)->set_byte_size(64);  // fits: written there
  status = Call(r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outputs(0).tensor().shared_memory().region(), "unfit_out");
  EXPECT_EQ(small.floats()[5], 3.0f * 5 - 1.0f);
  // A result that is no tensor, with a region: inline too (aten::size.int returns an int).
  CallRequest numel;
  numel.set_op("aten::size.int");
  SetTensor(numel.add_arguments()->mutable_value(), 16, "unfit_in");
  numel.add_arguments()->mutable_value()->set_int_value(0);
  numel.add_result_regions()->set_region("unfit_out");
  numel.mutable_result_regions(0)->set_byte_size(64);
  numel.set_inline_unfit_results(true);
  status = Call(numel, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.outputs(0).int_value(), 16);
  numel.set_inline_unfit_results(false);
  status = Call(numel, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("not a tensor"), std::string::npos);
}

TEST_F(CallShmTest, RefusedWithoutTheFlag) {
  Start(false);
  CallResponse response;
  grpc::Status status = Call(ScaleShift(16, "any", ""), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(status.error_message().find("--allow-shared-memory"), std::string::npos);
}

}  // namespace
}  // namespace myops::server
