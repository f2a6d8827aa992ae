// The REST binding's JSON of the Open Inference Protocol's metadata, model configuration
// (Triton's extension) and statistics (Triton's extension) messages: the field names and
// shapes the protocol's REST documents give (numbers as JSON numbers, enums by name), from
// the messages the gRPC binding answers with, so that both bindings say the same.
#pragma once

#include <nlohmann/json.hpp>

#include "kserve/v2/grpc_predict_v2.pb.h"

namespace myops::server::kserve {

nlohmann::json MetadataJson(const inference::ModelMetadataResponse& metadata);
nlohmann::json ConfigJson(const inference::ModelConfig& config);
// {"model_stats": [...]} as Triton's GET /v2/models[/{name}]/stats answers.
nlohmann::json StatsJson(const inference::ModelStatisticsResponse& stats);

}  // namespace myops::server::kserve
