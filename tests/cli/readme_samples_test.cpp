// SPDX-License-Identifier: Apache-2.0
// The README's sample output is what the binary prints: each block marked
// `<!-- readme-sample: NAME -->` is run here (on the bundled sample, or the small checkpoint the
// block shows) and compared whole, so a change of wording fails a test instead of leaving the
// README to drift (issue 13: it once showed an error form the binary never printed).
#include "run.hpp"
#include "support/temp_dir.hpp"

#include <qpatch/report/fit_width.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace qpatch::cli {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of the fenced block after `<!-- readme-sample: NAME -->`, or "" when there is none.
std::string readme_block(const std::string& readme, const std::string& name) {
  const std::string marker = "<!-- readme-sample: " + name + " -->\n```\n";
  const size_t start = readme.find(marker);
  if (start == std::string::npos) {
    return "";
  }
  const size_t body = start + marker.size();
  const size_t end = readme.find("```\n", body);
  return end == std::string::npos ? "" : readme.substr(body, end - body);
}

struct Ran {
  int code = 0;
  std::string out;
  std::string err;
};

// Runs in `cwd`, as a user in that directory would: the README's paths are relative to it.
class ReadmeSamplesTest : public test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    m_readme = slurp(QPATCH_README);
    m_previous = fs::current_path();
    fs::current_path(dir());
    // The README runs from the repository root, where the build wrote build/sample/.
    fs::create_directories("build/sample");
    fs::create_directory_symlink(QPATCH_SAMPLE_DIR, "build/sample/qwen3.5-27b-w4a16-mtp");
  }
  void TearDown() override {
    fs::current_path(m_previous);
    TempDirTest::TearDown();
  }

  static Ran run_qpatch(const std::vector<std::string>& args) {
    std::ostringstream out;
    std::ostringstream err;
    const int code = run(args, out, err, Terminal{});
    return {code, out.str(), err.str()};
  }

  // The block NAME, less a first line "$ qpatch ARGS", which must name `args`.
  std::string block(const std::string& name, const std::vector<std::string>& args) const {
    std::string text = readme_block(m_readme, name);
    EXPECT_FALSE(text.empty()) << "README.md has no block " << name;
    if (text.rfind("$ ", 0) == 0) {
      std::string command = "$ qpatch";
      for (const std::string& arg : args) {
        command += " " + arg;
      }
      const size_t eol = text.find('\n');
      EXPECT_EQ(text.substr(0, eol), command) << "README.md block " << name;
      text.erase(0, eol + 1);
    }
    return text;
  }

private:
  std::string m_readme;
  fs::path m_previous;
};

TEST_F(ReadmeSamplesTest, QuickStartReportIsWhatDryRunPrints) {
  const std::vector<std::string> args = {"--dry-run", "build/sample/qwen3.5-27b-w4a16-mtp"};
  const Ran ran = run_qpatch(args);
  EXPECT_EQ(ran.code, 1);
  // The diff is the result (stdout); the report beside it goes to stderr.
  EXPECT_EQ(ran.err, block("dry-run-report", args));
  EXPECT_EQ(ran.out.rfind("--- a/config.json\n+++ b/config.json\n", 0), 0U);
}

TEST_F(ReadmeSamplesTest, ExplainExampleIsWhatExplainPrints) {
  const std::vector<std::string> args = {"explain", "build/sample/qwen3.5-27b-w4a16-mtp", "mtp.fc"};
  const Ran ran = run_qpatch(args);
  EXPECT_EQ(ran.code, 1);
  EXPECT_EQ(ran.out, block("explain-mtp-fc", args));
  EXPECT_EQ(ran.err, "");
}

// On an 80-column terminal every line of the same explanation fits, continued under the text
// column, and the words are the README's, in order (issue 25: one line ran to 222 columns).
TEST_F(ReadmeSamplesTest, ExplainFitsAnEightyColumnTerminal) {
  const std::vector<std::string> args = {"explain", "build/sample/qwen3.5-27b-w4a16-mtp", "mtp.fc"};
  Terminal terminal;
  terminal.stdout_is_tty = true;
  terminal.stdout_columns = 80;
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(run(args, out, err, terminal), 1);
  std::istringstream lines(out.str());
  std::string words;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(report::display_width(line), 80U) << line;
    std::istringstream split(line);
    for (std::string word; split >> word;) {
      words += word + " ";
    }
  }
  std::istringstream readme(block("explain-mtp-fc", args));
  std::string expected;
  for (std::string word; readme >> word;) {
    expected += word + " ";
  }
  EXPECT_EQ(words, expected);
}

TEST_F(ReadmeSamplesTest, MissingDirExampleIsAUsageErrorThatWritesNothing) {
  fs::create_directories("ck");
  std::ofstream("ck/config.json") << "{\"architectures\": [\"Qwen3_5ForCausalLM\"]}\n";
  const std::vector<std::string> args = {"--check", "./ck", "/no/such/dir"};
  const auto before = test::snapshot_tree(dir() / "ck");
  const Ran ran = run_qpatch(args);
  EXPECT_EQ(ran.code, 2);
  EXPECT_EQ(ran.out, "");
  EXPECT_EQ(ran.err, block("missing-dir", args));
  EXPECT_EQ(test::snapshot_tree(dir() / "ck"), before);
}

// The README's shard error, made for real: a header whose mtp.fc.weight starts at byte 31457288
// of the file and covers 4096 bytes, where [5120, 10240] BF16 needs 104857600. Only the header
// is written; qpatch rejects the tensor before it compares the data with the file's length.
TEST_F(ReadmeSamplesTest, ShardErrorExampleIsWhatTheReaderPrints) {
  constexpr uint64_t k_header_size = 256;
  constexpr uint64_t k_filler = 31457288 - 8 - k_header_size; // bytes before mtp.fc.weight
  std::string header = "{\"model.language_model.layers.0.mlp.down_proj.weight\":{\"dtype\":\"U8\","
                       "\"shape\":[" +
                       std::to_string(k_filler) + "],\"data_offsets\":[0," +
                       std::to_string(k_filler) +
                       "]},\"mtp.fc.weight\":{\"dtype\":\"BF16\",\"shape\":[5120,10240],"
                       "\"data_offsets\":[" +
                       std::to_string(k_filler) + "," + std::to_string(k_filler + 4096) + "]}}";
  ASSERT_LE(header.size(), k_header_size);
  header.resize(k_header_size, ' ');
  std::string shard;
  for (int byte = 0; byte < 8; ++byte) {
    shard += static_cast<char>((k_header_size >> (8 * byte)) & 0xff);
  }
  shard += header;
  fs::create_directories("Qwen3.5-27B");
  std::ofstream("Qwen3.5-27B/model-00003-of-00008.safetensors", std::ios::binary) << shard;
  std::ofstream("Qwen3.5-27B/config.json") << "{\"architectures\": [\"Qwen3_5ForCausalLM\"]}\n";
  const std::vector<std::string> args = {"--check", "Qwen3.5-27B"};
  const Ran ran = run_qpatch(args);
  EXPECT_EQ(ran.code, 3);
  EXPECT_EQ(ran.err, block("shard-error", args));
  EXPECT_EQ(ran.out, "Qwen3.5-27B: could not be judged (see the error)\n  status      error\n");
}

} // namespace
} // namespace qpatch::cli
