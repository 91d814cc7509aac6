// SPDX-License-Identifier: Apache-2.0
#include "support/real_data.hpp"

#include <qpatch/safetensors/reader.hpp>

#include <gtest/gtest.h>

#include <fstream>

namespace qpatch::test {
namespace fs = std::filesystem;

namespace {

std::string pattern(const std::string& seed, uint64_t size) {
  uint64_t state = 1469598103934665603ULL;
  for (const char c : seed) {
    state = (state ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  std::string out(size, '\0');
  for (uint64_t i = 0; i < size; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    out[i] = static_cast<char>(state & 0xFF);
  }
  return out;
}

std::string i64_le(uint64_t value) {
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
  }
  return out;
}

safetensors::Header header_of(const fs::path& file) {
  safetensors::HeaderParser parser;
  auto header = parser.read(file, file.filename().string());
  EXPECT_TRUE(header.ok()) << (header ? "" : header.error().to_string());
  return header ? header.take_value() : safetensors::Header{};
}

} // namespace

void fill_real_data(const fs::path& dir, const std::string& salt) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors") {
      continue;
    }
    const safetensors::Header header = header_of(entry.path());
    std::map<std::string, std::vector<uint64_t>> packed;
    for (const auto& tensor : header.tensors) {
      const std::string name(tensor.name);
      if (name.size() > 14 && name.substr(name.size() - 14) == ".weight_packed") {
        packed[name.substr(0, name.size() - 14)] = tensor.shape.to_vector();
      }
    }
    std::fstream out(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    for (const auto& tensor : header.tensors) {
      const std::string name(tensor.name);
      std::string bytes = pattern(salt + name, tensor.end - tensor.begin);
      const auto it = name.size() > 13 && name.substr(name.size() - 13) == ".weight_shape"
                          ? packed.find(name.substr(0, name.size() - 13))
                          : packed.end();
      if (it != packed.end() && bytes.size() == 16) {
        bytes = i64_le(it->second[0]) + i64_le(it->second[1] * 8); // int4 packs 8 per I32
      }
      out.seekp(static_cast<std::streamoff>(header.data_start() + tensor.begin));
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
  }
}

std::map<std::string, std::string> tensor_bytes(const fs::path& file) {
  const safetensors::Header header = header_of(file);
  std::ifstream in(file, std::ios::binary);
  std::map<std::string, std::string> out;
  for (const auto& tensor : header.tensors) {
    std::string bytes(tensor.end - tensor.begin, '\0');
    in.seekg(static_cast<std::streamoff>(header.data_start() + tensor.begin));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out[std::string(tensor.name)] = bytes;
  }
  return out;
}

std::map<std::string, std::pair<std::string, std::string>> all_tensors(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".safetensors") {
      continue;
    }
    for (auto& [name, bytes] : tensor_bytes(entry.path())) {
      EXPECT_EQ(out.count(name), 0U) << name << " in two files";
      out[name] = {entry.path().filename().string(), std::move(bytes)};
    }
  }
  return out;
}

} // namespace qpatch::test
