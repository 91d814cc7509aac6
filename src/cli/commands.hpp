// SPDX-License-Identifier: Apache-2.0
// Each subcommand is an options struct plus a setup/run pair in its own file.
#pragma once

#include "exit_code.hpp"
#include "terminal.hpp"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace qpatch::cli {

// The streams and terminal a command writes to.
struct Io {
  std::ostream& out;
  std::ostream& err;
  const Terminal& terminal;
};

struct InspectOptions {
  std::string dir;
  bool json = false;
  bool summary_only = false;
  std::string only;
  std::string color = "auto";
};

CLI::App* setup_inspect(CLI::App& app, InspectOptions& options);
ExitCode run_inspect(const InspectOptions& options, Io& io);

}  // namespace qpatch::cli
