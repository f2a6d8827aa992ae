// The protobuf side of the Open Inference Protocol front end (frontends/oip/grpc/service.h): how
// served operators appear as models, and the conversions between the protocol's
// messages and the pipeline's protocol-neutral values. No torch here.
//
// The mapping (one model per served operator, version "1"):
//  - model name: the operator's qualified name as myops.v1 lists it, "namespace::name"
//    for the default overload and "namespace::name.overload" otherwise (e.g.
//    "torchvision::nms", "myops::scale_shift"). Namespaces, names and overloads are
//    identifiers, so "::" and "." make the split unambiguous; ':' is a valid character
//    of a URL path segment, so the name also works in the REST binding's paths.
//  - inputs: the schema's arguments, by name. A Tensor argument is an input tensor of any
//    shape. A Tensor[] argument `xs` is one input per element, named "xs__0", "xs__1",
//    ... in list order, numbered from 0 without gaps (decimal, no leading zeros), in any
//    request order; no such input: the argument is absent (its default, if any: an empty
//    list without a default cannot be sent). A scalar or list argument (int, float, bool,
//    Scalar, int[], float[]) is either an input (a 0-d or 1-element tensor for a scalar, a
//    1-D tensor for a list, of a matching datatype) or a request parameter of the same
//    name (bool_param, int64_param, double_param, uint64_param; str and ScalarType
//    arguments only as string_param). Absent arguments take the schema's defaults.
//    Parameters that name no argument are ignored (clients send their own). An input
//    named exactly as an argument is that argument, even if it also reads as
//    "<list>__<i>".
//  - outputs: one per schema return, named after the return where the schema names it,
//    else "output__<i>". A Tensor[] return `r` becomes one output per element, "r__0",
//    "r__1", ..., known only after the call; ModelMetadata lists it once, as `r` (FP32,
//    shape [-1]), and the request's outputs may name `r` (every element) or one element
//    "r__<j>" (INVALID_ARGUMENT after the call when the list is shorter). An optional
//    return (Tensor?, int?, ...) that is None is left out of the response, even when the
//    request names it. Non-tensor returns become 1-element (list: 1-D) tensors: int
//    INT64, float FP64, bool BOOL, str BYTES (4-byte length + bytes). The exact name of a
//    return wins over an element name (a schema naming returns "r" and "r__0" would be
//    ambiguous). ModelMetadata lists a Tensor[] argument `xs` by its first element,
//    "xs__0", so that tools sending every listed input send a valid request.
//  - datatypes: the protocol's BOOL UINT8 INT8 INT16 INT32 INT64 FP16 FP32 FP64 BF16 (the
//    dtypes of myops/common/dtype.h) for tensors; BOOL, the integers, FP32 and FP64 for
//    scalars and lists.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/support/byte_buffer.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "frontends/oip/args.h"
#include "frontends/oip/binding.h"
#include "frontends/oip/shm.h"
#include "kserve/v2/grpc_predict_v2.pb.h"
#include "myops/wire/call_wire.h"
#include "myops/wire/tensor_wire.h"
#include "pipeline/model_stats.h"
#include "runtime/op_registry.h"
#include "runtime/tensor_view.h"
#include "runtime/value.h"

namespace myops::server::kserve {

// ModelMetadataResponse of `op`: inputs are the arguments an input tensor can carry
// (Tensor: FP32 with shape [-1], any datatype of the pipeline and any shape accepted;
// scalars: shape [1]; lists: shape [-1]), outputs its returns.
void DescribeModel(const OpInfo& op, inference::ModelMetadataResponse* out);

// ModelConfig of `op` (Triton's extension): the same inputs and outputs as DescribeModel,
// max_batch_size 0, no batching sections.
void DescribeModelConfig(const OpInfo& op, inference::ModelConfig* out);

// ModelStatistics of `op` (Triton's extension) from `stats`: version "1", and one
// batch_stats entry (batch size 1) once the model has run.
void DescribeModelStats(const OpInfo& op, const ModelStatsSnapshot& stats,
                        inference::ModelStatistics* out);

// The statistics a ModelStatistics request (gRPC) or GET /v2/models[/{name}]/stats (REST)
// asks for: model `name` (version `version`: empty or "1"), or every served model for an
// empty name. NOT_FOUND for an unknown model or version.
absl::Status DescribeStatsOf(const OpRegistry& registry, const ModelStats& stats,
                             const std::string& name, const std::string& version,
                             inference::ModelStatisticsResponse* out);

// Parses a ModelInferRequest (received as `bytes`) into `out`, but for its
// raw_input_contents, which stay in the received slices, described by `raw`
// (wire::ParseWithDataField): DecodeInferRequest copies each once, into memory of its
// size, where protobuf would copy each into a string it grows as the bytes come (past
// 50 MB by doubling: a second copy, twice the memory). INVALID_ARGUMENT when it is not one.
absl::Status ParseInferRequest(const grpc::ByteBuffer& bytes, inference::ModelInferRequest* out,
                               wire::DataFieldValues* raw);

// The memory to reserve before parsing a ModelInferRequest of `length` bytes of `size`
// (wire::CheckInferRequestHead) into an ArenaRequest and decoding it: the received bytes
// (gRPC's), the decode's copy of the raw contents, the objects its head can make
// (messages, map nodes, strings, and their decoded form: up to kHeadFactor bytes a byte)
// and its packed contents' arrays (kPackedFactor times their
// final bytes: they grow by doubling, and on an arena the arrays outgrown stay). The
// factors are measured (tests/server/frontends/grpc/parse_memory_test.cc).
int64_t InferParseReservation(uint64_t length, const wire::InferRequestBytes& size);

// The request for model `model` (its name) with its inputs, parameters and outputs as an
// InferRequest (binding.h), `raw` its raw_input_contents (ParseInferRequest): raw
// contents are copied into out->scratch (once each, aligned for their elements; `raw` may
// go after this), typed contents are views into `request`, which must outlive them (INT8,
// INT16 and UINT8 tensors in 32-bit typed contents are narrowed later into out->scratch);
// an input whose parameters name a shared memory region has its head
// only (a region bounds it, not `limits`; BindInfer checks the reference and reads it).
// INVALID_ARGUMENT naming the input for an unknown datatype, contents that do not match
// the shape, both raw and typed contents (or contents and a region), a tensor over
// `limits`.
absl::Status DecodeInferRequest(const inference::ModelInferRequest& request,
                                const wire::DataFieldValues& raw, std::string model,
                                const TensorLimits& limits, InferRequest* out);

// ModelInferResponse{model_name, model_version, id, outputs, raw_output_contents} with
// `outputs` (InferOutputs of the call): tensors are sent from their own memory (the
// slices hold its owner), not copied; outputs written to a region are sent as an empty
// raw_output_contents entry.
grpc::ByteBuffer EncodeInferResponse(const inference::ModelInferRequest& request,
                                     const std::vector<OutputTensor>& outputs, const OpCall& call);

// ModelStreamInferResponse{infer_response: EncodeInferResponse(...)}, tensors again
// sent from their own memory, with the parameter triton_final_response: true (each
// request's one response is its last, as Triton marks it).
grpc::ByteBuffer EncodeStreamInferResponse(const inference::ModelInferRequest& request,
                                           const std::vector<OutputTensor>& outputs,
                                           const OpCall& call);

// ModelStreamInferResponse{error_message: "CODE: message", infer_response: {model_name,
// model_version, id, triton_final_response: true}} for a failed stream request.
grpc::ByteBuffer EncodeStreamInferError(const inference::ModelInferRequest& request,
                                        const absl::Status& status);

}  // namespace myops::server::kserve
