// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace qpatch::checkpoint {
namespace fs = std::filesystem;

std::string_view to_string(ProblemCode code) {
  switch (code) {
  case ProblemCode::missing_file: return "missing_file";
  case ProblemCode::unindexed_file: return "unindexed_file";
  case ProblemCode::duplicate_tensor: return "duplicate_tensor";
  case ProblemCode::unlisted_tensor: return "unlisted_tensor";
  case ProblemCode::orphan_entry: return "orphan_entry";
  case ProblemCode::wrong_file: return "wrong_file";
  }
  return "unknown";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
  case Severity::error: return "error";
  case Severity::warning: return "warning";
  case Severity::info: return "info";
  }
  return "unknown";
}

bool Inventory::has_errors() const {
  return !errors.empty() ||
         std::any_of(problems.begin(), problems.end(), [](const InventoryProblem& p) {
           return p.severity == Severity::error;
         });
}

namespace {

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// *.safetensors entries of `dir` (regular files or links to them), sorted by name.
Result<std::vector<std::string>> list_safetensors(const fs::path& dir,
                                                  const std::string& display_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (ends_with(name, ".safetensors") && it->is_regular_file(ec)) {
      names.push_back(name);
      if (names.size() > limits::k_max_safetensors_files) {
        return make_error(ErrorCode::limit_exceeded, display_dir, std::nullopt, "",
                          "more than " + std::to_string(limits::k_max_safetensors_files) +
                              " .safetensors files");
      }
    }
  }
  if (ec) {
    return make_error(ErrorCode::io_error, display_dir, std::nullopt, "",
                      "cannot list the directory: " + ec.message());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void add_problem(Inventory& inventory,
                 ProblemCode code,
                 Severity severity,
                 std::string path,
                 std::string subject,
                 std::string message,
                 size_t count = 1) {
  inventory.problems.push_back(
      {code, severity, std::move(path), std::move(subject), std::move(message), count});
}

// Compare the index's claims with what the headers hold; mark shadowed duplicates.
void cross_check(Inventory& inventory, const IndexFile* index) {
  // The first copy in an engine-loaded file owns a name; others are shadowed duplicates.
  std::unordered_map<std::string_view, uint32_t> owner;
  owner.reserve(inventory.tensors.size());
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < inventory.tensors.size(); ++i) {
      Tensor& tensor = inventory.tensors[i];
      const bool loaded = inventory.loaded(tensor.file);
      if (loaded != (pass == 0)) {
        continue;
      }
      auto [it, inserted] = owner.emplace(tensor.name, i);
      if (inserted) {
        continue;
      }
      tensor.shadowed = true;
      const Tensor& first = inventory.tensors[it->second];
      ShardFile& file = inventory.files[tensor.file];
      ++file.duplicate_count;
      if (loaded) {
        add_problem(inventory, ProblemCode::duplicate_tensor, Severity::error, file.name,
                    tensor.name,
                    "tensor is also in " + inventory.files[first.file].name +
                        ": which copy an engine uses depends on the loader");
      }
    }
  }
  for (ShardFile& file : inventory.files) {
    if (!inventory.has_index || file.indexed || !file.readable || file.tensor_count == 0) {
      continue;
    }
    std::string message = "holds " + std::to_string(file.tensor_count) +
                          " tensors but the index does not name it: vLLM and transformers "
                          "never load it";
    if (file.duplicate_count > 0) {
      message += " (" + std::to_string(file.duplicate_count) +
                 " of them duplicate tensors in indexed files)";
    }
    add_problem(inventory, ProblemCode::unindexed_file, Severity::warning, file.name, "",
                message, file.tensor_count);
  }
  if (index == nullptr) {
    return;
  }
  std::unordered_set<std::string_view> claimed;
  claimed.reserve(index->weight_map.size());
  std::map<std::string, size_t> orphans;  // shard -> count, reported once per shard
  std::map<std::string, std::string> orphan_example;
  for (const auto& [tensor, shard] : index->weight_map) {
    claimed.insert(tensor);
    const auto holder = owner.find(tensor);
    if (holder == owner.end()) {
      if (orphans[shard]++ == 0) {
        orphan_example[shard] = tensor;
      }
      continue;
    }
    const ShardFile& file = inventory.files[inventory.tensors[holder->second].file];
    if (file.name != shard) {
      add_problem(inventory, ProblemCode::wrong_file, Severity::warning,
                  std::string(k_index_file_name), tensor,
                  "the index maps it to " + shard + " but it is in " + file.name +
                      (file.indexed ? "" : ", which the index does not name"));
    }
  }
  for (const auto& [shard, count] : orphans) {
    const auto file = std::find_if(inventory.files.begin(), inventory.files.end(),
                                   [&](const ShardFile& f) { return f.name == shard; });
    if (file == inventory.files.end() || !file->exists || !file->readable) {
      continue;  // already reported as missing or unreadable
    }
    add_problem(inventory, ProblemCode::orphan_entry, Severity::warning,
                std::string(k_index_file_name), orphan_example[shard],
                std::to_string(count) + " weight_map entr" + (count == 1 ? "y maps" : "ies map") +
                    " to " + shard + " but no file holds " + (count == 1 ? "it" : "them"),
                count);
  }
  std::map<std::string, size_t> unlisted;  // file -> count, reported once per file
  std::map<std::string, std::string> unlisted_example;
  for (const Tensor& tensor : inventory.tensors) {
    const ShardFile& file = inventory.files[tensor.file];
    if (file.indexed && !tensor.shadowed && claimed.count(tensor.name) == 0 &&
        unlisted[file.name]++ == 0) {
      unlisted_example[file.name] = tensor.name;
    }
  }
  for (const auto& [file, count] : unlisted) {
    add_problem(inventory, ProblemCode::unlisted_tensor, Severity::info, file,
                unlisted_example[file],
                std::to_string(count) + " tensor(s) in this file are not in the index's "
                                        "weight_map (vLLM loads them anyway)",
                count);
  }
}

}  // namespace

Result<Inventory> read_inventory(const fs::path& dir,
                                 std::string display_dir,
                                 const InventoryOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return make_error(fs::exists(dir, ec) ? ErrorCode::not_a_directory : ErrorCode::io_error,
                      display_dir, std::nullopt, "",
                      fs::exists(dir, ec) ? "not a directory" : "no such directory");
  }
  if (!fs::exists(dir / "config.json", ec)) {
    return make_error(ErrorCode::missing_config, display_dir, std::nullopt, "",
                      "no config.json: not a Hugging Face checkpoint directory");
  }
  Inventory inventory;
  inventory.dir = dir;
  inventory.display_dir = std::move(display_dir);
  std::optional<IndexFile> index;
  if (fs::exists(dir / k_index_file_name, ec)) {
    inventory.has_index = true;
    QP_TRY_ASSIGN(const std::string text,
                  json::read_file(dir / k_index_file_name, k_index_file_name,
                                  limits::k_max_index_size));
    QP_TRY_ASSIGN(index, parse_index(text, k_index_file_name));
  }
  QP_TRY_ASSIGN(const std::vector<std::string> present,
                list_safetensors(dir, inventory.display_dir));
  if (index) {
    for (const std::string& shard : index->shards) {
      ShardFile file;
      file.name = shard;
      file.indexed = true;
      file.exists = std::binary_search(present.begin(), present.end(), shard);
      inventory.files.push_back(std::move(file));
    }
  }
  for (const std::string& name : present) {
    if (!index || std::find(index->shards.begin(), index->shards.end(), name) ==
                      index->shards.end()) {
      ShardFile file;
      file.name = name;
      inventory.files.push_back(std::move(file));
    }
  }
  safetensors::HeaderParser parser;
  for (uint32_t f = 0; f < inventory.files.size(); ++f) {
    ShardFile& file = inventory.files[f];
    if (!file.exists) {
      add_problem(inventory, ProblemCode::missing_file, Severity::error, file.name, "",
                  "the index names this file but it does not exist (vLLM: \"Weight files "
                  "referenced in index but missing\")");
      continue;
    }
    auto header = parser.read(dir / file.name, file.name, options.reader);
    if (!header) {
      inventory.errors.push_back(header.take_error());
      continue;
    }
    file.readable = true;
    file.file_size = header->file_size;
    file.header_size = header->header_size;
    file.tensor_count = header->tensors.size();
    file.metadata = std::move(header->metadata);
    for (auto& entry : header->tensors) {
      inventory.tensors.push_back(Tensor{std::move(entry.name), f, entry.dtype,
                                         std::move(entry.shape), entry.begin, entry.end, false});
    }
  }
  cross_check(inventory, index ? &*index : nullptr);
  return inventory;
}

}  // namespace qpatch::checkpoint
