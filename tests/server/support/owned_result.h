// A call whose one result is a float tensor {1.5, -2} holding its own memory
// (TensorView::owner), and a flag that says when that memory is freed: for the tests
// that a response keeps its results' memory as long as it is sent, and no longer.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "runtime/value.h"

namespace myops::server::test_support {

// `*freed` turns true when the result's memory is freed.
inline OpCall CallWithOwnedResult(bool* freed) {
  auto memory = std::shared_ptr<std::vector<float>>(new std::vector<float>{1.5f, -2.0f},
                                                    [freed](std::vector<float>* v) {
                                                      *freed = true;
                                                      delete v;
                                                    });
  OpCall call;
  Value& result = call.results.emplace_back();
  result.kind = Value::Kind::kTensor;
  result.tensor.shape = {2};
  result.tensor.data = memory->data();
  result.tensor.bytes = 8;
  result.tensor.owner = std::move(memory);
  return call;
}

}  // namespace myops::server::test_support
