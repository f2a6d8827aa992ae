// A myops model's configuration as Triton hands it over: what the backend reads, and how
// it completes a configuration that names only the operator.
#include "model_config.h"

#include <gtest/gtest.h>

namespace myops::triton {
namespace {

using nlohmann::json;
using server::kserve::ModelSpec;
using server::kserve::TensorSpec;

json Config(json parameters) {
  return {{"name", "m"}, {"backend", "myops"}, {"parameters", std::move(parameters)}};
}

TEST(ParseModelConfigTest, ReadsTheOpLibrariesAndBatchSize) {
  json config = Config({{"op", {{"string_value", " torchvision::nms "}}},
                        {"libraries", {{"string_value", "/a/_C.so, /b/libx.so"}}},
                        {"libpython", {{"string_value", "/usr/lib/libpython3.11.so.1.0"}}}});
  config["max_batch_size"] = 8;
  auto parsed = ParseModelConfig(config);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->name, "m");
  EXPECT_EQ(parsed->op, "torchvision::nms");
  EXPECT_EQ(parsed->libraries, (std::vector<std::string>{"/a/_C.so", "/b/libx.so"}));
  EXPECT_EQ(parsed->libpython, "/usr/lib/libpython3.11.so.1.0");
  EXPECT_EQ(parsed->max_batch_size, 8);
}

TEST(ParseModelConfigTest, AMissingOpOrANonStringParameterIsAPreciseError) {
  auto missing = ParseModelConfig(Config(json::object()));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("model 'm'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("\"op\""), std::string::npos);
  auto wrong = ParseModelConfig(Config(
      {{"op", {{"string_value", "myops::scale_shift"}}}, {"libraries", {{"int_value", 3}}}}));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("'libraries'"), std::string::npos);
}

TEST(ParseModelConfigTest, AnEmptyItemInTheLibrariesIsAPreciseError) {
  for (const char* libraries : {",,,", "/a/_C.so,", ", /a/_C.so", "/a/_C.so,  ,/b/libx.so"}) {
    auto parsed = ParseModelConfig(Config({{"op", {{"string_value", "myops::scale_shift"}}},
                                           {"libraries", {{"string_value", libraries}}}}));
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << libraries;
    EXPECT_NE(parsed.status().message().find("model 'm': parameter 'libraries' has an empty item"),
              std::string::npos)
        << parsed.status();
    EXPECT_NE(parsed.status().message().find(libraries), std::string::npos) << parsed.status();
  }
  for (const char* none : {"", "  "}) {  // No libraries named: the table as it is.
    auto parsed = ParseModelConfig(Config({{"op", {{"string_value", "myops::scale_shift"}}},
                                           {"libraries", {{"string_value", none}}}}));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_TRUE(parsed->libraries.empty());
  }
}

TEST(ParseModelConfigTest, ReadsAProgramAndItsCpuInstances) {
  json config = Config({{"program", {{"string_value", " /models/detector.pt2 "}}}});
  config["instance_group"] = json::array({{{"kind", "KIND_CPU"}, {"count", 3}},
                                          {{"kind", "KIND_GPU"}, {"count", 2}},
                                          json::object()});  // kind CPU, count 1 by default
  auto parsed = ParseModelConfig(config);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->program, "/models/detector.pt2");
  EXPECT_EQ(parsed->op, "");
  EXPECT_EQ(parsed->instances, 4);
}

TEST(ParseModelConfigTest, AnOpAndAProgramTogetherAreRefused) {
  auto both = ParseModelConfig(Config({{"op", {{"string_value", "myops::scale_shift"}}},
                                       {"program", {{"string_value", "/m.pt2"}}}}));
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(both.status().message().find("one of the two, not both"), std::string::npos);
}

ModelSpec ScaleShiftSpec() {
  ModelSpec spec;
  spec.inputs = {{"x", "FP32", {-1}, false, true},
                 {"alpha", "FP64", {1}, false, false},
                 {"beta", "FP64", {1}, false, false}};
  spec.outputs = {{"output__0", "FP32", {-1}, false, true}};
  return spec;
}

TEST(AutoCompleteConfigTest, ANamedOpGetsItsInputsAndOutputs) {
  json config = Config({{"op", {{"string_value", "myops::scale_shift"}}}});
  ASSERT_TRUE(AutoCompleteConfig(ScaleShiftSpec(), &config));
  ASSERT_EQ(config["input"].size(), 3u);
  EXPECT_EQ(config["input"][0],
            (json{{"name", "x"}, {"data_type", "TYPE_FP32"}, {"dims", {-1}}, {"optional", false}}));
  // Scalars may come as request parameters instead: optional inputs.
  EXPECT_EQ(
      config["input"][1],
      (json{{"name", "alpha"}, {"data_type", "TYPE_FP64"}, {"dims", {1}}, {"optional", true}}));
  EXPECT_EQ(config["output"],
            (json::array({{{"name", "output__0"}, {"data_type", "TYPE_FP32"}, {"dims", {-1}}}})));
  // Complete already: nothing changes.
  EXPECT_FALSE(AutoCompleteConfig(ScaleShiftSpec(), &config));
}

TEST(AutoCompleteConfigTest, ListedEntriesStayAsWrittenAndTheOthersAreAdded) {
  json config = Config({{"op", {{"string_value", "myops::scale_shift"}}}});
  config["input"] = json::array({{{"name", "x"}, {"data_type", "TYPE_FP16"}, {"dims", {-1, 3}}}});
  ASSERT_TRUE(AutoCompleteConfig(ScaleShiftSpec(), &config));
  ASSERT_EQ(config["input"].size(), 3u);
  EXPECT_EQ(config["input"][0]["data_type"], "TYPE_FP16");
  EXPECT_EQ(config["input"][0]["dims"], json({-1, 3}));
  EXPECT_EQ(config["input"][1]["name"], "alpha");
  EXPECT_EQ(config["input"][2]["name"], "beta");
}

TEST(AutoCompleteConfigTest, StringsAreTritonsTypeString) {
  ModelSpec spec;
  spec.outputs = {{"name", "BYTES", {1}, false, false}};
  json config = Config(json::object());
  ASSERT_TRUE(AutoCompleteConfig(spec, &config));
  EXPECT_EQ(config["output"][0]["data_type"], "TYPE_STRING");
}

}  // namespace
}  // namespace myops::triton
