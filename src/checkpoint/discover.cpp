// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/discover.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <utility>

namespace qpatch::checkpoint {
namespace fs = std::filesystem;

namespace {

bool is_checkpoint(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec)) {
    return false;
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors") {
      return true;
    }
  }
  return false;
}

std::string joined(const std::string& root, const std::string& relative) {
  if (relative.empty()) {
    return root;
  }
  return root + (!root.empty() && root.back() == '/' ? "" : "/") + relative;
}

} // namespace

std::vector<std::string> find_checkpoints(const std::string& root) {
  std::vector<std::string> found;
  std::set<std::pair<dev_t, ino_t>> seen; // by identity, so a loop of links ends
  // Depth first, with an explicit stack: a deep tree cannot overflow the call stack.
  std::vector<std::string> stack{""};
  while (!stack.empty()) {
    const std::string relative = stack.back();
    stack.pop_back();
    const fs::path dir = joined(root, relative);
    struct stat info {};
    if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        !seen.insert({info.st_dev, info.st_ino}).second) {
      continue;
    }
    if (is_checkpoint(dir)) {
      found.push_back(joined(root, relative));
      continue;
    }
    std::vector<std::string> children;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name.front() == '.' || name == "blobs") {
        continue;
      }
      std::error_code type_ec;
      if (it->is_directory(type_ec)) { // follows a symlink; `seen` stops a loop
        children.push_back(relative.empty() ? name : relative + "/" + name);
      }
    }
    std::sort(children.rbegin(), children.rend()); // popped in name order
    stack.insert(stack.end(), children.begin(), children.end());
  }
  std::sort(found.begin(), found.end());
  return found;
}

} // namespace qpatch::checkpoint
