// SPDX-License-Identifier: Apache-2.0
// Every checkpoint below a directory (`qpatch --recursive ROOT`): a folder of models, or a whole
// Hugging Face cache, where each snapshot is a checkpoint of its own. Values only.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace qpatch::checkpoint {

// Return every directory at or below `root` that holds config.json and at least one
// *.safetensors file, as `root` joined with its relative path, sorted by path. A checkpoint's own
// subdirectories are not searched, nor hidden ones (.git, .no_exist) nor a cache's blobs/.
// Symlinked directories are followed once each: a directory reached twice (a symlink loop, or
// two links to one folder) is visited the first time only. Unreadable directories are skipped.
std::vector<std::string> find_checkpoints(const std::string& root);

} // namespace qpatch::checkpoint
