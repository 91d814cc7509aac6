// SPDX-License-Identifier: Apache-2.0
#include <qpatch/graft/same_bytes.hpp>
#include <qpatch/safetensors/reader.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

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

class Fd {
public:
  explicit Fd(const std::string& path) : m_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~Fd() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }

private:
  int m_fd;
};

Status read_exact(int fd, char* into, uint64_t size, uint64_t offset, const std::string& path) {
  while (size > 0) {
    const ssize_t got = ::pread(fd, into, size, static_cast<off_t>(offset));
    if (got <= 0) {
      return make_error(ErrorCode::io_error,
                        path,
                        offset,
                        "",
                        got < 0 ? std::string(std::strerror(errno)) : "the file ended early");
    }
    into += got;
    size -= static_cast<uint64_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return ok_status();
}

Result<bool> same_data(const Located& x, const Located& y) {
  const Fd fx(x.path);
  const Fd fy(y.path);
  if (fx.get() < 0 || fy.get() < 0) {
    return make_error(ErrorCode::io_error,
                      fx.get() < 0 ? x.path : y.path,
                      std::nullopt,
                      "",
                      "cannot open: " + std::string(std::strerror(errno)));
  }
  constexpr uint64_t k_piece = 1 << 20;
  const auto bx = std::make_unique<char[]>(k_piece);
  const auto by = std::make_unique<char[]>(k_piece);
  for (uint64_t done = 0; done < x.size;) {
    const uint64_t n = std::min(k_piece, x.size - done);
    if (auto read = read_exact(fx.get(), bx.get(), n, x.offset + done, x.path); !read) {
      return read.take_error();
    }
    if (auto read = read_exact(fy.get(), by.get(), n, y.offset + done, y.path); !read) {
      return read.take_error();
    }
    if (std::memcmp(bx.get(), by.get(), n) != 0) {
      return false;
    }
    done += n;
  }
  return true;
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
