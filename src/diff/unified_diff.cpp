// SPDX-License-Identifier: Apache-2.0
// qpatch's edits are local (one array or object per file), so the diff trims the common head
// and tail and aligns the middle with an LCS table, which stays small. A middle too large for
// the table is shown as removed then added, still a correct diff.
#include <qpatch/diff/unified_diff.hpp>

#include <algorithm>
#include <vector>

namespace qpatch::diff {
namespace {

constexpr size_t k_context = 3;
constexpr size_t k_max_table_cells = 4'000'000;

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t newline = text.find('\n', start);
    const size_t end = newline == std::string_view::npos ? text.size() : newline + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

struct Op {
  char kind; // ' ', '-', '+'
  std::string_view line;
  size_t old_line; // 0-based positions before this op
  size_t new_line;
};

// Lines [begin, end) of one side.
struct Span {
  const std::vector<std::string_view>& lines;
  size_t begin;
  size_t end;
};

void align(const Span& old_side, const Span& new_side, std::vector<Op>& ops) {
  const std::vector<std::string_view>& a = old_side.lines;
  const std::vector<std::string_view>& b = new_side.lines;
  const size_t a0 = old_side.begin;
  const size_t a1 = old_side.end;
  const size_t b0 = new_side.begin;
  const size_t b1 = new_side.end;
  const size_t n = a1 - a0;
  const size_t m = b1 - b0;
  if (n * m > k_max_table_cells) {
    for (size_t i = a0; i < a1; ++i) {
      ops.push_back({'-', a[i], i, b0});
    }
    for (size_t j = b0; j < b1; ++j) {
      ops.push_back({'+', b[j], a1, j});
    }
    return;
  }
  std::vector<uint32_t> table((n + 1) * (m + 1), 0);
  const auto at = [&](size_t i, size_t j) -> uint32_t& { return table[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      at(i, j) =
          a[a0 + i] == b[b0 + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  size_t i = 0;
  size_t j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[a0 + i] == b[b0 + j]) {
      ops.push_back({' ', a[a0 + i], a0 + i, b0 + j});
      ++i, ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      ops.push_back({'-', a[a0 + i], a0 + i, b0 + j}); // removals first, as diff -u prints
      ++i;
    } else {
      ops.push_back({'+', b[b0 + j], a0 + i, b0 + j});
      ++j;
    }
  }
}

void emit_line(std::string& out, char kind, std::string_view line) {
  out += kind;
  out += line;
  if (line.empty() || line.back() != '\n') {
    out += "\n\\ No newline at end of file\n";
  }
}

} // namespace

std::string
unified_diff(std::string_view before, std::string_view after, const std::string& label) {
  if (before == after) {
    return "";
  }
  const auto a = split_lines(before);
  const auto b = split_lines(after);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) {
    ++head;
  }
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  std::vector<Op> ops;
  for (size_t i = 0; i < head; ++i) {
    ops.push_back({' ', a[i], i, i});
  }
  align({a, head, a.size() - tail}, {b, head, b.size() - tail}, ops);
  for (size_t t = tail; t-- > 0;) {
    ops.push_back({' ', a[a.size() - 1 - t], a.size() - 1 - t, b.size() - 1 - t});
  }
  std::string out = "--- a/" + label + "\n+++ b/" + label + "\n";
  size_t k = 0;
  while (k < ops.size()) {
    // Find the next change, then grow a hunk while changes are within 2 * context lines.
    while (k < ops.size() && ops[k].kind == ' ') {
      ++k;
    }
    if (k == ops.size()) {
      break;
    }
    const size_t start = k >= k_context ? k - k_context : 0;
    size_t end = k;
    size_t last_change = k;
    while (end < ops.size()) {
      if (ops[end].kind != ' ') {
        last_change = end;
      } else if (end - last_change > 2 * k_context) {
        break;
      }
      ++end;
    }
    end = std::min(ops.size(), last_change + k_context + 1);
    size_t old_count = 0;
    size_t new_count = 0;
    for (size_t i = start; i < end; ++i) {
      old_count += ops[i].kind != '+' ? 1U : 0U;
      new_count += ops[i].kind != '-' ? 1U : 0U;
    }
    const size_t old_start = ops[start].old_line + (old_count ? 1 : 0);
    const size_t new_start = ops[start].new_line + (new_count ? 1 : 0);
    out += "@@ -" + std::to_string(old_start) +
           (old_count == 1 ? "" : "," + std::to_string(old_count)) + " +" +
           std::to_string(new_start) + (new_count == 1 ? "" : "," + std::to_string(new_count)) +
           " @@\n";
    for (size_t i = start; i < end; ++i) {
      emit_line(out, ops[i].kind, ops[i].line);
    }
    k = end;
  }
  return out;
}

} // namespace qpatch::diff
