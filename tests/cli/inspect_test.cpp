// SPDX-License-Identifier: Apache-2.0
// `qpatch inspect` behaviour that golden files do not pin: colour decisions and usage errors.
#include "qpatch_version.hpp"
#include "run.hpp"
#include "support/golden.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace qpatch::cli {
namespace {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run_args(const std::vector<std::string>& args, const Terminal& terminal = {}) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run(args, out, err, terminal);
  return {code, out.str(), err.str()};
}

class InspectTest : public test::TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    test::write_sample(dir());
  }
};

TEST_F(InspectTest, ColourOnlyOnATerminal) {
  const std::vector<std::string> args{"inspect", "--summary", dir().string()};
  EXPECT_EQ(run_args(args).out.find("\x1b["), std::string::npos);
  Terminal tty;
  tty.stdout_is_tty = true;
  EXPECT_NE(run_args(args, tty).out.find("\x1b[1mcheckpoint"), std::string::npos);
}

TEST_F(InspectTest, NoColorWinsOverATerminal) {
  Terminal tty;
  tty.stdout_is_tty = true;
  tty.no_color = true;
  EXPECT_EQ(run_args({"inspect", "--summary", dir().string()}, tty).out.find("\x1b["),
            std::string::npos);
}

TEST_F(InspectTest, ColorAlwaysAndNeverOverride) {
  Terminal tty;
  tty.stdout_is_tty = true;
  EXPECT_NE(
      run_args({"inspect", "--summary", "--color", "always", dir().string()}).out.find("\x1b["),
      std::string::npos);
  EXPECT_EQ(
      run_args({"inspect", "--summary", "--color", "never", dir().string()}, tty).out.find("\x1b["),
      std::string::npos);
}

TEST_F(InspectTest, JsonIsOneDocumentWithASchemaVersion) {
  const Outcome outcome = run_args({"inspect", "--json", dir().string()});
  EXPECT_EQ(outcome.code, 0);
  const auto doc = nlohmann::json::parse(outcome.out);
  EXPECT_EQ(doc.at("schema_version"), 2);
  const auto& checkpoint = doc.at("checkpoints").at(0);
  EXPECT_EQ(checkpoint.at("path"), dir().string());
  EXPECT_EQ(checkpoint.at("summary").at("modules"), checkpoint.at("modules").size());
  EXPECT_EQ(outcome.err, "");
}

TEST(InspectUsage, UnknownOptionIsExitTwo) {
  const Outcome outcome = run_args({"inspect", "--frobnicate", "x"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(
      outcome.err,
      "qpatch: error: unknown option '--frobnicate'; run 'qpatch inspect --help' for usage\n");
}

TEST(InspectUsage, BadColorIsExitTwo) {
  EXPECT_EQ(run_args({"inspect", "--color", "sometimes", "x"}).code, 2);
}

TEST(InspectUsage, BadRegexIsExitTwo) {
  const Outcome outcome = run_args({"inspect", "--only", "(", "x"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_EQ(outcome.err, "qpatch: error: x: no such directory\n");
}

TEST(InspectUsage, VersionIsExitZero) {
  const Outcome outcome = run_args({"--version"});
  EXPECT_EQ(outcome.code, 0);
  // The git commit the binary was built from, for bug reports.
  EXPECT_EQ(outcome.out, "qpatch " QPATCH_VERSION " (git " QPATCH_GIT_COMMIT ")\n");
}

} // namespace
} // namespace qpatch::cli
