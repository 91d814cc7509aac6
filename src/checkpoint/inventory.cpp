// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/header_pipeline.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/util/names.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <numeric>

namespace qpatch::checkpoint {

using util::ends_with;
namespace fs = std::filesystem;

std::string_view to_string(ProblemCode code) {
  switch (code) {
  case ProblemCode::missing_file:
    return "missing_file";
  case ProblemCode::unindexed_file:
    return "unindexed_file";
  case ProblemCode::duplicate_tensor:
    return "duplicate_tensor";
  case ProblemCode::unlisted_tensor:
    return "unlisted_tensor";
  case ProblemCode::orphan_entry:
    return "orphan_entry";
  case ProblemCode::wrong_file:
    return "wrong_file";
  }
  return "unknown";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
  case Severity::error:
    return "error";
  case Severity::warning:
    return "warning";
  case Severity::info:
    return "info";
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
        return make_error(ErrorCode::limit_exceeded,
                          display_dir,
                          std::nullopt,
                          "",
                          "more than " + std::to_string(limits::k_max_safetensors_files) +
                              " .safetensors files");
      }
    }
  }
  if (ec) {
    return make_error(ErrorCode::io_error,
                      display_dir,
                      std::nullopt,
                      "",
                      "cannot list the directory: " + ec.message());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void add_problem(Inventory& inventory, InventoryProblem problem) {
  problem.count = std::max<size_t>(problem.count, 1); // a problem covers at least its subject
  inventory.problems.push_back(std::move(problem));
}

// In the tensors' hash order, aux holds the tensor's file, plus this bit once it is shadowed.
constexpr uint32_t k_shadowed_bit = 0x80000000U;

// Mark every later copy of a name as shadowed. Ids follow Inventory::files, which lists the
// files an engine loads first, so the first copy of a name is the one an engine uses.
void mark_duplicates(Inventory& inventory, util::HashedIds& sorted) {
  std::vector<std::pair<uint32_t, uint32_t>> duplicates; // (copy, owner), reported in file order
  for (size_t i = 1; i < sorted.size(); ++i) {
    for (size_t j = i; j-- > 0 && sorted[j].hash == sorted[i].hash;) {
      const Tensor& earlier = inventory.tensors[sorted[j].id];
      if (!earlier.shadowed && earlier.name == inventory.tensors[sorted[i].id].name) {
        inventory.tensors[sorted[i].id].shadowed = true;
        sorted[i].aux |= k_shadowed_bit;
        duplicates.emplace_back(sorted[i].id, sorted[j].id);
        break;
      }
    }
  }
  std::sort(duplicates.begin(), duplicates.end());
  for (const auto& [copy, owner] : duplicates) {
    const Tensor& tensor = inventory.tensors[copy];
    ShardFile& file = inventory.files[tensor.file];
    ++file.duplicate_count;
    if (inventory.loaded(tensor.file)) {
      add_problem(inventory,
                  {ProblemCode::duplicate_tensor,
                   Severity::error,
                   file.name,
                   std::string(tensor.name),
                   "tensor is also in " + inventory.files[inventory.tensors[owner].file].name +
                       ": which copy an engine uses depends on the loader"});
    }
  }
}

void report_unindexed_files(Inventory& inventory) {
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
    add_problem(inventory,
                {ProblemCode::unindexed_file,
                 Severity::warning,
                 file.name,
                 "",
                 message,
                 file.tensor_count});
  }
}

// A count per file with the first example in checkpoint order.
struct Tally {
  size_t count = 0;
  uint32_t first = UINT32_MAX;
  void add(uint32_t id) {
    ++count;
    first = std::min(first, id);
  }
};

// Join the index's entries with the tensors by name (both sorted by hash) and report what the
// index claims wrongly. order_files rewrote the entries' shard ids (aux) to file ids. Names are
// matched by their 128-bit fingerprint (hash and check): comparing the names themselves meant two
// cache misses per tensor, most of the time of this step on a 200k-tensor checkpoint, and a false
// match could only mislabel a warning.
void check_index(Inventory& inventory, const util::HashedIds& tensors, const IndexFile& index) {
  const auto& entries = index.by_hash;
  std::map<uint32_t, Tally> unlisted;                   // by file
  std::map<uint32_t, Tally> orphans;                    // by shard
  std::vector<std::pair<uint32_t, uint32_t>> misplaced; // (entry, tensor)
  const auto unmatched_tensor = [&](const util::HashedId& tensor) {
    if ((tensor.aux & k_shadowed_bit) == 0 && inventory.files[tensor.aux].indexed) {
      unlisted[tensor.aux].add(tensor.id);
    }
  };
  size_t i = 0;
  size_t k = 0;
  while (i < tensors.size() || k < entries.size()) {
    if (k == entries.size() || (i < tensors.size() && tensors[i].hash < entries[k].hash)) {
      unmatched_tensor(tensors[i++]);
    } else if (i == tensors.size() || entries[k].hash < tensors[i].hash) {
      orphans[entries[k].aux].add(entries[k].id);
      ++k;
    } else {
      const uint64_t hash = tensors[i].hash;
      size_t i_end = i;
      while (i_end < tensors.size() && tensors[i_end].hash == hash) {
        ++i_end;
      }
      // Runs of one hash are nearly always one tensor: keep the flags inline.
      util::SmallVector<uint8_t, 4> matched;
      for (size_t t = i; t < i_end; ++t) {
        matched.push_back(0);
      }
      for (; k < entries.size() && entries[k].hash == hash; ++k) {
        bool found = false;
        for (size_t t = i; t < i_end; ++t) {
          if ((tensors[t].aux & k_shadowed_bit) == 0 && tensors[t].check == entries[k].check) {
            matched.data()[t - i] = 1;
            found = true;
            if (tensors[t].aux != entries[k].aux) {
              misplaced.emplace_back(entries[k].id, tensors[t].id);
            }
          }
        }
        if (!found) {
          orphans[entries[k].aux].add(entries[k].id);
        }
      }
      for (size_t t = i; t < i_end; ++t) {
        if (!matched[t - i]) {
          unmatched_tensor(tensors[t]);
        }
      }
      i = i_end;
    }
  }
  std::sort(misplaced.begin(), misplaced.end());
  for (const auto& [entry, id] : misplaced) {
    const ShardFile& file = inventory.files[inventory.tensors[id].file];
    add_problem(inventory,
                {ProblemCode::wrong_file,
                 Severity::warning,
                 std::string(k_index_file_name),
                 std::string(index.entries[entry].tensor),
                 "the index maps it to " + index.shards[index.entries[entry].shard] +
                     " but it is in " + file.name +
                     (file.indexed ? "" : ", which the index does not name")});
  }
  for (const auto& [shard, tally] : orphans) {
    const ShardFile& file = inventory.files[shard];
    if (!file.exists || !file.readable) {
      continue; // already reported as missing or unreadable
    }
    const size_t count = tally.count;
    add_problem(inventory,
                {ProblemCode::orphan_entry,
                 Severity::warning,
                 std::string(k_index_file_name),
                 std::string(index.entries[tally.first].tensor),
                 std::to_string(count) + " weight_map entr" + (count == 1 ? "y maps" : "ies map") +
                     " to " + file.name + " but no file holds " + (count == 1 ? "it" : "them"),
                 count});
  }
  for (const auto& [file, tally] : unlisted) {
    add_problem(inventory,
                {ProblemCode::unlisted_tensor,
                 Severity::info,
                 inventory.files[file].name,
                 std::string(inventory.tensors[tally.first].name),
                 std::to_string(tally.count) +
                     " tensor(s) in this file are not in the index's weight_map (vLLM loads "
                     "them anyway)",
                 tally.count});
  }
}

// True when the index and the headers agree exactly: every file exists and was read, each file
// the index names holds exactly the names weight_map maps to it (equal name sums), and no other
// file holds a tensor. weight_map's keys are distinct, so no name is then in two files, and the
// join below would find nothing to report. Without an index, only a single file is sure to hold
// no duplicates. `index_names` is by file id.
bool headers_agree_with_index(const Inventory& inventory,
                              const std::vector<util::NameSum>& index_names) {
  if (!inventory.has_index) {
    return inventory.files.size() <= 1;
  }
  for (size_t f = 0; f < inventory.files.size(); ++f) {
    const ShardFile& file = inventory.files[f];
    if (!file.exists || !file.readable ||
        (file.indexed ? file.names != index_names[f] : file.tensor_count > 0)) {
      return false;
    }
  }
  return true;
}

// Find duplicate names and what the index claims wrongly. Sorting and joining 200k names is
// skipped when the per-file name sums already show that the index and the headers agree.
void cross_check(Inventory& inventory,
                 const IndexFile* index,
                 const std::vector<util::NameSum>& index_names,
                 bool name_sum_shortcut) {
  if (name_sum_shortcut && headers_agree_with_index(inventory, index_names)) {
    return;
  }
  auto by_hash = util::sort_by_hash(
      inventory.tensors.size(),
      [&](uint32_t id) { return inventory.tensors[id].name; },
      [&](uint32_t id) { return inventory.tensors[id].file; });
  mark_duplicates(inventory, by_hash);
  report_unindexed_files(inventory);
  if (index != nullptr) {
    check_index(inventory, by_hash, *index);
  }
}

// Put the files in inventory order once the index is known — the files it names, by name
// (missing ones included), then the others, by name — and renumber the tensors to match. The
// headers were read in plain name order, so the tensors move only when a file the index does not
// name sorts before one it names. The index's shard ids are rewritten to file ids for the join.
// Return what weight_map maps to each file, by file id.
std::vector<util::NameSum> order_files(Inventory& inventory, IndexFile& index) {
  std::vector<std::string> shards = index.shards;
  std::sort(shards.begin(), shards.end());
  std::vector<ShardFile> files;
  std::vector<bool> taken(inventory.files.size());
  std::vector<uint32_t> new_id(inventory.files.size()); // by the id a file was read under
  size_t read = 0;                                      // inventory.files is sorted by name
  for (const std::string& shard : shards) {
    for (; read < inventory.files.size() && inventory.files[read].name < shard; ++read) {
    }
    if (read < inventory.files.size() && inventory.files[read].name == shard) {
      new_id[read] = static_cast<uint32_t>(files.size());
      taken[read] = true;
      files.push_back(std::move(inventory.files[read]));
      files.back().indexed = true;
    } else {
      ShardFile missing;
      missing.name = shard;
      missing.indexed = true;
      missing.exists = false;
      files.push_back(std::move(missing));
    }
  }
  for (uint32_t f = 0; f < inventory.files.size(); ++f) {
    if (!taken[f]) {
      new_id[f] = static_cast<uint32_t>(files.size());
      files.push_back(std::move(inventory.files[f]));
    }
  }
  inventory.files = std::move(files);
  std::vector<uint32_t> file_of_shard(index.shards.size());
  for (uint32_t s = 0; s < index.shards.size(); ++s) {
    file_of_shard[s] = static_cast<uint32_t>(
        std::lower_bound(shards.begin(), shards.end(), index.shards[s]) - shards.begin());
  }
  for (util::HashedId& entry : index.by_hash) {
    entry.aux = file_of_shard[entry.aux];
  }
  std::vector<util::NameSum> index_names(inventory.files.size());
  for (uint32_t s = 0; s < index.shards.size(); ++s) {
    index_names[file_of_shard[s]] = index.shard_names[s];
  }
  bool in_order = true;
  for (size_t i = 0; i < inventory.tensors.size(); ++i) {
    const uint32_t file = new_id[inventory.tensors[i].file];
    in_order = in_order && (i == 0 || inventory.tensors[i - 1].file <= file);
    inventory.tensors[i].file = file;
  }
  if (in_order) {
    return index_names;
  }
  // Each file's tensors are one run: a stable sort by file moves whole runs.
  std::vector<uint32_t> order(inventory.tensors.size());
  std::iota(order.begin(), order.end(), 0U);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return inventory.tensors[a].file < inventory.tensors[b].file;
  });
  inventory.renumbered = true;
  util::LargeVector<Tensor> tensors;
  tensors.reserve(order.size());
  for (const uint32_t id : order) {
    tensors.push_back(std::move(inventory.tensors[id]));
  }
  inventory.tensors = std::move(tensors);
  return index_names;
}

} // namespace

Result<Inventory>
read_inventory(const fs::path& dir, std::string display_dir, const InventoryOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) {
      return make_error(
          ErrorCode::io_error, display_dir, std::nullopt, "", "cannot read: " + ec.message());
    }
    return make_error(fs::exists(dir, ec) ? ErrorCode::not_a_directory : ErrorCode::io_error,
                      display_dir,
                      std::nullopt,
                      "",
                      fs::exists(dir, ec) ? "not a directory" : "no such directory");
  }
  if (!fs::exists(dir / "config.json", ec)) {
    return make_error(ErrorCode::missing_config,
                      display_dir,
                      std::nullopt,
                      "",
                      "no config.json: not a Hugging Face checkpoint directory");
  }
  Inventory inventory;
  inventory.dir = dir;
  inventory.display_dir = std::move(display_dir);
  // The index (20 MB on a 1T-parameter checkpoint) is parsed on a thread of its own while the
  // shard headers are read: the headers are read in file-name order, which needs nothing from it.
  std::future<Result<IndexFile>> index_job;
  if (fs::exists(dir / k_index_file_name, ec)) {
    inventory.has_index = true;
    index_job = std::async(std::launch::async, [&dir] {
      return read_index(dir / k_index_file_name, k_index_file_name);
    });
  }
  const auto take_index = [&]() -> Result<std::optional<IndexFile>> {
    if (!index_job.valid()) {
      return std::optional<IndexFile>();
    }
    QP_TRY_ASSIGN(IndexFile index, index_job.get());
    return std::optional<IndexFile>(std::move(index));
  };
  auto present = list_safetensors(dir, inventory.display_dir);
  if (!present) {
    auto index = take_index(); // an unreadable index is the first error, as before the listing
    return index ? present.take_error() : index.take_error();
  }
  for (const std::string& name : *present) {
    ShardFile file;
    file.name = name;
    inventory.files.push_back(std::move(file));
  }
  const auto consume = [&](size_t i, Result<safetensors::Header>& header) {
    const auto f = static_cast<uint32_t>(i);
    if (!header) {
      inventory.errors.push_back(header.take_error());
      return;
    }
    ShardFile& file = inventory.files[f];
    file.readable = true;
    if (inventory.tensors.empty()) {
      // Growing the list by doubling copies it and page-faults each new block: after the first
      // shard, reserve a generous guess (reserved pages that stay untouched cost no memory).
      inventory.tensors.reserve(header->tensors.size() * inventory.files.size() * 5 / 4 + 1024);
    }
    file.file_size = header->file_size;
    file.header_size = header->header_size;
    file.tensor_count = header->tensors.size();
    file.metadata = std::move(header->metadata);
    file.names = header->names;
    for (auto& entry : header->tensors) {
      inventory.tensors.push_back(
          Tensor{entry.name, f, entry.dtype, false, std::move(entry.shape)});
    }
    inventory.name_storage.push_back(std::move(header->name_storage));
    if (options.on_tensors) {
      options.on_tensors(inventory,
                         static_cast<uint32_t>(inventory.tensors.size() - file.tensor_count),
                         static_cast<uint32_t>(inventory.tensors.size()));
    }
  };
  read_headers_in_order(dir, *present, options.reader, consume, options.threads);
  QP_TRY_ASSIGN(std::optional<IndexFile> index, take_index());
  std::vector<util::NameSum> index_names;
  if (index) {
    index_names = order_files(inventory, *index);
  }
  for (const ShardFile& file : inventory.files) {
    if (!file.exists) {
      add_problem(inventory,
                  {ProblemCode::missing_file,
                   Severity::error,
                   file.name,
                   "",
                   "the index names this file but it does not exist (vLLM: \"Weight files "
                   "referenced in index but missing\")"});
    }
  }
  cross_check(inventory, index ? &*index : nullptr, index_names, options.name_sum_shortcut);
  return inventory;
}

} // namespace qpatch::checkpoint
