// SPDX-License-Identifier: Apache-2.0
#include <qpatch/checkpoint/index_file.hpp>
#include <qpatch/hub/http_client.hpp>
#include <qpatch/hub/remote_checkpoint.hpp>
#include <qpatch/limits.hpp>
#include <qpatch/quant/config_files.hpp>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace qpatch::hub {
namespace fs = std::filesystem;

namespace {

// huggingface_hub fetches the first 100 kB of a shard (hf_api.py, parse_safetensors_file_metadata:
// "bytes=0-100000"), so one request covers most headers.
constexpr uint64_t k_first_range_last = 100'000;

bool is_true(const char* value) {
  // constants.py _is_true: "1", "ON", "YES", "TRUE", any case.
  if (value == nullptr) {
    return false;
  }
  std::string upper(value);
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) {
    return static_cast<char>(std::toupper(c));
  });
  return upper == "1" || upper == "ON" || upper == "YES" || upper == "TRUE";
}

// utils/_auth.py _clean_token: "\r" and "\n" removed, then spaces stripped; "" is no token.
std::optional<std::string> clean_token(std::string token) {
  token.erase(
      std::remove_if(token.begin(), token.end(), [](char c) { return c == '\r' || c == '\n'; }),
      token.end());
  const size_t first = token.find_first_not_of(" \t\f\v");
  if (first == std::string::npos) {
    return std::nullopt;
  }
  const size_t last = token.find_last_not_of(" \t\f\v");
  return token.substr(first, last - first + 1);
}

bool is_small_file(const std::string& name) {
  if (name == "config.json" || name == checkpoint::k_index_file_name) {
    return true;
  }
  const auto& sidecars = quant::sidecar_names();
  return std::find(sidecars.begin(), sidecars.end(), name) != sidecars.end();
}

bool is_shard(const std::string& name) {
  constexpr std::string_view suffix = ".safetensors";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A name qpatch may create in its own directory: one plain component, no control characters,
// not hidden. The Hub lists names from the repo's git tree; anything else is not read (the local
// reader ignores subfolders too).
bool is_plain_name(const std::string& name) {
  if (name.empty() || name.front() == '.' || name.size() > limits::k_max_name_size) {
    return false;
  }
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
  });
}

struct Sibling {
  std::string name;
  std::optional<uint64_t> size; // from ?blobs=true
};

Error remote_error(const std::string& file, const std::string& message) {
  return make_error(ErrorCode::remote_failed, file, std::nullopt, "", message);
}

std::string seconds(long value) {
  return std::to_string(value) + " s";
}

// A URL's origin ("https://host:port") and its path without the query (a CDN's signed query is
// long and says nothing to a user).
struct UrlParts {
  std::string origin;
  std::string path;
};

UrlParts split_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t path_at =
      scheme == std::string::npos ? std::string::npos : url.find('/', scheme + 3);
  if (path_at == std::string::npos) {
    return {url, "/"};
  }
  return {url.substr(0, path_at), url.substr(path_at, url.find('?', path_at) - path_at)};
}

// Who did not answer, so a user behind a firewall knows which host to open: the Hub itself, or
// the file host (huggingface.co sends LFS files to cdn-lfs*.hf.co or cas-bridge.xethub.hf.co) its
// redirect led to. `redirected` is set for the latter.
std::string who_failed(const HttpResponse& response, bool& redirected) {
  const UrlParts asked =
      split_url(response.requested_url.empty() ? response.url : response.requested_url);
  const UrlParts last = split_url(response.url.empty() ? response.requested_url : response.url);
  redirected = last.origin != asked.origin;
  if (!redirected) {
    return "the Hub at " + asked.origin + " (GET " + asked.path + ")";
  }
  return last.origin + " (the file host the Hub redirected GET " + asked.path + " to)";
}

std::string transport_failure(const HttpResponse& response, const RemoteSettings& settings) {
  const std::string tries =
      response.attempts > 1 ? " (after " + std::to_string(response.attempts) + " tries)" : "";
  bool redirected = false;
  const std::string who = who_failed(response, redirected);
  if (response.deadline_passed) {
    return "no complete answer from " + who + " within qpatch's " +
           seconds(settings.deadline_seconds) + " deadline for --remote" + tries +
           "; QPATCH_REMOTE_DEADLINE sets a longer one";
  }
  if (response.timed_out) {
    return "no answer from " + who + " within " + seconds(settings.timeout_seconds) + tries +
           "; a slow link may need a longer HF_HUB_DOWNLOAD_TIMEOUT";
  }
  return "cannot reach " + who + ": " + response.transport_error + tries +
         (redirected ? "; the Hub itself answered, so a firewall or proxy may be blocking that host"
                     : "");
}

// What the Hub's answer means to a user, in the terms of hf_raise_for_status (utils/_http.py,
// huggingface_hub ee0a451): X-Error-Code first, then the status. The Hub answers 401 for a repo
// it will not show an anonymous user (missing or private alike) and 404 for one that is missing
// (or private) to a user who sent a token.
std::string
describe_failure(const HttpResponse& response, const RepoRef& ref, const RemoteSettings& settings) {
  if (!response.transport_error.empty()) {
    return transport_failure(response, settings);
  }
  const std::string status = "HTTP " + std::to_string(response.status);
  const std::string login = "set HF_TOKEN or run 'hf auth login' (qpatch reads its token file)";
  if (response.error_code == "GatedRepo") {
    return status + ": " + ref.repo_id + " is a gated repo: " +
           (settings.token ? "the token from " + settings.token_source +
                                 " has not been granted access; accept its terms at " +
                                 settings.endpoint + "/" + ref.repo_id
                           : "a token is needed; accept its terms at " + settings.endpoint + "/" +
                                 ref.repo_id + ", then " + login);
  }
  if (response.error_code == "RevisionNotFound") {
    return status + ": revision '" + ref.revision + "' not found in " + ref.repo_id;
  }
  if (response.error_code == "EntryNotFound") {
    return status + ": no such file in " + ref.repo_id;
  }
  if (response.error_code == "RepoNotFound" || response.status == 401 || response.status == 403) {
    if (settings.token) {
      return status + ": " + ref.repo_id + " not found on " + settings.endpoint +
             ", or the token from " + settings.token_source + " has no access to it";
    }
    if (response.status == 404) {
      return status + ": " + ref.repo_id + " not found on " + settings.endpoint +
             " (check the repo id)";
    }
    return status + ": " + ref.repo_id + " not found on " + settings.endpoint +
           ", or private: if it is yours or shared with you, " + login;
  }
  bool redirected = false;
  std::string text = status + " from " + who_failed(response, redirected);
  if (response.attempts > 1) {
    text += " after " + std::to_string(response.attempts) + " tries";
  }
  if (!response.error_message.empty()) {
    text += ": " + response.error_message;
  }
  return text;
}

// One file being laid out in the local copy.
struct Pending {
  std::string name;
  std::optional<uint64_t> listed_size;
  std::string bytes;       // the first bytes (a shard) or everything (a small file)
  uint64_t total_size = 0; // a shard's size on the Hub
  std::optional<Error> error;
};

Status write_file(const fs::path& path, const std::string& bytes, uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(ErrorCode::io_error,
                      path.string(),
                      std::nullopt,
                      "",
                      std::string("cannot create the local copy: ") + std::strerror(errno));
  }
  const auto fail = [&](const char* what) {
    const std::string text = std::string(what) + ": " + std::strerror(errno);
    ::close(fd);
    return make_error(ErrorCode::io_error, path.string(), std::nullopt, "", text);
  };
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail("cannot write the local copy");
    }
    written += static_cast<size_t>(n);
  }
  // The rest of a shard is a hole: its true size for the reader's checks, no disk space used.
  if (size > bytes.size() && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    return fail("cannot size the local copy");
  }
  struct stat status {};
  if (::fstat(fd, &status) == 0 &&
      static_cast<uint64_t>(status.st_blocks) * 512 > bytes.size() + (uint64_t{16} << 20)) {
    errno = EOPNOTSUPP;
    return fail("the temporary directory does not keep sparse files (set TMPDIR to another "
                "file system)");
  }
  ::close(fd);
  return ok_status();
}

} // namespace

RemoteSettings remote_settings(const Environment& env) {
  RemoteSettings settings;
  if (const char* endpoint = env("HF_ENDPOINT"); endpoint != nullptr) {
    settings.endpoint = endpoint;
    while (!settings.endpoint.empty() && settings.endpoint.back() == '/') {
      settings.endpoint.pop_back(); // ENDPOINT = os.getenv("HF_ENDPOINT", ...).rstrip("/")
    }
  }
  const char* hf_token = env("HF_TOKEN");
  const char* legacy = env("HUGGING_FACE_HUB_TOKEN");
  // `os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")`: an empty HF_TOKEN
  // falls through to the legacy name.
  if (hf_token != nullptr && *hf_token != '\0') {
    settings.token = clean_token(hf_token);
    settings.token_source = "$HF_TOKEN";
  } else if (legacy != nullptr && *legacy != '\0') {
    settings.token = clean_token(legacy);
    settings.token_source = "$HUGGING_FACE_HUB_TOKEN";
  } else {
    const std::string path = hf_token_path(env);
    std::ifstream file(path, std::ios::binary);
    if (file) {
      std::ostringstream text;
      text << file.rdbuf();
      settings.token = clean_token(text.str());
      settings.token_source = path;
    }
  }
  if (!settings.token) {
    settings.token_source.clear();
  }
  // constants.py _as_int(...) or DEFAULT_DOWNLOAD_TIMEOUT: a value that is not a positive
  // integer keeps the default.
  if (const char* timeout = env("HF_HUB_DOWNLOAD_TIMEOUT"); timeout != nullptr) {
    char* end = nullptr;
    const long value = std::strtol(timeout, &end, 10);
    if (end != timeout && *end == '\0' && value > 0) {
      settings.timeout_seconds = value;
    }
  }
  if (const char* deadline = env("QPATCH_REMOTE_DEADLINE"); deadline != nullptr) {
    char* end = nullptr;
    const long value = std::strtol(deadline, &end, 10);
    if (end != deadline && *end == '\0' && value > 0) {
      settings.deadline_seconds = value;
    }
  }
  if (const char* retries = env("QPATCH_HTTP_RETRIES"); retries != nullptr) {
    char* end = nullptr;
    const long value = std::strtol(retries, &end, 10);
    if (end != retries && *end == '\0' && value >= 0 && value <= 20) {
      settings.retries = static_cast<int>(value);
    }
  }
  settings.offline = is_true(env("HF_HUB_OFFLINE")) || is_true(env("TRANSFORMERS_OFFLINE"));
  return settings;
}

namespace {

Error interrupted() {
  return make_error(ErrorCode::io_error, "", std::nullopt, "", "interrupted");
}

// 1. The file list, and the commit the revision names now (into out.commit).
Result<std::vector<Sibling>> list_repo(const RepoRef& asked,
                                       const RemoteSettings& settings,
                                       const HttpOptions& options,
                                       RemoteCheckpoint& out) {
  HttpResponse listing;
  {
    HttpBatch batch(options);
    batch.add({settings.endpoint + "/api/models/" + asked.repo_id + "/revision/" +
                   url_quote(asked.revision, false) + "?blobs=true",
               std::nullopt,
               limits::k_max_index_size},
              [&](HttpResponse& response) { listing = std::move(response); });
    if (!batch.run()) {
      return interrupted();
    }
    out.bytes_received += batch.bytes_received();
  }
  if (!listing.ok()) {
    return remote_error("", describe_failure(listing, asked, settings));
  }
  std::vector<Sibling> siblings;
  try {
    const auto doc = nlohmann::json::parse(listing.body);
    out.commit = doc.at("sha").get<std::string>();
    for (const auto& sibling : doc.at("siblings")) {
      Sibling one{sibling.at("rfilename").get<std::string>(), std::nullopt};
      if (const auto size = sibling.find("size");
          size != sibling.end() && size->is_number_unsigned()) {
        one.size = size->get<uint64_t>();
      }
      siblings.push_back(std::move(one));
    }
  } catch (const nlohmann::json::exception& e) {
    return remote_error(
        "", "the Hub's file list (" + listing.url + ") is not what qpatch expects: " + e.what());
  }
  if (out.commit.size() != 40 ||
      out.commit.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return remote_error("", "the Hub's file list names no commit (sha '" + out.commit + "')");
  }
  return siblings;
}

// A small file (config.json, the index, a sidecar), fetched whole: one byte past its cap, so
// the local reader sees a file too large and says so.
void request_small_file(HttpBatch& batch,
                        Pending& file,
                        const std::string& url,
                        const RepoRef& asked,
                        const RemoteSettings& settings) {
  const uint64_t cap = file.name == checkpoint::k_index_file_name ? limits::k_max_index_size
                                                                  : limits::k_max_config_size;
  batch.add({url, std::nullopt, cap + 1}, [&file, &asked, &settings](HttpResponse& response) {
    if (!response.ok()) {
      file.error = remote_error(file.name, describe_failure(response, asked, settings));
      return;
    }
    file.bytes = std::move(response.body);
    file.total_size = file.bytes.size();
  });
}

// The rest of a header longer than the first range: at most `wanted` bytes in all (a server
// that ignores Range sends the file from byte 0).
void request_header_rest(HttpBatch& batch,
                         Pending& file,
                         const std::string& url,
                         uint64_t wanted,
                         const RepoRef& asked,
                         const RemoteSettings& settings) {
  const uint64_t have = file.bytes.size();
  batch.add({url, std::pair<uint64_t, uint64_t>{have, wanted - 1}, wanted},
            [&file, &asked, &settings, wanted](HttpResponse& rest) {
              if (!rest.ok()) {
                file.error = remote_error(file.name, describe_failure(rest, asked, settings));
                return;
              }
              if (rest.status == 206) {
                file.bytes += rest.body;
              } else {
                file.bytes = std::move(rest.body);
              }
              file.bytes.resize(std::min<size_t>(file.bytes.size(), wanted));
            });
}

// A shard's header: its first bytes, and the rest when the header is longer.
void request_shard_header(HttpBatch& batch,
                          Pending& file,
                          const std::string& url,
                          const RepoRef& asked,
                          const RemoteSettings& settings) {
  batch.add({url, std::pair<uint64_t, uint64_t>{0, k_first_range_last}, k_first_range_last + 1},
            [&file, &asked, &settings, &batch, url](HttpResponse& response) {
              if (response.status == 416 && response.total_size) {
                // A file shorter than the range's start (an empty one): "bytes */SIZE". The local
                // reader reports it as too small for a header.
                file.total_size = *response.total_size;
                return;
              }
              if (!response.ok()) {
                file.error = remote_error(file.name, describe_failure(response, asked, settings));
                return;
              }
              if (!response.total_size) {
                file.error =
                    remote_error(file.name,
                                 "the server gave no size for the file (no Content-Range or "
                                 "Content-Length)");
                return;
              }
              file.total_size = *response.total_size;
              file.bytes = std::move(response.body);
              if (file.bytes.size() < 8) {
                return; // the local reader reports a file too short for its header length
              }
              uint64_t header_size = 0;
              for (size_t i = 8; i-- > 0;) { // little-endian u64
                header_size = (header_size << 8) | static_cast<unsigned char>(file.bytes[i]);
              }
              const uint64_t wanted = 8 + header_size;
              // The rest of a long header, unless it cannot be valid anyway: then the local reader
              // reports the length it read, and nothing more is fetched.
              if (header_size > limits::k_max_header_size || wanted > file.total_size ||
                  wanted <= file.bytes.size()) {
                return;
              }
              request_header_rest(batch, file, url, wanted, asked, settings);
            });
}

} // namespace

Result<RemoteCheckpoint> read_remote_checkpoint(const RepoRef& ref,
                                                const RemoteSettings& settings,
                                                const fs::path& into,
                                                const std::function<bool()>& cancelled) {
  RemoteCheckpoint out;
  out.repo_id = ref.repo_id;
  out.revision = ref.revision.empty() ? "main" : ref.revision;
  out.dir = into;
  const RepoRef asked{ref.repo_id, out.revision};
  HttpOptions options;
  options.token = settings.token;
  options.timeout_seconds = settings.timeout_seconds;
  options.retries = settings.retries;
  options.user_agent = settings.user_agent;
  options.cancelled = cancelled;
  options.deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(settings.deadline_seconds);
  if (const auto why = HttpBatch::unavailable()) {
    return remote_error("", *why);
  }
  auto siblings = list_repo(asked, settings, options, out);
  if (!siblings) {
    return siblings.take_error();
  }
  // 2. What an engine reads: the small files whole, the shards' headers.
  std::vector<Pending> files;
  for (const Sibling& sibling : *siblings) {
    if (is_plain_name(sibling.name) && (is_small_file(sibling.name) || is_shard(sibling.name))) {
      files.push_back({sibling.name, sibling.size, "", 0, std::nullopt});
    }
  }
  const bool has_config = std::any_of(
      files.begin(), files.end(), [](const Pending& file) { return file.name == "config.json"; });
  if (!has_config) {
    return make_error(ErrorCode::missing_config,
                      "config.json",
                      std::nullopt,
                      "",
                      "no such file in the repo at commit " + out.commit.substr(0, 12) +
                          " (not a checkpoint)");
  }
  const std::string base = settings.endpoint + "/" + ref.repo_id + "/resolve/" + out.commit + "/";
  HttpBatch batch(options);
  for (Pending& file : files) {
    const std::string url = base + url_quote(file.name);
    if (is_small_file(file.name)) {
      ++out.whole_files;
      request_small_file(batch, file, url, asked, settings);
    } else {
      ++out.shards;
      request_shard_header(batch, file, url, asked, settings);
    }
  }
  if (!batch.run()) {
    return interrupted();
  }
  out.bytes_received += batch.bytes_received();
  // 3. Lay it out; the first failure in file order is the one reported.
  for (Pending& file : files) {
    if (file.error) {
      return std::move(*file.error);
    }
    const uint64_t size = std::max<uint64_t>(file.total_size, file.bytes.size());
    out.bytes_in_repo += file.listed_size.value_or(size);
    if (auto written = write_file(into / file.name, file.bytes, size); !written) {
      return written.take_error();
    }
  }
  return out;
}

} // namespace qpatch::hub
