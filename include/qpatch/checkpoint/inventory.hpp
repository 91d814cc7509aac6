// SPDX-License-Identifier: Apache-2.0
// Everything a checkpoint directory holds, as far as headers tell: its shard files, every tensor
// (name, dtype, shape, file) and the problems between the index and the files. The index is
// checked against the headers; which files an engine loads follows vLLM (model_loader/
// weight_utils.py): with an index, only the files its weight_map names; without one, every
// *.safetensors file.
#pragma once

#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/error.hpp>
#include <qpatch/safetensors/reader.hpp>
#include <qpatch/util/hash_sort.hpp>
#include <qpatch/util/huge_pages.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::checkpoint {

struct ShardFile {
  std::string name;      // file name inside the checkpoint directory
  bool indexed = false;  // named by the index's weight_map
  bool exists = true;    // false: the index names it but it is not there
  bool readable = false; // its header parsed and validated
  uint64_t file_size = 0;
  uint64_t header_size = 0;
  size_t tensor_count = 0;
  size_t duplicate_count = 0; // tensors it holds that an engine-loaded file also holds
  util::NameSum names;        // its tensor names, to compare with what the index maps to it
  std::vector<std::pair<std::string, std::string>> metadata;
};

// One per tensor (211k on a 1T-parameter checkpoint), so 64 bytes and no more: the data offsets
// are checked by the reader and not kept.
struct Tensor {
  std::string_view name; // points into Inventory::name_storage
  uint32_t file = 0;     // index into Inventory::files
  safetensors::Dtype dtype{};
  bool shadowed = false; // the same name in an engine-loaded file wins over this copy
  safetensors::Shape shape;
};

enum class ProblemCode {
  missing_file,     // the index names a file that does not exist (vLLM refuses to start)
  unindexed_file,   // a *.safetensors file the index does not name (never loaded)
  duplicate_tensor, // one tensor name in two files
  unlisted_tensor,  // a tensor in an indexed file that weight_map does not list
  orphan_entry,     // a weight_map entry that no header holds
  wrong_file,       // a weight_map entry naming a file that does not hold the tensor
};

std::string_view to_string(ProblemCode code);

enum class Severity { error, warning, info };
std::string_view to_string(Severity severity);

struct InventoryProblem {
  ProblemCode code{};
  Severity severity{};
  std::string path;    // the file concerned
  std::string subject; // a tensor name, or empty
  std::string message;
  size_t count = 0; // how many tensors the problem covers (grouped problems)
};

struct Inventory {
  std::filesystem::path dir;
  std::string display_dir; // as the user typed it
  // How a command names this checkpoint again, in the hints reports give ("--remote Org/Name"
  // for a Hub repo read header-only); "" means display_dir.
  std::string command_arg;
  const std::string& command_name() const {
    return command_arg.empty() ? display_dir : command_arg;
  }
  bool has_index = false;
  bool renumbered = false; // tensors moved after reading: an unindexed file sorted before others
  std::vector<ShardFile> files;      // the files the index names, by name, then the others, by name
  util::LargeVector<Tensor> tensors; // files in that order, each in header order
  std::vector<Error> errors;         // files that could not be read: every one, not the first
  std::vector<InventoryProblem> problems;
  // One block of tensor names per file; shared, so a copied inventory keeps valid names.
  std::vector<std::shared_ptr<char[]>> name_storage;

  // True when an engine honouring the index loads `file`.
  bool loaded(uint32_t file) const { return !has_index || files.at(file).indexed; }
  bool has_errors() const;
};

struct InventoryOptions {
  safetensors::ReaderOptions reader;
  unsigned threads = 0; // header-reading threads; 0: one per hardware thread
  // Called on the calling thread after each file's tensors [first, end) are appended, while
  // later headers are still being read (checkpoint::ModuleBuilder groups modules meanwhile).
  std::function<void(const Inventory&, uint32_t first, uint32_t end)> on_tensors;
  // Skip the sort-and-join of every name when the per-file name sums show that the index and the
  // headers agree (util::NameSum). Results are identical either way; tests turn it off to
  // compare the two paths.
  bool name_sum_shortcut = true;
};

// Read the headers of every shard under `dir`. Fails only when the directory, config.json or the
// index cannot be used at all; unreadable shards are collected in Inventory::errors.
Result<Inventory> read_inventory(const std::filesystem::path& dir,
                                 std::string display_dir,
                                 const InventoryOptions& options = {});

} // namespace qpatch::checkpoint
