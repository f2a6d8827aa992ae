// Running one bound call on the calling thread (runtime/call_runner.h), as the Triton
// backend's instances do: a CPU runner computes; a GPU runner that cannot be set up is a
// FAILED_PRECONDITION naming the device, not a crash; operator errors are statuses.
#include "runtime/call_runner.h"

#include <gtest/gtest.h>

#include <torch/cuda.h>

#include <vector>

namespace myops::server {
namespace {

std::shared_ptr<const OpRegistry> Registry() {
  auto registry = OpRegistry::Build(*OpPatterns::Parse("myops::scale_shift"));
  EXPECT_TRUE(registry.ok()) << registry.status();
  return *registry;
}

OpCall ScaleShift(const OpRegistry& registry, const std::vector<float>& x, int64_t n) {
  OpCall call;
  call.op = *registry.Find("myops::scale_shift");
  EXPECT_TRUE(BindArguments(registry.ops()[static_cast<size_t>(call.op)],
                            {{"", Value::Tensor({DType::kFloat32, {n}, x.data(), n * 4})},
                             {"alpha", Value::Float(2)},
                             {"beta", Value::Float(1)}},
                            &call)
                  .ok());
  return call;
}

TEST(CallRunnerTest, ACpuRunnerComputesOnTheCallingThread) {
  auto registry = Registry();
  auto runner = CallRunner::Create(Device{DeviceKind::kCpu, 0});
  ASSERT_TRUE(runner.ok()) << runner.status();
  const std::vector<float> x = {1, 2, 3};
  OpCall call = ScaleShift(*registry, x, 3);
  int64_t ns = -1;
  ASSERT_TRUE((*runner)->Run(*registry, call, &ns).ok());
  EXPECT_GE(ns, 0);
  ASSERT_EQ(call.results.size(), 1u);
  const auto* y = static_cast<const float*>(call.results[0].tensor.data);
  EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{3, 5, 7}));
}

TEST(CallRunnerTest, AnOperatorErrorIsAStatus) {
  auto registry = Registry();
  auto runner = CallRunner::Create(Device{DeviceKind::kCpu, 0});
  ASSERT_TRUE(runner.ok());
  const std::vector<float> x = {1, 2, 3};
  OpCall call = ScaleShift(*registry, x, 3);
  call.args[0]->tensor.dtype = DType::kBool;  // scale_shift refuses bool (TORCH_CHECK_TYPE)
  call.args[0]->tensor.bytes = 3;
  int64_t ns = 0;
  const absl::Status s = (*runner)->Run(*registry, call, &ns);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_FALSE(s.message().empty());
}

TEST(CallRunnerTest, AGpuThatCannotBeSetUpIsAFailedPrecondition) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is present";
  auto runner = CallRunner::Create(Device{DeviceKind::kCuda, 0});
  ASSERT_FALSE(runner.ok());
  EXPECT_EQ(runner.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(runner.status().message().find("cuda:0"), std::string::npos) << runner.status();
}

}  // namespace
}  // namespace myops::server
