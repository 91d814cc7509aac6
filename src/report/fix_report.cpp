// SPDX-License-Identifier: Apache-2.0
#include <qpatch/report/consequence.hpp>
#include <qpatch/report/fit_width.hpp>
#include <qpatch/report/fix_report.hpp>

#include <algorithm>

namespace qpatch::report {

std::string_view to_string(Status status) {
  switch (status) {
  case Status::clean:
    return "clean";
  case Status::patched:
    return "patched";
  case Status::needs_patch:
    return "needs-patch";
  case Status::unfixable:
    return "unfixable";
  case Status::error:
    return "error";
  }
  return "error";
}

namespace {

// A left column of fixed width, so the lines of one checkpoint align.
constexpr size_t k_indent = 14;

std::string column(const TextStyle& style, const std::string& text, Role role) {
  std::string padded = text;
  padded.resize(std::max<size_t>(padded.size(), 12), ' ');
  return "  " + style.paint(padded, role);
}

Role status_role(Status status) {
  switch (status) {
  case Status::clean:
  case Status::patched:
    return Role::good;
  case Status::needs_patch:
    return Role::warning;
  default:
    return Role::error;
  }
}

bool shell_safe(const std::string& text) {
  for (const char c : text) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ':' ||
                      c == ',' || c == '@' || c == '=';
    if (!safe) {
      return false;
    }
  }
  return !text.empty();
}

std::string plural(size_t count, const std::string& one, const std::string& many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// The step after this report: apply what --check/--dry-run found, undo what was written, or see
// why a finding cannot be patched.
std::string next_step(const CheckpointOutcome& outcome) {
  switch (outcome.status) {
  case Status::needs_patch:
    // A Hub repo is patched once downloaded: its repo id then names the cache snapshot.
    return "apply: " + (outcome.remote ? shell_command("hf download", outcome.path) + " && " +
                                             shell_command("qpatch", outcome.path)
                                       : shell_command("qpatch", outcome.path));
  case Status::patched:
    return "undo: " + shell_command("qpatch restore", outcome.path);
  case Status::unfixable:
    // A head no file stores comes from the base model the checkpoint was quantized from.
    for (const auto& finding : outcome.findings) {
      if (finding.kind == diagnose::FindingKind::missing_draft_head && !outcome.remote) {
        return "graft: " + graft_command(outcome.path) +
               "  (BASE: the unquantized model, a directory or Hub id)";
      }
    }
    for (const auto& finding : outcome.findings) {
      if (!finding.fixable && !finding.modules.empty()) {
        return "why: " + explain_command(outcome.path, finding.modules.front(), outcome.remote);
      }
    }
    return "";
  default:
    return "";
  }
}

} // namespace

std::string shell_command(const std::string& words, const std::string& path) {
  if (shell_safe(path)) {
    return words + " " + path;
  }
  std::string quoted = "'";
  for (const char c : path) {
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return words + " " + quoted + "'";
}

std::string graft_command(const std::string& path) {
  return shell_command("qpatch graft --from BASE", path);
}

std::string explain_command(const std::string& path, const std::string& module, bool remote) {
  return shell_command(remote ? "qpatch explain --remote" : "qpatch explain", path) + " " +
         shell_command("", module).substr(1);
}

namespace {

// One checkpoint's report: a heading line, then a labelled line each, wrapped to the width.
class OutcomeText {
public:
  OutcomeText(const CheckpointOutcome& judged, const TextOptions& text_options)
      : outcome(judged), options(text_options), style(text_options.style),
        verbose(text_options.verbosity == Verbosity::verbose),
        width(verbose ? 0 : text_options.width) {} // -v: every line whole, even on a TTY

  std::string render() {
    if (outcome.error) {
      render_error();
    } else {
      render_heading();
      render_lint();
      render_findings();
      render_changes();
    }
    return out;
  }

private:
  void line(const std::string& left, Role role, const std::string& text) {
    out +=
        column(style, left, role) + wrap(text, width == 0 ? 0 : width - k_indent, k_indent) + "\n";
  }

  void render_error() {
    // The error itself is on stderr in the one diagnostic form; the report keeps its place.
    // Judged and planned, then stopped while writing (a full disk, a file-size limit, another
    // writer): saying "could not be judged" would send the user to the wrong problem.
    out += style.paint(outcome.path, Role::heading) +
           (outcome.changes.empty() ? ": could not be judged (see the error)\n"
                                    : ": judged; the patch was stopped (see the error)\n");
    out += column(style, "status", Role::heading) +
           style.paint(std::string(to_string(outcome.status)), status_role(outcome.status)) + "\n";
  }

  void render_heading() {
    // Stored quantized but read by no engine as such: "not quantized" would be the very trap.
    const bool unread = std::any_of(
        outcome.findings.begin(), outcome.findings.end(), [](const diagnose::Finding& f) {
          return f.kind == diagnose::FindingKind::quantized_without_config;
        });
    const std::string what =
        outcome.quant_method.empty()
            ? std::string(unread ? "stored quantized, no quantization config" : "not quantized")
        : outcome.engines.empty()
            ? outcome.quant_method + ", judged for no engine"
            : outcome.quant_method + ", judged for " +
                  plain_engines(outcome.engines, outcome.quant_method, outcome.engine_ranges);
    out += wrap(style.paint(outcome.path, Role::heading) + ": " + what, width, 4) + "\n";
    if (verbose && !outcome.engine_rules.empty()) {
      line("rules", Role::dim, outcome.engine_rules);
    }
    if (!outcome.mtp.empty()) {
      line("mtp head", Role::dim, outcome.mtp);
    }
    for (const std::string& note : outcome.notes) {
      line("note", Role::dim, note);
    }
  }

  void render_lint() {
    if (outcome.lint) {
      if (const std::string summary = diagnose::lint_summary(*outcome.lint); !summary.empty()) {
        const bool prunable = !outcome.lint->dead.empty() || !outcome.lint->duplicates.empty();
        line("lint",
             Role::dim,
             summary + (prunable ? "; " + shell_command("qpatch --prune", outcome.path) +
                                       " removes the dead and duplicate ones"
                                 : ""));
        if (verbose) {
          for (const size_t i : outcome.lint->dead) {
            out += std::string(k_indent, ' ') + "dead: " + outcome.lint->entries[i] + "\n";
          }
          for (const size_t i : outcome.lint->duplicates) {
            out += std::string(k_indent, ' ') + "duplicate: " + outcome.lint->entries[i] + "\n";
          }
          for (const size_t i : outcome.lint->over_broad) {
            out += std::string(k_indent, ' ') + "over-broad: " + outcome.lint->entries[i] + "\n";
          }
        }
      }
    }
  }

  void render_findings() {
    // A run that wrote its patch fixed what it called fixable: the report says so, not
    // "fixable" (issue 25: after a patch the findings still read as work to do).
    const bool fixed = options.mode == Mode::fix && !outcome.held_back && !outcome.changes.empty();
    for (const auto& finding : outcome.findings) {
      // Name the engines only when a finding does not concern every engine judged.
      std::string engines;
      if (!finding.engines.empty() && finding.engines != outcome.engines) {
        for (const std::string& engine : finding.engines) {
          engines += (engines.empty() ? " [" : ", ") + engine;
        }
        engines += "]";
      }
      line(!finding.fixable ? "not fixable"
           : fixed          ? "fixed"
                            : "fixable",
           !finding.fixable ? Role::error
           : fixed          ? Role::emphasis
                            : Role::warning,
           finding.detail + engines);
      const std::string effect =
          consequence(finding, outcome.quant_method, outcome.engines, outcome.built_weight);
      if (!effect.empty()) {
        line("breaks", Role::dim, effect);
      }
      if (verbose) {
        for (const std::string& module : finding.modules) {
          out += std::string(k_indent, ' ') + module + "\n";
        }
      }
    }
  }

  void render_changes() {
    const bool written = options.mode == Mode::fix && !outcome.held_back;
    for (const ChangeSummary& change : outcome.changes) {
      const size_t room = width == 0 ? 0 : width - k_indent - change.file.size() - 1;
      std::string text = change.file;
      if (!change.added.empty()) {
        text += " " + elided_list("+", change.added, room);
      }
      if (!change.removed.empty()) {
        text += (change.added.empty() ? " " : "; ") + elided_list("-", change.removed, room);
      }
      line(written ? "patched" : "would patch", Role::emphasis, text);
    }
    for (const std::string& backup : outcome.backups) {
      line("backup", Role::dim, backup);
    }
    for (const std::string& link : outcome.replaced_links) {
      line("note",
           Role::dim,
           link + " was a symlink (Hugging Face cache); it is now a regular file and the "
                  "blob it pointed to is unchanged, so this cache copy now differs from "
                  "the Hub (qpatch restore puts the original back)");
    }
    std::string status =
        style.paint(std::string(to_string(outcome.status)), status_role(outcome.status));
    if (outcome.held_back) {
      status += " (nothing written: another checkpoint could not be read)";
    }
    out += column(style, "status", Role::heading) + status + "\n";
    if (const std::string next = next_step(outcome); !next.empty()) {
      const size_t colon = next.find(": ");
      line(next.substr(0, colon), Role::emphasis, next.substr(colon + 2));
    }
  }

  const CheckpointOutcome& outcome;
  const TextOptions& options;
  const TextStyle& style;
  const bool verbose;
  const size_t width;
  std::string out;
};

} // namespace

std::string render_fix_text(const std::vector<CheckpointOutcome>& outcomes,
                            const TextOptions& options) {
  std::string out;
  for (const CheckpointOutcome& outcome : outcomes) {
    if (options.verbosity != Verbosity::quiet) {
      out += OutcomeText(outcome, options).render();
    }
  }
  return out;
}

std::string render_total(const std::vector<CheckpointOutcome>& outcomes, Mode mode) {
  size_t patched = 0;
  size_t unfixable = 0;
  size_t clean = 0;
  size_t errors = 0;
  for (const CheckpointOutcome& outcome : outcomes) {
    switch (outcome.status) {
    case Status::patched:
    case Status::needs_patch:
      ++patched;
      break;
    case Status::unfixable:
      ++unfixable;
      break;
    case Status::clean:
      ++clean;
      break;
    case Status::error:
      ++errors;
      break;
    }
  }
  std::vector<std::string> parts;
  const bool wrote = mode == Mode::fix && errors == 0;
  if (patched != 0) {
    parts.push_back(plural(patched, "checkpoint", "checkpoints") +
                    (wrote ? " patched" : " would be patched"));
  }
  if (unfixable != 0) {
    parts.push_back(std::to_string(unfixable) + " not fixable");
  }
  if (clean != 0) {
    parts.push_back(std::to_string(clean) + " clean");
  }
  if (errors != 0) {
    parts.push_back(plural(errors, "error", "errors"));
  }
  std::string out;
  for (const std::string& part : parts) {
    out += (out.empty() ? "" : ", ") + part;
  }
  // The first part names the noun; the others count in it ("2 checkpoints would be patched,
  // 1 clean"), as black --check does.
  if (patched == 0 && !out.empty()) {
    out = plural(outcomes.size(), "checkpoint", "checkpoints") + ": " + out;
  }
  return out + "\n";
}

namespace {

// {"vllm": ["vLLM main 2026-02-09..2026-05-06", ...], ...}: every version judged per engine.
json::Json
versions_json(const std::vector<std::pair<std::string, std::vector<std::string>>>& versions) {
  json::Json out = json::Json::object();
  for (const auto& [engine, labels] : versions) {
    out[engine] = labels;
  }
  return out;
}

// Absent is null, never "": consumers test one thing (schema_version 2).
json::Json or_null(const std::string& text) {
  return text.empty() ? json::Json() : json::Json(text);
}

// The skip list's lint, entries by value: {"file", "pointer", "entries", "dead",
// "duplicates", "over_broad"}; null when the method's list is not linted.
json::Json lint_json(const std::optional<diagnose::SkipListLint>& lint) {
  if (!lint) {
    return json::Json();
  }
  const auto values = [&](const std::vector<size_t>& indices) {
    json::Json out = json::Json::array();
    for (const size_t i : indices) {
      out.push_back(lint->entries[i]);
    }
    return out;
  };
  return {{"file", lint->file},
          {"pointer", lint->pointer},
          {"entries", lint->entries.size()},
          {"dead", values(lint->dead)},
          {"duplicates", values(lint->duplicates)},
          {"over_broad", values(lint->over_broad)}};
}

} // namespace

json::Json render_fix_json(const std::vector<CheckpointOutcome>& outcomes) {
  using json::Json;
  Json doc;
  doc["schema_version"] = k_fix_schema_version;
  Json checkpoints = Json::array();
  for (const CheckpointOutcome& outcome : outcomes) {
    Json findings = Json::array();
    for (const auto& finding : outcome.findings) {
      findings.push_back(
          {{"kind", to_string(finding.kind)},
           {"modules", finding.modules},
           {"detail", finding.detail},
           {"consequence",
            or_null(
                consequence(finding, outcome.quant_method, outcome.engines, outcome.built_weight))},
           {"fixable", finding.fixable},
           {"engines", finding.engines},
           {"versions", finding.versions}});
    }
    Json changes = Json::array();
    for (const ChangeSummary& change : outcome.changes) {
      changes.push_back({{"file", change.file},
                         {"added", change.added},
                         {"removed", change.removed},
                         {"diff", or_null(change.diff)}});
    }
    Json error;
    if (outcome.error) {
      error = {{"code", to_string(outcome.error->code)},
               {"path", or_null(outcome.error->path)},
               {"offset", outcome.error->offset ? Json(*outcome.error->offset) : Json()},
               {"subject", or_null(outcome.error->subject)},
               {"message", outcome.error->message}};
    }
    Json hub;
    if (outcome.hub) {
      hub = {{"repo_id", outcome.hub->repo_id},
             {"revision", or_null(outcome.hub->revision)},
             {"commit", or_null(outcome.hub->commit)},
             {"remote", outcome.hub->remote}};
    }
    checkpoints.push_back({{"path", outcome.path},
                           {"hub", std::move(hub)},
                           {"quant_method", or_null(outcome.quant_method)},
                           {"engine_rules", or_null(outcome.engine_rules)},
                           {"engines", outcome.engines},
                           {"engine_versions", versions_json(outcome.engine_versions)},
                           {"status", to_string(outcome.status)},
                           {"findings", std::move(findings)},
                           {"changes", std::move(changes)},
                           {"backups", outcome.backups},
                           {"replaced_links", outcome.replaced_links},
                           {"warnings", outcome.warnings},
                           {"notes", outcome.notes},
                           {"mtp", or_null(outcome.mtp)},
                           {"lint", lint_json(outcome.lint)},
                           {"written", outcome.status == Status::patched},
                           {"error", error}});
  }
  doc["checkpoints"] = std::move(checkpoints);
  return doc;
}

} // namespace qpatch::report
