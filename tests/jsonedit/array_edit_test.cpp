// SPDX-License-Identifier: Apache-2.0
// Format-preserving edits: each layout variant asserts the exact bytes written, and every edit
// is checked against the four properties of STYLE.md §6 (parses, equals the intended document,
// bytes outside the array unchanged, reapplying is a no-op for appends already present).
#include <qpatch/json/strict_json.hpp>
#include <qpatch/jsonedit/array_edit.hpp>
#include <qpatch/jsonedit/scan.hpp>

#include <gtest/gtest.h>

namespace qpatch::jsonedit {
namespace {

std::string
edit(const std::string& text, std::vector<size_t> remove, std::vector<std::string> append) {
  ArrayEdit change{{"quantization_config", "ignore"}, std::move(remove), std::move(append)};
  auto result = edit_array(text, change, "config.json");
  EXPECT_TRUE(result.ok()) << result.error().to_string();
  // Bytes before and after the array are untouched.
  const auto before = find_value(text, change.pointer);
  const auto after = find_value(*result, change.pointer);
  EXPECT_EQ(text.substr(0, before->begin), result->substr(0, after->begin));
  EXPECT_EQ(text.substr(before->end), result->substr(after->end));
  EXPECT_TRUE(json::parse_strict(*result, "config.json").ok());
  return *result;
}

TEST(ArrayEdit, IndentTwoAsTransformersWritesIt) {
  const std::string text =
      "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\",\n"
      "      \"re:.*mlp\\\\.gate$\"\n    ],\n    \"quant_method\": \"compressed-tensors\"\n  "
      "}\n}\n";
  EXPECT_EQ(edit(text, {}, {"mtp.fc"}),
            "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\",\n"
            "      \"re:.*mlp\\\\.gate$\",\n      \"mtp.fc\"\n    ],\n"
            "    \"quant_method\": \"compressed-tensors\"\n  }\n}\n");
}

TEST(ArrayEdit, IndentFour) {
  const std::string text =
      "{\n    \"quantization_config\": {\n        \"ignore\": [\n            \"lm_head\"\n"
      "        ]\n    }\n}";
  EXPECT_EQ(
      edit(text, {}, {"mtp.fc", "mtp.layers.0.mlp.up_proj"}),
      "{\n    \"quantization_config\": {\n        \"ignore\": [\n            \"lm_head\",\n"
      "            \"mtp.fc\",\n            \"mtp.layers.0.mlp.up_proj\"\n        ]\n    }\n}");
}

TEST(ArrayEdit, InlineArrayStaysInline) {
  const std::string text =
      "{\n  \"quantization_config\": {\"ignore\": [\"lm_head\", \"a\"], \"format\": \"x\"}\n}\n";
  EXPECT_EQ(edit(text, {}, {"mtp.fc"}),
            "{\n  \"quantization_config\": {\"ignore\": [\"lm_head\", \"a\", \"mtp.fc\"], "
            "\"format\": \"x\"}\n}\n");
}

TEST(ArrayEdit, CompactInlineKeepsItsSeparator) {
  const std::string text = R"({"quantization_config":{"ignore":["lm_head","a"]}})";
  EXPECT_EQ(edit(text, {}, {"mtp.fc"}),
            R"({"quantization_config":{"ignore":["lm_head","a","mtp.fc"]}})");
}

TEST(ArrayEdit, CrlfNewlines) {
  const std::string text =
      "{\r\n  \"quantization_config\": {\r\n    \"ignore\": [\r\n      \"lm_head\"\r\n"
      "    ]\r\n  }\r\n}\r\n";
  EXPECT_EQ(edit(text, {}, {"mtp.fc"}),
            "{\r\n  \"quantization_config\": {\r\n    \"ignore\": [\r\n      \"lm_head\",\r\n"
            "      \"mtp.fc\"\r\n    ]\r\n  }\r\n}\r\n");
}

TEST(ArrayEdit, NoFinalNewlineStaysThatWay) {
  const std::string text = "{\n  \"quantization_config\": {\n    \"ignore\": []\n  }\n}";
  EXPECT_EQ(edit(text, {}, {"mtp.fc"}),
            "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"mtp.fc\"\n    ]\n  }\n}");
}

TEST(ArrayEdit, RawUtf8FileGetsRawUtf8AndEscapesElsewhereStay) {
  const std::string text =
      "{\n  \"name\": \"Qwen \xE2\x80\x94 \\u00e9\",\n  \"quantization_config\": {\n"
      "    \"ignore\": [\n      \"lm_head\"\n    ]\n  }\n}\n";
  EXPECT_EQ(edit(text, {}, {"mtp.\xC3\xA9"}),
            "{\n  \"name\": \"Qwen \xE2\x80\x94 \\u00e9\",\n  \"quantization_config\": {\n"
            "    \"ignore\": [\n      \"lm_head\",\n      \"mtp.\xC3\xA9\"\n    ]\n  }\n}\n");
}

TEST(ArrayEdit, AsciiFileGetsUnicodeEscapesAsJsonDumps) {
  const std::string text =
      "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\"\n    ]\n  }\n}\n";
  EXPECT_EQ(edit(text, {}, {"mtp.\xC3\xA9\xF0\x9F\x98\x80"}),
            "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\",\n"
            "      \"mtp.\\u00e9\\ud83d\\ude00\"\n    ]\n  }\n}\n");
}

TEST(ArrayEdit, EmptyArrayGrowsOnePerLineWithTheFileIndent) {
  const std::string text =
      "{\n    \"quantization_config\": {\n        \"ignore\": [],\n        \"x\": 1\n    }\n}\n";
  EXPECT_EQ(edit(text, {}, {"a", "b"}),
            "{\n    \"quantization_config\": {\n        \"ignore\": [\n            \"a\",\n"
            "            \"b\"\n        ],\n        \"x\": 1\n    }\n}\n");
}

TEST(ArrayEdit, RemovesAnItemAndKeepsTheRest) {
  const std::string text =
      "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\",\n"
      "      \"re:^mtp.*\"\n    ]\n  }\n}\n";
  EXPECT_EQ(edit(text, {1}, {"mtp.fc"}),
            "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"lm_head\",\n"
            "      \"mtp.fc\"\n    ]\n  }\n}\n");
}

TEST(ArrayEdit, RemovingTheLastItemLeavesAnEmptyArray) {
  const std::string text =
      "{\n  \"quantization_config\": {\n    \"ignore\": [\n      \"re:^mtp.*\"\n    ]\n  }\n}\n";
  EXPECT_EQ(edit(text, {0}, {}), "{\n  \"quantization_config\": {\n    \"ignore\": []\n  }\n}\n");
}

TEST(ArrayEdit, MissingArrayIsAnError) {
  const auto result = edit_array("{\"quantization_config\": {}}",
                                 {{"quantization_config", "ignore"}, {}, {"a"}},
                                 "config.json");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().to_string(),
            "config.json: at /quantization_config/ignore: expected an array");
}

TEST(ArrayEdit, AppendMemberCreatesAKeyInTheObjectsLayout) {
  const std::string text = "{\n  \"quantization_config\": {\n    \"format\": \"x\"\n  }\n}\n";
  const auto result =
      append_member_raw(text, {"quantization_config"}, "ignore", "[]", "config.json");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(
      *result,
      "{\n  \"quantization_config\": {\n    \"format\": \"x\",\n    \"ignore\": []\n  }\n}\n");
}

TEST(ObjectEdit, AppendsIndexEntries) {
  const std::string text =
      "{\n  \"metadata\": {\n    \"total_size\": 0\n  },\n  \"weight_map\": {\n"
      "    \"a.weight\": \"model.safetensors\"\n  }\n}\n";
  const auto result = append_members(text,
                                     {"weight_map"},
                                     {{"mtp.fc.weight", "model_extra_tensors.safetensors"}},
                                     "model.safetensors.index.json");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result,
            "{\n  \"metadata\": {\n    \"total_size\": 0\n  },\n  \"weight_map\": {\n"
            "    \"a.weight\": \"model.safetensors\",\n"
            "    \"mtp.fc.weight\": \"model_extra_tensors.safetensors\"\n  }\n}\n");
}

TEST(Scan, FindsValuesAndDecodesKeys) {
  const std::string text = R"({"a\u0062": [1, {"c": "\u00e9"}], "x": true})";
  const auto span = find_value(text, {"ab", "1", "c"});
  ASSERT_TRUE(span.has_value());
  EXPECT_EQ(text.substr(span->begin, span->end - span->begin), "\"\\u00e9\"");
  EXPECT_EQ(decode_string("\"\\u00e9\\ud83d\\ude00\""), "\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_FALSE(find_value(text, {"ab", "2"}).has_value());
}

// Found by fuzz/editor_fuzzer.cpp (fuzz/regressions/editor/hang-array-items-brace): a '}' where
// an array item belongs made array_items loop forever, growing its list without end.
TEST(Scan, ArrayItemsStopsAtAStrayBrace) {
  EXPECT_TRUE(array_items("[}", {0, 2}).empty());
  EXPECT_EQ(array_items("[1, }", {0, 5}).size(), 1U);
  // Callers parse first, so bad text in gives bad text out; what matters is that it returns.
  const auto result = edit_array("[}", {{}, {}, {"x"}}, "config.json");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(*result, "[\"x\"}");
}

// Found by fuzz/editor_fuzzer.cpp: empty or all-space text put the root's span at the end of
// the text, and edit_array read the byte after it.
TEST(ArrayEdit, EmptyTextIsRefusedWithoutReadingPastIt) {
  for (const std::string text : {"", "  \n"}) {
    const auto array = edit_array(text, {{}, {}, {"x"}}, "config.json");
    ASSERT_FALSE(array.ok());
    EXPECT_EQ(array.error().to_string(), "config.json: expected an array");
    const auto object = edit_object(text, {{}, {}, {}, {{"k", "1"}}}, "config.json");
    ASSERT_FALSE(object.ok());
    EXPECT_EQ(object.error().to_string(), "config.json: expected an object");
  }
}

} // namespace
} // namespace qpatch::jsonedit
