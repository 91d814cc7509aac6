// SPDX-License-Identifier: Apache-2.0
#include "support/hub_server.hpp"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace qpatch::test {
namespace fs = std::filesystem;

namespace {

int listen_on_loopback(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    throw std::runtime_error("socket failed");
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::listen(fd, 64) != 0) {
    ::close(fd);
    throw std::runtime_error("bind/listen on 127.0.0.1 failed");
  }
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  port = ntohs(address.sin_port);
  return fd;
}

std::string status_text(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 206:
    return "Partial Content";
  case 302:
    return "Found";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 416:
    return "Range Not Satisfiable";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Status";
  }
}

std::string head(int status, const std::vector<std::string>& headers, uint64_t length) {
  std::string text = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\n";
  for (const std::string& header : headers) {
    text += header + "\r\n";
  }
  text += "Content-Length: " + std::to_string(length) + "\r\nConnection: close\r\n\r\n";
  return text;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) {
      return parts;
    }
    start = end + 1;
  }
}

} // namespace

HubServer::HubServer() {
  m_hub_fd = listen_on_loopback(m_hub_port);
  m_cdn_fd = listen_on_loopback(m_cdn_port);
  ::close(listen_on_loopback(m_closed_port)); // free again: a connection there is refused
  m_hub_thread = std::thread([this] { accept_loop(m_hub_fd, false); });
  m_cdn_thread = std::thread([this] { accept_loop(m_cdn_fd, true); });
}

HubServer::~HubServer() {
  m_stop = true;
  m_hub_thread.join();
  m_cdn_thread.join();
  std::vector<std::thread> threads;
  {
    const std::lock_guard lock(m_mutex);
    threads.swap(m_threads);
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  ::close(m_hub_fd);
  ::close(m_cdn_fd);
}

std::string HubServer::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(m_hub_port);
}

void HubServer::add_repo(const std::string& repo_id,
                         const std::string& commit,
                         const fs::path& dir,
                         Access access,
                         const std::string& token,
                         const std::vector<std::string>& branches) {
  const std::lock_guard lock(m_mutex);
  m_repos[repo_id] = Repo{commit, dir, access, token, branches};
}

void HubServer::fail_next(int status, int count, std::optional<int> retry_after) {
  const std::lock_guard lock(m_mutex);
  m_fail_status = status;
  m_fail_count = count;
  m_retry_after = retry_after;
}

void HubServer::stall(bool on) {
  m_stall = on;
}

std::string HubServer::cdn_origin() const {
  return "http://127.0.0.1:" +
         std::to_string(m_cdn_fault == CdnFault::refuse ? m_closed_port : m_cdn_port);
}

void HubServer::cdn_fault(CdnFault fault) {
  m_cdn_fault = fault;
}

void HubServer::ignore_ranges(bool on) {
  m_ignore_ranges = on;
}

std::vector<std::string> HubServer::log() const {
  const std::lock_guard lock(m_mutex);
  return m_log;
}

void HubServer::accept_loop(int listener, bool cdn) {
  while (!m_stop) {
    pollfd entry{listener, POLLIN, 0};
    if (::poll(&entry, 1, 20) <= 0) {
      continue;
    }
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    const std::lock_guard lock(m_mutex);
    m_threads.emplace_back([this, fd, cdn] {
      serve(fd, cdn);
      ::close(fd);
    });
  }
}

void HubServer::send_all(int fd, const std::string& bytes) {
  size_t sent = 0;
  while (sent < bytes.size() && !m_stop) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      return; // the client went away (it had what it wanted)
    }
    sent += static_cast<size_t>(n);
  }
}

void HubServer::serve(int fd, bool cdn) {
  std::string text;
  while (text.find("\r\n\r\n") == std::string::npos) {
    if (m_stop || text.size() > 65536) {
      return;
    }
    pollfd entry{fd, POLLIN, 0};
    if (::poll(&entry, 1, 20) <= 0) {
      continue;
    }
    char buffer[4096];
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      return;
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  Request request;
  const std::vector<std::string> lines = split(text.substr(0, text.find("\r\n\r\n")), '\n');
  const std::vector<std::string> words = split(lines.front(), ' ');
  if (words.size() < 2) {
    return;
  }
  request.method = words[0];
  request.target = words[1];
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (!line.empty() && line.back() == '\r') {
      line.pop_back();
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) {
      continue;
    }
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    request.headers[name] = value;
  }
  ++m_requests;
  {
    const auto range = request.headers.find("range");
    const std::lock_guard lock(m_mutex);
    m_log.push_back(request.method + " " + request.target +
                    " range=" + (range == request.headers.end() ? "" : range->second) +
                    " auth=" + (request.headers.count("authorization") != 0 ? "yes" : "no") +
                    " port=" + (cdn ? "cdn" : "hub"));
  }
  if (m_stall || (cdn && m_cdn_fault == CdnFault::stall)) {
    while (!m_stop) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return;
  }
  const std::string reply = respond(request, cdn, fd);
  send_all(fd, reply);
}

std::string HubServer::respond(const Request& request, bool cdn, int fd) {
  {
    const std::lock_guard lock(m_mutex);
    if (m_fail_count > 0) {
      --m_fail_count;
      std::vector<std::string> headers;
      if (m_retry_after) {
        headers.push_back("Retry-After: " + std::to_string(*m_retry_after));
      }
      const std::string body = "server error";
      m_body_bytes += body.size();
      return head(m_fail_status, headers, body.size()) + body;
    }
  }
  const auto error = [this](int status, const std::string& code, const std::string& message) {
    const std::string body = "{\"error\":\"" + message + "\"}";
    m_body_bytes += body.size();
    return head(status, {"X-Error-Code: " + code, "X-Error-Message: " + message}, body.size()) +
           body;
  };
  const std::string path = request.target.substr(0, request.target.find('?'));
  std::vector<std::string> parts = split(path.substr(1), '/');
  if (cdn) {
    // /cdn/ORG/NAME/COMMIT/FILE: a signed URL in real life; no token needed.
    if (parts.size() != 5 || parts[0] != "cdn") {
      return error(404, "EntryNotFound", "Entry not found");
    }
    fs::path file;
    {
      const std::lock_guard lock(m_mutex);
      const auto repo = m_repos.find(parts[1] + "/" + parts[2]);
      if (repo == m_repos.end() || repo->second.commit != parts[3]) {
        return error(404, "EntryNotFound", "Entry not found");
      }
      file = repo->second.dir / parts[4];
    }
    return file_response(file, request, fd);
  }
  const bool api =
      parts.size() >= 6 && parts[0] == "api" && parts[1] == "models" && parts[4] == "revision";
  const bool resolve = parts.size() >= 5 && parts[2] == "resolve";
  if (!api && !resolve) {
    return error(404, "EntryNotFound", "Entry not found");
  }
  const std::string repo_id = api ? parts[2] + "/" + parts[3] : parts[0] + "/" + parts[1];
  const std::string revision = api ? parts[5] : parts[3];
  Repo repo;
  {
    const std::lock_guard lock(m_mutex);
    const auto found = m_repos.find(repo_id);
    if (found == m_repos.end()) {
      // The Hub shows a signed-in user that a repo does not exist; an anonymous one gets 401.
      return error(request.headers.count("authorization") != 0 ? 404 : 401,
                   "RepoNotFound",
                   "Repository not found");
    }
    repo = found->second;
  }
  const auto auth = request.headers.find("authorization");
  const bool granted = auth != request.headers.end() && auth->second == "Bearer " + repo.token;
  // The Hub's answers: a private repo is "not found" to anyone else; a gated one says so,
  // 401 without a token and 403 with one that was not granted access.
  if (repo.access == Access::private_repo && !granted) {
    return error(401, "RepoNotFound", "Repository not found");
  }
  if (repo.access == Access::gated && !granted) {
    return auth == request.headers.end()
               ? error(401, "GatedRepo", "Access to model " + repo_id + " is restricted")
               : error(403, "GatedRepo", "Access to model " + repo_id + " is restricted");
  }
  const bool known_revision =
      revision == "main" || revision == repo.commit ||
      std::find(repo.branches.begin(), repo.branches.end(), revision) != repo.branches.end();
  if (!known_revision) {
    return error(404, "RevisionNotFound", "Invalid rev id: " + revision);
  }
  if (api) {
    nlohmann::json doc;
    doc["id"] = repo_id;
    doc["sha"] = repo.commit;
    doc["siblings"] = nlohmann::json::array();
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(repo.dir)) {
      if (entry.is_regular_file()) {
        names.push_back(entry.path().filename().string());
      }
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      doc["siblings"].push_back({{"rfilename", name}, {"size", fs::file_size(repo.dir / name)}});
    }
    const std::string body = doc.dump();
    m_body_bytes += body.size();
    return head(200, {"Content-Type: application/json"}, body.size()) + body;
  }
  std::string name = path.substr(path.find("/resolve/") + 9);
  name = name.substr(name.find('/') + 1);
  const fs::path file = repo.dir / name;
  if (name.find('/') != std::string::npos || !fs::is_regular_file(file)) {
    return error(404, "EntryNotFound", "Entry not found");
  }
  if (name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") {
    // LFS files live on the CDN: the Hub answers with a redirect to another host.
    return head(302,
                {"Location: http://127.0.0.1:" +
                 std::to_string(m_cdn_fault == CdnFault::refuse ? m_closed_port : m_cdn_port) +
                 "/cdn/" + repo_id + "/" + repo.commit + "/" + name},
                0);
  }
  return file_response(file, request, fd);
}

std::string HubServer::file_response(const fs::path& file, const Request& request, int fd) {
  const int in = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    return head(404, {}, 0);
  }
  const uint64_t size = fs::file_size(file);
  uint64_t first = 0;
  uint64_t last = size == 0 ? 0 : size - 1;
  int status = 200;
  std::vector<std::string> headers{"Accept-Ranges: bytes"};
  const auto range = request.headers.find("range");
  if (range != request.headers.end() && !m_ignore_ranges && range->second.rfind("bytes=", 0) == 0) {
    const std::string spec = range->second.substr(6);
    const size_t dash = spec.find('-');
    first = std::stoull(spec.substr(0, dash));
    if (dash + 1 < spec.size()) {
      last = std::min<uint64_t>(last, std::stoull(spec.substr(dash + 1)));
    }
    if (first >= size) {
      ::close(in);
      return head(416, {"Content-Range: bytes */" + std::to_string(size)}, 0);
    }
    status = 206;
    headers.push_back("Content-Range: bytes " + std::to_string(first) + "-" + std::to_string(last) +
                      "/" + std::to_string(size));
  }
  const uint64_t length = size == 0 ? 0 : last - first + 1;
  send_all(fd, head(status, headers, length));
  // Streamed in pieces: a client that wanted only the first bytes closes, and the rest of a
  // 17 GB sparse file is never read.
  std::string chunk(65536, '\0');
  for (uint64_t at = first; at < first + length && !m_stop;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), first + length - at));
    const ssize_t n = ::pread(in, chunk.data(), want, static_cast<off_t>(at));
    if (n <= 0) {
      break;
    }
    const ssize_t sent = ::send(fd, chunk.data(), static_cast<size_t>(n), MSG_NOSIGNAL);
    if (sent <= 0) {
      break;
    }
    m_body_bytes += static_cast<uint64_t>(sent);
    at += static_cast<uint64_t>(sent);
  }
  ::close(in);
  return "";
}

} // namespace qpatch::test
