// The registry's torch-free half: --ops patterns, lookup by name, and binding a call's
// arguments to a schema (the rules a local Python call of torch.ops follows).
#include "runtime/op_registry.h"

#include <gtest/gtest.h>

namespace myops::server {
namespace {

TEST(OpPatternsTest, ParsesNamespacesOpsAndOverloads) {
  auto p = OpPatterns::Parse(" myops::* , torchvision::nms,aten::add.Tensor");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->Matches("myops::scale_shift", ""));
  EXPECT_TRUE(p->Matches("myops::scale_shift", "out"));
  EXPECT_TRUE(p->Matches("torchvision::nms", ""));
  EXPECT_FALSE(p->Matches("torchvision::roi_align", ""));
  EXPECT_TRUE(p->Matches("aten::add", "Tensor"));
  EXPECT_FALSE(p->Matches("aten::add", "Scalar"));
  EXPECT_FALSE(p->Matches("myopsx::f", ""));  // a namespace is matched whole
  for (const char* bad : {"", "myops", "::x", "a::", "a::b::c", "a::b*", "*::x"}) {
    EXPECT_EQ(OpPatterns::Parse(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

OpInfo Add3() {
  OpInfo op;
  op.name = "t::add3";
  op.schema = "t::add3(Tensor a, Tensor b, Tensor? c=None, *, float alpha=1.) -> Tensor";
  op.args = {{"a", "Tensor", ArgKind::kTensor},
             {"b", "Tensor", ArgKind::kTensor},
             {"c", "Tensor?", ArgKind::kTensor, true, true, "None"},
             {"alpha", "float", ArgKind::kFloat, false, true, "1.", true}};
  op.served = true;
  op.cpu = true;
  return op;
}

Value TensorValue(int64_t bytes) {
  TensorView t;
  t.bytes = bytes;
  return Value::Tensor(std::move(t));
}

TEST(BindArgumentsTest, PositionalThenNamedWithDefaultsLeftOut) {
  OpCall call;
  ASSERT_TRUE(
      BindArguments(
          Add3(), {{"", TensorValue(8)}, {"b", TensorValue(4)}, {"alpha", Value::Float(2)}}, &call)
          .ok());
  ASSERT_EQ(call.args.size(), 4u);
  EXPECT_TRUE(call.args[0].has_value() && call.args[1].has_value());
  EXPECT_FALSE(call.args[2].has_value());  // the schema's default
  EXPECT_EQ(call.args[3]->float_value, 2);
  EXPECT_EQ(call.input_bytes, 12);
}

TEST(BindArgumentsTest, EveryMistakeNamesTheArgument) {
  struct Case {
    std::vector<NamedValue> args;
    const char* message;
  };
  Value none;
  const std::vector<Case> cases = {
      {{}, "t::add3() is missing required argument 'a'"},
      {{{"", TensorValue(1)}, {"", TensorValue(1)}, {"", none}, {"", Value::Float(1)}},
       "takes 3 positional arguments but 4 were given"},
      {{{"", TensorValue(1)}, {"", Value::Float(1)}},
       "argument 'b' (position 2) must be Tensor, not float"},
      {{{"", TensorValue(1)}, {"", TensorValue(1)}, {"beta", Value::Float(1)}},
       "unexpected keyword argument 'beta'"},
      {{{"", TensorValue(1)}, {"a", TensorValue(1)}}, "got multiple values for argument 'a'"},
      {{{"b", TensorValue(1)}, {"", TensorValue(1)}}, "a positional argument follows a named one"},
      {{{"", TensorValue(1)}, {"", TensorValue(1)}, {"alpha", none}},
       "argument 'alpha' (position 4) must be float, not None"},
  };
  for (const Case& c : cases) {
    OpCall call;
    const absl::Status s = BindArguments(Add3(), c.args, &call);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
  }
}

TEST(OpRegistryTest, FindsServedOpsAndSaysWhyOthersAreNot) {
  OpInfo out = Add3();
  out.overload = "out";
  out.served = false;
  out.reason = "it writes into its argument 'out'";
  const OpRegistry registry({Add3(), out});
  EXPECT_EQ(*registry.Find("t::add3"), 0);
  const auto refused = registry.Find("t::add3.out");
  EXPECT_NE(refused.status().message().find("is not served: it writes into"), std::string::npos);
  const auto unknown = registry.Find(std::string(300, 'x'));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_LT(unknown.status().message().size(), 400u);  // the client's name is cut
}

}  // namespace
}  // namespace myops::server
