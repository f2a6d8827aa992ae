// JSON of the protocol's metadata, configuration and statistics (see frontends/oip/rest/meta.h).
#include "frontends/oip/rest/meta.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace myops::server::kserve {

using Json = nlohmann::json;

Json MetadataJson(const inference::ModelMetadataResponse& m) {
  auto tensors = [](const auto& list) {
    Json out = Json::array();
    for (const auto& t : list) {
      out.push_back({{"name", t.name()},
                     {"datatype", t.datatype()},
                     {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())}});
    }
    return out;
  };
  return {{"name", m.name()},
          {"versions", std::vector<std::string>(m.versions().begin(), m.versions().end())},
          {"platform", m.platform()},
          {"inputs", tensors(m.inputs())},
          {"outputs", tensors(m.outputs())}};
}

Json ConfigJson(const inference::ModelConfig& c) {
  auto tensors = [](const auto& list, bool with_optional) {
    Json out = Json::array();
    for (const auto& t : list) {
      Json j = {{"name", t.name()},
                {"data_type", inference::DataType_Name(t.data_type())},
                {"dims", std::vector<int64_t>(t.dims().begin(), t.dims().end())}};
      if constexpr (std::is_same_v<std::decay_t<decltype(t)>, inference::ModelInput>) {
        if (with_optional) j["optional"] = t.optional();
      }
      out.push_back(std::move(j));
    }
    return out;
  };
  return {{"name", c.name()},
          {"platform", c.platform()},
          {"backend", c.backend()},
          {"max_batch_size", c.max_batch_size()},
          {"input", tensors(c.input(), true)},
          {"output", tensors(c.output(), false)}};
}

Json StatsJson(const inference::ModelStatisticsResponse& stats) {
  auto duration = [](const inference::StatisticDuration& d) {
    return Json{{"count", d.count()}, {"ns", d.ns()}};
  };
  Json models = Json::array();
  for (const inference::ModelStatistics& m : stats.model_stats()) {
    const inference::InferStatistics& s = m.inference_stats();
    Json batches = Json::array();
    for (const inference::InferBatchStatistics& b : m.batch_stats()) {
      batches.push_back({{"batch_size", b.batch_size()},
                         {"compute_input", duration(b.compute_input())},
                         {"compute_infer", duration(b.compute_infer())},
                         {"compute_output", duration(b.compute_output())}});
    }
    models.push_back({{"name", m.name()},
                      {"version", m.version()},
                      {"last_inference", m.last_inference()},
                      {"inference_count", m.inference_count()},
                      {"execution_count", m.execution_count()},
                      {"inference_stats",
                       {{"success", duration(s.success())},
                        {"fail", duration(s.fail())},
                        {"queue", duration(s.queue())},
                        {"compute_input", duration(s.compute_input())},
                        {"compute_infer", duration(s.compute_infer())},
                        {"compute_output", duration(s.compute_output())}}},
                      {"batch_stats", std::move(batches)}});
  }
  return {{"model_stats", std::move(models)}};
}

}  // namespace myops::server::kserve
