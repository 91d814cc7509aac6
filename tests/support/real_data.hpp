// SPDX-License-Identifier: Apache-2.0
// Real tensor bytes for tests that copy data (graft): fills the data section of every shard a
// synthetic checkpoint wrote as a hole with bytes derived from a salt and the tensor's name, and
// each compressed-tensors weight_shape with the dense shape its weight_packed stands for.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace qpatch::test {

// Fill every *.safetensors file in `dir`; `salt` makes two checkpoints' bytes differ.
void fill_real_data(const std::filesystem::path& dir, const std::string& salt);

// Return each tensor's data bytes in the *.safetensors file `file`, by name.
std::map<std::string, std::string> tensor_bytes(const std::filesystem::path& file);

// Return every tensor of every *.safetensors file in `dir`: name -> (file, bytes).
std::map<std::string, std::pair<std::string, std::string>>
all_tensors(const std::filesystem::path& dir);

} // namespace qpatch::test
