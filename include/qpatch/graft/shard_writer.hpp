// SPDX-License-Identifier: Apache-2.0
// Writing a safetensors shard whose tensors are byte ranges of other files, without ever holding
// a shard in memory: the header is built here (the reference writer's layout, padded with spaces
// so the data start is a multiple of 8), then the tensors' bytes are copied with copy_file_range
// (which reflinks where the file system can), one range per run of tensors that are back to back
// in their source, falling back to a bounded pread/pwrite loop. Verification re-reads the written
// header through the reader's validation and compares every tensor's XXH3 hash with its
// source's, streaming, the two sides hashed at once. Which tensors go where is
// decided by graft/graft_plan; committing the files is graft/graft_commit's.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace qpatch::graft {

struct TensorCopy {
  std::string name;
  safetensors::Dtype dtype{};
  safetensors::Shape shape;
  uint32_t source = 0;        // index into the caller's source files
  uint64_t source_offset = 0; // absolute byte offset of the data in that file
  uint64_t size = 0;          // bytes
};

struct ShardLayout {
  std::string file; // the name it is committed under, relative to the checkpoint
  std::vector<std::pair<std::string, std::string>> metadata; // __metadata__, in order
  std::vector<TensorCopy> tensors;                           // in data order
};

// Return the first 8 + N bytes of the shard: length prefix and header JSON.
std::string encode_header(const ShardLayout& layout);
// Return the size the whole shard will have.
uint64_t shard_size(const ShardLayout& layout);

// Called with the bytes copied so far and the total, after each range (a run of tensors).
using Progress = std::function<void(uint64_t done, uint64_t total)>;

struct CopyStats {
  uint64_t bytes = 0;           // tensor bytes copied
  uint64_t kernel_bytes = 0;    // of which copy_file_range moved (or reflinked)
  uint64_t userspace_bytes = 0; // of which went through the bounded buffer
};

// Write `layout` into the empty file open as `out_fd`, reading tensors from `source_fds`; fsync
// it. `display` names the file in errors.
Result<CopyStats> write_shard(int out_fd,
                              const ShardLayout& layout,
                              const std::vector<int>& source_fds,
                              const std::string& display,
                              const Progress& progress = {});

// Check the written file at `file`: its header passes the reader's validation and lists exactly
// the layout's tensors at the planned offsets, and every tensor's bytes hash as its source's.
Status verify_shard(const std::filesystem::path& file,
                    const std::string& display,
                    const ShardLayout& layout,
                    const std::vector<int>& source_fds,
                    const std::vector<std::string>& source_names);

// Return the XXH3-64 of `size` bytes of `fd` from `offset`, read in bounded chunks.
Result<uint64_t> hash_range(int fd, uint64_t offset, uint64_t size, const std::string& display);

} // namespace qpatch::graft
