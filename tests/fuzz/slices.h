// Fuzz input -> grpc::ByteBuffer of several slices, for the targets whose parser walks a
// received message slice by slice (myops::wire::ParseWithTensorData). The input chooses
// the split: its first byte's low 3 bits are a count k of cuts, the next k bytes are the
// lengths of the first k slices (0 is allowed: an empty slice), and the rest of the
// message goes into one last slice. The message is what follows those 1 + k bytes.
// With bit 3 of the first byte set and `pad_around` non-zero, the message gets one more
// field (unknown, length-delimited, number 15) in a slice of its own, sized so that the
// message's size lands within 64 bytes either side of `pad_around` (the high 4 bits of
// the first byte choose where): inputs near a size limit without megabyte-sized inputs.
// Slices of up to 23 bytes are stored inline in grpc_slice itself, longer ones on the
// heap, so both storage kinds reach the parser.
#ifndef MYOPS_TESTS_FUZZ_SLICES_H_
#define MYOPS_TESTS_FUZZ_SLICES_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

namespace myops::fuzz {

struct SlicedInput {
  std::string message;  // The message bytes, contiguous (for reference parsers).
  grpc::ByteBuffer buffer;
};

inline SlicedInput SplitIntoSlices(const uint8_t* data, size_t size, size_t pad_around = 0) {
  SlicedInput out;
  const uint8_t control = size > 0 ? data[0] : 0;
  size_t cuts = control & 7;
  size_t pos = size > 0 ? 1 : 0;
  std::vector<size_t> lengths;
  for (; cuts > 0 && pos < size; --cuts) lengths.push_back(data[pos++]);
  out.message.assign(reinterpret_cast<const char*>(data + pos), size - pos);
  std::vector<grpc::Slice> slices;
  size_t offset = 0;
  for (size_t length : lengths) {
    if (length > out.message.size() - offset) length = out.message.size() - offset;
    slices.emplace_back(out.message.data() + offset, length);  // Copies the bytes.
    offset += length;
  }
  slices.emplace_back(out.message.data() + offset, out.message.size() - offset);
  if ((control & 8) != 0 && pad_around > out.message.size() + 64) {
    const size_t target = pad_around - 64 + (control >> 4) * 8;  // pad_around - 64 .. + 56
    const size_t payload = target - out.message.size() - 4;      // Key + 3-byte length.
    std::string pad = "\x7a";                                    // Field 15, wire type 2.
    pad.push_back(static_cast<char>(0x80 | (payload & 0x7f)));
    pad.push_back(static_cast<char>(0x80 | ((payload >> 7) & 0x7f)));
    pad.push_back(static_cast<char>(payload >> 14));
    pad.append(payload, 'p');
    slices.emplace_back(pad.data(), pad.size());
    out.message += pad;
  }
  out.buffer = grpc::ByteBuffer(slices.data(), slices.size());
  return out;
}

// For LLVMFuzzerInitialize: drops protobuf's log lines (e.g. one per invalid UTF-8 string
// refused), which would otherwise cost most of the run's time. Returns 0.
inline int QuietProtobufLogs() {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

// Aborts with `what` on stderr: a broken property, reported by libFuzzer as a crash.
[[noreturn]] inline void Fail(const char* what) {
  fprintf(stderr, "fuzz property violated: %s\n", what);
  __builtin_trap();
}

}  // namespace myops::fuzz

#endif  // MYOPS_TESTS_FUZZ_SLICES_H_
