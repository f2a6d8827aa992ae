// ArenaRequest (server/src/arena_request.h): a parsed request lives in its arena, moving
// one in copies it (the source keeps its own), and Reset and move-assignment free what
// the old message held.
#include "arena_request.h"

#include <gtest/gtest.h>

#include <string>

#include "myops/v1/myops.pb.h"

namespace myops::server {
namespace {

myops::v1::CallRequest WithData(const std::string& op, size_t bytes) {
  myops::v1::CallRequest request;
  request.set_op(op);
  request.set_request_id(7);
  request.add_arguments()->mutable_value()->mutable_tensor()->set_data(std::string(bytes, 'x'));
  return request;
}

TEST(ArenaRequest, ParsesIntoItsArena) {
  ArenaRequest<myops::v1::CallRequest> request;
  ASSERT_NE(request->GetArena(), nullptr);
  ASSERT_TRUE(request->ParseFromString(WithData("myops::scale_shift", 1024).SerializeAsString()));
  EXPECT_EQ(request->op(), "myops::scale_shift");
  EXPECT_EQ(request->arguments(0).value().tensor().data().size(), 1024u);
  EXPECT_EQ(request->GetArena(), request->arguments(0).GetArena());
}

TEST(ArenaRequest, MoveAssignmentCopiesAndFreesTheOldMessage) {
  ArenaRequest<myops::v1::CallRequest> a, b;
  *a = WithData("ns::a", 1 << 20);
  *b = WithData("ns::b", 16);
  a = std::move(b);
  EXPECT_EQ(a->op(), "ns::b");
  EXPECT_EQ(a->arguments(0).value().tensor().data(), std::string(16, 'x'));
  EXPECT_EQ(b->op(), "ns::b");  // another arena: copied, not stolen
  EXPECT_EQ(a->GetArena(), a->arguments(0).GetArena());
  a = ArenaRequest<myops::v1::CallRequest>();
  EXPECT_EQ(a->arguments_size(), 0);
  EXPECT_EQ(a->op(), "");
}

TEST(ArenaRequest, ResetEmptiesTheMessage) {
  ArenaRequest<myops::v1::CallRequest> request;
  *request = WithData("ns::op", 4096);
  myops::v1::CallRequest out = std::move(*request);  // to the heap: copied
  request.Reset();
  EXPECT_EQ(request->arguments_size(), 0);
  EXPECT_EQ(request->request_id(), 0u);
  EXPECT_EQ(out.arguments(0).value().tensor().data().size(), 4096u);
  EXPECT_EQ(out.GetArena(), nullptr);
}

}  // namespace
}  // namespace myops::server
