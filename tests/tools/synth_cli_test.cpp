// SPDX-License-Identifier: Apache-2.0
// qpatch-synth as a user runs it (issue 13 item 7): a layout written without --config carries
// that layout's own config.json, --help is a result (stdout, exit 0), and a bad layout name is a
// usage error that lists the layouts.
#include "run.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

namespace qpatch::synth {
namespace {

namespace fs = std::filesystem;

constexpr const char* k_usage =
    "usage: qpatch-synth LAYOUT DIR [--config FILE]\n"
    "layouts: qwen3.5-27b-w4a16-mtp, qwen3.6-27b-w4a16-packed-mtp, kimi-k2-w4a16\n";

struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

class SynthCliTest : public test::TempDirTest {
protected:
  // Run the real qpatch-synth binary with `args` (shell words), stdout and stderr kept apart.
  Ran synth(const std::string& args) const {
    const fs::path out = dir() / "synth.stdout";
    const fs::path err = dir() / "synth.stderr";
    const std::string command = std::string("'") + QPATCH_SYNTH_EXE + "' " + args + " >'" +
                                out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    Ran ran;
    ran.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    ran.out = test::read_bytes(out);
    ran.err = test::read_bytes(err);
    fs::remove(out);
    fs::remove(err);
    return ran;
  }
};

TEST_F(SynthCliTest, LayoutWithoutConfigWritesItsOwnConfig) {
  const fs::path flagship = dir() / "flagship";
  const Ran ran = synth("qwen3.5-27b-w4a16-mtp '" + flagship.string() + "'");
  EXPECT_EQ(ran.code, 0);
  EXPECT_EQ(ran.out, "");
  EXPECT_EQ(ran.err, "");
  EXPECT_EQ(test::read_bytes(flagship / "config.json"),
            test::read_bytes(fs::path(QPATCH_TESTDATA_DIR) / "sample" /
                             "qwen3.5-27b-w4a16-mtp.config.json"));
  // A config qpatch judges: the flagship's unlisted BF16 MTP head, not "not quantized".
  std::ostringstream out;
  std::ostringstream err;
  EXPECT_EQ(cli::run({"--check", "-q", flagship.string()}, out, err), 1);
  EXPECT_EQ(err.str(), "");

  const fs::path packed = dir() / "packed";
  EXPECT_EQ(synth("qwen3.6-27b-w4a16-packed-mtp '" + packed.string() + "'").code, 0);
  EXPECT_EQ(test::read_bytes(packed / "config.json"),
            test::read_bytes(fs::path(QPATCH_TESTDATA_DIR) / "real-configs" /
                             "qwen3.6-27b-w4a16-awq-ct-packed-mtp.config.json"));
}

TEST_F(SynthCliTest, HelpIsAResult) {
  const Ran ran = synth("--help");
  EXPECT_EQ(ran.code, 0);
  EXPECT_EQ(ran.out, k_usage);
  EXPECT_EQ(ran.err, "");
}

TEST_F(SynthCliTest, UnknownLayoutListsTheLayoutsAndWritesNothing) {
  const Ran ran = synth("qwen3.5-27b '" + (dir() / "out").string() + "'");
  EXPECT_EQ(ran.code, 2);
  EXPECT_EQ(ran.out, "");
  EXPECT_EQ(ran.err, std::string("qpatch-synth: error: unknown layout 'qwen3.5-27b'\n") + k_usage);
  EXPECT_FALSE(fs::exists(dir() / "out"));
}

} // namespace
} // namespace qpatch::synth
