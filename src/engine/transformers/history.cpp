// SPDX-License-Identifier: Apache-2.0
// transformers' history as qpatch models it: one version, the compressed-tensors library's
// matching at ac8e2ba (2026-08-06) under transformers' quantizer.
#include <qpatch/engine/versions.hpp>

namespace qpatch::engine {

namespace {

History make_transformers_history() {
  History h;
  h.name = "transformers";
  h.display_name = "transformers";
  h.column = "tf";
  h.methods = "compressed-tensors";
  h.rules = "transformers + compressed-tensors ac8e2ba";
  h.engine = Engine::transformers;
  h.first = "2026-08-06";
  h.newest_commit = "ac8e2ba";
  h.newest_date = "2026-08-06";
  return h;
}

} // namespace

const History& transformers_history() {
  static const History h = make_transformers_history();
  return h;
}

} // namespace qpatch::engine
