// Triton's system shared memory extension on the real server in-process (so that the
// sanitizer build runs the whole path: registration, ModelInfer reading inputs from and
// writing outputs to regions, in place through scale_shift.out or by copy, the empty
// raw_output_contents entry, errors, and every region unmapped when the server stops).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kserve/v2/grpc_predict_v2.grpc.pb.h"
#include "shm_object.h"
#include "test_server.h"

namespace myops::server {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;

void SetRegion(google::protobuf::Map<std::string, inference::InferParameter>* params,
               const std::string& region, int64_t bytes, int64_t offset = 0) {
  (*params)["shared_memory_region"].set_string_param(region);
  (*params)["shared_memory_byte_size"].set_int64_param(bytes);
  if (offset != 0) (*params)["shared_memory_offset"].set_int64_param(offset);
}

ModelInferRequest ScaleShift(int64_t n, const std::string& in_region,
                             const std::string& out_region) {
  ModelInferRequest r;
  r.set_model_name("myops::scale_shift");
  auto* x = r.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(n);
  SetRegion(x->mutable_parameters(), in_region, n * 4);
  auto* y = r.add_outputs();
  y->set_name("output__0");
  SetRegion(y->mutable_parameters(), out_region, n * 4);
  (*r.mutable_parameters())["alpha"].set_double_param(2.0);
  (*r.mutable_parameters())["beta"].set_double_param(0.5);
  return r;
}

class KServeShmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions options = testing::LoopbackOptions();
    options.shared_memory.allow = true;
    options.shared_memory.limits.max_regions = 4;
    t_ = testing::StartServer(options);
    ASSERT_TRUE(t_.server);
    stub_ = inference::GRPCInferenceService::NewStub(t_.channel);
  }
  grpc::Status Register(const std::string& name, const testing::ShmObject& object, uint64_t bytes) {
    return testing::RegisterRegion(*stub_, name, object, bytes);
  }
  grpc::Status Infer(const ModelInferRequest& request, ModelInferResponse* response) {
    grpc::ClientContext ctx;
    return stub_->ModelInfer(&ctx, request, response);
  }
  testing::TestServer t_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
};

// Small and large results alike computed into the region (scale_shift.out: its layout
// follows from its input).
TEST_F(KServeShmTest, InputsAndOutputsInRegionsBothSizes) {
  for (int64_t n : {int64_t{16}, int64_t{1} << 16}) {
    SCOPED_TRACE(n);
    const std::string tag = std::to_string(n);
    testing::ShmObject in("in" + tag, n * 4), out("out" + tag, n * 4);
    for (int64_t i = 0; i < n; ++i) in.floats()[i] = static_cast<float>(i % 97);
    ASSERT_TRUE(Register("in" + tag, in, n * 4).ok());
    ASSERT_TRUE(Register("out" + tag, out, n * 4).ok());
    ModelInferResponse response;
    grpc::Status status = Infer(ScaleShift(n, "in" + tag, "out" + tag), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.outputs_size(), 1);
    EXPECT_EQ(response.outputs(0).shape(0), n);
    ASSERT_EQ(response.raw_output_contents_size(), 1);
    EXPECT_TRUE(response.raw_output_contents(0).empty());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out.floats()[i], 2.0f * static_cast<float>(i % 97) + 0.5f) << i;
    }
  }
}

TEST_F(KServeShmTest, ErrorsNameTheRegion) {
  testing::ShmObject in("ein", 4096), small("esmall", 64);
  ASSERT_TRUE(Register("in", in, 4096).ok());
  ASSERT_TRUE(Register("small", small, 64).ok());
  ModelInferResponse response;
  grpc::Status status = Infer(ScaleShift(1024, "in", "small"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("small"), std::string::npos) << status.error_message();
  status = Infer(ScaleShift(1024, "in", "nowhere"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("nowhere"), std::string::npos);
  status = Register("in", in, 4096);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  in.Truncate();
  status = Infer(ScaleShift(16, "in", "small"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << status.error_message();
}

TEST_F(KServeShmTest, RegionsAreUnmappedWhenTheServerStops) {
  testing::ShmObject in("stop", 4096);
  ASSERT_TRUE(Register("stop", in, 4096).ok());
  auto maps = [] {
    std::ifstream f("/proc/self/maps");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  const std::string path = "/dev/shm" + in.key();
  // Two mappings while registered: this test's and the server's.
  const std::string before = maps();
  EXPECT_NE(before.find(path), before.rfind(path));
  t_.server->Shutdown(std::chrono::milliseconds(0));
  const std::string after = maps();
  EXPECT_EQ(after.find(path), after.rfind(path));  // this test's only
}

}  // namespace
}  // namespace myops::server
