// Generic calls through the operator table (runtime/boxed_call.h) computing a result into
// a buffer the front end gives (OpCall::result_buffer, a shared memory region in the
// server): which ops have a usable out= overload, results written in place when they
// fit, with the dtype and shape the op's Meta kernel tells, and ordinary results when
// they do not.
#include "runtime/torch/boxed_call.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "runtime/op_registry.h"
#include "runtime/torch/op_handles.h"

namespace myops::server {
namespace {

std::shared_ptr<const OpRegistry> Registry() {
  auto patterns = OpPatterns::Parse("myops::scale_shift,myops::scale_shift_,aten::add.Tensor");
  EXPECT_TRUE(patterns.ok()) << patterns.status();
  auto registry = OpRegistry::Build(*patterns);
  EXPECT_TRUE(registry.ok()) << registry.status();
  return *registry;
}

// Listed ops, served or not (Find refuses the ones that are not).
const OpHandle& Handle(const OpRegistry& registry, const std::string& name) {
  for (size_t i = 0; i < registry.ops().size(); ++i) {
    if (registry.ops()[i].QualifiedName() == name) return registry.handles()->ops.at(i);
  }
  throw std::runtime_error("not listed: " + name);
}

Value Tensor(const void* data, std::vector<int64_t> shape, DType dtype, int64_t bytes) {
  return Value::Tensor({dtype, std::move(shape), data, bytes});
}

OpCall ScaleShiftCall(const OpRegistry& registry, const std::vector<float>& x, void* out,
                      int64_t out_bytes) {
  OpCall call;
  call.op = *registry.Find("myops::scale_shift");
  const auto bytes = static_cast<int64_t>(x.size() * sizeof(float));
  EXPECT_TRUE(BindArguments(
                  registry.ops()[static_cast<size_t>(call.op)],
                  {{"", Tensor(x.data(), {static_cast<int64_t>(x.size())}, DType::kFloat32, bytes)},
                   {"alpha", Value::Float(2)},
                   {"beta", Value::Float(1)}},
                  &call)
                  .ok());
  call.result_buffer = {out, out_bytes};
  return call;
}

TEST(OutOverloadTest, FoundForFunctionalOpsWithAMatchingOutVariant) {
  auto registry = Registry();
  EXPECT_TRUE(Handle(*registry, "myops::scale_shift").out.has_value());
  EXPECT_TRUE(Handle(*registry, "aten::add.Tensor").out.has_value());  // add.out
  EXPECT_EQ(Handle(*registry, "aten::add.Tensor").out->schema().overload_name(), "out");
  EXPECT_FALSE(Handle(*registry, "myops::scale_shift_").out.has_value());  // no scale_shift_.out
}

std::vector<float> Iota(size_t n) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
  return x;
}

constexpr size_t k64KiB = 16384;  // floats: the smallest buffer computed into

TEST(RunBoxedIntoBufferTest, ComputesStraightIntoTheBuffer) {
  auto registry = Registry();
  const std::vector<float> x = Iota(k64KiB);
  std::vector<float> out(k64KiB + 2, -1.0f);  // larger than needed: the result takes its head
  OpCall call = ScaleShiftCall(*registry, x, out.data(), (k64KiB + 2) * 4);
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(call.results[0].tensor.data, out.data());
  EXPECT_EQ(call.results[0].tensor.shape, std::vector<int64_t>{k64KiB});
  EXPECT_EQ(call.results[0].tensor.bytes, k64KiB * 4);
  EXPECT_EQ(call.results[0].tensor.owner, nullptr);  // the buffer is the caller's
  for (size_t i = 0; i < k64KiB; ++i) ASSERT_EQ(out[i], 2 * x[i] + 1) << i;
  EXPECT_EQ(out[k64KiB], -1.0f);
  EXPECT_EQ(out[k64KiB + 1], -1.0f);
}

// An ordinary result in memory of its own: 2x + 1 of `x`, and `out` untouched.
void ExpectOrdinaryResult(const OpCall& call, const std::vector<float>& x,
                          const std::vector<float>& out) {
  ASSERT_EQ(call.results.size(), 1u);
  const TensorView& r = call.results[0].tensor;
  EXPECT_NE(r.data, out.data());
  ASSERT_EQ(r.bytes, static_cast<int64_t>(x.size() * 4));
  const auto* y = static_cast<const float*>(r.data);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i] + 1) << i;
  for (float v : out) ASSERT_EQ(v, -1.0f);
  EXPECT_NE(r.owner, nullptr);  // a result of its own holds its memory
}

TEST(RunBoxedIntoBufferTest, TooSmallABufferGetsAnOrdinaryResult) {
  auto registry = Registry();
  const std::vector<float> x = Iota(2 * k64KiB);
  std::vector<float> out(k64KiB, -1.0f);
  OpCall call = ScaleShiftCall(*registry, x, out.data(), k64KiB * 4);
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  ExpectOrdinaryResult(call, x, out);
}

TEST(RunBoxedIntoBufferTest, SmallResultsAreComputedTheOrdinaryWay) {
  auto registry = Registry();
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> out(4, -1.0f);
  OpCall call = ScaleShiftCall(*registry, x, out.data(), 16);
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  ExpectOrdinaryResult(call, x, out);
}

// A buffer misaligned for the result's dtype (a region at an odd offset): kernels store
// whole elements, so the result is computed in memory of its own, for the front end to
// copy.
TEST(RunBoxedIntoBufferTest, AMisalignedBufferGetsAnOrdinaryResult) {
  auto registry = Registry();
  const std::vector<float> x = Iota(k64KiB);
  std::vector<float> out(k64KiB + 1, -1.0f);
  char* misaligned = reinterpret_cast<char*>(out.data()) + 1;
  OpCall call = ScaleShiftCall(*registry, x, misaligned, k64KiB * 4);
  call.result_buffer.layout = OpCall::OutputBuffer::Layout{DType::kFloat32, {k64KiB}};
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  ExpectOrdinaryResult(call, x, out);
}

// With the result's layout given (ScaleShift's sugar knows it), any size is computed in
// place, without asking the Meta kernel.
TEST(RunBoxedIntoBufferTest, AGivenLayoutComputesSmallResultsInPlace) {
  auto registry = Registry();
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> out(4, -1.0f);
  OpCall call = ScaleShiftCall(*registry, x, out.data(), 16);
  call.result_buffer.layout = OpCall::OutputBuffer::Layout{DType::kFloat32, {4}};
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(call.results[0].tensor.data, out.data());
  EXPECT_EQ(call.results[0].tensor.owner, nullptr);
  EXPECT_EQ(out, (std::vector<float>{3, 5, 7, 9}));
}

TEST(RunBoxedIntoBufferTest, TheResultDtypeIsTheOpsNotTheFirstArguments) {
  // int64 + float32 is float32 (type promotion): the out tensor must be float32, or the
  // out= overload would cast the result into int64.
  auto registry = Registry();
  const std::vector<int64_t> a(k64KiB, 1);
  const std::vector<float> b(k64KiB, 0.5f);
  std::vector<float> out(k64KiB, 0.0f);
  OpCall call;
  call.op = *registry->Find("aten::add.Tensor");
  const auto n = static_cast<int64_t>(k64KiB);
  ASSERT_TRUE(BindArguments(registry->ops()[static_cast<size_t>(call.op)],
                            {{"", Tensor(a.data(), {n}, DType::kInt64, n * 8)},
                             {"", Tensor(b.data(), {n}, DType::kFloat32, n * 4)}},
                            &call)
                  .ok());
  call.result_buffer = {out.data(), n * 4};
  RunBoxed(Handle(*registry, "aten::add.Tensor"), call, c10::Device(c10::kCPU));
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(call.results[0].tensor.dtype, DType::kFloat32);
  EXPECT_EQ(call.results[0].tensor.data, out.data());
  for (float v : out) ASSERT_EQ(v, 1.5f);
}

// A host that makes the buffer once the layout is known (the Triton backend's output
// buffers): asked once with the Meta kernel's layout and the exact byte size, and the
// result computed there.
TEST(RunBoxedAllocateTest, TheHostMakesTheBufferForTheMetaLayout) {
  auto registry = Registry();
  const std::vector<float> x = Iota(k64KiB);
  std::vector<float> out(k64KiB, -1.0f);
  OpCall call = ScaleShiftCall(*registry, x, nullptr, 0);
  call.input_bytes = static_cast<int64_t>(k64KiB * 4);
  int asked = 0;
  call.result_buffer.allocate = [&](const OpCall::OutputBuffer::Layout& layout, int64_t bytes) {
    ++asked;
    EXPECT_EQ(layout.dtype, DType::kFloat32);
    EXPECT_EQ(layout.shape, std::vector<int64_t>{k64KiB});
    EXPECT_EQ(bytes, static_cast<int64_t>(k64KiB * 4));
    return static_cast<void*>(out.data());
  };
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  EXPECT_EQ(asked, 1);
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(call.results[0].tensor.data, out.data());
  EXPECT_EQ(call.results[0].tensor.owner, nullptr);
  for (size_t i = 0; i < k64KiB; ++i) ASSERT_EQ(out[i], 2 * x[i] + 1) << i;
}

// Declining (null) gets an ordinary result; a small input is not worth the Meta dispatch,
// so the host is not asked.
TEST(RunBoxedAllocateTest, DecliningOrSmallInputsGetAnOrdinaryResult) {
  auto registry = Registry();
  const std::vector<float> x = Iota(k64KiB);
  const std::vector<float> untouched(1, -1.0f);
  OpCall call = ScaleShiftCall(*registry, x, nullptr, 0);
  call.input_bytes = static_cast<int64_t>(k64KiB * 4);
  int asked = 0;
  call.result_buffer.allocate = [&](const OpCall::OutputBuffer::Layout&, int64_t) -> void* {
    ++asked;
    return nullptr;
  };
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  EXPECT_EQ(asked, 1);
  ExpectOrdinaryResult(call, x, untouched);

  const std::vector<float> small = {1, 2, 3, 4};
  OpCall small_call = ScaleShiftCall(*registry, small, nullptr, 0);
  small_call.input_bytes = 16;
  small_call.result_buffer.allocate = call.result_buffer.allocate;
  RunBoxed(Handle(*registry, "myops::scale_shift"), small_call, c10::Device(c10::kCPU));
  EXPECT_EQ(asked, 1);
  ExpectOrdinaryResult(small_call, small, untouched);
}

// Pointwise ops (at::Tag::pointwise) are listed so: hosts may batch them along dimension 0.
TEST(OpRegistryTest, PointwiseOpsAreMarked) {
  auto registry = Registry();
  const auto& ops = registry->ops();
  auto info = [&](const std::string& name) {
    return *std::find_if(ops.begin(), ops.end(),
                         [&](const OpInfo& o) { return o.QualifiedName() == name; });
  };
  EXPECT_TRUE(info("myops::scale_shift").pointwise);
  EXPECT_TRUE(info("aten::add.Tensor").pointwise);
  auto mm = OpRegistry::Build(*OpPatterns::Parse("aten::mm"));
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_FALSE((*mm)->ops().at(0).pointwise);
}

}  // namespace
}  // namespace myops::server
