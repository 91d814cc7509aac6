// SPDX-License-Identifier: Apache-2.0
#include <qpatch/graft/same_bytes.hpp>
#include <qpatch/graft/shard_writer.hpp>
#include <qpatch/safetensors/reader.hpp>
#include <qpatch/util/file_descriptor.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace qpatch::graft {
namespace {

struct Located {
  std::string path;    // as the user would open it, for errors
  uint64_t offset = 0; // of the tensor's first data byte in its file
  uint64_t size = 0;
};

// Where each of `module`'s tensors' data sits, by parameter name.
Result<std::map<std::string, Located>> locate(const Checkpoint& checkpoint, uint32_t m) {
  const checkpoint::Module& module = checkpoint.modules[m];
  std::map<uint32_t, std::vector<uint32_t>> by_file;
  for (const uint32_t t : module.tensors) {
    by_file[checkpoint.inventory.tensors[t].file].push_back(t);
  }
  std::map<std::string, Located> out;
  for (const auto& [file, tensors] : by_file) {
    const std::string& name = checkpoint.inventory.files[file].name;
    const std::string display = checkpoint.display.empty() ? name : checkpoint.display + "/" + name;
    safetensors::HeaderParser parser;
    QP_TRY_ASSIGN(const safetensors::Header header,
                  parser.read(checkpoint.inventory.dir / name, display));
    for (const uint32_t t : tensors) {
      const std::string_view tensor = checkpoint.inventory.tensors[t].name;
      const auto entry = std::find_if(header.tensors.begin(),
                                      header.tensors.end(),
                                      [&](const auto& e) { return e.name == tensor; });
      if (entry == header.tensors.end()) {
        return make_error(ErrorCode::io_error,
                          display,
                          std::nullopt,
                          std::string(tensor),
                          "the tensor left the header while qpatch read it");
      }
      out[std::string(checkpoint::split_tensor_name(tensor).second)] = {
          (checkpoint.inventory.dir / name).string(),
          header.data_start() + entry->begin,
          entry->end - entry->begin};
    }
  }
  return out;
}

// Whether two tensors' data hash alike: XXH3-64 in bounded chunks (shard_writer's hash_range,
// the hash graft verifies its copies with).
Result<bool> same_data(const Located& x, const Located& y) {
  const util::FileDescriptor fx(::open(x.path.c_str(), O_RDONLY | O_CLOEXEC));
  const util::FileDescriptor fy(::open(y.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fx.get() < 0 || fy.get() < 0) {
    return make_error(ErrorCode::io_error,
                      fx.get() < 0 ? x.path : y.path,
                      std::nullopt,
                      "",
                      "cannot open: " + std::string(std::strerror(errno)));
  }
  QP_TRY_ASSIGN(const uint64_t first, hash_range(fx.get(), x.offset, x.size, x.path));
  QP_TRY_ASSIGN(const uint64_t second, hash_range(fy.get(), y.offset, y.size, y.path));
  return first == second;
}

} // namespace

Result<bool>
same_module_bytes(const Checkpoint& first, uint32_t a, const Checkpoint& second, uint32_t b) {
  const checkpoint::Module& ma = first.modules[a];
  const checkpoint::Module& mb = second.modules[b];
  if (ma.tensors.size() != mb.tensors.size()) {
    return false;
  }
  for (const uint32_t ta : ma.tensors) {
    const auto& x = first.inventory.tensors[ta];
    const auto param = checkpoint::split_tensor_name(x.name).second;
    const auto match = std::find_if(mb.tensors.begin(), mb.tensors.end(), [&](uint32_t tb) {
      return checkpoint::split_tensor_name(second.inventory.tensors[tb].name).second == param;
    });
    if (match == mb.tensors.end() || second.inventory.tensors[*match].dtype != x.dtype ||
        !(second.inventory.tensors[*match].shape == x.shape)) {
      return false;
    }
  }
  QP_TRY_ASSIGN(const auto xs, locate(first, a));
  QP_TRY_ASSIGN(const auto ys, locate(second, b));
  for (const auto& [param, x] : xs) {
    const auto y = ys.find(param);
    if (y == ys.end() || y->second.size != x.size) {
      return false;
    }
    QP_TRY_ASSIGN(const bool same, same_data(x, y->second));
    if (!same) {
      return false;
    }
  }
  return true;
}

} // namespace qpatch::graft
