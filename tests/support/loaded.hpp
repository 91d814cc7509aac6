// SPDX-License-Identifier: Apache-2.0
// A checkpoint directory read as the CLI reads it (inventory, modules, config files), for tests
// of the library's diagnose/, plan/ and report/ without the CLI around them.
#pragma once

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/quant/config_files.hpp>

#include <filesystem>

namespace qpatch::test {

struct Loaded {
  checkpoint::Inventory inventory;
  checkpoint::ModuleList modules;
  quant::ConfigSet configs;
};

// Read `dir` (shown as "DIR" in messages); a failed read fails the calling test.
Loaded load_checkpoint(const std::filesystem::path& dir);

} // namespace qpatch::test
