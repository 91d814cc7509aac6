// SPDX-License-Identifier: Apache-2.0
// The graft as data, computed and verified before anything is written: the new shard holding
// DONOR's tensors (dtypes as DONOR stores them), each DIR shard that loses tensors (dropped
// when it held nothing else, else rewritten under a new name, since vLLM reads every tensor of
// every file the index names and the old name must keep its bytes until the index switches),
// the new index (weight_map and metadata.total_size, the sum of tensor bytes as the HF writers
// compute it), and the config edits: what DIR's config.json lost with the head
// (graft/config_repair), and the quantization config patch that makes the grafted modules dense for
// every judged engine, from the same diagnose/plan path as `qpatch DIR`, judged on the checkpoint
// as it will be.
#pragma once

#include <qpatch/commit/transaction.hpp>
#include <qpatch/diagnose/diagnose.hpp>
#include <qpatch/graft/config_repair.hpp>
#include <qpatch/graft/selection.hpp>
#include <qpatch/graft/shard_writer.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace qpatch::graft {

enum class ShardAction { rewrite, drop };
std::string_view to_string(ShardAction action);

struct ShardChange {
  std::string file; // the DIR shard that loses tensors
  ShardAction action = ShardAction::rewrite;
  std::string new_file;             // rewrite: the name of its replacement
  std::vector<std::string> removed; // tensor names leaving it
  size_t kept = 0;                  // tensors it keeps
};

struct SourceFile {
  std::filesystem::path path;
  std::string display;
};

struct ConfigEdit {
  std::string file;
  std::string before; // the bytes on disk
  std::string after;
  std::vector<std::string> added;
  std::vector<std::string> removed;
};

struct GraftPlan {
  std::vector<Selected> modules;
  std::vector<SourceFile> sources;     // files tensor bytes are copied from
  std::vector<ShardLayout> new_shards; // the grafted shard first, then the rewritten ones
  std::vector<ShardChange> shard_changes;
  std::string head_file;           // the grafted shard's name
  std::vector<ConfigEdit> configs; // config.json and sidecars that change
  ConfigRepair config_repair;      // keys put back from DONOR's config.json
  commit::WriteRequest index;      // model.safetensors.index.json
  // DIR had no index (a single-file checkpoint): the graft first creates `index.before`, an
  // index naming the file as it is (graft_plan.cpp identity_index), then edits it as any index;
  // the record lists it as created, so `restore` removes it.
  bool index_created = false;
  size_t index_removed = 0;
  size_t index_added = 0;
  uint64_t total_size_before = 0; // the index's claim
  uint64_t total_size_after = 0;
  uint64_t bytes_to_copy = 0; // tensor bytes the new shards hold
  uint64_t disk_needed = 0;   // bytes of every file written
  uint64_t disk_free = 0;

  bool empty() const { return modules.empty(); }
  // Return the index first, then the config files: the index is the switch (an engine loads the
  // files it names), so renaming it first is the commit point.
  std::vector<commit::WriteRequest> json_writes() const;
};

struct PlanOptions {
  std::optional<engine::Pattern> only;
  diagnose::DiagnoseOptions diagnose;
  // Return the bytes free for an unprivileged writer in a directory (statvfs); tests replace it.
  std::function<std::optional<uint64_t>(const std::filesystem::path&)> free_space;
};

// Plan the graft of DONOR's modules into DIR. Refusals (graft_refused, no_space) name the
// module, both files and both shapes, or the bytes needed.
Result<GraftPlan>
plan_graft(const Checkpoint& dir, const Checkpoint& donor, const PlanOptions& options);

// Return the bytes free for an unprivileged writer under `dir`.
std::optional<uint64_t> statvfs_free_space(const std::filesystem::path& dir);

} // namespace qpatch::graft
