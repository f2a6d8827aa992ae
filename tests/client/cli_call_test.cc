// myops-cli's `ops` and `call` commands, the real binary run as a child process against
// the in-process generated-code server of call_test_server.h: what they print, the .npy
// files `call --out-prefix` writes, and the exit status of bad command lines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "call_test_server.h"
#include "npy.h"

namespace myops::cli {
namespace {

using ::testing::HasSubstr;

struct CliRun {
  int status = -1;
  std::string output;  // stdout and stderr
};

CliRun RunCli(const std::string& args) {
  CliRun run;
  const std::string command = std::string(MYOPS_CLI_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return run;
}

class CliCallTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.ok()); }
  std::string Target() const { return "--target " + server_.target() + " "; }
  testing::CallTestServer server_;
};

TEST_F(CliCallTest, OpsListsSchemasDevicesAndWhyNotServed) {
  CliRun run = RunCli(Target() + "ops");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("test::echo(Tensor x, *, float alpha=1.) -> Tensor\n"
                                    "    served on cpu\n"));
  EXPECT_THAT(run.output, HasSubstr("test::echo_(Tensor(a!) x) -> Tensor(a!)\n"
                                    "    not served: mutates argument x\n"));
  EXPECT_THAT(run.output, HasSubstr("4 operators"));
}

TEST_F(CliCallTest, CallPrintsArgumentsOutputsAndWritesNpy) {
  const std::string prefix = ::testing::TempDir() + "/cli_call_out";
  const std::string input = ::testing::TempDir() + "/cli_call_in.npy";
  const float values[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  ASSERT_TRUE(WriteNpyFile(input, {client::DType::kFloat32, {2, 2}, values, 16}).ok());
  CliRun run =
      RunCli(Target() + "call test::echo " + input +
             " -2 [1,2] [3:float64,:float32] none alpha=2.0 --device cpu --out-prefix " + prefix);
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("op          test::echo\n"));
  EXPECT_THAT(run.output, HasSubstr("arg 0       float32 [2, 2] (16 bytes): [1, 2, 3, 4]\n"));
  EXPECT_THAT(run.output, HasSubstr("arg 1       -2\n"));
  EXPECT_THAT(run.output, HasSubstr("arg alpha   2.0\n"));
  EXPECT_THAT(run.output, HasSubstr("output 0    float32 [2, 2] (16 bytes): [1, 2, 3, 4]\n"));
  EXPECT_THAT(run.output, HasSubstr("output 2    [1, 2]\n"));
  EXPECT_THAT(run.output, HasSubstr("output 3    2 tensors: float64 [3] (24 bytes)"));
  EXPECT_THAT(run.output, HasSubstr("output 4    none\n"));
  EXPECT_THAT(run.output, HasSubstr("output 5    \"alpha\"\n"));
  EXPECT_THAT(run.output, HasSubstr("server      device cpu"));
  absl::StatusOr<client::Tensor> out0 = ReadNpyFile(prefix + "0.npy");
  ASSERT_TRUE(out0.ok()) << out0.status();
  EXPECT_EQ(out0->bytes(), std::string(reinterpret_cast<const char*>(values), 16));
  absl::StatusOr<client::Tensor> out31 = ReadNpyFile(prefix + "3_1.npy");
  ASSERT_TRUE(out31.ok()) << out31.status();
  EXPECT_TRUE(out31->shape().empty());
  EXPECT_THAT(run.output, HasSubstr("wrote       " + prefix + "3_0.npy\n"));
  for (const char* suffix : {"0.npy", "3_0.npy", "3_1.npy"}) std::remove((prefix + suffix).c_str());
  std::remove(input.c_str());
}

TEST_F(CliCallTest, BadArgumentsAndServerErrorsExitOne) {
  CliRun run = RunCli(Target() + "call test::echo 2x3:float33");
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.output, HasSubstr("INVALID_ARGUMENT: argument 1: \"2x3:float33\""));
  run = RunCli(Target() + "call test::echo alpha=1 2");
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.output, HasSubstr("positional but follows a keyword"));
  run = RunCli(Target() + "call test::fail 1");
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.output, HasSubstr("INVALID_ARGUMENT: test::fail: argument \"x\""));
  run = RunCli(Target() + "call test::echo 2:bfloat16 --out-prefix " + ::testing::TempDir() +
               "/cli_bf16_");
  EXPECT_EQ(run.status, 1);
  EXPECT_THAT(run.output, HasSubstr("bfloat16"));
  run = RunCli(Target() + "call");
  EXPECT_NE(run.status, 0);
  EXPECT_THAT(run.output, HasSubstr("op is required"));
}

}  // namespace
}  // namespace myops::cli
