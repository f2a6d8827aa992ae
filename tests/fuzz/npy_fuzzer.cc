// Fuzz target: myops-cli's .npy reader (client/cpp/cli/npy.cc, ParseNpy), which reads
// files a user is handed. Every outcome is a tensor or an InvalidArgumentError; an
// accepted tensor is self-consistent (it validates) and survives a round trip through
// SerializeNpy and ParseNpy unchanged.
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "npy.h"
#include "slices.h"

namespace client = myops::client;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  // A copy of exactly `size` bytes, so ASan sees any read past the end of the file.
  const std::string file(reinterpret_cast<const char*>(bytes), size);
  absl::StatusOr<client::Tensor> tensor = myops::cli::ParseNpy(file);
  if (!tensor.ok()) {
    if (tensor.status().code() != absl::StatusCode::kInvalidArgument) {
      myops::fuzz::Fail("ParseNpy failed with a code other than INVALID_ARGUMENT");
    }
    return 0;
  }
  if (!client::ValidateTensorView(tensor->view(), "npy").ok()) {
    myops::fuzz::Fail("ParseNpy accepted a tensor that does not validate");
  }
  absl::StatusOr<std::string> written = myops::cli::SerializeNpy(tensor->view());
  if (!written.ok()) myops::fuzz::Fail("SerializeNpy refused what ParseNpy produced");
  absl::StatusOr<client::Tensor> again = myops::cli::ParseNpy(*written);
  if (!again.ok()) myops::fuzz::Fail("ParseNpy refused what SerializeNpy wrote");
  if (again->dtype() != tensor->dtype() || again->shape() != tensor->shape() ||
      again->bytes() != tensor->bytes()) {
    myops::fuzz::Fail("the .npy round trip changed the tensor");
  }
  return 0;
}
