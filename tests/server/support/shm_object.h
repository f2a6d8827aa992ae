// A POSIX shared memory object created and mapped by a test, as a client on the
// server's host would (unlinked and unmapped when it goes), and its registration with the
// server. Header-only test support.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "kserve/v2/grpc_predict_v2.grpc.pb.h"

namespace myops::server::testing {

// A POSIX shared memory object of `bytes`, mapped here; unlinked and unmapped at the end.
class ShmObject {
 public:
  ShmObject(const std::string& tag, size_t bytes)
      : key_("/myops_test_" + std::to_string(getpid()) + "_" + tag), bytes_(bytes) {
    const int fd = shm_open(key_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0) << key_;
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    data_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    EXPECT_NE(data_, MAP_FAILED);
    close(fd);
  }
  ~ShmObject() {
    munmap(data_, bytes_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  float* floats() const { return static_cast<float*>(data_); }
  void Truncate() const {
    const int fd = shm_open(key_.c_str(), O_RDWR, 0600);
    EXPECT_EQ(ftruncate(fd, 0), 0);
    close(fd);
  }

 private:
  std::string key_;
  size_t bytes_;
  void* data_ = nullptr;
};

// Registers `object`'s first `bytes` as region `name` (SystemSharedMemoryRegister).
inline grpc::Status RegisterRegion(inference::GRPCInferenceService::Stub& stub,
                                   const std::string& name, const ShmObject& object,
                                   uint64_t bytes) {
  grpc::ClientContext ctx;
  inference::SystemSharedMemoryRegisterRequest request;
  request.set_name(name);
  request.set_key(object.key());
  request.set_byte_size(bytes);
  inference::SystemSharedMemoryRegisterResponse response;
  return stub.SystemSharedMemoryRegister(&ctx, request, &response);
}

}  // namespace myops::server::testing
