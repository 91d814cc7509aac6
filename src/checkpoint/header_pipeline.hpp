// SPDX-License-Identifier: Apache-2.0
// Reads many shard headers on worker threads and hands them to the caller one by one, in file
// order, on the caller's thread. Parsing ~26 MB of header JSON is the largest single cost of
// `qpatch --check` on a 1T-parameter checkpoint; the hand-off in order keeps the result (and
// every error message) identical to a sequential read, and keeps at most a few parsed headers
// waiting at a time, so peak memory stays that of a sequential read. Private to src/.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace qpatch::checkpoint {

// Read the header of `dir / names[i]` for every i, calling `consume(i, result)` for i = 0, 1, ...
// in order on this thread. `consume` moves out what it keeps; the header's entry list, whatever
// it still holds, goes back to the readers to be refilled. `threads` caps the workers (0: one
// per hardware thread).
using HeaderConsumer = std::function<void(size_t, Result<safetensors::Header>&)>;
void read_headers_in_order(const std::filesystem::path& dir,
                           const std::vector<std::string>& names,
                           const safetensors::ReaderOptions& options,
                           const HeaderConsumer& consume,
                           unsigned threads = 0);

} // namespace qpatch::checkpoint
