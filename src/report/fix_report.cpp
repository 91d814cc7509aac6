// SPDX-License-Identifier: Apache-2.0
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

std::string list_preview(const std::vector<std::string>& names, size_t limit) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) {
    out += (i ? ", " : "") + names[i];
  }
  if (names.size() > limit) {
    out += ", ... (" + std::to_string(names.size() - limit) + " more)";
  }
  return out;
}

std::string change_line(const ChangeSummary& change) {
  std::string line = change.file + ":";
  if (!change.added.empty()) {
    line += " +" + std::to_string(change.added.size()) + " (" + list_preview(change.added, 8) + ")";
  }
  if (!change.removed.empty()) {
    line +=
        " -" + std::to_string(change.removed.size()) + " (" + list_preview(change.removed, 8) + ")";
  }
  return line;
}

// A left column of fixed width, so the lines of one checkpoint align.
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

} // namespace

std::string render_fix_text(const std::vector<CheckpointOutcome>& outcomes,
                            Mode mode,
                            Verbosity verbosity,
                            const TextStyle& style) {
  std::string out;
  for (const CheckpointOutcome& outcome : outcomes) {
    if (outcome.error) {
      out += style.paint("error", Role::error) + ": " + outcome.error->to_string() + "\n";
      continue;
    }
    if (verbosity == Verbosity::quiet) {
      continue;
    }
    std::string what = outcome.quant_method.empty()
                           ? std::string("not quantized")
                           : outcome.quant_method + ", judged as " + outcome.engine_rules +
                                 (outcome.engines.size() > 1 ? " load it" : " loads it");
    out += style.paint(outcome.path, Role::heading) + ": " + what + "\n";
    for (const std::string& warning : outcome.warnings) {
      out += column(style, "warning", Role::warning) + warning + "\n";
    }
    if (!outcome.mtp.empty()) {
      out += column(style, "mtp head", Role::dim) + outcome.mtp + "\n";
    }
    for (const std::string& note : outcome.notes) {
      out += column(style, "note", Role::dim) + note + "\n";
    }
    for (const auto& finding : outcome.findings) {
      // Name the engines only when a finding does not concern every engine judged.
      std::string engines;
      if (!finding.engines.empty() && finding.engines != outcome.engines) {
        for (const std::string& engine : finding.engines) {
          engines += (engines.empty() ? " [" : ", ") + engine;
        }
        engines += "]";
      }
      out += (finding.fixable ? column(style, "fixable", Role::warning)
                              : column(style, "not fixable", Role::error)) +
             finding.detail + engines + "\n";
      if (verbosity == Verbosity::verbose) {
        for (const std::string& module : finding.modules) {
          out += std::string(14, ' ') + module + "\n";
        }
      }
    }
    const char* verb = mode == Mode::fix ? "patched" : "would patch";
    for (const ChangeSummary& change : outcome.changes) {
      out += column(style, verb, Role::emphasis) + change_line(change) + "\n";
    }
    for (const std::string& backup : outcome.backups) {
      out += column(style, "backup", Role::dim) + backup + "\n";
    }
    for (const std::string& link : outcome.replaced_links) {
      out += column(style, "note", Role::dim) + link +
             " was a symlink (Hugging Face cache); it is now a regular file and the blob it "
             "pointed to is unchanged\n";
    }
    out += column(style, "status", Role::heading) +
           style.paint(std::string(to_string(outcome.status)), status_role(outcome.status)) + "\n";
  }
  return out;
}

json::Json render_fix_json(const std::vector<CheckpointOutcome>& outcomes) {
  using json::Json;
  Json doc;
  doc["schema_version"] = k_fix_schema_version;
  Json checkpoints = Json::array();
  for (const CheckpointOutcome& outcome : outcomes) {
    Json findings = Json::array();
    for (const auto& finding : outcome.findings) {
      findings.push_back({{"kind", to_string(finding.kind)},
                          {"modules", finding.modules},
                          {"detail", finding.detail},
                          {"fixable", finding.fixable},
                          {"engines", finding.engines}});
    }
    Json changes = Json::array();
    for (const ChangeSummary& change : outcome.changes) {
      changes.push_back(
          {{"file", change.file}, {"added", change.added}, {"removed", change.removed}});
    }
    Json error;
    if (outcome.error) {
      error = {{"code", to_string(outcome.error->code)},
               {"path", outcome.error->path},
               {"offset", outcome.error->offset ? Json(*outcome.error->offset) : Json()},
               {"subject", outcome.error->subject},
               {"message", outcome.error->message}};
    }
    checkpoints.push_back(
        {{"path", outcome.path},
         {"quant_method", outcome.quant_method.empty() ? Json() : Json(outcome.quant_method)},
         {"engine_rules", outcome.engine_rules},
         {"engines", outcome.engines},
         {"status", to_string(outcome.status)},
         {"findings", std::move(findings)},
         {"changes", std::move(changes)},
         {"backups", outcome.backups},
         {"replaced_links", outcome.replaced_links},
         {"warnings", outcome.warnings},
         {"notes", outcome.notes},
         {"mtp", outcome.mtp.empty() ? Json() : Json(outcome.mtp)},
         {"error", error}});
  }
  doc["checkpoints"] = std::move(checkpoints);
  return doc;
}

} // namespace qpatch::report
