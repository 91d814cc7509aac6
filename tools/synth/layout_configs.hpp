// SPDX-License-Identifier: Apache-2.0
// Each Qwen layout's own config.json, compiled in from testdata/ (the bundled sample's config and
// the real Qwen3.6-27B W4A16 one), so a layout written without --config is a checkpoint qpatch
// can judge rather than one with an empty config.json.
#pragma once

namespace qpatch::synth {

extern const char* const k_qwen35_27b_w4a16_mtp_config;        // sample/qwen3.5-27b-w4a16-mtp
extern const char* const k_qwen36_27b_w4a16_packed_mtp_config; // real-configs/qwen3.6-27b-...

} // namespace qpatch::synth
