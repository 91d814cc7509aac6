// SPDX-License-Identifier: Apache-2.0
// Synthetic checkpoints with real shapes: each shard is a real header followed by a data section
// that is a hole (std::filesystem::resize_file), so a terabyte-class layout costs kilobytes of
// disk. Used for the bundled sample, by tests and by the benchmarks.
#pragma once

#include <qpatch/error.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace qpatch::synth {

struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
};

struct ShardSpec {
  std::string file;
  std::vector<TensorSpec> tensors;
  bool indexed = true; // listed in the index's weight_map
};

struct CheckpointSpec {
  std::vector<ShardSpec> shards;
  bool write_index = true;
  std::string config_json; // written as config.json
};

// Return the header prefix of a shard (8-byte length + JSON padded to a multiple of 8, as the
// reference writer pads) and set `data_size` to the bytes its tensors need.
std::string header_prefix(const std::vector<TensorSpec>& tensors, uint64_t& data_size);

// Write one shard at `file`: the header, then a hole up to the full size.
Status write_shard(const std::filesystem::path& file, const std::vector<TensorSpec>& tensors);

// Write config.json, every shard and (when asked) model.safetensors.index.json into `dir`.
Status write_checkpoint(const std::filesystem::path& dir, const CheckpointSpec& spec);

// Layouts with the shapes of real models (shared/reference/quant-formats.md).
// Qwen3.5-27B W4A16 (compressed-tensors pack-quantized, group 128): 48 linear-attention and 16
// full-attention layers, a 27-block vision tower, and the BF16 MTP head in
// model_extra_tensors.safetensors (indexed).
// `packed_head`: the head's seven projections are packed (asymmetric, group 32) and mtp.fc stays
// BF16, as in the real Qwen3.6-27B W4A16 checkpoint (quant-formats.md §2.1), in
// model-mtp.safetensors. config_json is the layout's own: the bundled sample's config, or with
// `packed_head` the real Qwen3.6-27B W4A16 one (testdata/real-configs).
CheckpointSpec qwen35_27b_w4a16_mtp(bool packed_head = false);
// Kimi-K2-like 1T-parameter MoE: 61 layers x 384 experts x 3 int4 linears (weight_packed,
// weight_scale, weight_shape) over `shard_count` shards, ~200k tensors and ~26 MB of headers.
CheckpointSpec kimi_k2_w4a16(size_t shard_count = 64);

} // namespace qpatch::synth
