// SPDX-License-Identifier: Apache-2.0
// In-process stages on one 1T-parameter-class shard header and on the whole synthetic layout.
#include "synth/synthetic_checkpoint.hpp"

#include <qpatch/checkpoint/inventory.hpp>
#include <qpatch/checkpoint/module.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

namespace {

// One shard of the Kimi-K2 layout held in memory (its header only; the data is never read).
std::string kimi_shard_header() {
  const auto spec = qpatch::synth::kimi_k2_w4a16(64);
  uint64_t data_size = 0;
  return qpatch::synth::header_prefix(spec.shards[1].tensors, data_size);
}

void parse_one_shard_header(benchmark::State& state) {
  const std::string prefix = kimi_shard_header();
  // A file of exactly the header and a data section of the declared size is needed; parse the
  // prefix as if followed by its data by giving the parser the header-only validation path.
  uint64_t data_size = 0;
  const auto spec = qpatch::synth::kimi_k2_w4a16(64);
  (void)qpatch::synth::header_prefix(spec.shards[1].tensors, data_size);
  const auto dir = std::filesystem::temp_directory_path() / "qpatch-reader-bench";
  std::filesystem::create_directories(dir);
  (void)qpatch::synth::write_shard(dir / "s.safetensors", spec.shards[1].tensors);
  qpatch::safetensors::HeaderParser parser;
  for (auto _ : state) {
    auto header = parser.read(dir / "s.safetensors", "s.safetensors");
    benchmark::DoNotOptimize(header);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(prefix.size()));
  std::filesystem::remove_all(dir);
}
BENCHMARK(parse_one_shard_header)->Unit(benchmark::kMillisecond);

void inventory_and_modules(benchmark::State& state) {
  const auto dir = std::filesystem::temp_directory_path() / "qpatch-inventory-bench";
  (void)qpatch::synth::write_checkpoint(dir, qpatch::synth::kimi_k2_w4a16(64));
  for (auto _ : state) {
    auto inventory = qpatch::checkpoint::read_inventory(dir, "kimi");
    auto modules = qpatch::checkpoint::build_modules(*inventory);
    benchmark::DoNotOptimize(modules);
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(inventory_and_modules)->Unit(benchmark::kMillisecond)->Iterations(5);

} // namespace

BENCHMARK_MAIN();
