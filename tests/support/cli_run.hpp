// SPDX-License-Identifier: Apache-2.0
// Run the CLI in-process against a test's checkpoint directory and read its output with that
// directory's (temporary) path written as DIR, so expectations can be exact strings.
#pragma once

#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace qpatch::test {

struct CliOutcome {
  int code = 0;
  std::string out;
  std::string err;
};

// Run qpatch with `args`, where an argument "DIR" stands for `dir`.
CliOutcome run_cli(std::vector<std::string> args, const std::filesystem::path& dir);

// A test with its own checkpoint directory that runs `qpatch ARGS... DIR` and reads the exit code
// and everything printed (stdout then stderr).
class CheckpointCliTest : public TempDirTest {
protected:
  std::pair<int, std::string> run_qpatch(std::vector<std::string> args) {
    if (!m_engine.empty() && std::find(args.begin(), args.end(), "--engine") == args.end()) {
      args.insert(args.end(), {"--engine", m_engine});
    }
    args.push_back("DIR");
    const CliOutcome outcome = run_cli(std::move(args), dir());
    return {outcome.code, outcome.out + outcome.err};
  }
  // Run `args` again: it exits `code` and writes nothing (a fix finds its own patch done).
  void expect_rerun_writes_nothing(const std::vector<std::string>& args, int code) {
    const auto tree = snapshot_tree(dir());
    EXPECT_EQ(run_qpatch(args).first, code);
    EXPECT_EQ(snapshot_tree(dir()), tree);
  }
  // An --engine every run gets unless it gives its own: suites that test one version's rules
  // pin it ("vllm@main"); engine_versions_test.cpp tests what differs between versions.
  std::string m_engine;
};

} // namespace qpatch::test
