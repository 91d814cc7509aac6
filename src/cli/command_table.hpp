// SPDX-License-Identifier: Apache-2.0
// The subcommands as one table (as ninja's kTools is): each row is a name, its lines in
// `qpatch --help`, its own exit statuses, whether it takes --remote, and how to make it. The
// parser, --help (and the man page made from it), "did you mean" and the dispatcher in run.cpp
// all read this table; a new subcommand is one row here and one cmd_NAME.cpp.
#pragma once

#include "commands.hpp"

#include <qpatch/error.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::cli {

// The DIR arguments once checked, resolved (repo ids to snapshots, roots to what is below them)
// or read from the Hub: what a command runs on.
struct CheckedDirs {
  std::vector<std::string> dirs;
  std::vector<std::string> labels; // what dirs[i] is called in reports (--remote: the repo id)
  bool remote = false;
  std::vector<report::HubSource> sources;            // --remote: what each was read from
  std::vector<std::optional<Error>> remote_failures; // --remote: why repo i could not be read
  std::map<std::string, std::string> revisions;      // snapshot dir -> the revision asked for
};

// What the dispatcher asks of a subcommand once CLI11 has parsed its options.
class Command {
public:
  virtual ~Command() = default;
  // The CLI11 app the options were declared on (the root app for the everyday action).
  CLI::App* parser = nullptr;
  // The DIR arguments as given (graft: DIR, then DONOR).
  virtual std::vector<std::string> dir_arguments() const = 0;
  // -r: each DIR is a root to search below.
  virtual bool recursive() const { return false; }
  // Why --remote cannot serve the options given ("" when it can).
  virtual std::string remote_refusal() const { return ""; }
  // Whether a repo the Hub refused is reported in its place while the others are judged (a
  // command whose report has a place for it); else the first refusal ends the command.
  virtual bool reports_remote_failures() const { return false; }
  // -q: no notes on stderr.
  virtual bool quiet() const { return false; }
  // Whether stdout carries a JSON document or a diff, printed byte for byte.
  virtual bool raw_stdout() const = 0;
  virtual ExitCode run(CheckedDirs checked, Io& io) = 0;
};

struct CommandRow {
  const char* name;          // "" for the everyday action, `qpatch [options] DIR...`
  const char* synopsis;      // its lines in `qpatch --help`, each ending in '\n'
  const char* exit_statuses; // the footer of its --help
  bool takes_remote;         // --remote ORG/NAME is offered
  bool writes;               // it commits files: a signal mid-commit is reported (128+N)
  // Declares its options on `root` (on a subcommand of it, for a named one).
  std::unique_ptr<Command> (*make)(CLI::App& root);
};

const std::vector<CommandRow>& command_table();

// The title and every row's synopsis: the description of `qpatch --help`.
std::string main_help_description();

std::unique_ptr<Command> make_fix_command(CLI::App& root);
std::unique_ptr<Command> make_inspect_command(CLI::App& root);
std::unique_ptr<Command> make_explain_command(CLI::App& root);
std::unique_ptr<Command> make_restore_command(CLI::App& root);
std::unique_ptr<Command> make_graft_command(CLI::App& root);

} // namespace qpatch::cli
