// SPDX-License-Identifier: Apache-2.0
// Shard bytes in memory for tests: a header JSON (written by hand, so each test shows exactly
// what it feeds the reader) behind its 8-byte length, followed by zero-filled data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qpatch::test {

// Return the 8-byte little-endian encoding of `value`.
std::string u64_le(uint64_t value);

// Return a whole file: length prefix, `header_json`, then `data_size` zero bytes.
std::string shard_bytes(const std::string& header_json, uint64_t data_size);

// Return a valid header JSON for `tensors` given as {name, dtype, shape}, packed back to back,
// and set `data_size`.
struct TensorDesc {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
};
std::string header_json(const std::vector<TensorDesc>& tensors, uint64_t& data_size);

} // namespace qpatch::test
