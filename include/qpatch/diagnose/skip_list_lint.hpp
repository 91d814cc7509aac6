// SPDX-License-Identifier: Apache-2.0
// A compressed-tensors `ignore` list's dead weight (issue 23 item 6): entries whose removal
// changes no layer's verdict in any engine version judged ("dead": stale names, parents of
// Linear layers, norms), exact duplicates, and entries that make a layer stored quantized be
// built dense ("over-broad", vLLM #40252, transformers #47990's `mlp.gate` catching
// `gate_proj`). compressed-tensors #866 asks for the first of these. The compressed-tensors
// judge fills it from its own first round of verdicts, so a list whose every entry decides some
// layer costs nothing more to lint.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace qpatch::diagnose {

// Lists longer than this are linted only with --prune (their candidates are judged again).
inline constexpr size_t k_lint_by_default_up_to = 4096;

struct SkipListLint {
  std::string file;                 // "config.json"
  std::vector<std::string> pointer; // the list, e.g. {"quantization_config", "ignore"}
  std::vector<std::string> entries; // as written
  std::vector<size_t> dead;         // indices whose removal changes no verdict
  std::vector<size_t> duplicates;   // later copies of an earlier entry
  std::vector<size_t> over_broad;   // entries that decide a layer stored quantized: dense
};

// Whether the verdicts without the entries of `removed` (sorted indices) are the verdicts of the
// list as written, in every version judged.
using SameWithout = std::function<bool(const std::vector<size_t>& removed)>;

// Find the dead entries among those that decided no layer (`live` holds the ones that did):
// all of them removed together, then halves of a set whose removal changes a verdict, so a
// shadowed entry that still matters is kept. Duplicates are found by text.
void find_dead_entries(SkipListLint& lint, const std::set<size_t>& live, const SameWithout& same);

// "ignore: 304 entries; 96 dead ..., 0 duplicates, 0 over-broad ...": the report's line, ""
// when the list has no dead entry and no duplicate.
std::string lint_summary(const SkipListLint& lint);

} // namespace qpatch::diagnose
