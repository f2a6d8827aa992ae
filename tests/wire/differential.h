// The differential check the wire tests share: byte strings near a valid message (its
// prefixes, random byte edits) must get protobuf's own verdict from a hand parser, and
// when accepted protobuf's message.
#pragma once

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace myops::wire::testing {

// `valid`'s prefixes (every `prefix_step`-th length) and `mutations` copies of it with 1-3
// random bytes replaced (seeded by `seed`).
inline std::vector<std::string> PrefixesAndMutations(const std::string& valid, size_t prefix_step,
                                                     int mutations, unsigned seed) {
  std::vector<std::string> cases;
  for (size_t n = 0; n <= valid.size(); n += prefix_step) cases.push_back(valid.substr(0, n));
  std::mt19937 rng(seed);
  for (int i = 0; i < mutations; ++i) {
    std::string bytes = valid;
    const int edits = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int e = 0; e < edits; ++e) {
      const size_t at = std::uniform_int_distribution<size_t>(0, bytes.size() - 1)(rng);
      bytes[at] = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    }
    cases.push_back(bytes);
  }
  return cases;
}

// Checks `ours(bytes, &message)` (true: accepted) against protobuf's parse of each case,
// and that both verdicts occur more than 50 times.
template <typename Message, typename Parse>
void ExpectProtobufVerdicts(const std::vector<std::string>& cases, Parse ours) {
  int accepted = 0;
  for (const std::string& bytes : cases) {
    Message expected;
    const bool protobuf_ok = expected.ParseFromString(bytes);
    Message parsed;
    const bool ours_ok = ours(bytes, &parsed);
    ASSERT_EQ(ours_ok, protobuf_ok) << "bytes: " << ::testing::PrintToString(bytes);
    if (protobuf_ok) {
      ++accepted;
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, expected));
    }
  }
  EXPECT_GT(accepted, 50);  // Both branches are exercised.
  EXPECT_LT(accepted, static_cast<int>(cases.size()) - 50);
}

}  // namespace myops::wire::testing
