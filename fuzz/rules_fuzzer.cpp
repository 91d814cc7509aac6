// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the method rules where a config's pattern meets layer names, for every engine
// that reads it: a GPTQ `dynamic` key ("-:" and "+:"), an auto-round `extra_config` key, and a
// compressed-tensors `ignore` entry and target ("re:"). Input: a method byte, an engine byte,
// the pattern up to the first newline, then one checkpoint module name per line. The config is
// written as config.json and read as qpatch reads it; each name becomes a Linear layer as the
// engine names it. Properties: deciding never crashes or throws; a verdict is the same when the
// layer is decided again; and the regex budget is sticky: a layer once `undecidable` (its
// pattern gave up) stays so, it never turns into a verdict (issue 24: a GPTQ key out of budget
// used to give `quantized_untargeted` for layers it never decided).
#include "fuzz_check.hpp"

#include <qpatch/engine/auto_round_rules.hpp>
#include <qpatch/engine/compressed_tensors_rules.hpp>
#include <qpatch/engine/gptq_rules.hpp>
#include <qpatch/engine/model_info.hpp>
#include <qpatch/engine/pattern.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/quant/config_files.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using namespace qpatch;
using fuzz::check;
namespace fs = std::filesystem;

const fs::path& scratch_dir() {
  return fuzz::scratch_dir("rules-fuzz");
}

enum class Method { gptq_minus, gptq_plus, auto_round, ct_ignore, ct_target, count };

// The quantization_config that puts `pattern` where `method` reads one.
nlohmann::ordered_json config_for(Method method, const std::string& pattern) {
  nlohmann::ordered_json q;
  switch (method) {
  case Method::gptq_minus:
  case Method::gptq_plus:
    q = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"sym", true}};
    q["dynamic"][(method == Method::gptq_minus ? "-:" : "+:") + pattern] =
        nlohmann::ordered_json::object();
    break;
  case Method::auto_round:
    q = {{"quant_method", "auto-round"},
         {"bits", 4},
         {"group_size", 128},
         {"sym", true},
         {"data_type", "int"},
         {"packing_format", "auto_round:auto_gptq"}};
    q["extra_config"][pattern] = {{"bits", 16}, {"data_type", "fp"}};
    break;
  default: {
    const bool ignore = method == Method::ct_ignore;
    q = {{"quant_method", "compressed-tensors"}, {"format", "pack-quantized"}};
    q["ignore"] = ignore ? nlohmann::ordered_json::array({"re:" + pattern})
                         : nlohmann::ordered_json::array({"lm_head"});
    q["config_groups"]["group_0"] = {
        {"targets",
         ignore ? nlohmann::ordered_json::array({"Linear"})
                : nlohmann::ordered_json::array({"re:" + pattern})},
        {"weights", {{"num_bits", 4}, {"type", "int"}, {"strategy", "group"}, {"group_size", 128}}},
        {"format", "pack-quantized"}};
  }
  }
  return {{"architectures", {"Qwen3_5ForConditionalGeneration"}}, {"quantization_config", q}};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) {
    return 0;
  }
  const auto method = static_cast<Method>(data[0] % static_cast<uint8_t>(Method::count));
  static const engine::Engine k_engines[] = {
      engine::Engine::vllm, engine::Engine::sglang, engine::Engine::transformers};
  const engine::EngineVersion version = engine::newest_version(k_engines[data[1] % 3]);
  const std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t newline = input.find('\n');
  const std::string pattern(input.substr(0, newline));
  if (!fuzz::valid_utf8(pattern) || pattern.size() > limits::k_max_name_size) {
    return 0; // a config holds valid UTF-8 (the strict reader refuses the rest)
  }
  std::vector<std::string> names;
  for (size_t start = newline; start != std::string_view::npos && names.size() < 16;) {
    const size_t next = input.find('\n', start + 1);
    const std::string_view name = input.substr(start + 1, next - start - 1);
    if (!name.empty() && fuzz::valid_utf8(name) && name.size() <= limits::k_max_name_size) {
      names.emplace_back(name);
    }
    start = next;
  }
  engine::Pattern::forget_compiled(); // each input is a run of its own
  {
    std::ofstream out(scratch_dir() / "config.json", std::ios::binary | std::ios::trunc);
    out << config_for(method, pattern).dump(2);
    check(out.good(), "writing the scratch config.json");
  }
  const auto set = quant::load_config_files(scratch_dir());
  check(set.ok(), "the config written is read");
  const quant::ConfigFile* active = set->active();
  check(active != nullptr, "the config written has a quantization_config");

  const engine::ModelInfo model = engine::naming_of(version, "Qwen3_5ForConditionalGeneration", 0);
  std::vector<engine::Layer> layers;
  for (const std::string& name : names) {
    engine::Layer layer;
    layer.name = name;
    layer.prefix = version.engine == engine::Engine::vllm ? model.to_vllm(name) : name;
    layer.cls = "RowParallelLinear";
    layers.push_back(std::move(layer));
  }
  std::function<engine::Decision(const engine::Layer&)> decide;
  std::optional<engine::GptqRules> gptq;
  std::optional<engine::AutoRoundRules> auto_round;
  std::optional<engine::CompressedTensorsRules> ct;
  if (method == Method::gptq_minus || method == Method::gptq_plus) {
    const auto config = quant::read_gptq(*active);
    if (!config.ok()) {
      check(!config.error().message.empty(), "a refused GPTQ config says why");
      return 0;
    }
    gptq.emplace(*config, model, engine::GptqHeaders{}, version);
    decide = [&](const engine::Layer& layer) { return gptq->decide(layer); };
  } else if (method == Method::auto_round) {
    const auto config = quant::read_auto_round(*active);
    if (!config.ok()) {
      check(!config.error().message.empty(), "a refused auto-round config says why");
      return 0;
    }
    auto_round.emplace(*config, model, version, &layers);
    decide = [&](const engine::Layer& layer) { return auto_round->decide(layer); };
  } else {
    const auto config = quant::read_compressed_tensors(*active);
    if (!config.ok()) {
      check(!config.error().message.empty(), "a refused compressed-tensors config says why");
      return 0;
    }
    ct.emplace(*config, model, version);
    decide = [&](const engine::Layer& layer) { return ct->decide(layer); };
  }
  std::vector<engine::Decision> first;
  for (const engine::Layer& layer : layers) {
    first.push_back(decide(layer));
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const engine::Decision again = decide(layers[i]);
    if (first[i].by == engine::DecidedBy::undecidable) {
      check(again.by == engine::DecidedBy::undecidable, "an undecidable layer stays undecidable");
    } else if (again.by != engine::DecidedBy::undecidable) {
      check(again.verdict == first[i].verdict && again.by == first[i].by,
            "a layer decided again gets the same verdict");
    }
  }
  return 0;
}
