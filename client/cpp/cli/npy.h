// A minimal reader and writer of NumPy .npy files for myops-cli: format versions 1.0, 2.0
// and 3.0, C order, little-endian, every dtype of myops/common/dtype.h that NumPy has:
// float32/64/16 ('<f4', '<f8', '<f2'), int8/16/32/64 ('|i1', '<i2', '<i4', '<i8'), uint8
// ('|u1') and bool ('|b1'); the table's NumPy type strings are the one source.
//
// bfloat16 has no .npy type code (NumPy has no bfloat16), so bfloat16 tensors are rejected
// both ways rather than written under a misleading code; convert to float32 for files.
// Fortran-order arrays, big-endian data and other dtypes are rejected with a message
// naming what was found and what is accepted. Assumes a little-endian host, as the wire
// format does.
#ifndef MYOPS_CLIENT_CLI_NPY_H_
#define MYOPS_CLIENT_CLI_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "myops/client/tensor.h"

namespace myops::cli {

// Parses the contents of a .npy file. InvalidArgumentError for a malformed or unsupported
// file (the message says which part and what is accepted).
absl::StatusOr<client::Tensor> ParseNpy(absl::string_view bytes);

// Serializes a tensor as .npy (version 1.0, or 2.0 when the header needs it).
// InvalidArgumentError for bfloat16 or an invalid view.
absl::StatusOr<std::string> SerializeNpy(const client::TensorView& tensor);

// File wrappers. I/O failures name the path and the system error: NotFoundError (no such
// file), PermissionDeniedError, else UnknownError.
absl::StatusOr<client::Tensor> ReadNpyFile(const std::string& path);
absl::Status WriteNpyFile(const std::string& path, const client::TensorView& tensor);

}  // namespace myops::cli

#endif  // MYOPS_CLIENT_CLI_NPY_H_
