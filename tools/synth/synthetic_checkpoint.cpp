// SPDX-License-Identifier: Apache-2.0
#include "synth/synthetic_checkpoint.hpp"

#include <qpatch/safetensors/dtype.hpp>

#include <algorithm>
#include <fstream>

namespace qpatch::synth {
namespace fs = std::filesystem;

std::string header_prefix(const std::vector<TensorSpec>& tensors, uint64_t& data_size) {
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t cursor = 0;
  for (const TensorSpec& tensor : tensors) {
    uint64_t elements = 1;
    for (const uint64_t dim : tensor.shape) {
      elements *= dim;
    }
    const auto dtype = safetensors::parse_dtype(tensor.dtype);
    const uint64_t bytes = elements * (dtype ? safetensors::bits_of(*dtype) : 8) / 8;
    json += ",\"" + tensor.name + "\":{\"dtype\":\"" + tensor.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i) {
      json += (i ? "," : "") + std::to_string(tensor.shape[i]);
    }
    json += "],\"data_offsets\":[" + std::to_string(cursor) + "," + std::to_string(cursor + bytes) +
            "]}";
    cursor += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string prefix(8, '\0');
  for (size_t i = 0; i < 8; ++i) {
    prefix[i] = static_cast<char>((json.size() >> (8 * i)) & 0xFF);
  }
  data_size = cursor;
  return prefix + json;
}

Status write_shard(const fs::path& file, const std::vector<TensorSpec>& tensors) {
  uint64_t data_size = 0;
  const std::string prefix = header_prefix(tensors, data_size);
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(prefix.data(), static_cast<std::streamsize>(prefix.size()));
    if (!out) {
      return make_error(ErrorCode::io_error, file.string(), std::nullopt, "", "cannot write");
    }
  }
  std::error_code ec;
  fs::resize_file(file, prefix.size() + data_size, ec);
  if (ec) {
    return make_error(
        ErrorCode::io_error, file.string(), std::nullopt, "", "cannot extend: " + ec.message());
  }
  return ok_status();
}

namespace {

std::string json_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
    }
    out += c;
  }
  return out;
}

} // namespace

Status write_checkpoint(const fs::path& dir, const CheckpointSpec& spec) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return make_error(
        ErrorCode::io_error, dir.string(), std::nullopt, "", "cannot create: " + ec.message());
  }
  {
    std::ofstream config(dir / "config.json", std::ios::binary | std::ios::trunc);
    config << spec.config_json;
  }
  std::string index = "{\n  \"metadata\": {\n    \"total_size\": ";
  // weight_map sorted by tensor name, as transformers' save_pretrained writes it (sort_keys):
  // the shards then appear in an order of their own, not the file order.
  std::vector<std::pair<std::string, std::string>> entries;
  uint64_t total = 0;
  for (const ShardSpec& shard : spec.shards) {
    if (auto status = write_shard(dir / shard.file, shard.tensors); !status) {
      return status;
    }
    uint64_t data_size = 0;
    (void)header_prefix(shard.tensors, data_size);
    total += data_size;
    if (!shard.indexed) {
      continue;
    }
    for (const TensorSpec& tensor : shard.tensors) {
      entries.emplace_back(tensor.name, shard.file);
    }
  }
  std::sort(entries.begin(), entries.end());
  std::string map;
  for (const auto& [tensor, file] : entries) {
    map += std::string(map.empty() ? "" : ",\n") + "    \"" + json_escape(tensor) + "\": \"" +
           file + "\"";
  }
  if (spec.write_index) {
    index += std::to_string(total) + "\n  },\n  \"weight_map\": {\n" + map + "\n  }\n}\n";
    std::ofstream out(dir / "model.safetensors.index.json", std::ios::binary | std::ios::trunc);
    out << index;
  }
  return ok_status();
}

} // namespace qpatch::synth
