// Generic calls through the operator table (runtime/boxed_call.h) computing a result into
// a buffer the front end gives (OpCall::result_buffer, a shared memory region in the
// server): which ops have a usable out= overload, results written in place when they
// fit, with the dtype and shape the op's Meta kernel tells, and ordinary results when
// they do not.
#include "runtime/torch/boxed_call.h"

#include <ATen/ops/from_blob.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/exception_status.h"
#include "runtime/op_registry.h"
#include "runtime/torch/op_handles.h"
#include "runtime/torch/runner.h"

namespace myops::server {
namespace {

std::shared_ptr<const OpRegistry> Registry() {
  auto patterns =
      OpPatterns::Parse("myops::scale_shift,myops::scale_shift_,aten::add.Tensor,aten::sin");
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

// aten::add.Tensor(a, b): two tensors, so its result's layout only the Meta kernel tells.
OpCall AddCall(const OpRegistry& registry, Value a, Value b) {
  OpCall call;
  call.op = *registry.Find("aten::add.Tensor");
  EXPECT_TRUE(BindArguments(registry.ops()[static_cast<size_t>(call.op)],
                            {{"", std::move(a)}, {"", std::move(b)}}, &call)
                  .ok());
  return call;
}

// Argument tensors and in-buffer results are made by WrapCpu: what at::from_blob makes,
// with and without InferenceMode, 0-dim and empty shapes included.
TEST(WrapCpuTest, MakesWhatFromBlobMakes) {
  std::vector<double> data(24, 1.5);
  for (const bool inference : {false, true}) {
    std::optional<c10::InferenceMode> mode;
    if (inference) mode.emplace();
    for (const std::vector<int64_t>& shape :
         {std::vector<int64_t>{}, {0}, {24}, {2, 3, 4}, {4, 0, 3}, {1, 1}}) {
      SCOPED_TRACE(::testing::Message()
                   << "inference " << inference << ", shape " << c10::IntArrayRef(shape));
      const at::Tensor ours = WrapCpu(data.data(), shape, DType::kFloat64);
      const at::Tensor theirs = at::from_blob(data.data(), shape, at::kDouble);
      EXPECT_EQ(ours.sizes(), theirs.sizes());
      EXPECT_EQ(ours.strides(), theirs.strides());
      EXPECT_EQ(ours.numel(), theirs.numel());
      EXPECT_EQ(ours.scalar_type(), at::kDouble);
      EXPECT_EQ(ours.device(), theirs.device());
      EXPECT_EQ(ours.data_ptr(), theirs.data_ptr());
      EXPECT_TRUE(ours.is_contiguous());
      EXPECT_EQ(ours.is_inference(), theirs.is_inference());
      EXPECT_EQ(ours.is_inference(), inference);
      EXPECT_FALSE(ours.requires_grad());
      EXPECT_EQ(ours.unsafeGetTensorImpl()->key_set(), theirs.unsafeGetTensorImpl()->key_set());
      EXPECT_EQ(ours.storage().nbytes(), theirs.storage().nbytes());
      EXPECT_FALSE(ours.storage().resizable());
      EXPECT_EQ(ours.storage_offset(), 0);
      if (ours.numel() > 0) EXPECT_EQ(ours.sum().item<double>(), 1.5 * ours.numel());
    }
  }
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

// A small result whose layout only the Meta kernel could tell (two tensors: broadcasting,
// promotion) is computed the ordinary way and copied; a pointwise op's with one tensor
// argument goes into the buffer.
TEST(RunBoxedIntoBufferTest, SmallResultsOfUnknownLayoutAreComputedTheOrdinaryWay) {
  auto registry = Registry();
  const std::vector<float> a = {1, 2, 3, 4};
  std::vector<float> out(4, -1.0f);
  OpCall add = AddCall(*registry, Tensor(a.data(), {4}, DType::kFloat32, 16),
                       Tensor(a.data(), {4}, DType::kFloat32, 16));
  add.result_buffer = {out.data(), 16};
  RunBoxed(Handle(*registry, "aten::add.Tensor"), add, c10::Device(c10::kCPU));
  ASSERT_EQ(add.results.size(), 1u);
  EXPECT_NE(add.results[0].tensor.data, out.data());
  EXPECT_EQ(out, std::vector<float>(4, -1.0f));

  OpCall call = ScaleShiftCall(*registry, a, out.data(), 16);
  RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(call.results[0].tensor.data, out.data());
  EXPECT_EQ(out, (std::vector<float>{3, 5, 7, 9}));
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
  const auto n = static_cast<int64_t>(k64KiB);
  OpCall call = AddCall(*registry, Tensor(a.data(), {n}, DType::kInt64, n * 8),
                        Tensor(b.data(), {n}, DType::kFloat32, n * 4));
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

// Declining (null) gets an ordinary result; a small input of an op whose layout its
// arguments do not tell (two tensors: broadcasting, promotion) is not worth the Meta
// dispatch, so the host is not asked.
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

  const std::vector<float> a = {1, 2, 3, 4};
  const std::vector<float> b = {0.5f, 0.5f, 0.5f, 0.5f};
  OpCall small = AddCall(*registry, Tensor(a.data(), {4}, DType::kFloat32, 16),
                         Tensor(b.data(), {4}, DType::kFloat32, 16));
  small.input_bytes = 32;
  small.result_buffer.allocate = call.result_buffer.allocate;
  RunBoxed(Handle(*registry, "aten::add.Tensor"), small, c10::Device(c10::kCPU));
  EXPECT_EQ(asked, 1);
  ASSERT_EQ(small.results.size(), 1u);
  ASSERT_NE(small.results[0].tensor.owner, nullptr);
  const auto* sum = static_cast<const float*>(small.results[0].tensor.data);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(sum[i], a[i] + 0.5f);
}

// Pointwise ops with one tensor argument: the result has its shape, so even a small one
// is computed into the host's buffer (no Meta dispatch per call).
TEST(RunBoxedAllocateTest, SmallPointwiseResultsGoIntoTheHostsBuffer) {
  auto registry = Registry();
  ASSERT_NE(Handle(*registry, "myops::scale_shift").result_dtypes, nullptr);
  EXPECT_EQ(Handle(*registry, "myops::scale_shift").result_dtypes->tensor_arg(), 0u);
  EXPECT_EQ(Handle(*registry, "aten::add.Tensor").result_dtypes, nullptr);     // two tensors
  EXPECT_EQ(Handle(*registry, "myops::scale_shift_").result_dtypes, nullptr);  // no out=
  const std::vector<float> x = {1, 2, 3, 4, 5};
  std::vector<float> out(x.size(), -1.0f);
  for (int round = 0; round < 2; ++round) {  // the first asks the Meta kernel, then known
    OpCall call = ScaleShiftCall(*registry, x, nullptr, 0);
    call.input_bytes = 20;
    int asked = 0;
    call.result_buffer.allocate = [&](const OpCall::OutputBuffer::Layout& layout, int64_t bytes) {
      ++asked;
      EXPECT_EQ(layout.dtype, DType::kFloat32);
      EXPECT_EQ(layout.shape, std::vector<int64_t>{5});
      EXPECT_EQ(bytes, 20);
      return static_cast<void*>(out.data());
    };
    RunBoxed(Handle(*registry, "myops::scale_shift"), call, c10::Device(c10::kCPU));
    EXPECT_EQ(asked, 1) << round;
    ASSERT_EQ(call.results.size(), 1u);
    EXPECT_EQ(call.results[0].tensor.data, out.data());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], 2 * x[i] + 1) << i;
    std::fill(out.begin(), out.end(), -1.0f);
  }
}

// The result's dtype is the Meta kernel's for the argument's dtype, told once per dtype:
// aten::sin of int64 is float32, of float64 float64.
TEST(RunBoxedAllocateTest, TheResultDtypeIsToldOncePerArgumentDtype) {
  auto registry = Registry();
  const OpHandle& sin = Handle(*registry, "aten::sin");
  ASSERT_NE(sin.result_dtypes, nullptr);
  EXPECT_EQ(sin.result_dtypes->Get(DType::kInt64), ResultDtypes::kUnknown);
  const std::vector<int64_t> ints = {0, 1, 2};
  const std::vector<double> doubles = {0.0, 0.5};
  struct Case {
    const void* data;
    int64_t count;
    DType dtype;
    DType expected;
  };
  for (const Case& c : {Case{ints.data(), 3, DType::kInt64, DType::kFloat32},
                        Case{ints.data(), 3, DType::kInt64, DType::kFloat32},
                        Case{doubles.data(), 2, DType::kFloat64, DType::kFloat64}}) {
    OpCall call;
    call.op = *registry->Find("aten::sin");
    ASSERT_TRUE(BindArguments(registry->ops()[static_cast<size_t>(call.op)],
                              {{"", Tensor(c.data, {c.count}, c.dtype, c.count * 8)}}, &call)
                    .ok());
    std::vector<double> out(static_cast<size_t>(c.count), -1.0);
    std::optional<OpCall::OutputBuffer::Layout> told;
    call.result_buffer.allocate = [&](const OpCall::OutputBuffer::Layout& layout, int64_t) {
      told = layout;
      return static_cast<void*>(out.data());
    };
    RunBoxed(sin, call, c10::Device(c10::kCPU));
    ASSERT_TRUE(told.has_value());
    EXPECT_EQ(told->dtype, c.expected);
    EXPECT_EQ(told->shape, std::vector<int64_t>{c.count});
    EXPECT_EQ(sin.result_dtypes->Get(c.dtype), static_cast<int8_t>(c.expected));
    ASSERT_EQ(call.results.size(), 1u);
    EXPECT_EQ(call.results[0].tensor.data, out.data());
    EXPECT_EQ(call.results[0].tensor.dtype, c.expected);
    if (c.expected == DType::kFloat32) {
      const auto* y = reinterpret_cast<const float*>(out.data());
      for (int64_t i = 0; i < c.count; ++i) EXPECT_FLOAT_EQ(y[i], std::sin(float(ints[i])));
    } else {
      for (int64_t i = 0; i < c.count; ++i) EXPECT_DOUBLE_EQ(out[i], std::sin(doubles[i]));
    }
  }
}

// Pointwise ops (at::Tag::pointwise) are listed so: hosts may batch them along dimension 0.
// OpCall::memory is charged what the op allocates on the CPU, before the memory is
// taken, and given it back when that memory is freed (results too, after the call); its
// refusal ends the call (CallRefused, the status as it is) with no result made.
class CountingCharge final : public MemoryCharge {
 public:
  explicit CountingCharge(int64_t limit) : limit_(limit) {}
  absl::Status Take(int64_t bytes) override {
    if (held + bytes > limit_) {
      return absl::ResourceExhaustedError(absl::StrCat("no room for ", bytes, " bytes"));
    }
    held += bytes;
    taken += bytes;
    return absl::OkStatus();
  }
  void Give(int64_t bytes) override { held -= bytes; }
  std::atomic<int64_t> held{0}, taken{0};

 private:
  const int64_t limit_;
};

TEST(RunBoxedChargeTest, WhatTheOpAllocatesIsChargedUntilFreed) {
  auto registry = Registry();
  std::vector<float> a(256, 0.5f), b(256, 2.0f);
  auto add_call = [&] {
    // Broadcast [256] + [1]: a result of 1024 bytes made by the op.
    return AddCall(*registry, Tensor(a.data(), {256}, DType::kFloat32, 1024),
                   Tensor(b.data(), {1}, DType::kFloat32, 4));
  };
  OpCall call = add_call();
  auto charge = std::make_shared<CountingCharge>(1 << 20);
  call.memory = charge;
  RunBoxed(registry->handles()->ops.at(static_cast<size_t>(call.op)), call, c10::Device(c10::kCPU));
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(call.results[0].tensor.bytes, 1024);
  EXPECT_GE(charge->taken.load(), 1024);
  EXPECT_GE(charge->held.load(), 1024);  // the result, alive
  call.results.clear();
  EXPECT_EQ(charge->held.load(), 0);  // every charged byte given back once freed

  OpCall refused = add_call();
  auto small = std::make_shared<CountingCharge>(1000);
  refused.memory = small;
  try {
    RunBoxed(registry->handles()->ops.at(static_cast<size_t>(refused.op)), refused,
             c10::Device(c10::kCPU));
    ADD_FAILURE() << "not refused";
  } catch (...) {
    const absl::Status status = StatusFromException(std::current_exception(), true);
    EXPECT_EQ(status, absl::ResourceExhaustedError("no room for 1024 bytes"));
  }
  EXPECT_TRUE(refused.results.empty());
  EXPECT_EQ(small->held.load(), 0);
}

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
