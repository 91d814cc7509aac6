// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/open.hpp>

namespace qpatch::checkpoint {

Result<Opened>
open(const std::filesystem::path& dir, const std::string& display, const OpenOptions& options) {
  Opened opened;
  ModuleBuilder builder; // groups modules while later headers are read
  QP_TRY_ASSIGN(opened.inventory, read_inventory(dir, display, builder));
  opened.modules = builder.finish(opened.inventory);
  if (options.read_configs) {
    auto configs = quant::load_config_files(dir);
    if (configs) {
      opened.configs = configs.take_value();
    } else {
      opened.config_error = configs.take_error();
    }
  }
  return opened;
}

} // namespace qpatch::checkpoint
