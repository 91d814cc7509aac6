// SPDX-License-Identifier: Apache-2.0
// CLI11 setup, dispatch to the subcommand, and the mapping of every failure to an exit code.
#include "run.hpp"

#include "checkpoint_args.hpp"
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

constexpr const char* k_exit_codes = R"(Exit status:
  0  ok: every checkpoint is consistent (nothing to do, or patched)
  1  a checkpoint is still inconsistent (with --check/--dry-run: a patch is
     needed)
  2  usage error
  3  a checkpoint could not be read or is invalid (nothing written)
  4  a write failed: a file (the originals are intact), or standard output
     (what was printed is incomplete)
  5  a write failed and restoring failed too (the report lists every file and
     backup)
  6  out of memory or a resource limit (ulimit -v, -n): nothing written
  128+N  stopped by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129): a commit in
         progress was completed, or undone if no file had changed yet
  70 internal error (a bug: please report it)

Environment:
  HF_HUB_CACHE, HF_HOME, XDG_CACHE_HOME
     where ORG/NAME arguments are looked up, as huggingface_hub does:
     $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
     else ~/.cache/huggingface/hub
  HF_ENDPOINT  the Hub that --remote reads (default https://huggingface.co)
  HF_TOKEN     the token for gated and private repos (else HF_TOKEN_PATH, else
               $HF_HOME/token)
  HF_HUB_DOWNLOAD_TIMEOUT  seconds without data before a --remote request fails
                           (default 10)
  HF_HUB_OFFLINE  when set to 1, --remote is refused
  QPATCH_HTTP_RETRIES  retries of a failed --remote request (default 5)
  QPATCH_REMOTE_DEADLINE  seconds the whole --remote read of a repo may take
                          (default 30)
  http_proxy, https_proxy, no_proxy  as libcurl reads them
  NO_COLOR  no colour, even on a terminal)";

// Each subcommand's own exit statuses (issue 25: explain and graft repeated the table above,
// whose words are about patching).
constexpr const char* k_inspect_exit_codes = R"(Exit status:
  0  read and shown (modules marked ! are built otherwise than stored: qpatch
     --check DIR exits 1 for them)
  2  usage error (--only matching no module)
  3  a checkpoint could not be read or is invalid

Environment: as qpatch --help lists it.)";
constexpr const char* k_explain_exit_codes = R"(Exit status:
  0  MODULE is built as it is stored, in every engine traced; with --error,
     no cause of the message found in DIR
  1  it is not; with --error, the findings behind the message
  2  usage error (a MODULE DIR does not hold: the nearest names are named)
  3  the checkpoint could not be read or is invalid

Environment: as qpatch --help lists it.)";
constexpr const char* k_restore_exit_codes = R"(Exit status:
  0  restored, or nothing to restore
  2  usage error
  4  refused or a write failed, every file intact: a file edited since qpatch
     wrote it (--force restores it, keeping its bytes first), a busy lock
  5  a write failed and undoing it failed too (the report names every file))";
constexpr const char* k_graft_exit_codes = R"(Exit status:
  0  grafted, or nothing to graft
  1  with --check/--dry-run: a graft would change something
  2  usage error
  3  refused: a module DONOR lacks, stores quantized or with another shape,
     or DONOR is DIR; nothing written
  4  not enough free space, or a write failed: the originals are intact
  130, 143  interrupted: the next graft (or restore) finishes or undoes it)";

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

// run() on streams it makes terminal-safe; `raw_out` is set when stdout carries JSON or a diff.
int run_command(const std::vector<std::string>& args,
                std::ostream& out,
                std::ostream& err,
                const Terminal& terminal,
                bool& raw_out) {
  CLI::App app{"qpatch: make a quantized checkpoint's quantization config agree with the\n"
               "tensors it stores.\n\n"
               "  qpatch [options] DIR...   judge each checkpoint; patch its quantization config\n"
               "                            (DIR: a directory, or a Hub repo id\n"
               "                            ORG/NAME[@REV] in the local Hugging Face cache)\n"
               "  qpatch inspect DIR        show how every module is stored\n"
               "  qpatch explain DIR MODULE every rule that decides one module, and the verdict\n"
               "  qpatch explain DIR --error TEXT  the finding behind an engine's error message\n"
               "  qpatch restore DIR...     put the original files back from the backups\n"
               "  qpatch graft --from DONOR DIR  put dense MTP head weights from a base model in",
               "qpatch"};
  // Set before the subcommands are made: each takes its parent's formatter.
  app.formatter(std::make_shared<FilledFormatter>());
  app.footer(k_exit_codes);
  app.set_version_flag("--version", "qpatch " QPATCH_VERSION " (git " QPATCH_GIT_COMMIT ")");
  app.require_subcommand(0, 1);
  FixOptions fix_options;
  setup_fix(app, fix_options);
  InspectOptions inspect_options;
  CLI::App* inspect = setup_inspect(app, inspect_options);
  RestoreOptions restore_options;
  CLI::App* restore = setup_restore(app, restore_options);
  ExplainOptions explain_options;
  CLI::App* explain = setup_explain(app, explain_options);
  GraftOptions graft_options;
  CLI::App* graft = setup_graft(app, graft_options);
  inspect->footer(k_inspect_exit_codes);
  explain->footer(k_explain_exit_codes);
  restore->footer(k_restore_exit_codes);
  graft->footer(k_graft_exit_codes);
  // One --revision for every subcommand, read by the one place repo ids are resolved.
  std::string revision;
  add_revision_option(app, revision);
  for (CLI::App* sub : {inspect, restore, explain, graft}) {
    add_revision_option(*sub, revision);
  }
  // One --remote for the commands that only read.
  bool remote = false;
  app.add_flag("--remote",
               remote,
               "Each DIR is a Hub repo id ORG/NAME[@REV], judged from its headers read over HTTP "
               "before any download; with --check or --dry-run (HF_ENDPOINT, HF_TOKEN)");
  for (CLI::App* cmd : {inspect, explain}) {
    cmd->add_flag("--remote",
                  remote,
                  "DIR is a Hub repo id ORG/NAME[@REV], read header-only over HTTP before any "
                  "download (HF_ENDPOINT, HF_TOKEN)");
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
    // Every DIR is checked before any is judged, so one slip writes nothing anywhere.
    std::vector<std::string> dirs = inspect->parsed()   ? inspect_options.dirs
                                    : explain->parsed() ? std::vector{explain_options.dir}
                                    : restore->parsed() ? restore_options.dirs
                                    : graft->parsed()
                                        ? std::vector{graft_options.dir, graft_options.donor}
                                        : fix_options.dirs;
    if (dirs.empty()) {
      report(err, Level::error, "missing DIR; run 'qpatch --help' for usage");
      return to_int(ExitCode::usage);
    }
    const bool recursive = fix_options.recursive && !inspect->parsed() && !explain->parsed() &&
                           !restore->parsed() && !graft->parsed();
    const bool fixing =
        !inspect->parsed() && !explain->parsed() && !restore->parsed() && !graft->parsed();
    // --remote: the copies live (and a signal is held off) until the command is over.
    RemoteCheckpoints remote_copies;
    std::optional<commit::InterruptGuard> remote_guard;
    std::vector<std::string> labels;
    std::vector<report::HubSource> sources;
    if (remote) {
      if (recursive) {
        report(err, Level::error, "--remote reads Hub repos by id; --recursive searches a folder");
        return to_int(ExitCode::usage);
      }
      if (fixing && !fix_options.check && !fix_options.dry_run) {
        report(err,
               Level::error,
               "--remote reads a Hub repo and cannot patch it: add --check, or --dry-run for "
               "the diff (apply it after 'hf download', or open a pull request with it)");
        return to_int(ExitCode::usage);
      }
      remote_guard.emplace();
      if (const auto failed =
              remote_copies.fetch(dirs,
                                  labels,
                                  sources,
                                  revision,
                                  fix_options.quiet,
                                  err,
                                  fixing ? &fix_options.remote_failures : nullptr)) {
        return *failed;
      }
    } else if (recursive) {
      // Each DIR is a root to search; what is judged is every checkpoint found below them.
      std::vector<std::string> found;
      for (std::string root : dirs) {
        std::error_code ec;
        // A Hub repo id is the repo's folder in the cache: every snapshot it holds.
        if (!std::filesystem::exists(root, ec) && hub::parse_repo_ref(root)) {
          std::vector<std::string> repo{root};
          if (!resolve_repo_ids(repo, revision, true, err)) {
            return to_int(ExitCode::usage); // said where it looked and how to fetch it
          }
          root = std::filesystem::path(repo.front()).parent_path().parent_path().string();
        }
        if (!std::filesystem::is_directory(root, ec)) {
          const bool unreadable =
              ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory;
          report(err,
                 Level::error,
                 root + (unreadable ? ": cannot read: " + ec.message() : ": no such directory"));
          return to_int(ExitCode::usage);
        }
        const auto below = checkpoint::find_checkpoints(root);
        if (below.empty()) {
          report(err,
                 Level::error,
                 root + ": no checkpoint below it (a directory with config.json and "
                        ".safetensors files)");
          return to_int(ExitCode::usage);
        }
        found.insert(found.end(), below.begin(), below.end());
      }
      dirs = std::move(found);
    } else if (!resolve_repo_ids(dirs, revision, fix_options.quiet, err, &fix_options.revisions)) {
      return to_int(ExitCode::usage);
    }
    if (!remote && !check_checkpoint_dirs(dirs, err)) {
      return to_int(ExitCode::usage);
    }
    raw_out = inspect->parsed()   ? inspect_options.json
              : explain->parsed() ? explain_options.json
              : restore->parsed() ? restore_options.json || restore_options.dry_run
                                  : fix_options.json || fix_options.dry_run;
    if (inspect->parsed()) {
      inspect_options.dirs = dirs;
      inspect_options.labels = labels;
      inspect_options.remote = remote;
    } else if (explain->parsed()) {
      explain_options.dir = dirs.front();
      explain_options.label = labels.empty() ? "" : labels.front();
      explain_options.remote = remote;
    } else if (restore->parsed()) {
      restore_options.dirs = dirs;
    } else if (graft->parsed()) {
      graft_options.dir = dirs[0];
      graft_options.donor = dirs[1];
    } else {
      fix_options.dirs = dirs;
      fix_options.labels = labels;
      fix_options.remote = remote;
      fix_options.sources = sources;
    }
    if (remote) {
      const int code = inspect->parsed()   ? to_int(run_inspect(inspect_options, io))
                       : explain->parsed() ? to_int(run_explain(explain_options, io))
                                           : to_int(run_fix(fix_options, io));
      if (const int sig = commit::take_interrupt(); sig != 0) {
        report(err, Level::note, "stopped by a signal; nothing was written");
        return 128 + sig;
      }
      return code;
    }
    if (inspect->parsed()) {
      return to_int(run_inspect(inspect_options, io));
    }
    if (explain->parsed()) {
      return to_int(run_explain(explain_options, io));
    }
    if (restore->parsed()) {
      return with_interrupt(to_int(run_restore(restore_options, io)), err);
    }
    if (graft->parsed()) {
      return with_interrupt(to_int(run_graft(graft_options, io)), err);
    }
    return with_interrupt(to_int(run_fix(fix_options, io)), err);
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
    return to_int(ExitCode::internal);
  } catch (const std::exception& e) {
    report(err, Level::error, std::string("internal error: ") + e.what() + " (please report it)");
    return to_int(ExitCode::internal);
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
