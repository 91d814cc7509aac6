// SPDX-License-Identifier: Apache-2.0
// A unified diff (diff -u style, 3 lines of context) between two texts, as --dry-run prints it.
#pragma once

#include <string>
#include <string_view>

namespace qpatch::diff {

// Return the diff of `before` and `after` with "--- a/<label>" and "+++ b/<label>" headers, or
// "" when they are equal.
std::string unified_diff(std::string_view before, std::string_view after, const std::string& label);

} // namespace qpatch::diff
