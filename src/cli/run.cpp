// SPDX-License-Identifier: Apache-2.0
// CLI11 setup, dispatch to the subcommand, and the mapping of every failure to an exit code.
#include "run.hpp"

#include "checkpoint_args.hpp"
#include "command_table.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "help_format.hpp"
#include "parse_errors.hpp"
#include "qpatch_version.hpp"
#include "remote_args.hpp"
#include "terminal_safe.hpp"

#include <qpatch/checkpoint/discover.hpp>
#include <qpatch/commit/interrupt.hpp>
#include <qpatch/hub/hub_cache.hpp>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <system_error>

namespace qpatch::cli {
namespace {

// The exit code of a run a signal stopped during a commit, or `code`.
int with_interrupt(int code, std::ostream& err) {
  const int sig = commit::interrupt_seen();
  if (sig == 0) {
    return code;
  }
  report(err,
         Level::note,
         "stopped by " + commit::signal_name(sig) +
             (code == 0 ? " during the commit, after every file was written"
                        : ", with every file as it was before the commit"));
  return 128 + sig;
}

} // namespace

namespace {

// The DIR arguments of `command` as it will run on them: read from the Hub (--remote), searched
// below (-r), or resolved from repo ids; each checked. The exit code when they are not usable.
std::optional<int> check_dirs(Command& command,
                              bool remote,
                              const std::string& revision,
                              RemoteCheckpoints& remote_copies,
                              CheckedDirs& checked,
                              std::ostream& err) {
  std::vector<std::string>& dirs = checked.dirs;
  if (dirs.empty()) {
    report(err, Level::error, "missing DIR; run 'qpatch --help' for usage");
    return to_int(ExitCode::usage);
  }
  checked.remote = remote;
  if (remote) {
    if (command.recursive()) {
      report(err, Level::error, "--remote reads Hub repos by id; --recursive searches a folder");
      return to_int(ExitCode::usage);
    }
    if (const std::string refusal = command.remote_refusal(); !refusal.empty()) {
      report(err, Level::error, refusal);
      return to_int(ExitCode::usage);
    }
    return remote_copies.fetch(
        checked, revision, command.quiet(), command.reports_remote_failures(), err);
  }
  if (command.recursive()) {
    // Each DIR is a root to search; what is judged is every checkpoint found below them.
    auto found = find_below_roots(dirs, revision, err);
    if (!found) {
      return to_int(ExitCode::usage);
    }
    dirs = std::move(*found);
  } else if (!resolve_repo_ids(dirs, revision, command.quiet(), err, &checked.revisions)) {
    return to_int(ExitCode::usage);
  }
  if (!check_checkpoint_dirs(dirs, err)) {
    return to_int(ExitCode::usage);
  }
  return std::nullopt;
}

// The exit code of an exception that ended a command, reported on `err`: running out of memory
// or of a resource is the user's limit (exit 6), anything else a bug (exit 70).
int report_exception(const std::exception_ptr& thrown, std::ostream& err) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::bad_alloc&) {
    report(err,
           Level::error,
           "out of memory (a memory limit such as ulimit -v, or the machine's); nothing was "
           "written");
    return to_int(ExitCode::out_of_resources);
  } catch (const std::system_error& e) {
    if (e.code() == std::errc::not_enough_memory ||
        e.code() == std::errc::resource_unavailable_try_again ||
        e.code() == std::errc::too_many_files_open) {
      report(err,
             Level::error,
             std::string("out of a resource: ") + e.code().message() +
                 " (a limit such as ulimit -v, -u or -n); nothing was written");
      return to_int(ExitCode::out_of_resources);
    }
    report(err, Level::error, std::string("internal error: ") + e.what() + " (please report it)");
  } catch (const std::exception& e) {
    report(err, Level::error, std::string("internal error: ") + e.what() + " (please report it)");
  }
  return to_int(ExitCode::internal);
}

// run() on streams it makes terminal-safe; `raw_out` is set when stdout carries JSON or a diff.
int run_command(const std::vector<std::string>& args,
                std::ostream& out,
                std::ostream& err,
                const Terminal& terminal,
                bool& raw_out) {
  CLI::App app{main_help_description(), "qpatch"};
  // Set before the subcommands are made: each takes its parent's formatter.
  app.formatter(std::make_shared<FilledFormatter>());
  app.set_version_flag("--version", "qpatch " QPATCH_VERSION " (git " QPATCH_GIT_COMMIT ")");
  app.require_subcommand(0, 1);
  // One --revision for every command, read by the one place repo ids are resolved, and one
  // --remote for the commands that only read.
  std::string revision;
  bool remote = false;
  std::vector<std::unique_ptr<Command>> commands;
  for (const CommandRow& row : command_table()) {
    commands.push_back(row.make(app));
    CLI::App& parser = *commands.back()->parser;
    parser.footer(row.exit_statuses);
    add_revision_option(parser, revision);
    if (row.takes_remote) {
      parser.add_flag("--remote",
                      remote,
                      *row.name == '\0'
                          ? "Each DIR is a Hub repo id ORG/NAME[@REV], judged from its headers "
                            "read over HTTP before any download; with --check or --dry-run "
                            "(HF_ENDPOINT, HF_TOKEN)"
                          : "DIR is a Hub repo id ORG/NAME[@REV], read header-only over HTTP "
                            "before any download (HF_ENDPOINT, HF_TOKEN)");
    }
  }
  Io io{out, err, terminal};
  try {
    // A misspelt subcommand would otherwise be taken for a DIR, and its neighbours patched.
    if (!check_command_word(args, err)) {
      return to_int(ExitCode::usage);
    }
    std::vector<std::string> reversed(args.rbegin(),
                                      args.rend()); // CLI11 2.1 parses a reversed vector
    try {
      app.parse(reversed);
    } catch (const CLI::Success& e) {
      return app.exit(e, out, err);
    } catch (const CLI::ParseError& e) {
      for (const std::string& line : reword_parse_error(e, app, args)) {
        report(err, Level::error, line);
      }
      return to_int(ExitCode::usage);
    }
    // The named subcommand that was parsed, else the everyday action (row 0).
    size_t chosen = 0;
    for (size_t i = 1; i < commands.size(); ++i) {
      if (commands[i]->parser->parsed()) {
        chosen = i;
      }
    }
    Command& command = *commands[chosen];
    // Every DIR is checked before any is judged, so one slip writes nothing anywhere.
    // --remote: the copies live (and a signal is held off) until the command is over.
    RemoteCheckpoints remote_copies;
    std::optional<commit::InterruptGuard> remote_guard;
    if (remote) {
      remote_guard.emplace();
    }
    CheckedDirs checked;
    checked.dirs = command.dir_arguments();
    if (const auto failed = check_dirs(command, remote, revision, remote_copies, checked, err)) {
      return *failed;
    }
    raw_out = command.raw_stdout();
    const int code = to_int(command.run(std::move(checked), io));
    if (remote) {
      if (const int sig = commit::take_interrupt(); sig != 0) {
        report(err, Level::note, "stopped by a signal; nothing was written");
        return 128 + sig;
      }
      return code;
    }
    return command_table()[chosen].writes ? with_interrupt(code, err) : code;
  } catch (...) {
    return report_exception(std::current_exception(), err);
  }
}

} // namespace

int run(const std::vector<std::string>& args,
        std::ostream& out,
        std::ostream& err,
        const Terminal& terminal) {
  SafeStream safe_out(out);
  SafeStream safe_err(err);
  bool raw_out = false;
  const int code = run_command(args, safe_out.stream(), safe_err.stream(), terminal, raw_out);
  safe_out.set_raw(raw_out);
  return code;
}

} // namespace qpatch::cli
