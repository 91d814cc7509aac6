// SPDX-License-Identifier: Apache-2.0
// The outcome of judging (and maybe patching) each checkpoint named on the command line, and
// its two renderings: a short human report and the --json document (schema_version 2,
// documented in README.md). Renders only; never prints.
#pragma once

#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/diagnose/skip_list_lint.hpp>
#include <qpatch/error.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/report/text_style.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::report {

// 2: absent values are null (never ""), and each change carries its diff.
inline constexpr int k_fix_schema_version = 2;

enum class Status { clean, patched, needs_patch, unfixable, error };
std::string_view to_string(Status status);

enum class Mode { fix, check, dry_run };
enum class Verbosity { quiet, normal, verbose };

struct ChangeSummary {
  std::string file;
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::string diff; // the unified diff of this file, labelled as --dry-run prints it
};

// Where a checkpoint came from when it is a Hub repo: read header-only over HTTP (--remote), or
// a snapshot of the local Hugging Face cache.
struct HubSource {
  std::string repo_id;
  std::string revision; // as asked; "" when only the snapshot's path is known
  std::string commit;
  bool remote = false;
};

struct CheckpointOutcome {
  std::string path;
  bool remote = false; // path is a Hub repo id read header-only (--remote)
  std::optional<HubSource> hub;
  std::string quant_method;         // "" when not quantized
  engine::BuiltWeight built_weight; // Diagnosis::built_weight
  std::string engine_rules;
  std::vector<std::string> engines; // the engines judged
  // Per engine judged, the labels of the versions judged (oldest first); one label: one version.
  std::vector<std::pair<std::string, std::vector<std::string>>> engine_versions;
  // Per engine judged at several versions, how the header names them ("5 versions, main
  // 2026-02-28..2026-08-17"); absent for an engine judged at one.
  std::vector<std::pair<std::string, std::string>> engine_ranges;
  Status status = Status::clean;
  std::vector<diagnose::Finding> findings;
  std::vector<ChangeSummary> changes; // written, or that would be written
  std::vector<std::string> backups;
  std::vector<std::string> replaced_links;
  std::vector<std::string> warnings; // inventory warnings that are not findings (on stderr)
  std::vector<std::string> notes;    // traps that change no verdict
  std::string mtp;                   // the MTP head as a unit, or ""
  // The skip list's dead, duplicate and over-broad entries (compressed-tensors `ignore`).
  std::optional<diagnose::SkipListLint> lint;
  std::optional<Error> error; // printed on stderr by the CLI; the report only counts it
  bool held_back = false;     // a patch was due, but another checkpoint failed: nothing written
};

struct TextOptions {
  Mode mode = Mode::fix;
  Verbosity verbosity = Verbosity::normal;
  TextStyle style;
  size_t width = 0; // terminal columns to fit (0: a pipe, lines whole)
};

std::string render_fix_text(const std::vector<CheckpointOutcome>& outcomes,
                            const TextOptions& options);
// "2 checkpoints would be patched, 1 clean, 1 error" (black --check's summary), for several.
std::string render_total(const std::vector<CheckpointOutcome>& outcomes, Mode mode);
// A command as a user types it in a POSIX shell: "qpatch restore './my ck'".
std::string shell_command(const std::string& words, const std::string& path);
// The next step for a head no file stores: "qpatch graft --from BASE DIR".
std::string graft_command(const std::string& path);
// The trace of one module: "qpatch explain [--remote] DIR MODULE".
std::string explain_command(const std::string& path, const std::string& module, bool remote);
json::Json render_fix_json(const std::vector<CheckpointOutcome>& outcomes);

} // namespace qpatch::report
