// SPDX-License-Identifier: Apache-2.0
// Golden tests: one case per folder of testdata/golden/. A case has `args` (one argument per
// line), an optional `in/` copied to a fresh directory, and `expected/{stdout,stderr,exit_code}`
// plus `expected/files/` for cases that write. In `args`, {dir} is the copy of in/ and {sample}
// a fresh copy of the bundled sample checkpoint (real shapes, sparse data). The temporary path
// is written back as {dir} / {sample} before comparing. QPATCH_UPDATE_GOLDEN=1 rewrites expected/.
#include "run.hpp"
#include "support/golden.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

namespace qpatch::test {
namespace {

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, Case) {
  run_golden_case(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases,
                         Golden,
                         ::testing::ValuesIn(golden_case_names()),
                         [](const auto& case_info) { return case_info.param; });

} // namespace
} // namespace qpatch::test
