// SPDX-License-Identifier: Apache-2.0
#include <qpatch/json/strict_json.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace qpatch::json {
namespace {

std::string error_of(const std::string& text) {
  const auto parsed = parse_strict(text, "config.json");
  return parsed.ok() ? "accepted" : parsed.error().to_string();
}

TEST(StrictJson, KeepsMemberOrder) {
  const auto parsed = parse_strict(R"({"b":1,"a":{"z":1,"y":2}})", "config.json");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->dump(), R"({"b":1,"a":{"z":1,"y":2}})");
}

TEST(StrictJson, DuplicateKeyNamesItsJsonPointer) {
  EXPECT_EQ(error_of(R"({"quantization_config":{"dynamic":{"-:a":{},"-:a":{}}}})"),
            "config.json: at /quantization_config/dynamic/-:a: key \"-:a\" appears twice in one "
            "object");
}

TEST(StrictJson, DuplicateKeyInsideAnArrayNamesTheIndex) {
  EXPECT_EQ(error_of(R"({"a":[1,{"k":1},{"k":1,"k":2}]})"),
            "config.json: at /a/2/k: key \"k\" appears twice in one object");
}

TEST(StrictJson, SyntaxErrorNamesTheByte) {
  EXPECT_EQ(error_of("{\n  \"a\": [1, 2,]\n}"),
            "config.json: byte 15: syntax error while parsing value - unexpected ']'; expected "
            "'[', '{', or a literal");
}

// Found by fuzz/editor_fuzzer.cpp (fuzz/regressions/editor/number-overflow): a number no double
// holds made nlohmann throw out_of_range, which escaped parse_strict (exit 70 from the CLI). The
// byte is where parsing failed, as for syntax errors: the number's last digit.
TEST(StrictJson, ANumberNoDoubleHoldsIsAnErrorNotACrash) {
  for (const std::string text : {"{\"a\": 1e400}", "{\"a\": [-7E7777777777]}"}) {
    const auto result = parse_strict(text, "config.json");
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_EQ(result.error().code, ErrorCode::invalid_json);
  }
  EXPECT_EQ(parse_strict("{\"a\": 1e400}", "config.json").error().to_string(),
            "config.json: byte 10: number overflow parsing '1e400'");
}

// Python's json.loads, which transformers, vLLM and SGLang read config.json with, takes NaN,
// Infinity and -Infinity as numbers: so does qpatch, as values only (a string or a key that
// spells one stays a string), and a later error keeps its true byte offset.
TEST(StrictJson, AcceptsPythonsNanAndInfinities) {
  const auto parsed = parse_strict(
      R"({"a": NaN, "b": [1, Infinity, -Infinity, "NaN"], "NaN": {"Infinity": NaN}, "c": 0e0})",
      "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  const Json& doc = *parsed;
  EXPECT_TRUE(std::isnan(doc["a"].get<double>()));
  EXPECT_EQ(doc["b"][1].get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(doc["b"][2].get<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(doc["b"][3], "NaN");
  EXPECT_TRUE(std::isnan(doc["NaN"]["Infinity"].get<double>()));
  EXPECT_EQ(doc["c"].get<double>(), 0.0); // a real 0e0 stays 0
  // The same error at the same byte as in a text of the same length with no constant.
  EXPECT_EQ(error_of("{\"a\": -Infinity, \"b\": [1,]}"),
            error_of("{\"a\": -1.000000, \"b\": [1,]}"));
  EXPECT_EQ(error_of("{\"a\": -Infinity, \"b\": [1,]}"),
            "config.json: byte 25: syntax error while parsing value - unexpected ']'; expected "
            "'[', '{', or a literal");
  // Python spells them exactly so: "nan" is an error there too.
  EXPECT_EQ(error_of("{\"a\": nan}"),
            "config.json: byte 7: syntax error while parsing value - invalid literal; last read: "
            "'\"a\": na'");
}

TEST(StrictJson, RejectsByteOrderMark) {
  EXPECT_EQ(error_of("\xEF\xBB\xBF{}"),
            "config.json: byte 0: file starts with a UTF-8 byte-order mark, which Python's json "
            "rejects");
}

TEST(StrictJson, RejectsNul) {
  EXPECT_EQ(error_of(std::string("{}\0", 3)), "config.json: byte 2: NUL byte in JSON text");
}

TEST(StrictJson, RejectsDeepNesting) {
  EXPECT_EQ(error_of(std::string(200, '[') + std::string(200, ']')).substr(0, 50),
            "config.json: at /0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0");
}

} // namespace
} // namespace qpatch::json
