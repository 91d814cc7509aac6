// SPDX-License-Identifier: Apache-2.0
#include "support/builder.hpp"

#include "synth/synthetic_checkpoint.hpp"

namespace qpatch::test {

std::string u64_le(uint64_t value) {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  }
  return out;
}

std::string shard_bytes(const std::string& header_json, uint64_t data_size) {
  return u64_le(header_json.size()) + header_json + std::string(data_size, '\0');
}

std::string header_json(const std::vector<TensorDesc>& tensors, uint64_t& data_size) {
  std::vector<synth::TensorSpec> specs;
  for (const auto& t : tensors) {
    specs.push_back({t.name, t.dtype, t.shape});
  }
  const std::string prefix = synth::header_prefix(specs, data_size);
  return prefix.substr(8);
}

} // namespace qpatch::test
