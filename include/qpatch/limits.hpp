// SPDX-License-Identifier: Apache-2.0
// Every cap qpatch applies to untrusted input, in one place, each with where its number comes from.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qpatch::limits {

// The reference reader's MAX_HEADER_SIZE (safetensors tensor.rs); "greater than" fails.
inline constexpr uint64_t k_max_header_size = 100'000'000;
// serde_json's recursion budget starts at 128 and fails when it reaches 0: 127 nested containers.
inline constexpr size_t k_max_json_depth = 127;
// huggingface.js caps the index at 250 MB; the largest real MoE indexes are about 60 MB.
inline constexpr uint64_t k_max_index_size = 250'000'000;
// huggingface.js: at most 10,000 distinct shards.
inline constexpr size_t k_max_shards = 10'000;
// Real checkpoints reach ~1.3 M tensors (safetensors#668); 4 M leaves room and bounds memory.
inline constexpr size_t k_max_index_entries = 4'000'000;
// Config files are a few hundred KB at most (a 300-entry ignore list is ~20 KB).
inline constexpr uint64_t k_max_config_size = 64'000'000;
// No real module name is near this; it bounds regex work per name.
inline constexpr size_t k_max_name_size = 4096;
// User and config regexes: PCRE2 compile size and match/depth budgets.
inline constexpr size_t k_max_pattern_size = 4096;
inline constexpr uint32_t k_pattern_match_limit = 1'000'000;
inline constexpr uint32_t k_pattern_depth_limit = 10'000;
// *.safetensors files scanned in one checkpoint directory.
inline constexpr size_t k_max_safetensors_files = 100'000;

} // namespace qpatch::limits
