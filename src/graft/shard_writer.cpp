// SPDX-License-Identifier: Apache-2.0
#include <qpatch/commit/interrupt.hpp>
#include <qpatch/graft/shard_writer.hpp>
#include <qpatch/json/strict_json.hpp>
#include <qpatch/util/file_descriptor.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <memory>
#include <optional>

namespace qpatch::graft {
namespace {

// 4 MiB: large enough that a syscall's cost vanishes against the bytes it moves, small enough
// that peak memory stays a few MB whatever the shard size (the budget is 64 MB).
constexpr size_t k_chunk_size = size_t{4} << 20;

// A signal the caller holds off (commit_graft's InterruptGuard) stops a copy or a hash between
// chunks: a real head is hundreds of MB, and the temp files are removed as the error unwinds.
constexpr uint64_t k_kernel_chunk_size = uint64_t{64} << 20;

std::optional<Error> interrupted(const std::string& display) {
  if (const int sig = commit::take_interrupt(); sig != 0) {
    return make_error(ErrorCode::write_failed,
                      display,
                      std::nullopt,
                      "",
                      "interrupted by " + commit::signal_name(sig) + "; nothing was changed");
  }
  return std::nullopt;
}

Error io_failure(const std::string& display, const std::string& what) {
  return make_error(ErrorCode::write_failed,
                    display,
                    std::nullopt,
                    "",
                    what + ": " + std::strerror(errno) + "; nothing was changed");
}

std::string json_string(const std::string& text) {
  return json::Json(text).dump();
}

std::string header_json(const ShardLayout& layout) {
  std::string out = "{";
  bool first = true;
  if (!layout.metadata.empty()) {
    out += "\"__metadata__\":{";
    for (size_t i = 0; i < layout.metadata.size(); ++i) {
      out += (i == 0 ? "" : ",") + json_string(layout.metadata[i].first) + ":" +
             json_string(layout.metadata[i].second);
    }
    out += "}";
    first = false;
  }
  uint64_t offset = 0;
  for (const TensorCopy& tensor : layout.tensors) {
    out += (first ? "" : ",") + json_string(tensor.name) + ":{\"dtype\":\"" +
           std::string(safetensors::to_string(tensor.dtype)) + "\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i) {
      out += (i == 0 ? "" : ",") + std::to_string(tensor.shape[i]);
    }
    out += "],\"data_offsets\":[" + std::to_string(offset) + "," +
           std::to_string(offset + tensor.size) + "]}";
    offset += tensor.size;
    first = false;
  }
  out += "}";
  // The reference writer pads the header with spaces so the data start 8-aligned.
  out.append((8 - out.size() % 8) % 8, ' ');
  return out;
}

bool write_all(int fd, const char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// Read exactly `size` bytes at `offset`; false on error or early end of file.
bool read_all(int fd, char* data, size_t size, uint64_t offset) {
  while (size > 0) {
    const ssize_t n = ::pread(fd, data, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      if (n == 0) {
        errno = EIO;
      }
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// Copy through the kernel while it accepts; return how many bytes it moved, or -1 on a hard
// error. A file system or kernel that cannot (EXDEV, EINVAL, ENOSYS, EOPNOTSUPP) returns what it
// moved so far, and the caller copies the rest itself.
int64_t kernel_copy(int in_fd, uint64_t in_offset, int out_fd, uint64_t out_offset, uint64_t size) {
  auto in = static_cast<loff_t>(in_offset);
  auto out = static_cast<loff_t>(out_offset);
  uint64_t done = 0;
  while (done < size) {
    if (commit::pending_interrupt() != 0) {
      break; // the caller's check reports it
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(size - done, k_kernel_chunk_size));
    const ssize_t n = ::copy_file_range(in_fd, &in, out_fd, &out, want, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
      break;
    }
    if (n < 0) {
      return -1;
    }
    if (n == 0) {
      break; // end of the source: the caller's read reports it
    }
    done += static_cast<uint64_t>(n);
  }
  return static_cast<int64_t>(done);
}

} // namespace

std::string encode_header(const ShardLayout& layout) {
  const std::string json = header_json(layout);
  std::string out(8, '\0');
  const uint64_t size = json.size();
  for (size_t i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((size >> (8 * i)) & 0xFF);
  }
  return out + json;
}

uint64_t shard_size(const ShardLayout& layout) {
  uint64_t size = encode_header(layout).size();
  for (const TensorCopy& tensor : layout.tensors) {
    size += tensor.size;
  }
  return size;
}

namespace {

// Split `layout`'s tensors into runs that sit back to back both in their source and in the new
// shard: a rewrite keeps most of a shard in order, so its thousands of tensors (a GPTQ shard's
// qweight/scales/qzeros/g_idx of ~1 MiB each) become a few ranges. One copy_file_range per tensor
// at offsets that are not page-aligned costs 2x a plain copy of the same bytes on ext4 (measured
// with bench/graft_bench.sh, KEPT_MB=5500: 5,525 tensors took 11.3 s to copy, one range 4.2 s).
std::vector<std::pair<size_t, size_t>> contiguous_runs(const std::vector<TensorCopy>& tensors) {
  std::vector<std::pair<size_t, size_t>> runs; // [first, last) indices
  for (size_t i = 0; i < tensors.size();) {
    size_t j = i + 1;
    while (j < tensors.size() && tensors[j].source == tensors[j - 1].source &&
           tensors[j].source_offset == tensors[j - 1].source_offset + tensors[j - 1].size) {
      ++j;
    }
    runs.emplace_back(i, j);
    i = j;
  }
  return runs;
}

// The name of the tensor holding byte `at` of a run starting at tensor `first`, for errors.
const std::string& tensor_at(const std::vector<TensorCopy>& tensors, size_t first, uint64_t at) {
  size_t i = first;
  for (uint64_t begin = 0; i + 1 < tensors.size() && at >= begin + tensors[i].size; ++i) {
    begin += tensors[i].size;
  }
  return tensors[i].name;
}

} // namespace

Result<CopyStats> write_shard(int out_fd,
                              const ShardLayout& layout,
                              const std::vector<int>& source_fds,
                              const std::string& display,
                              const Progress& progress) {
  const std::string header = encode_header(layout);
  if (!write_all(out_fd, header.data(), header.size(), 0)) {
    return io_failure(display, "cannot write the header");
  }
  const std::vector<TensorCopy>& tensors = layout.tensors;
  CopyStats stats;
  uint64_t total = 0;
  for (const TensorCopy& tensor : tensors) {
    total += tensor.size;
  }
  std::unique_ptr<char[]> buffer;
  uint64_t out_offset = header.size();
  for (const auto& [first, last] : contiguous_runs(tensors)) {
    const int in_fd = source_fds.at(tensors[first].source);
    const uint64_t in_offset = tensors[first].source_offset;
    uint64_t size = 0;
    for (size_t i = first; i < last; ++i) {
      size += tensors[i].size;
    }
    const int64_t moved = kernel_copy(in_fd, in_offset, out_fd, out_offset, size);
    if (moved < 0) {
      return io_failure(display, "cannot copy tensor '" + tensor_at(tensors, first, 0) + "'");
    }
    stats.kernel_bytes += static_cast<uint64_t>(moved);
    for (uint64_t done = static_cast<uint64_t>(moved); done < size;) {
      if (auto error = interrupted(display); error) {
        return *error;
      }
      if (!buffer) {
        buffer = std::make_unique<char[]>(k_chunk_size);
      }
      const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, k_chunk_size));
      if (!read_all(in_fd, buffer.get(), n, in_offset + done) ||
          !write_all(out_fd, buffer.get(), n, out_offset + done)) {
        return io_failure(display, "cannot copy tensor '" + tensor_at(tensors, first, done) + "'");
      }
      done += n;
      stats.userspace_bytes += n;
    }
    if (auto error = interrupted(display); error) {
      return *error;
    }
    out_offset += size;
    stats.bytes += size;
    if (progress) {
      progress(stats.bytes, total);
    }
  }
  if (::ftruncate(out_fd, static_cast<off_t>(out_offset)) != 0 || ::fsync(out_fd) != 0) {
    return io_failure(display, "cannot fsync the new shard");
  }
  return stats;
}

Result<uint64_t> hash_range(int fd, uint64_t offset, uint64_t size, const std::string& display) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  if (!state || XXH3_64bits_reset(state.get()) != XXH_OK) {
    return make_error(ErrorCode::internal, display, std::nullopt, "", "cannot start a hash");
  }
  const size_t buffer_size = static_cast<size_t>(std::min<uint64_t>(size, k_chunk_size));
  std::unique_ptr<char[]> buffer(new char[buffer_size == 0 ? 1 : buffer_size]);
  for (uint64_t done = 0; done < size;) {
    if (auto error = interrupted(display); error) {
      return *error;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(size - done, buffer_size));
    if (!read_all(fd, buffer.get(), n, offset + done)) {
      return make_error(ErrorCode::io_error,
                        display,
                        offset + done,
                        "",
                        std::string("cannot read: ") + std::strerror(errno));
    }
    XXH3_64bits_update(state.get(), buffer.get(), n);
    done += n;
  }
  return static_cast<uint64_t>(XXH3_64bits_digest(state.get()));
}

Status verify_shard(const std::filesystem::path& file,
                    const std::string& display,
                    const ShardLayout& layout,
                    const std::vector<int>& source_fds,
                    const std::vector<std::string>& source_names) {
  const auto failed = [&](const std::string& subject, const std::string& message) {
    return make_error(ErrorCode::internal, display, std::nullopt, subject, message);
  };
  safetensors::HeaderParser parser;
  QP_TRY_ASSIGN(const safetensors::Header header, parser.read(file, display));
  if (header.tensors.size() != layout.tensors.size()) {
    return failed("",
                  "the written header lists " + std::to_string(header.tensors.size()) +
                      " tensors, not " + std::to_string(layout.tensors.size()));
  }
  const util::FileDescriptor opened(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (opened.get() < 0) {
    return make_error(ErrorCode::io_error, display, std::nullopt, "", std::strerror(errno));
  }
  const int fd = opened.get();
  uint64_t offset = 0;
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const TensorCopy& want = layout.tensors[i];
    const safetensors::TensorEntry& got = header.tensors[i];
    if (got.name != want.name || got.dtype != want.dtype || !(got.shape == want.shape) ||
        got.begin != offset || got.end != offset + want.size) {
      return failed(want.name, "the written header does not hold it as planned");
    }
    offset += want.size;
  }
  // The written side and the sources are hashed at once, each on its own core: the re-read is
  // the one pass graft adds to what `cp` does, and on a multi-GB shard it is ~2.5 s one after
  // the other (bench/graft_bench.sh, KEPT_MB=5500).
  auto written_side = std::async(std::launch::async, [&]() -> Result<std::vector<uint64_t>> {
    std::vector<uint64_t> hashes;
    for (size_t i = 0; i < layout.tensors.size(); ++i) {
      QP_TRY_ASSIGN(
          const uint64_t hash,
          hash_range(
              fd, header.data_start() + header.tensors[i].begin, layout.tensors[i].size, display));
      hashes.push_back(hash);
    }
    return hashes;
  });
  std::vector<uint64_t> sources;
  std::optional<Error> source_error;
  for (const TensorCopy& want : layout.tensors) {
    auto hash = hash_range(
        source_fds.at(want.source), want.source_offset, want.size, source_names.at(want.source));
    if (!hash) {
      source_error = hash.error();
      break;
    }
    sources.push_back(*hash);
  }
  auto written = written_side.get();
  if (!written) {
    return written.error();
  }
  if (source_error) {
    return *source_error;
  }
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    if ((*written)[i] != sources[i]) {
      const TensorCopy& want = layout.tensors[i];
      return failed(want.name,
                    "the written bytes differ from the bytes in " + source_names.at(want.source));
    }
  }
  return ok_status();
}

} // namespace qpatch::graft
