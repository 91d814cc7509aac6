// SPDX-License-Identifier: Apache-2.0
// transformers' dialect: compressed-tensors through the library's own matching
// (compressed-tensors ac8e2ba, quantization/lifecycle/apply.py and utils/match.py).
#include "engine/registry.hpp"

#include <qpatch/engine/dialect.hpp>

namespace qpatch::engine {

Dialect transformers_dialect(const EngineVersion& /*version*/, const ModelInfo& /*model*/) {
  Dialect dialect;
  dialect.engine_name = "transformers";
  // match.py is_match/_match_name/_match_class: a target or ignore entry names a module or its
  // class, and a fused name covers its shards (fused_aliases).
  dialect.compressed_tensors.library_matching = true;
  return dialect;
}

} // namespace qpatch::engine
