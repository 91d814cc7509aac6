// SPDX-License-Identifier: Apache-2.0
// Opening a checkpoint: the one read step every subcommand and graft share. The headers are read
// in parallel while the modules are grouped (ModuleBuilder), then the config files; each caller
// decides what an unreadable shard or config means for it (fix reports it as the checkpoint's
// error, inspect still shows the disk without verdicts).
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/error.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace qpatch::checkpoint {

struct Opened {
  Inventory inventory;               // inventory.errors: shards that could not be read
  ModuleList modules;                // grouped from every tensor read
  quant::ConfigSet configs;          // empty when not read or unreadable
  std::optional<Error> config_error; // why the config files could not be read
};

struct OpenOptions {
  // inspect --summary and --json read the headers only: the configs are not opened.
  bool read_configs = true;
};

// Read `dir` (named `display` in messages). The error is the directory's own (missing, not a
// checkpoint); everything below it is in Opened for the caller to judge.
Result<Opened>
open(const std::filesystem::path& dir, const std::string& display, const OpenOptions& options = {});

} // namespace qpatch::checkpoint
