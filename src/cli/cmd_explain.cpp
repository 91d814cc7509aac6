// SPDX-License-Identifier: Apache-2.0
// `qpatch explain DIR MODULE`: every rule that decides one module, and the verdict.
#include "commands.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/diagnose/explain.hpp>
#include <qpatch/quant/config_files.hpp>

namespace qpatch::cli {

CLI::App* setup_explain(CLI::App& app, ExplainOptions& options) {
  CLI::App* cmd = app.add_subcommand(
      "explain", "Show every rule that decides one module's verdict, in the engine's order");
  cmd->add_option("DIR", options.dir, "Checkpoint directory")->required();
  cmd->add_option("MODULE",
                  options.module,
                  "A checkpoint module name (mtp.fc) or an engine layer name (…qkv_proj)")
      ->required();
  cmd->add_option("--engine",
                  options.engine,
                  "vllm|sglang|transformers|all: whose rules to trace (default: all; methods "
                  "other than compressed-tensors model vLLM's only)")
      ->check(CLI::IsMember({"vllm", "sglang", "transformers", "all"}));
  return cmd;
}

ExitCode run_explain(const ExplainOptions& options, Io& io) {
  checkpoint::ModuleBuilder modules_builder; // groups modules while later headers are read
  auto inventory = checkpoint::read_inventory(options.dir, options.dir, modules_builder);
  if (!inventory) {
    io.err << "qpatch: error: " << inventory.error().to_string() << "\n";
    return ExitCode::invalid_input;
  }
  if (!inventory->errors.empty()) {
    io.err << "qpatch: error: " << inventory->errors.front().to_string() << "\n";
    return ExitCode::invalid_input;
  }
  auto configs = quant::load_config_files(options.dir);
  if (!configs) {
    io.err << "qpatch: error: " << configs.error().to_string() << "\n";
    return ExitCode::invalid_input;
  }
  const auto modules = modules_builder.finish(*inventory);
  auto explanation = diagnose::explain(
      *inventory,
      modules,
      *configs,
      options.module,
      engine::EngineSet::parse(options.engine).value_or(engine::EngineSet::all()));
  if (!explanation) {
    io.err << "qpatch: error: " << explanation.error().to_string() << "\n";
    return explanation.error().code == ErrorCode::unknown_module ? ExitCode::usage
                                                                 : ExitCode::invalid_input;
  }
  io.out << options.module << "\n";
  for (const auto& [label, text] : explanation->lines) {
    std::string padded = label;
    padded.resize(std::max<size_t>(padded.size() + 1, 13), ' ');
    io.out << "  " << padded << text << "\n";
  }
  return explanation->consistent ? ExitCode::ok : ExitCode::findings;
}

} // namespace qpatch::cli
