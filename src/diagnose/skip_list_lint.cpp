// SPDX-License-Identifier: Apache-2.0
#include "diagnose/judge_common.hpp"

#include <qpatch/diagnose/skip_list_lint.hpp>

#include <algorithm>
#include <map>

namespace qpatch::diagnose {
namespace {

void bisect(const std::vector<size_t>& candidates,
            const SameWithout& same,
            std::vector<size_t>& dead) {
  if (candidates.empty()) {
    return;
  }
  if (same(candidates)) {
    dead.insert(dead.end(), candidates.begin(), candidates.end());
    return;
  }
  if (candidates.size() == 1) {
    return;
  }
  const auto middle = candidates.begin() + static_cast<std::ptrdiff_t>(candidates.size() / 2);
  bisect({candidates.begin(), middle}, same, dead);
  bisect({middle, candidates.end()}, same, dead);
}

} // namespace

void find_dead_entries(SkipListLint& lint, const std::set<size_t>& live, const SameWithout& same) {
  std::map<std::string, size_t> first;
  std::vector<size_t> candidates;
  for (size_t i = 0; i < lint.entries.size(); ++i) {
    if (!first.emplace(lint.entries[i], i).second) {
      lint.duplicates.push_back(i); // compressed-tensors stops at the first match
    } else if (live.count(i) == 0) {
      candidates.push_back(i);
    }
  }
  bisect(candidates, same, lint.dead);
  std::sort(lint.dead.begin(), lint.dead.end());
  // Halves are judged apart: two entries that each stand in for the other (two names of one
  // layer) are each dead alone but not together. Then keep only what can go together, in order.
  if (lint.dead.size() > 1 && !same(lint.dead)) {
    std::vector<size_t> together;
    for (const size_t i : lint.dead) {
      together.push_back(i);
      if (!same(together)) {
        together.pop_back();
      }
    }
    lint.dead = std::move(together);
  }
}

std::string lint_summary(const SkipListLint& lint) {
  // Over-broad entries alone are findings already (quantized_made_dense): the line is for the
  // dead weight no finding names.
  if (lint.dead.empty() && lint.duplicates.empty()) {
    return "";
  }
  const auto count = [](size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return lint.pointer.back() + ": " + count(lint.entries.size(), "entry", "entries") + "; " +
         std::to_string(lint.dead.size()) +
         " dead (no verdict changes without them, in any version judged), " +
         count(lint.duplicates.size(), "duplicate", "duplicates") + ", " +
         std::to_string(lint.over_broad.size()) +
         " over-broad (a layer stored quantized is built " + "dense by them)";
}

namespace detail {

std::vector<size_t> pruned_entries(const SkipListLint& lint) {
  std::vector<size_t> gone = lint.dead;
  gone.insert(gone.end(), lint.duplicates.begin(), lint.duplicates.end());
  return gone;
}

Finding pruned_entries_finding(const SkipListLint& lint, const std::set<size_t>& pruned) {
  Finding finding;
  finding.kind = FindingKind::dead_skip_entries;
  finding.label = lint.pointer.back();
  size_t duplicates = 0;
  for (const size_t i : pruned) {
    finding.modules.push_back(lint.entries[i]);
    if (std::binary_search(lint.duplicates.begin(), lint.duplicates.end(), i)) {
      ++duplicates;
    }
  }
  finding.detail = lint.pointer.back() + ": " + std::to_string(pruned.size() - duplicates) +
                   " dead and " + std::to_string(duplicates) +
                   " duplicate entries (--prune): no verdict changes without them, in any "
                   "version judged";
  finding.fixable = true;
  return finding;
}

} // namespace detail
} // namespace qpatch::diagnose
