// SPDX-License-Identifier: Apache-2.0
#include "command_table.hpp"

#include "checkpoint_args.hpp"

namespace qpatch::cli {
namespace {

constexpr const char* k_fix_exit_codes = R"(Exit status:
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

} // namespace

const std::vector<CommandRow>& command_table() {
  static const std::vector<CommandRow> rows{
      {"",
       "  qpatch [options] DIR...   judge each checkpoint; patch its quantization config\n"
       "                            (DIR: a directory, or a Hub repo id\n"
       "                            ORG/NAME[@REV] in the local Hugging Face cache)\n",
       k_fix_exit_codes,
       true,
       true,
       &make_fix_command},
      {"inspect",
       "  qpatch inspect DIR        show how every module is stored\n",
       k_inspect_exit_codes,
       true,
       false,
       &make_inspect_command},
      {"explain",
       "  qpatch explain DIR MODULE every rule that decides one module, and the verdict\n"
       "  qpatch explain DIR --error TEXT  the finding behind an engine's error message\n",
       k_explain_exit_codes,
       true,
       false,
       &make_explain_command},
      {"restore",
       "  qpatch restore DIR...     put the original files back from the backups\n",
       k_restore_exit_codes,
       false,
       true,
       &make_restore_command},
      {"graft",
       "  qpatch graft --from DONOR DIR  put dense MTP head weights from a base model in\n",
       k_graft_exit_codes,
       false,
       true,
       &make_graft_command},
  };
  return rows;
}

const std::vector<std::string>& subcommand_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> named;
    for (const CommandRow& row : command_table()) {
      if (*row.name != '\0') {
        named.emplace_back(row.name);
      }
    }
    return named;
  }();
  return names;
}

std::string main_help_description() {
  std::string text = "qpatch: make a quantized checkpoint's quantization config agree with the\n"
                     "tensors it stores.\n\n";
  for (const CommandRow& row : command_table()) {
    text += row.synopsis;
  }
  text.pop_back(); // CLI11 adds the line break
  return text;
}

} // namespace qpatch::cli
