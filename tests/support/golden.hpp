// SPDX-License-Identifier: Apache-2.0
// The golden-case runner shared by the CLI tests (see tests/cli/golden_test.cpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::test {

// Names of the folders under testdata/golden/, sorted.
std::vector<std::string> golden_case_names();
// Run one case and assert its outputs (or rewrite them with QPATCH_UPDATE_GOLDEN=1).
void run_golden_case(const std::string& name);
// Write the bundled sample checkpoint (sparse shards + testdata config) into `dir`.
void write_sample(const std::filesystem::path& dir);

} // namespace qpatch::test
