// SPDX-License-Identifier: Apache-2.0
// Fuzz target: checkpoint::parse_index on the text of a model.safetensors.index.json.
// Properties: every shard an accepted index names is a safe file name, every entry points at one
// of them and is found again by name, and the plain-JSON fast path gives the same outcome as the
// general path.
#include "fuzz_check.hpp"
#include "parse_outcome.hpp"

#include <qpatch/checkpoint/index_file.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace {

using qpatch::fuzz::check;
using qpatch::fuzz::outcome;
namespace cp = qpatch::checkpoint;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto result = cp::parse_index(text, cp::k_index_file_name);
  if (result.ok()) {
    for (const std::string& shard : result->shards) {
      check(cp::unsafe_shard_name_reason(shard).empty(), "every shard name is safe");
    }
    check(result->shard_names.size() == result->shards.size(), "one name sum per shard");
    for (uint32_t id = 0; id < result->entries.size(); ++id) {
      const cp::IndexEntry& entry = result->entries[id];
      check(entry.shard < result->shards.size(), "an entry points at a listed shard");
      const auto found = result->find(entry.tensor);
      check(found.has_value() && *found == id, "an entry is found by its name");
    }
  } else {
    check(!result.error().message.empty(), "an error says why");
    check(result.error().path == cp::k_index_file_name, "an error names the file");
  }
  const auto reference = cp::parse_index(text, cp::k_index_file_name, false);
  check(outcome(result) == outcome(reference), "the fast path agrees with the general path");
  return 0;
}
