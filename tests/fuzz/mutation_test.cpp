// SPDX-License-Identifier: Apache-2.0
// Deterministic mutation tests for the parsers of untrusted input: flip, insert and delete bytes
// of valid headers and indexes, and require a clean accept or a named error, never a crash,
// hang or sanitizer report (run under -DQPATCH_SANITIZE=ON to catch memory errors). Every
// accepted mutant must also still satisfy the format's own invariants.
#include "fuzz/parse_outcome.hpp"
#include "support/builder.hpp"

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <gtest/gtest.h>

#include <random>

namespace qpatch {
namespace {

using fuzz::outcome;

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

// The plain-JSON fast path must be invisible: on every input, valid or not, the result with it
// equals the result of the general (simdjson) path alone.
TEST(Mutation, HeaderFastPathAgreesWithTheGeneralPath) {
  uint64_t data_size = 0;
  const std::string header = test::header_json({{"mtp.fc.weight", "BF16", {4, 8}},
                                                {"mtp.fc.weight_scale", "F32", {4, 1}},
                                                {"mtp.norm.weight", "BF16", {4}}},
                                               data_size);
  std::vector<std::string> inputs = {
      header,
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      R"( { "a" : { "shape" : [ 2 ] , "data_offsets" : [ 0 , 2 ] , "dtype" : "U8" } } )",
      "{\r\n\t\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}\n}",
      R"({"a\u002eb":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      R"({"caf\u00e9":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      "{\"caf\xc3\xa9\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}",
      R"({"a":{"dtype":"U8","shape":[02],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[2.0],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[2e0],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"extra":{"k":1}}})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"dtype":"U8"}})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
      R"({"__metadata__":null,"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      R"({"__metadata__":{"k":"1","k":"2"},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      R"({"__metadata__":{},"__metadata__":{},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"X9","shape":[2],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2,4]}})",
      // The writers' exact layout is tried first, entry by entry; any other falls back mid-header.
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"shape":[1],"dtype":"U8",)"
      R"("data_offsets":[1,2]},"c":{"dtype":"U8", "shape":[1],"data_offsets":[2,3]}})",
      R"({"a":{"dtype":"U8","shape":[12345678.5],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[00000000000000000,2]}})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2] }})",
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]} })",
      R"({"a":{"dtype":"U8","shape":[2],"shape":[2],"data_offsets":[0,2]}})",
      R"({"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}})",
      R"({"a":{"dtype":"U8","shape":[2]}})",
      R"({})",
      R"({} x)",
      R"([])",
  };
  std::mt19937 random(20261130);
  for (int i = 0; i < 4000; ++i) {
    std::string mutant = header;
    for (int k = 0; k <= i % 4; ++k) {
      mutant = mutate(mutant, random);
    }
    inputs.push_back(std::move(mutant));
  }
  safetensors::HeaderParser fast;
  safetensors::HeaderParser general;
  safetensors::ReaderOptions general_only;
  general_only.plain_fast_path = false;
  size_t accepted = 0;
  for (const std::string& input : inputs) {
    // Enough data for every valid input above; the offsets check words the rest.
    const std::string bytes = test::shard_bytes(input, input == header ? data_size : 2);
    const std::string expected = outcome(general.parse(bytes, "m.safetensors", general_only));
    ASSERT_EQ(outcome(fast.parse(bytes, "m.safetensors")), expected) << input;
    accepted += expected.rfind("ok", 0) == 0 ? 1U : 0U;
  }
  EXPECT_GT(accepted, 10U);
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

TEST(Mutation, IndexFastPathAgreesWithTheGeneralPath) {
  const std::string index =
      R"({"metadata": {"total_size": 10}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors", "c.weight": "model-00002-of-00002.safetensors", "d.weight": "model-00001-of-00002.safetensors"}})";
  std::vector<std::string> inputs = {
      index,
      R"({"weight_map": {}})",
      R"({"weight_map": {"a": "x.safetensors"}, "metadata": null})",
      R"({"weight_map": {"a": "x.safetensors"}, "metadata": {"total_size": 1.5}})",
      R"({"weight_map": {"a": "x.safetensors"}, "metadata": {"k": {"n": 1}}})",
      R"({"weight_map": {"a": "x.safetensors"}, "metadata": {"k": 1, "k": 2}})",
      R"({"weight_map": {"a": "x.safetensors"}, "metadata": {}, "metadata": {}})",
      R"({"weight_map": {"a": "x.safetensors"}, "weight_map": {}})",
      R"({"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}})",
      R"({"weight_map": {"a": "../x.safetensors"}})",
      R"({"weight_map": {"a": "x.bin"}})",
      R"({"weight_map": {"a\u0041": "x.safetensors"}})",
      R"({"weight_map": {"a": 1}})",
      R"({"weight_map": []})",
      R"({"other": true, "weight_map": {"a": "x.safetensors"}})",
      R"({"metadata": {}})",
      R"([])",
      // A value that repeats the entry before is compared in place, not scanned.
      R"({"weight_map": {"a": "x.safetensors","b":"x.safetensors" ,"c":  "x.safetensors"}})",
      R"({"weight_map": {"a": "x.safetensors", "b": "x.safetensors\u0000"}})",
      R"({"weight_map": {"a": "x.safetensors", "b": "x.safetensors\"}})",
      R"({"weight_map": {"a": "x.safetensors", "b": "x.safetensors)",
      R"({"weight_map": {"a": "x.safetensors", "b": "x.safetensors", "c": "x\u002esafetensors"}})",
      R"({"weight_map": {"a": "x.safetensors", "b": "y.safetensors", "c": "x.safetensors"}})",
  };
  std::mt19937 random(20261131);
  for (int i = 0; i < 3000; ++i) {
    std::string mutant = index;
    for (int k = 0; k <= i % 3; ++k) {
      mutant = mutate(mutant, random);
    }
    inputs.push_back(std::move(mutant));
  }
  size_t accepted = 0;
  for (const std::string& input : inputs) {
    const std::string expected =
        outcome(checkpoint::parse_index(input, "model.safetensors.index.json", false));
    ASSERT_EQ(outcome(checkpoint::parse_index(input, "model.safetensors.index.json")), expected)
        << input;
    accepted += expected.rfind("ok", 0) == 0 ? 1U : 0U;
  }
  EXPECT_GT(accepted, 10U);
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
