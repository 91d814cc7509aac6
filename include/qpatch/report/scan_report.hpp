// SPDX-License-Identifier: Apache-2.0
// The report of `qpatch --recursive ROOT`: one line per checkpoint found, for a cache of dozens
// of models where the full report of each would bury the ones that need a patch. Renders only.
#pragma once

#include <qpatch/report/fix_report.hpp>

#include <string>
#include <vector>

namespace qpatch::report {

// "PATH: needs-patch (2 findings: dense_quantized_by_config, quantized_made_dense)", one line
// each; with `quiet`, only the checkpoints that are not clean.
std::string render_scan_lines(const std::vector<CheckpointOutcome>& outcomes, bool quiet);

} // namespace qpatch::report
