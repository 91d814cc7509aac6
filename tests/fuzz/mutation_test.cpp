// SPDX-License-Identifier: Apache-2.0
// Deterministic mutation tests for the parsers of untrusted input: flip, insert and delete bytes
// of valid headers and indexes, and require a clean accept or a named error, never a crash,
// hang or sanitizer report (run under -DQPATCH_SANITIZE=ON to catch memory errors). Every
// accepted mutant must also still satisfy the format's own invariants.
#include "support/builder.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <gtest/gtest.h>

#include <random>

namespace qpatch {
namespace {

std::string mutate(std::string text, std::mt19937& random) {
  static const std::string k_alphabet = "{}[]\":,0123456789-.e \\u\n\x00\xff\xc3";
  const auto pick = [&](size_t n) { return static_cast<size_t>(random() % (n == 0 ? 1 : n)); };
  const char byte = k_alphabet[pick(k_alphabet.size())];
  switch (random() % 3) {
  case 0:
    if (!text.empty()) {
      text[pick(text.size())] = byte;
    }
    break;
  case 1:
    text.insert(pick(text.size() + 1), 1, byte);
    break;
  default:
    if (!text.empty()) {
      text.erase(pick(text.size()), 1 + pick(3));
    }
    break;
  }
  return text;
}

TEST(Mutation, HeaderParserNeverCrashesAndAcceptedHeadersTileTheData) {
  uint64_t data_size = 0;
  const std::string header = test::header_json({{"mtp.fc.weight", "BF16", {4, 8}},
                                                {"mtp.fc.weight_scale", "F32", {4, 1}},
                                                {"mtp.norm.weight", "BF16", {4}}},
                                               data_size);
  std::mt19937 random(20261129);
  safetensors::HeaderParser parser;
  size_t accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    std::string mutant = header;
    for (int k = 0; k <= i % 4; ++k) {
      mutant = mutate(mutant, random);
    }
    const auto result = parser.parse(test::shard_bytes(mutant, data_size), "m.safetensors");
    if (result.ok()) {
      ++accepted;
      uint64_t covered = 0;
      for (const auto& tensor : result->tensors) {
        covered += tensor.end - tensor.begin;
      }
      EXPECT_EQ(covered, data_size);
    } else {
      EXPECT_FALSE(result.error().message.empty());
      EXPECT_EQ(result.error().path, "m.safetensors");
    }
  }
  EXPECT_GT(accepted, 0U); // some mutants (e.g. in padding) stay valid
}

TEST(Mutation, IndexParserNeverCrashes) {
  const std::string index =
      R"({"metadata": {"total_size": 10}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}})";
  std::mt19937 random(7);
  for (int i = 0; i < 3000; ++i) {
    std::string mutant = index;
    for (int k = 0; k <= i % 3; ++k) {
      mutant = mutate(mutant, random);
    }
    const auto result = checkpoint::parse_index(mutant, "model.safetensors.index.json");
    if (result.ok()) {
      for (const auto& shard : result->shards) {
        EXPECT_EQ(checkpoint::unsafe_shard_name_reason(shard), "");
      }
    }
  }
}

TEST(Mutation, ArrayEditKeepsEveryValidMutantParseable) {
  const std::string config =
      "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\",\n"
      "      \"re:^mtp.*\"\n    ],\n    \"x\": 1\n  }\n}\n";
  std::mt19937 random(11);
  size_t edited = 0;
  for (int i = 0; i < 3000; ++i) {
    const std::string mutant = mutate(config, random);
    const auto parsed = json::parse_strict(mutant, "config.json");
    if (!parsed || !parsed->contains("quantization_config") ||
        !(*parsed)["quantization_config"].is_object() ||
        !(*parsed)["quantization_config"].contains("ignore") ||
        !(*parsed)["quantization_config"]["ignore"].is_array()) {
      continue;
    }
    const auto result = jsonedit::edit_array(
        mutant, {{"quantization_config", "ignore"}, {0}, {"mtp.fc"}}, "config.json");
    ASSERT_TRUE(result.ok()) << mutant;
    const auto reparsed = json::parse_strict(*result, "config.json");
    ASSERT_TRUE(reparsed.ok()) << *result;
    auto intended = *parsed;
    auto& ignore = intended["quantization_config"]["ignore"];
    if (!ignore.empty()) {
      ignore.erase(ignore.begin());
    }
    ignore.push_back("mtp.fc");
    EXPECT_EQ(*reparsed, intended) << mutant;
    ++edited;
  }
  EXPECT_GT(edited, 100U);
}

} // namespace
} // namespace qpatch
