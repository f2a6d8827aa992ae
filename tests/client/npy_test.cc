// The .npy reader and writer of myops-cli: round trips, files as NumPy writes them, and
// rejection of what it does not support.
#include "npy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "myops/common/dtype.h"
#include "tensor_values.h"

namespace myops::cli {
namespace {

using client::DType;
using client::Tensor;
using ::testing::HasSubstr;

// A file as NumPy writes it: magic, version, little-endian header length, the header
// padded with spaces and '\n' to a multiple of 64 bytes, then the data.
std::string NumpyFile(const std::string& dict, const std::string& data, int major = 1) {
  const size_t length_size = major == 1 ? 2 : 4;
  const size_t preamble = 8 + length_size;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = "\x93NUMPY";
  file += static_cast<char>(major);
  file += '\0';
  for (size_t i = 0; i < length_size; ++i)
    file += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return file + header + data;
}

Tensor Random(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<Tensor> tensor = Tensor::Allocate(dtype, std::move(shape));
  FillRandom(7, &*tensor);
  return *std::move(tensor);
}

TEST(NpyTest, RoundTripsEverySupportedDTypeAndShape) {
  for (const ::myops::DTypeInfo& info : ::myops::kDTypeTable) {
    if (info.dtype == DType::kBFloat16) continue;  // NumPy has none (RefusesToWriteBFloat16).
    const DType dtype = info.dtype;
    SCOPED_TRACE(std::string(info.name));
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{}, {5}, {2, 3}, {0, 4}, {2, 1, 3}}) {
      SCOPED_TRACE(client::ShapeToString(shape));
      Tensor x = Random(dtype, shape);
      absl::StatusOr<std::string> bytes = SerializeNpy(x.view());
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      EXPECT_EQ(bytes->size() % 64, x.size_bytes() % 64);  // Header padded to 64.
      absl::StatusOr<Tensor> y = ParseNpy(*bytes);
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(y->dtype(), dtype);
      EXPECT_EQ(y->shape(), shape);
      EXPECT_EQ(y->bytes(), x.bytes());
    }
  }
}

TEST(NpyTest, WritesTheHeaderNumpyWrites) {
  const float data[2] = {1.0f, 2.0f};
  absl::StatusOr<std::string> bytes = SerializeNpy({DType::kFloat32, {2}, data, 8});
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                              std::string(reinterpret_cast<const char*>(data), 8)));
}

// The integer and bool types as NumPy writes them (np.save of np.array(..., dtype)):
// read with their values, and written back byte for byte.
TEST(NpyTest, ReadsAndWritesIntegerAndBoolFilesAsNumpyDoes) {
  struct Case {
    const char* descr;
    DType dtype;
    std::string data;  // Little-endian elements -1 (true) and 2 (false for bool: 0).
    std::vector<int64_t> values;
  };
  const Case cases[] = {
      {"|i1", DType::kInt8, std::string("\xff\x02", 2), {-1, 2}},
      {"<i2", DType::kInt16, std::string("\xff\xff\x02\x00", 4), {-1, 2}},
      {"<i4", DType::kInt32, std::string("\xff\xff\xff\xff\x02\x00\x00\x00", 8), {-1, 2}},
      {"<i8",
       DType::kInt64,
       std::string(8, '\xff') + std::string("\x02\0\0\0\0\0\0\0", 8),
       {-1, 2}},
      {"|u1", DType::kUInt8, std::string("\xff\x02", 2), {255, 2}},
      {"|b1", DType::kBool, std::string("\x01\x00", 2), {1, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.descr);
    const std::string file = NumpyFile(
        absl::StrCat("{'descr': '", c.descr, "', 'fortran_order': False, 'shape': (2,), }"),
        c.data);
    absl::StatusOr<Tensor> t = ParseNpy(file);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), c.dtype);
    EXPECT_EQ(t->shape(), std::vector<int64_t>{2});
    EXPECT_EQ(ElementAsInt64(t->view(), 0), c.values[0]);
    EXPECT_EQ(ElementAsInt64(t->view(), 1), c.values[1]);
    absl::StatusOr<std::string> written = SerializeNpy(t->view());
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_EQ(*written, file);
  }
  // One-byte types have no byte order: '<i1' and '>u1' mean '|i1' and '|u1'.
  EXPECT_EQ(ParseNpy(NumpyFile("{'descr': '<i1', 'fortran_order': False, 'shape': (1,), }", "x"))
                ->dtype(),
            DType::kInt8);
  EXPECT_EQ(ParseNpy(NumpyFile("{'descr': '>u1', 'fortran_order': False, 'shape': (1,), }", "x"))
                ->dtype(),
            DType::kUInt8);
}

TEST(NpyTest, ReadsVersionsOneTwoAndThree) {
  const double data[3] = {1.5, -2.0, 4.25};
  const std::string raw(reinterpret_cast<const char*>(data), sizeof data);
  for (int major : {1, 2, 3}) {
    absl::StatusOr<Tensor> t = ParseNpy(
        NumpyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", raw, major));
    ASSERT_TRUE(t.ok()) << major << ": " << t.status();
    EXPECT_EQ(t->dtype(), DType::kFloat64);
    EXPECT_EQ(t->shape(), std::vector<int64_t>{3});
    EXPECT_EQ(t->bytes(), raw);
  }
}

TEST(NpyTest, AcceptsKeyOrderSpacingAndZeroDim) {
  absl::StatusOr<Tensor> t = ParseNpy(
      NumpyFile("{\"shape\":(),\"fortran_order\":False,\"descr\":\"<f2\"}", std::string(2, 'x')));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat16);
  EXPECT_TRUE(t->shape().empty());
}

struct RejectCase {
  const char* name;
  std::string file;
  const char* message;
};

TEST(NpyTest, RejectsWhatItDoesNotSupport) {
  const std::string f4x6(24, '\0');
  const RejectCase cases[] = {
      {"fortran order",
       NumpyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f4x6),
       "Fortran order (fortran_order: True); expected C order"},
      {"big endian", NumpyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", f4x6),
       "'>f4' is not supported (big-endian data"},
      {"big endian int",
       NumpyFile("{'descr': '>i4', 'fortran_order': False, 'shape': (6,), }", f4x6),
       "'>i4' is not supported (big-endian data: convert with .astype('<i4'))"},
      {"complex64", NumpyFile("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", f4x6),
       ".npy dtype '<c8' is not supported; expected one of '<f4' (float32), '<f8' (float64), "
       "'<f2' (float16), '|i1' (int8), '<i2' (int16), '<i4' (int32), '<i8' (int64), "
       "'|u1' (uint8), '|b1' (bool)"},
      {"uint32", NumpyFile("{'descr': '<u4', 'fortran_order': False, 'shape': (6,), }", f4x6),
       "'<u4' is not supported"},
      {"short data",
       NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                 std::string(20, '\0')),
       ".npy data is 20 bytes; expected 24 for shape [2, 3] of float32"},
      {"trailing data",
       NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", f4x6),
       ".npy data is 24 bytes; expected 20"},
      {"no magic", "NUMPY-ish", "missing the \\x93NUMPY magic string"},
      {"version 4", std::string("\x93NUMPY\x04\x00\x10\x00", 10) + std::string(16, ' '),
       "format version 4.0 is not supported"},
      {"missing key", NumpyFile("{'descr': '<f4', 'shape': (6,), }", f4x6),
       "header lacks one of 'descr', 'fortran_order', 'shape'"},
      {"extra key",
       NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}", f4x6),
       "unexpected header key 'x'"},
      {"negative dim",
       NumpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }", f4x6),
       "expected non-negative integers in 'shape'"},
      {"header beyond file", std::string("\x93NUMPY\x01\x00\xff\x00{", 11),
       "header length 255 exceeds the file"},
  };
  for (const RejectCase& c : cases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Tensor> t = ParseNpy(c.file);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(t.status().message(), HasSubstr(c.message));
  }
}

TEST(NpyTest, RefusesToWriteBFloat16) {
  Tensor x = Random(DType::kBFloat16, {3});
  absl::StatusOr<std::string> bytes = SerializeNpy(x.view());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("bfloat16 cannot be written as .npy"));
}

TEST(NpyTest, FileRoundTripAndMissingFile) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/myops_npy_test_" +
                           std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                           ".npy";
  Tensor x = Random(DType::kFloat32, {4, 5});
  ASSERT_TRUE(WriteNpyFile(path, x.view()).ok());
  absl::StatusOr<Tensor> y = ReadNpyFile(path);
  std::remove(path.c_str());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->bytes(), x.bytes());

  absl::StatusOr<Tensor> missing = ReadNpyFile(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(path));
}

}  // namespace
}  // namespace myops::cli
