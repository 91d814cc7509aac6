// SPDX-License-Identifier: Apache-2.0
#include <qpatch/engine/decision.hpp>

namespace qpatch::engine {

std::string_view to_string(DecidedBy by) {
  switch (by) {
  case DecidedBy::ignore_entry:
    return "ignore_entry";
  case DecidedBy::target_name:
    return "target_name";
  case DecidedBy::target_fused:
    return "target_fused";
  case DecidedBy::target_class:
    return "target_class";
  case DecidedBy::no_target:
    return "no_target";
  case DecidedBy::built_dense:
    return "built_dense";
  case DecidedBy::built_quantized:
    return "built_quantized";
  case DecidedBy::fused_disagree:
    return "fused_disagree";
  case DecidedBy::experts_disagree:
    return "experts_disagree";
  case DecidedBy::untargeted:
    return "untargeted";
  case DecidedBy::override_refused:
    return "override_refused";
  case DecidedBy::undecidable:
    return "undecidable";
  }
  return "unknown";
}

std::string verdict_text(const Decision& decision) {
  std::string verdict = decision.verdict == Verdict::quantized ? "quantized"
                        : decision.verdict == Verdict::dense   ? "dense"
                                                               : "load error: " + decision.error;
  return verdict + " (" + std::string(to_string(decision.by)) +
         (decision.group.empty() ? "" : ", " + decision.group) + ")";
}

} // namespace qpatch::engine
