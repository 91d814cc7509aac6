// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the config reader. The input is written as config.json into a scratch directory
// and read as qpatch reads it (quant::load_config_files: strict JSON, the quantization_config
// shape checks); an accepted config's quantization config is then read by every method's reader
// (compressed-tensors, GPTQ, AutoRound/INC), whatever it declares, as a fuzzed config may
// declare anything. Properties: no crash, every refusal names config.json and says why, and the
// file's bytes come back unchanged in ConfigFile::text (edits splice into them).
#include "fuzz_check.hpp"

#include <qpatch/json/strict_json.hpp>
#include <qpatch/quant/auto_round.hpp>
#include <qpatch/quant/compressed_tensors.hpp>
#include <qpatch/quant/config_files.hpp>
#include <qpatch/quant/gptq.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

namespace {

using qpatch::fuzz::check;
namespace fs = std::filesystem;

// One scratch directory per process, removed at exit.
const fs::path& scratch_dir() {
  return qpatch::fuzz::scratch_dir("config-fuzz");
}

void check_refusal(const qpatch::Error& error) {
  check(!error.message.empty(), "an error says why");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream out(scratch_dir() / "config.json", std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    check(out.good(), "writing the scratch config.json");
  }
  // The parts that read any JSON text, on their own.
  const auto parsed = qpatch::json::parse_strict(text, "config.json");
  if (!parsed.ok()) {
    check_refusal(parsed.error());
    check(parsed.error().path == "config.json", "a parse error names the file");
  }
  (void)qpatch::json::find_negative_zero_in_tensor_fields(text);

  const auto set = qpatch::quant::load_config_files(scratch_dir());
  if (!set.ok()) {
    check_refusal(set.error());
    check(set.error().path == "config.json", "a refusal names config.json");
    return 0;
  }
  check(parsed.ok(), "load_config_files accepts only what parse_strict accepts");
  check(set->files.size() == 1 && set->files[0].text == text, "the original bytes are kept");
  const qpatch::quant::ConfigFile* active = set->active();
  if (active == nullptr) {
    return 0;
  }
  check(active->config().is_object(), "the active config is an object");
  (void)qpatch::quant::declared_method(*active);
  (void)qpatch::quant::quant_method(active->config());
  if (const auto ct = qpatch::quant::read_compressed_tensors(*active); !ct.ok()) {
    check_refusal(ct.error());
  }
  if (const auto gptq = qpatch::quant::read_gptq(*active); !gptq.ok()) {
    check_refusal(gptq.error());
  } else if (gptq->modules_in_block) {
    check(gptq->modules_in_block->size() == gptq->list_entries.size(),
          "one location per GPTQ list entry");
  }
  if (const auto inc = qpatch::quant::read_auto_round(*active); !inc.ok()) {
    check_refusal(inc.error());
  }
  return 0;
}
