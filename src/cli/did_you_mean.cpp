// SPDX-License-Identifier: Apache-2.0
#include "did_you_mean.hpp"

#include <algorithm>
#include <numeric>

namespace qpatch::cli {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows are enough for the transposition step, which looks two characters back.
  std::vector<size_t> before(b.size() + 1);
  std::vector<size_t> previous(b.size() + 1);
  std::vector<size_t> current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::vector<std::string> nearest(std::string_view word,
                                 const std::vector<std::string>& candidates,
                                 size_t count,
                                 size_t max_distance) {
  std::vector<std::pair<size_t, size_t>> scored; // (distance, candidate index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    // Lengths alone bound the distance from below: skip the quadratic work when they rule it out.
    const size_t gap = candidates[i].size() > word.size() ? candidates[i].size() - word.size()
                                                          : word.size() - candidates[i].size();
    if (gap > max_distance) {
      continue;
    }
    const size_t distance = edit_distance(word, candidates[i]);
    if (distance <= max_distance && candidates[i] != word) {
      scored.emplace_back(distance, i);
    }
  }
  std::stable_sort(
      scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < count; ++i) {
    out.push_back(candidates[scored[i].second]);
  }
  return out;
}

std::optional<std::string>
closest(std::string_view word, const std::vector<std::string>& candidates, size_t max_distance) {
  auto found = nearest(word, candidates, 1, max_distance);
  if (found.empty()) {
    return std::nullopt;
  }
  return found.front();
}

std::string did_you_mean(std::string_view word,
                         const std::vector<std::string>& candidates,
                         size_t max_distance) {
  const auto found = closest(word, candidates, max_distance);
  return found ? "; did you mean '" + *found + "'?" : "";
}

} // namespace qpatch::cli
