// SPDX-License-Identifier: Apache-2.0
// Python re semantics, checked on the patterns that matter for MTP heads (engines.md §11.1).
#include <qpatch/engine/pattern.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace qpatch::engine {
namespace {

bool matches(const std::string& pattern, const std::string& subject, MatchMode mode) {
  const auto compiled = Pattern::compile(pattern, "test");
  EXPECT_TRUE(compiled.ok()) << compiled.error().to_string();
  return compiled->matches(subject, mode).value();
}

TEST(Pattern, DotMtpDotIsDeadUnderReMatch) {
  EXPECT_FALSE(matches(".mtp.", "mtp.fc", MatchMode::match));
  EXPECT_FALSE(matches(".mtp.", "mtp.layers.0.self_attn.qkv_proj", MatchMode::match));
  EXPECT_FALSE(matches(".mtp.", "model.layers.61.self_attn.o_proj", MatchMode::match));
  EXPECT_TRUE(matches(".mtp.", "model.mtp.0.attn.wq_a", MatchMode::search));
  EXPECT_FALSE(matches(".mtp.", "model.mtp.0.attn.wq_a", MatchMode::match));
}

TEST(Pattern, WorkingMtpPatterns) {
  for (const char* pattern : {"^mtp\\.", "mtp\\..*", ".*mtp.*", ".*mtp\\..*", "^mtp.*"}) {
    EXPECT_TRUE(matches(pattern, "mtp.fc", MatchMode::match)) << pattern;
    EXPECT_TRUE(matches(pattern, "mtp.layers.0.mlp.experts", MatchMode::match)) << pattern;
  }
  EXPECT_FALSE(matches(".*\\.mtp\\..*", "mtp.fc", MatchMode::match));
}

// A pattern that hits PCRE2's match limit once is undecidable from then on, for every subject
// and every copy compiled from the same text: a pathological `re:` entry costs one limit per
// run, not one per module name (issue #14: 28.7 s on the 27B sample before, 0.04 s after).
TEST(Pattern, AGivenUpPatternIsNotTriedAgain) {
  const std::string pathological = "^([\\w.]+)+[^\\w.]$";
  const auto first = Pattern::compile(pathological, "test");
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->matches("a-", MatchMode::match).value());
  EXPECT_FALSE(first->exhausted());
  EXPECT_EQ(first->matches("model.language_model.layers.0.mlp.down_proj", MatchMode::match),
            std::nullopt);
  EXPECT_TRUE(first->exhausted());
  // "a-" matches at once, but the pattern has given up: every later answer is "undecidable".
  EXPECT_EQ(first->matches("a-", MatchMode::search), std::nullopt);
  const auto again = Pattern::compile(pathological, "another file");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->exhausted());
  EXPECT_EQ(again->matches("a-", MatchMode::match), std::nullopt);
}

TEST(Pattern, MatchIsAnchoredAtTheStartOnly) {
  EXPECT_TRUE(matches("mtp", "mtp.fc", MatchMode::match));
  EXPECT_FALSE(matches("fc", "mtp.fc", MatchMode::match));
  EXPECT_TRUE(matches("fc", "mtp.fc", MatchMode::search));
  EXPECT_FALSE(matches("mtp", "mtp.fc", MatchMode::fullmatch));
  EXPECT_TRUE(matches("mtp\\.fc", "mtp.fc", MatchMode::fullmatch));
}

TEST(Pattern, PythonBackslashZIsEndOfString) {
  EXPECT_TRUE(matches("mtp\\.fc\\Z", "mtp.fc", MatchMode::match));
  EXPECT_FALSE(matches("mtp\\.fc\\Z", "mtp.fc\n", MatchMode::match));
  EXPECT_TRUE(matches("mtp\\.fc$", "mtp.fc\n", MatchMode::match));
}

TEST(Pattern, PythonNamedGroupsCompile) {
  EXPECT_TRUE(matches("(?P<block>mtp)\\.(?P=block)", "mtp.mtp", MatchMode::match));
}

TEST(Pattern, InvalidPatternIsAnError) {
  const auto compiled = Pattern::compile("re:(", "config.json");
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.error().to_string(),
            "config.json: pattern 're:(': cannot compile at character 4: missing closing "
            "parenthesis");
}

// Each mode has its own compiled, JIT-compiled copy, made on first use: one Pattern used in
// every mode, from two threads at once (explain and the judge share patterns), answers as
// re.match, re.fullmatch and re.search do, every time.
TEST(Pattern, EveryModeFromTwoThreadsAtOnce) {
  const auto compiled = Pattern::compile(R"(.*mlp\.experts\.\d+\Z)", "test");
  ASSERT_TRUE(compiled.ok());
  const Pattern& pattern = *compiled;
  const auto answers = [&] {
    std::string out;
    for (int i = 0; i < 200; ++i) {
      for (const MatchMode mode : {MatchMode::match, MatchMode::fullmatch, MatchMode::search}) {
        for (const char* subject : {"model.layers.3.mlp.experts.12",
                                    "model.layers.3.mlp.experts.12.w1",
                                    "mlp.experts.7",
                                    "x\nmlp.experts.7"}) {
          const auto matched = pattern.matches(subject, mode);
          out += matched ? (*matched ? '1' : '0') : '?';
        }
      }
    }
    return out;
  };
  std::string other;
  std::thread thread([&] { other = answers(); });
  const std::string mine = answers();
  thread.join();
  // match / fullmatch / search on each subject; '.' does not cross the newline, \Z is the end.
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    expected += "1010"
                "1010"
                "1011";
  }
  EXPECT_EQ(mine, expected);
  EXPECT_EQ(other, expected);
}

TEST(Pattern, CatastrophicBacktrackingIsUndecidableNotAHang) {
  const auto compiled = Pattern::compile("(a+)+$", "test");
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(compiled->matches(std::string(40, 'a') + "b", MatchMode::match), std::nullopt);
}

} // namespace
} // namespace qpatch::engine
