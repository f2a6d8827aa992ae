// Tests of myops::wire::ReceivedSlices (tensor_wire.h): the last references to received
// slices that a TensorData or DataFieldValues holds are dropped inside a gRPC ExecCtx,
// whichever thread releases them. Without one, gRPC 1.51 crashes when the freed slice's
// memory belongs to a resource quota under pressure (ExecCtx::Run on a null ExecCtx);
// tests/python/hostile/test_quota_pressure.py shows that crash end to end.
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <utility>

#include <grpc/slice.h>
#include <grpcpp/support/byte_buffer.h>
#include <gtest/gtest.h>

#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/wire/tensor_wire.h"

// gRPC 1.51's thread-local current ExecCtx (src/core/lib/iomgr/exec_ctx.h), which
// libgrpc exports; declared here only to read whether a thread has one.
namespace grpc_core {
class ExecCtx {
 public:
  static thread_local ExecCtx* exec_ctx_;
};
}  // namespace grpc_core

namespace myops::wire {
namespace {

// Where a slice's memory was freed: 0 not yet, 1 inside an ExecCtx, 2 outside one.
std::atomic<int> g_freed{0};

void RecordFree(void* data) {
  g_freed.store(grpc_core::ExecCtx::exec_ctx_ != nullptr ? 1 : 2);
  delete[] static_cast<char*>(data);
}

// A refcounted slice of `n` bytes whose destruction RecordFree sees.
grpc::Slice Watched(size_t n) {
  char* bytes = new char[n];
  std::fill(bytes, bytes + n, 'x');
  g_freed.store(0);
  return grpc::Slice(grpc_slice_new_with_user_data(bytes, n, RecordFree, bytes),
                     grpc::Slice::STEAL_REF);
}

// Runs `release` on a new thread, which has no ExecCtx (as the server's own threads).
template <typename F>
void OnPlainThread(F release) {
  std::thread([&] {
    ASSERT_EQ(grpc_core::ExecCtx::exec_ctx_, nullptr);
    release();
  }).join();
}

TEST(ReceivedSlicesTest, GrpcSliceUnrefFreesOutsideAnExecCtx) {
  // The premise: what ReceivedSlices avoids. Should gRPC ever free inside one of its
  // own, this fails, and ReceivedSlices is no longer needed.
  grpc::Slice slice = Watched(4096);
  OnPlainThread([&] { slice = grpc::Slice(); });
  EXPECT_EQ(g_freed.load(), 2);
}

TEST(ReceivedSlicesTest, TensorDataFreesTheReceivedSlicesInsideAnExecCtx) {
  for (const bool by_assignment : {false, true}) {
    SCOPED_TRACE(by_assignment ? "assigned over" : "destroyed");
    TensorData data;
    {
      myops::v1::Tensor head;
      head.set_dtype(myops::v1::DTYPE_FLOAT32);
      head.add_shape(1024);
      myops::v1::ScaleShiftRequest rest;
      rest.set_alpha(2);
      grpc::ByteBuffer bytes = EncodeWithTensorData(myops::v1::ScaleShiftRequest::kInputFieldNumber,
                                                    head, Watched(4096), rest);
      myops::v1::ScaleShiftRequest request;
      ASSERT_TRUE(ParseWithTensorData(bytes, myops::v1::ScaleShiftRequest::kInputFieldNumber,
                                      &request, &data)
                      .ok());
      ASSERT_EQ(data.size(), 4096u);
    }  // The received buffer is gone: `data` holds the last references.
    EXPECT_EQ(g_freed.load(), 0);
    OnPlainThread([&] {
      if (by_assignment) {
        data = TensorData();
      } else {
        TensorData last = std::move(data);
      }
    });
    EXPECT_EQ(g_freed.load(), 1);
  }
}

TEST(ReceivedSlicesTest, DataFieldValuesFreeTheReceivedSlicesInsideAnExecCtx) {
  constexpr int kRaw = inference::ModelInferRequest::kRawInputContentsFieldNumber;
  DataFieldValues values;
  {
    std::string prefix;
    AppendVarint((kRaw << 3) | 2, &prefix);
    AppendVarint(4096, &prefix);
    grpc::Slice slices[2] = {grpc::Slice(prefix), Watched(4096)};
    grpc::ByteBuffer bytes(slices, 2);
    inference::ModelInferRequest request;
    ASSERT_TRUE(ParseWithDataField(bytes, kRaw, &request, &values).ok());
    ASSERT_EQ(values.count(), 1u);
  }
  EXPECT_EQ(g_freed.load(), 0);
  OnPlainThread([&] { values = DataFieldValues(); });
  EXPECT_EQ(g_freed.load(), 1);
}

}  // namespace
}  // namespace myops::wire
