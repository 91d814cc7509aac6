// SPDX-License-Identifier: Apache-2.0
// Report lines whose wording is the report's, not the test's: built once here so that a test
// states only its counts.
#pragma once

#include <cstddef>
#include <string>

namespace qpatch::test {

// The lint line of a skip list `key` ("ignore", "exclude") with `entries` entries, `dead` of them
// dead, on a checkpoint named DIR.
inline std::string lint_line(const std::string& key,
                             size_t entries,
                             size_t dead,
                             size_t duplicates = 0,
                             size_t over_broad = 0) {
  return "  lint        " + key + ": " + std::to_string(entries) +
         (entries == 1 ? " entry" : " entries") + "; " + std::to_string(dead) +
         " dead (no verdict changes without them, in any version judged), " +
         std::to_string(duplicates) + (duplicates == 1 ? " duplicate" : " duplicates") + ", " +
         std::to_string(over_broad) +
         " over-broad (a layer stored quantized is built dense by them); qpatch --prune DIR "
         "removes the dead and duplicate ones\n";
}

} // namespace qpatch::test
