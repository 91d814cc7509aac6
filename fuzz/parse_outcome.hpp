// SPDX-License-Identifier: Apache-2.0
// Everything a header or index parse yields, as one comparable text: the entries when it
// succeeds, the error's code, offset, subject and message when it fails. The fuzz targets and
// tests/fuzz/mutation_test.cpp compare the plain-JSON fast path with the general path by it.
#pragma once

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/error.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <string>

namespace qpatch::fuzz {

inline std::string error_outcome(const Error& error) {
  return "error " + std::to_string(static_cast<int>(error.code)) + " " + error.to_string();
}

inline std::string outcome(const Result<safetensors::Header>& result) {
  if (!result.ok()) {
    return error_outcome(result.error());
  }
  std::string out = "ok " + std::to_string(result->header_size) + "\n";
  for (const auto& [key, value] : result->metadata) {
    out += "meta " + key + "=" + value + "\n";
  }
  for (const auto& tensor : result->tensors) {
    out += std::string(tensor.name) + " " + std::string(to_string(tensor.dtype)) + " " +
           safetensors::format_shape(tensor.shape) + " " + std::to_string(tensor.begin) + " " +
           std::to_string(tensor.end) + "\n";
  }
  return out;
}

inline std::string outcome(const Result<checkpoint::IndexFile>& result) {
  if (!result.ok()) {
    return error_outcome(result.error());
  }
  std::string out = "ok\n";
  for (const auto& entry : result->entries) {
    out += std::string(entry.tensor) + " -> " + result->shards.at(entry.shard) + "\n";
  }
  return out;
}

} // namespace qpatch::fuzz
