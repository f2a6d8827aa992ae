// CallStream messages of the chunked transfer for tests: a scale_shift header whose input
// is chunked, and one chunk of a request's tensor. Header-only test support.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "myops/v1/myops.pb.h"

namespace myops::server::testing {

// A scale_shift header (alpha 2, beta 1) whose float32 input of `n` elements is chunked.
inline myops::v1::CallRequest ChunkedHeader(uint64_t id, int64_t n) {
  myops::v1::CallRequest r;
  r.set_op("myops::scale_shift");
  r.set_request_id(id);
  auto* t = r.add_arguments()->mutable_value()->mutable_tensor();
  t->set_dtype(myops::v1::DTYPE_FLOAT32);
  t->add_shape(n);
  t->set_chunked_byte_size(static_cast<uint64_t>(n) * 4);
  r.add_arguments()->mutable_value()->set_float_value(2.0);
  r.add_arguments()->mutable_value()->set_float_value(1.0);
  return r;
}

// The chunk of `data` at `offset` of chunked tensor `index` of request `id`.
inline myops::v1::CallRequest Chunk(uint64_t id, uint32_t index, uint64_t offset,
                                    std::string data) {
  myops::v1::CallRequest r;
  r.mutable_chunk()->set_request_id(id);
  r.mutable_chunk()->set_tensor_index(index);
  r.mutable_chunk()->set_offset(offset);
  r.mutable_chunk()->set_data(std::move(data));
  return r;
}

}  // namespace myops::server::testing
