// SPDX-License-Identifier: Apache-2.0
#include "support/loaded.hpp"

#include <gtest/gtest.h>

namespace qpatch::test {

Loaded load_checkpoint(const std::filesystem::path& dir) {
  Loaded loaded;
  checkpoint::ModuleBuilder builder;
  auto inventory = checkpoint::read_inventory(dir, "DIR", builder);
  EXPECT_TRUE(inventory.ok());
  if (!inventory.ok()) {
    return loaded;
  }
  auto configs = quant::load_config_files(dir);
  EXPECT_TRUE(configs.ok());
  if (!configs.ok()) {
    return loaded;
  }
  loaded.inventory = inventory.take_value();
  loaded.modules = builder.finish(loaded.inventory);
  loaded.configs = configs.take_value();
  return loaded;
}

} // namespace qpatch::test
