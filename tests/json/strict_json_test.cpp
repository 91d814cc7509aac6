// SPDX-License-Identifier: Apache-2.0
#include <qpatch/json/strict_json.hpp>

#include <gtest/gtest.h>

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
