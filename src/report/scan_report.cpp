// SPDX-License-Identifier: Apache-2.0
#include <qpatch/report/scan_report.hpp>

#include <set>

namespace qpatch::report {

std::string render_scan_lines(const std::vector<CheckpointOutcome>& outcomes, bool quiet) {
  std::string out;
  for (const CheckpointOutcome& outcome : outcomes) {
    if (quiet && outcome.status == Status::clean) {
      continue;
    }
    std::string line = outcome.path + ": " + std::string(to_string(outcome.status));
    if (outcome.held_back) {
      line += " (nothing written: another checkpoint could not be read)";
    }
    if (!outcome.findings.empty()) {
      std::set<std::string> kinds; // what is wrong, each kind once, in a stable order
      for (const auto& finding : outcome.findings) {
        kinds.insert(std::string(diagnose::to_string(finding.kind)));
      }
      std::string names;
      for (const std::string& kind : kinds) {
        names += (names.empty() ? "" : ", ") + kind;
      }
      line += " (" + std::to_string(outcome.findings.size()) +
              (outcome.findings.size() == 1 ? " finding: " : " findings: ") + names + ")";
    } else if (outcome.status == Status::error) {
      line += " (see the error above)";
    }
    out += line + "\n";
  }
  return out;
}

} // namespace qpatch::report
