// SPDX-License-Identifier: Apache-2.0
// A compressed-tensors `ignore` list's dead weight (issue 23 item 6): entries whose removal
// changes no layer's verdict in any engine version judged ("dead": stale names, parents of
// Linear layers, norms), exact duplicates, and entries that make a layer stored quantized be
// built dense ("over-broad", vLLM #40252, transformers #47990's `mlp.gate` catching
// `gate_proj`). compressed-tensors #866 asks for the first of these.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/engine/engines.hpp>
#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <optional>
#include <string>
#include <vector>

namespace qpatch::diagnose {

struct SkipListLint {
  std::string file;                 // "config.json"
  std::vector<std::string> pointer; // the list, e.g. {"quantization_config", "ignore"}
  std::vector<std::string> entries; // as written
  std::vector<size_t> dead;         // indices whose removal changes no verdict
  std::vector<size_t> duplicates;   // later copies of an earlier entry
  std::vector<size_t> over_broad;   // entries that decide a layer stored quantized: dense
  size_t versions = 0;              // engine versions the verdicts were compared in
};

// Lists longer than this are linted only when `asked` (--prune).
inline constexpr size_t k_lint_by_default_up_to = 4096;

// Lint the active config's compressed-tensors `ignore` under every version of `engines`;
// nothing when the checkpoint's method is another, the list is empty, or it is longer than
// k_lint_by_default_up_to and not `asked`. (The other methods' skip lists are not linted yet.)
Result<std::optional<SkipListLint>> lint_skip_list(const checkpoint::Inventory& inventory,
                                                   const checkpoint::ModuleList& modules,
                                                   const quant::ConfigSet& configs,
                                                   engine::EngineSet engines,
                                                   bool asked = false);

// "ignore: 304 entries; 96 dead ..., 0 duplicates, 0 over-broad ...": the report's line, ""
// when the list has no dead entry and no duplicate.
std::string lint_summary(const SkipListLint& lint);

} // namespace qpatch::diagnose
