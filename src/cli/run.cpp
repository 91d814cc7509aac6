// SPDX-License-Identifier: Apache-2.0
// CLI11 setup, dispatch to the subcommand, and the mapping of every failure to an exit code.
#include "run.hpp"

#include "checkpoint_args.hpp"
#include "commands.hpp"
#include "diagnostics.hpp"
#include "parse_errors.hpp"

#include <exception>

namespace qpatch::cli {
namespace {

constexpr const char* k_exit_codes = R"(Exit status:
  0  ok: every checkpoint is consistent (nothing to do, or patched)
  1  a checkpoint is still inconsistent (with --check/--dry-run: a patch is needed)
  2  usage error
  3  a checkpoint could not be read or is invalid (nothing written)
  4  a write failed (the originals are intact)
  5  a write failed and restoring failed too (the report lists every file and backup)
  70 internal error (a bug: please report it))";

} // namespace

int run(const std::vector<std::string>& args,
        std::ostream& out,
        std::ostream& err,
        const Terminal& terminal) {
  CLI::App app{"qpatch: make a quantized checkpoint's quantization config agree with the "
               "tensors it stores.\n\n"
               "  qpatch [options] DIR...   judge each checkpoint; patch its quantization config\n"
               "  qpatch inspect DIR        show how every module is stored\n"
               "  qpatch explain DIR MODULE every rule that decides one module, and the verdict\n"
               "  qpatch restore DIR        put the original files back from the backups\n"
               "  qpatch graft --from DONOR DIR  put dense MTP head weights from a base model in",
               "qpatch"};
  app.footer(k_exit_codes);
  app.set_version_flag("--version", "qpatch 0.1.0");
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
    const std::vector<std::string> dirs = inspect->parsed()   ? inspect_options.dirs
                                          : explain->parsed() ? std::vector{explain_options.dir}
                                          : restore->parsed() ? std::vector{restore_options.dir}
                                          : graft->parsed()
                                              ? std::vector{graft_options.dir, graft_options.donor}
                                              : fix_options.dirs;
    if (dirs.empty()) {
      report(err, Level::error, "missing DIR; run 'qpatch --help' for usage");
      return to_int(ExitCode::usage);
    }
    if (!check_checkpoint_dirs(dirs, err)) {
      return to_int(ExitCode::usage);
    }
    if (inspect->parsed()) {
      return to_int(run_inspect(inspect_options, io));
    }
    if (explain->parsed()) {
      return to_int(run_explain(explain_options, io));
    }
    if (restore->parsed()) {
      return to_int(run_restore(restore_options, io));
    }
    if (graft->parsed()) {
      return to_int(run_graft(graft_options, io));
    }
    return to_int(run_fix(fix_options, io));
  } catch (const std::exception& e) {
    report(err, Level::error, std::string("internal error: ") + e.what() + " (please report it)");
    return to_int(ExitCode::internal);
  }
}

} // namespace qpatch::cli
