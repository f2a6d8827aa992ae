// The C++ client's Values against the real myops-server serving the test operator
// library (tests/server/test_ops, loaded with --load-library): every argument and return
// kind the client carries, each result checked against the kernel's definition.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "myops/client/client.h"
#include "server_process.h"

namespace myops::client {
namespace {

using server::testing::ServerProcess;
using ::testing::HasSubstr;

Tensor Floats(std::vector<int64_t> shape, std::vector<float> values) {
  std::string bytes(values.size() * 4, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return Tensor(DType::kFloat32, std::move(shape), std::move(bytes));
}

std::vector<float> Values(const TensorView& t) {
  EXPECT_EQ(t.dtype, DType::kFloat32);
  std::vector<float> v(t.size_bytes / 4);
  if (!v.empty()) std::memcpy(v.data(), t.data, t.size_bytes);
  return v;
}

class ClientCallOpsE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--address", "127.0.0.1:0", "--devices", "cpu", "--load-library",
                                 MYOPS_TEST_OPS_LIBRARY, "--ops", "myops::*,myops_test::*"});
    port_ = server_->WaitForPort();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(port_, 0) << server_->output();
    ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(port_);
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  CallResult Call(const std::string& op, std::vector<Value> args,
                  std::vector<NamedArg> kwargs = {}) {
    absl::StatusOr<CallResult> r = client_->Call(op, args, kwargs);
    EXPECT_TRUE(r.ok()) << op << ": " << r.status();
    return r.ok() ? *std::move(r) : CallResult();
  }

  static ServerProcess* server_;
  static int port_;
  std::unique_ptr<Client> client_;
};

ServerProcess* ClientCallOpsE2eTest::server_ = nullptr;
int ClientCallOpsE2eTest::port_ = 0;

TEST_F(ClientCallOpsE2eTest, TensorsOptionalTensorsAndKeywordOnlyDefaults) {
  const Tensor a = Floats({3}, {1, 2, 3}), b = Floats({3}, {10, 20, 30}),
               c = Floats({3}, {5, 5, 5});
  CallResult r = Call("myops_test::add3", {a.view(), b.view()});
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(Values(r.outputs[0].tensor()), (std::vector<float>{11, 22, 33}));
  r = Call("myops_test::add3", {a.view(), b.view(), Value()}, {{"alpha", 0.5}});
  EXPECT_EQ(Values(r.outputs[0].tensor()), (std::vector<float>{6, 12, 18}));
  r = Call("myops_test::add3", {a, b}, {{"c", c.view()}, {"alpha", 2.0}});
  EXPECT_EQ(Values(r.outputs[0].tensor()), (std::vector<float>{26, 47, 68}));
}

TEST_F(ClientCallOpsE2eTest, TupleAndTensorListReturnsAndArguments) {
  const Tensor x = Floats({2, 3}, {4, -1, 7, 0, 2, 3});
  CallResult r = Call("myops_test::minmax", {x.view()});
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_TRUE(r.outputs[0].tensor().shape.empty());
  EXPECT_EQ(Values(r.outputs[0].tensor()), (std::vector<float>{-1}));
  EXPECT_EQ(Values(r.outputs[1].tensor()), (std::vector<float>{7}));

  r = Call("myops_test::chunks", {Floats({5}, {1, 2, 3, 4, 5}), 3});
  ASSERT_EQ(r.outputs.size(), 1u);
  ASSERT_EQ(r.outputs[0].kind(), Value::Kind::kTensorList);
  std::vector<Tensor> parts = r.outputs[0].TakeTensorList();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(Values(parts[2].view()), (std::vector<float>{5}));

  const Tensor p = Floats({2}, {1, 2}), q = Floats({2}, {3, 4});
  r = Call("myops_test::stack_all", {std::vector<TensorView>{p.view(), q.view()}}, {{"dim", 1}});
  EXPECT_EQ(r.outputs[0].tensor().shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values(r.outputs[0].tensor()), (std::vector<float>{1, 3, 2, 4}));
}

TEST_F(ClientCallOpsE2eTest, ScalarsListsStringsAndDTypes) {
  const Tensor x = Floats({4}, {0.5, 1.5, 2.5, -3});
  EXPECT_EQ(Call("myops_test::count_above", {x.view(), 1}).outputs[0].int_value(), 2);
  EXPECT_EQ(Call("myops_test::count_above", {x.view(), 0.25}).outputs[0].int_value(), 3);
  EXPECT_EQ(Call("myops_test::count_above", {x.view(), true}).outputs[0].int_value(), 2);

  // 1*1 + 2*0.5 + 3*0.25 = 2.75; an integer dtype truncates.
  const Value weights = Value::FloatList({1.0, 0.5, 0.25});
  EXPECT_EQ(Call("myops_test::weighted_sum", {weights}).outputs[0].float_value(), 2.75);
  EXPECT_EQ(Call("myops_test::weighted_sum", {weights, DType::kFloat64}).outputs[0].float_value(),
            2.75);
  EXPECT_EQ(Call("myops_test::weighted_sum", {weights, Value()}).outputs[0].float_value(), 2.75);

  // An integer ScalarType truncates.
  EXPECT_EQ(Call("myops_test::weighted_sum", {weights, DType::kInt32}).outputs[0].float_value(),
            2.0);

  CallResult r = Call("myops_test::describe", {x.view(), "t:"}, {{"upper", true}});
  EXPECT_EQ(r.outputs[0].string_value(), "T:1D");
  EXPECT_TRUE(Call("myops_test::all_positive", {Floats({2}, {1, 2})}).outputs[0].bool_value());
  EXPECT_FALSE(Call("myops_test::all_positive", {x.view()}).outputs[0].bool_value());
}

TEST_F(ClientCallOpsE2eTest, IntListsAndIntegerResultTensors) {
  CallResult r = Call("myops_test::filled", {Value::IntList({2, 3})}, {{"repeat", 2}});
  ASSERT_EQ(r.outputs.size(), 1u);
  const TensorView t = r.outputs[0].tensor();
  EXPECT_EQ(t.dtype, DType::kInt64);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{4, 3}));
  std::vector<int64_t> values(12);
  ASSERT_EQ(t.size_bytes, sizeof(int64_t) * values.size());
  std::memcpy(values.data(), t.data, t.size_bytes);
  EXPECT_EQ(values, std::vector<int64_t>(12, 7));  // fill defaults to 7
  r = Call("myops_test::filled", {Value::IntList({1, 2}), -3});
  std::memcpy(values.data(), r.outputs[0].tensor().data, 2 * sizeof(int64_t));
  EXPECT_EQ(values[0], -3);
  EXPECT_EQ(values[1], -3);
}

TEST_F(ClientCallOpsE2eTest, OptionalReturnsAndResultsThatAreTheInput) {
  const Tensor x = Floats({2}, {1, -2});
  EXPECT_TRUE(Call("myops_test::maybe", {x.view(), false}).outputs[0].is_none());
  EXPECT_EQ(Values(Call("myops_test::maybe", {x.view(), true}).outputs[0].tensor()),
            (std::vector<float>{2, -4}));
  CallResult r = Call("myops_test::same", {x.view()});
  EXPECT_EQ(Values(r.outputs[0].tensor()), (std::vector<float>{1, -2}));
  EXPECT_NE(r.outputs[0].tensor().data, x.data());
}

TEST_F(ClientCallOpsE2eTest, RefusedCallsNameTheirReason) {
  const Tensor x = Floats({2}, {1, 2});
  absl::StatusOr<CallResult> r = client_->Call("myops_test::bump_", {x.view()});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("is not served: it writes into its argument 'x'"));
  r = client_->Call("myops_test::chunks", {x.view(), "three"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("argument 'n' (position 2) must be int"));
  absl::StatusOr<std::vector<OperatorDescription>> ops = client_->ListOperators();
  ASSERT_TRUE(ops.ok()) << ops.status();
  bool listed_bump = false;
  for (const OperatorDescription& op : *ops) {
    if (op.name != "myops_test::bump_") continue;
    listed_bump = true;
    EXPECT_FALSE(op.served);
    EXPECT_FALSE(op.reason.empty());
  }
  EXPECT_TRUE(listed_bump);
}

}  // namespace
}  // namespace myops::client
