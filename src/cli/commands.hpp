// SPDX-License-Identifier: Apache-2.0
// Each subcommand is an options struct plus a setup/run pair in its own file.
#pragma once

#include "exit_code.hpp"
#include "terminal.hpp"

#include <qpatch/report/fix_report.hpp>

#include <CLI/CLI.hpp>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace qpatch::cli {

// What dirs[i] is called in reports: labels[i] when there is one, else the path itself.
inline const std::string&
label_of(const std::vector<std::string>& dirs, const std::vector<std::string>& labels, size_t i) {
  return i < labels.size() && !labels[i].empty() ? labels[i] : dirs[i];
}

// The streams and terminal a command writes to.
struct Io {
  std::ostream& out;
  std::ostream& err;
  const Terminal& terminal;
};

struct InspectOptions {
  std::vector<std::string> dirs;
  std::vector<std::string> labels; // what dirs[i] is called in reports (--remote: the repo id)
  bool remote = false;
  // With --remote --json: why repo i could not be read (its entry says so).
  std::vector<std::optional<Error>> remote_failures;
  bool json = false;
  bool summary_only = false;
  bool verbose = false;
  std::string only;
  std::string color = "auto";
};

CLI::App* setup_inspect(CLI::App& app, InspectOptions& options);
ExitCode run_inspect(const InspectOptions& options, Io& io);

// The everyday action: `qpatch [options] DIR...` judges and patches.
struct FixOptions {
  std::vector<std::string> dirs;
  std::vector<std::string> labels; // what dirs[i] is called in reports (--remote: the repo id)
  bool remote = false;             // DIRs are Hub repo ids, read header-only
  std::vector<report::HubSource> sources; // with --remote: what each DIR was read from
  // With --remote: why repo i could not be read from the Hub (its report is that error).
  std::vector<std::optional<Error>> remote_failures;
  // A cache snapshot's directory -> the revision it was asked by (ORG/NAME@REV, --revision).
  std::map<std::string, std::string> revisions;
  bool dry_run = false;
  bool check = false;
  bool json = false;
  bool no_backup = false;
  bool recursive = false; // DIRs are roots to search for checkpoints
  bool prune = false;     // also remove the skip list's dead and duplicate entries
  bool quiet = false;
  bool verbose = false;
  std::string only;
  std::string engine = "all";
  std::string color = "auto";
};

void setup_fix(CLI::App& app, FixOptions& options);
ExitCode run_fix(const FixOptions& options, Io& io);
// True when `qpatch --check DIR` (every engine) would find a config patch to make.
bool config_needs_patch(const std::string& dir);

struct ExplainOptions {
  std::string dir;
  std::string label; // what dir is called in reports (--remote: the repo id)
  bool remote = false;
  std::string module;
  std::string error_text; // --error TEXT: the finding behind an engine's message
  std::string engine = "all";
  bool json = false;
};

CLI::App* setup_explain(CLI::App& app, ExplainOptions& options);
ExitCode run_explain(const ExplainOptions& options, Io& io);

struct RestoreOptions {
  std::vector<std::string> dirs;
  std::string dir; // the one being restored
  bool dry_run = false;
  bool json = false;
  bool force = false;
};

CLI::App* setup_restore(CLI::App& app, RestoreOptions& options);
ExitCode run_restore(const RestoreOptions& options, Io& io);

struct GraftOptions {
  std::string dir;
  std::string donor;
  std::string only;
  bool dry_run = false;
  bool check = false;
  bool json = false;
  bool no_backup = false;
};

CLI::App* setup_graft(CLI::App& app, GraftOptions& options);
ExitCode run_graft(const GraftOptions& options, Io& io);

} // namespace qpatch::cli
