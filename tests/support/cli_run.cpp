// SPDX-License-Identifier: Apache-2.0
#include "support/cli_run.hpp"

#include "run.hpp"

#include <qpatch/util/names.hpp>

#include <sstream>

namespace qpatch::test {

CliOutcome run_cli(std::vector<std::string> args, const std::filesystem::path& dir) {
  const std::string path = dir.string();
  for (std::string& arg : args) {
    if (arg == "DIR") {
      arg = path;
    }
  }
  std::ostringstream out;
  std::ostringstream err;
  const int code = cli::run(args, out, err, cli::Terminal{});
  return {
      code, util::replace_all(out.str(), path, "DIR"), util::replace_all(err.str(), path, "DIR")};
}

} // namespace qpatch::test
