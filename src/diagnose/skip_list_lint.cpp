// SPDX-License-Identifier: Apache-2.0
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

} // namespace qpatch::diagnose
