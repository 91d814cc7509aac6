// SPDX-License-Identifier: Apache-2.0
// Run the CLI in-process against a test's checkpoint directory and read its output with that
// directory's (temporary) path written as DIR, so expectations can be exact strings.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::test {

struct CliOutcome {
  int code = 0;
  std::string out;
  std::string err;
};

// Run qpatch with `args`, where an argument "DIR" stands for `dir`.
CliOutcome run_cli(std::vector<std::string> args, const std::filesystem::path& dir);

} // namespace qpatch::test
