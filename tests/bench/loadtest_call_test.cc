// myops-loadtest's --op mode (bench/loadtest/runner.h) against the in-process
// generated-code server of tests/client/call_test_server.h: closed loop unary and
// stream, open loop, the bytes counted, and the fail-fast check of the op.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "call_test_server.h"
#include "report.h"
#include "runner.h"

namespace myops::loadtest {
namespace {

using ::testing::HasSubstr;

class LoadtestCallTest : public ::testing::Test {
 protected:
  LoadSpec Spec(const std::string& op) {
    LoadSpec spec;
    spec.target = server_.target();
    spec.op = op;
    spec.op_args = {"4x8:float32", "2.0", "beta=1"};
    auto args = myops::cli::ParseCallArgs(spec.op_args, 1);
    EXPECT_TRUE(args.ok()) << args.status();
    spec.op_values = std::make_shared<const myops::cli::CallArgs>(*std::move(args));
    spec.warmup = std::chrono::milliseconds(0);
    spec.window = std::chrono::milliseconds(100);
    spec.max_requests = 40;
    return spec;
  }
  testing::CallTestServer server_;
};

TEST_F(LoadtestCallTest, ClosedLoopUnaryAndStreamCountArgumentAndOutputBytes) {
  for (bool streaming : {false, true}) {
    LoadSpec spec = Spec("test::echo");
    spec.concurrency = 2;
    spec.streaming = streaming;
    EXPECT_EQ(PayloadBytes(spec), 128);
    absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GE(r->total.ok, 40) << "streaming " << streaming;
    EXPECT_EQ(r->total.error_count(), 0);
    // The echo returns the 128-byte tensor: 256 bytes per request.
    EXPECT_EQ(r->total.payload_bytes, 256 * r->total.ok);
    const std::string json = Json({{spec, *r}});
    EXPECT_THAT(json, HasSubstr("\"op\": \"test::echo\", \"args\": [\"4x8:float32\", \"2.0\", "
                                "\"beta=1\"], \"payload_bytes\": 128"));
  }
}

TEST_F(LoadtestCallTest, ClosedLoopOnCallbacksCountsRequestsAndBytes) {
  LoadSpec spec = Spec("test::echo");
  spec.driver = LoadSpec::Driver::kCallbacks;
  spec.concurrency = 3;
  spec.max_requests = 60;
  absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->total.ok, 60);
  EXPECT_EQ(r->total.error_count(), 0);
  EXPECT_EQ(r->total.payload_bytes, 256 * r->total.ok);
}

TEST_F(LoadtestCallTest, BothDriversKeepTheConcurrencyInFlight) {
  for (auto driver : {LoadSpec::Driver::kThreads, LoadSpec::Driver::kCallbacks}) {
    testing::CallTestServer server;
    LoadSpec spec = Spec("test::wait");
    spec.target = server.target();
    spec.driver = driver;
    spec.concurrency = 4;
    spec.max_requests = 80;  // 5 ms each: 100 ms with 4 in flight
    absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_GE(r->total.ok, 80);
    EXPECT_EQ(r->total.error_count(), 0);
    EXPECT_EQ(server.max_waiting(), 4) << "driver " << static_cast<int>(driver);
  }
}

TEST_F(LoadtestCallTest, ClosedLoopOnCallbacksCountsErrorsAndGoesOn) {
  LoadSpec spec = Spec("test::fail");
  spec.driver = LoadSpec::Driver::kCallbacks;
  spec.concurrency = 2;
  absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->total.ok, 0);
  EXPECT_GE(r->total.errors["INVALID_ARGUMENT"], 40);
}

TEST_F(LoadtestCallTest, CallbacksRunUnaryCallsOnly) {
  LoadSpec spec = Spec("test::echo");
  spec.driver = LoadSpec::Driver::kCallbacks;
  spec.streaming = true;
  absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("no --stream"));
}

TEST_F(LoadtestCallTest, OpenLoopCallsAsynchronously) {
  LoadSpec spec = Spec("test::echo");
  spec.rate = 400;
  spec.max_requests = 20;
  absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->total.ok, 20);
  EXPECT_EQ(r->total.error_count(), 0);
}

TEST_F(LoadtestCallTest, AnOpTheServerDoesNotServeFailsFast) {
  absl::StatusOr<RunResult> r = myops::loadtest::Run(Spec("test::nope"), nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("it serves test::echo"));
  r = myops::loadtest::Run(Spec("test::echo_"), nullptr);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("mutates argument x"));
}

TEST_F(LoadtestCallTest, ErrorsOfTheOpAreCountedByCode) {
  LoadSpec spec = Spec("test::fail");
  spec.concurrency = 2;
  absl::StatusOr<RunResult> r = myops::loadtest::Run(spec, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->total.ok, 0);
  EXPECT_GE(r->total.errors["INVALID_ARGUMENT"], 40);
}

}  // namespace
}  // namespace myops::loadtest
