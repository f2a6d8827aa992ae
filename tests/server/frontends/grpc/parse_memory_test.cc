// What parsing a request really costs in memory, against what the front end reserves for
// it first: ModelInferRequest (kserve::InferParseReservation, from
// wire::CheckInferRequestHead) and myops.v1's CallRequest (CallParseReservation, from
// wire::CheckCallRequestHead). Requests built to cost the most per byte received (1-byte
// varints in packed int64 contents and shapes, thousands of empty inputs or arguments,
// map entries, raw contents, unpacked contents) are parsed into the server's
// ArenaRequest (ModelInferRequests also decoded, as the front end decodes them), and the
// heap that took (glibc's count of bytes in use) must stay within the reservation. These cases are
// how the reservations' factors were measured; a protobuf that grows its arrays or objects
// differently fails here.
#include <malloc.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "frontends/grpc/arena_request.h"
#include "frontends/myops_v1/call_codec.h"
#include "frontends/oip/codec.h"
#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/v1/myops.pb.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/tensor_wire.h"

namespace myops::server {
namespace {

using inference::ModelInferRequest;

std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>(0x80 | (v & 0x7f)));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}

std::string Field(int field, const std::string& bytes) {  // length-delimited
  return Varint(static_cast<uint64_t>(field) << 3 | 2) + Varint(bytes.size()) + bytes;
}

// `count` copies of `piece`.
std::string Times(const std::string& piece, size_t count) {
  std::string out;
  out.reserve(piece.size() * count);
  for (size_t i = 0; i < count; ++i) out += piece;
  return out;
}

// `count` copies of `piece`, then the request's model name.
std::string Repeated(const std::string& piece, size_t count) {
  return Times(piece, count) + Field(1, "m");
}

// One input whose contents hold packed field `field` of `bytes` bytes of `byte`.
std::string Packed(int field, size_t bytes, char byte) {
  return Field(5, Field(1, "x") + Field(2, "INT64") +
                      Field(5, Field(field, std::string(bytes, byte)))) +
         Field(1, "m");
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  // Several slices, as gRPC hands large messages over.
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
    slices.emplace_back(bytes.data() + at, std::min<size_t>(1 << 20, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

size_t HeapInUse() { return mallinfo2().uordblks; }

struct Case {
  std::string name;
  std::string bytes;
};

std::vector<Case> Cases() {
  const size_t head = wire::kMaxHeadBytes - 64;  // what fits the head limit
  const size_t big = 4 << 20;
  std::vector<Case> cases;
  for (int field = 1; field <= 7; ++field) {  // bool .. fp64, all bytes 0 (1-byte varints)
    cases.push_back({"packed field " + std::to_string(field), Packed(field, big, '\0')});
    cases.push_back({"small packed field " + std::to_string(field), Packed(field, 1000, '\0')});
  }
  cases.push_back({"empty inputs", Repeated(Field(5, ""), head / 2)});
  cases.push_back({"inputs with empty contents", Repeated(Field(5, Field(5, "")), head / 4)});
  cases.push_back(
      {"inputs with a shape", Repeated(Field(5, std::string("\x18\x01", 2)), head / 4)});
  cases.push_back({"empty outputs", Repeated(Field(6, ""), head / 2)});
  cases.push_back({"empty raw contents", Repeated(Field(7, ""), head / 2)});
  cases.push_back({"one-byte raw contents", Repeated(Field(7, "a"), head / 2)});
  cases.push_back({"empty parameters", Repeated(Field(4, ""), head / 2)});
  cases.push_back({"parameters with distinct keys", [&] {
                     std::string out;
                     for (size_t i = 0; out.size() < head; ++i) {
                       out += Field(4, Field(1, std::to_string(i)) + Field(2, ""));
                     }
                     return out + Field(1, "m");
                   }()});
  cases.push_back({"input parameters", Repeated(Field(5, Field(4, "")), head / 4)});
  cases.push_back({"empty bytes contents",
                   Field(5, Field(5, Times(Field(8, ""), head / 2 - 8))) + Field(1, "m")});
  cases.push_back(
      {"unpacked int64 contents",
       Field(5, Field(5, Times(std::string("\x18\x00", 2), head / 2 - 8))) + Field(1, "m")});
  cases.push_back({"unknown fields", Repeated(std::string("\xf8\x01\x00", 3), head / 3)});
  cases.push_back({"raw contents in pieces",  // 4 MiB of FP32 in 1 MiB slices
                   Field(5, Field(1, "x") + Field(2, "FP32") + std::string("\x18\x80\x80\x40", 4)) +
                       Field(7, std::string(big, 'a')) + Field(1, "m")});
  cases.push_back({"a small request",
                   Field(1, "myops::scale_shift") +
                       Field(5, Field(1, "x") + Field(2, "FP32") + std::string("\x18\x80\x02", 3)) +
                       Field(7, std::string(1024, 'a'))});
  return cases;
}

TEST(InferParseMemory, TheReservationCoversWhatTheParseTakes) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const grpc::ByteBuffer buffer = Buffer(c.bytes);
    auto size = wire::CheckInferRequestHead(buffer);
    ASSERT_TRUE(size.ok()) << size.status();
    const int64_t reserved = kserve::InferParseReservation(buffer.Length(), *size);
    const size_t before = HeapInUse();
    auto request = std::make_unique<ArenaRequest<ModelInferRequest>>();
    auto raw = std::make_unique<wire::DataFieldValues>();
    ASSERT_TRUE(kserve::ParseInferRequest(buffer, request->get(), raw.get()).ok());
    // Decoding makes the protocol-neutral form and copies each raw contents value out of
    // the received slices; the reservation covers both (a refusal decodes less).
    kserve::InferRequest decoded;
    (void)kserve::DecodeInferRequest(**request, *raw, "m", TensorLimits{}, &decoded);
    const auto taken = static_cast<int64_t>(HeapInUse() - before);
    // The received bytes are held by gRPC already: what the parse adds is the rest.
    const auto length = static_cast<int64_t>(buffer.Length());
    printf(
        "%-40s %9lld bytes, head %7llu, packed %9llu: took %10lld (%6.2f/byte), reserved %10lld\n",
        c.name.c_str(), static_cast<long long>(length), static_cast<unsigned long long>(size->head),
        static_cast<unsigned long long>(size->packed_arrays), static_cast<long long>(taken),
        static_cast<double>(taken) / length, static_cast<long long>(reserved - length));
    EXPECT_LE(taken, reserved - length);
  }
}

// The head check's sizes for a walked message: every byte outside raw and packed data
// is head; each packed field counts its elements (a byte each at most for varints) times
// their size.
TEST(InferParseMemory, TheHeadCheckCountsPackedArraysByElementSize) {
  const std::string contents = Field(1, std::string(1000, '\1')) +  // bool: 1 a byte
                               Field(2, std::string(1000, '\1')) +  // int32: 4
                               Field(3, std::string(1000, '\1')) +  // int64: 8
                               Field(4, std::string(1000, '\1')) +  // uint32: 4
                               Field(5, std::string(1000, '\1')) +  // uint64: 8
                               Field(6, std::string(1000, '\1')) +  // fp32: the bytes
                               Field(7, std::string(1000, '\1'));   // fp64: the bytes
  const std::string input = Field(5, Field(1, "x") + Field(5, contents));
  const std::string raw = Field(7, std::string(16 << 10, 'r'));  // over the walk's threshold
  auto size = wire::CheckInferRequestHead(Buffer(input + raw + Field(1, "m")));
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(size->packed_arrays, 1000u * (1 + 4 + 8 + 4 + 8 + 1 + 1));
  // Keys and lengths: the input's (3), "x"'s (3 with its byte), the contents' (3), each
  // packed field's (3 each), the raw contents' (4), the model name's (3 with its byte).
  EXPECT_EQ(size->head, 3u + 3 + 3 + 7 * 3 + 4 + 3);
  // A small message is not walked: all head, all 1-byte int64 varints.
  const std::string small =
      Field(5, Field(1, "x") + Field(5, Field(3, std::string(100, '\1')))) + Field(1, "m");
  ASSERT_LE(small.size(), wire::kUnwalkedBytes);
  auto unwalked = wire::CheckInferRequestHead(Buffer(small));
  ASSERT_TRUE(unwalked.ok()) << unwalked.status();
  EXPECT_EQ(unwalked->head, small.size());
  EXPECT_EQ(unwalked->packed_arrays, 8 * small.size());
}

// CallRequests: field 2 arguments { name = 1, value = 2 }; Value { tensor = 1,
// int_list = 6 { values = 1 }, float_list = 7, tensor_list = 8 { tensors = 1 } };
// Tensor { shape = 2 (packed), data = 3 }; result_regions = 5.
std::vector<Case> CallCases() {
  const size_t head = wire::kMaxHeadBytes - 64;
  auto call = [](const std::string& fields) { return Field(1, "myops::scale_shift") + fields; };
  std::vector<Case> cases;
  cases.push_back({"empty arguments", call(Times(Field(2, ""), head / 2))});
  cases.push_back({"arguments with empty values", call(Times(Field(2, Field(2, "")), head / 4))});
  cases.push_back(
      {"arguments with empty tensors", call(Times(Field(2, Field(2, Field(1, ""))), head / 6))});
  cases.push_back({"a list of empty tensors",
                   call(Field(2, Field(2, Field(8, Times(Field(1, ""), head / 2 - 16)))))});
  cases.push_back({"a packed shape of zeros",
                   call(Field(2, Field(2, Field(1, Field(2, std::string(head - 16, '\0'))))))});
  cases.push_back({"a packed int list of zeros",
                   call(Field(2, Field(2, Field(6, Field(1, std::string(head - 16, '\0'))))))});
  cases.push_back({"a packed float list",
                   call(Field(2, Field(2, Field(7, Field(1, std::string(head - 16, '\0'))))))});
  cases.push_back({"empty result regions", call(Times(Field(5, ""), head / 2))});
  cases.push_back({"argument names", call(Times(Field(2, Field(1, "a")), head / 5))});
  cases.push_back(
      {"a small call", call(Field(2, Field(2, Field(1, Field(2, "\x80\x02") +
                                                           Field(3, std::string(1024, 'a'))))))});
  cases.push_back({"a 1 MiB tensor",
                   call(Field(2, Field(2, Field(1, Field(2, "\x80\x80\x10") +
                                                       Field(3, std::string(1 << 20, 'a'))))))});
  return cases;
}

TEST(CallParseMemory, TheReservationCoversWhatTheParseTakes) {
  for (const Case& c : CallCases()) {
    SCOPED_TRACE(c.name);
    const grpc::ByteBuffer buffer = Buffer(c.bytes);
    auto head = wire::CheckCallRequestHead(buffer);
    ASSERT_TRUE(head.ok()) << head.status();
    const int64_t reserved = CallParseReservation(buffer.Length(), *head);
    const size_t before = HeapInUse();
    auto request = std::make_unique<ArenaRequest<myops::v1::CallRequest>>();
    ASSERT_TRUE(ParseCheckedCallRequest(buffer, request->get()).ok());
    const auto taken = static_cast<int64_t>(HeapInUse() - before);
    const auto length = static_cast<int64_t>(buffer.Length());
    printf("%-40s %9lld bytes, head %7llu: took %10lld (%6.2f/head byte), reserved %10lld\n",
           c.name.c_str(), static_cast<long long>(length), static_cast<unsigned long long>(*head),
           static_cast<long long>(taken), static_cast<double>(taken) / static_cast<double>(*head),
           static_cast<long long>(reserved - length));
    EXPECT_LE(taken, reserved - length);
  }
}

}  // namespace
}  // namespace myops::server
