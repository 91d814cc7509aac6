// SPDX-License-Identifier: Apache-2.0
// `qpatch --remote ORG/NAME[@REV]`: a Hub repo judged before it is downloaded, from its headers
// alone, the way huggingface_hub's get_safetensors_metadata reads them (hf_api.py,
// parse_safetensors_file_metadata, huggingface_hub ee0a451):
//   - the file list and the commit from GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true
//     (HfApi.model_info with files_metadata=True), so every file is then read at that one commit;
//   - config.json, the index and the quantization sidecars fetched whole from
//     {endpoint}/{repo}/resolve/{commit}/{file} (hf_hub_url), redirects followed;
//   - of each .safetensors file, the first 100,001 bytes (Range: bytes=0-100000, as
//     huggingface_hub asks: 97% of headers fit), and the rest of a longer header by a second
//     range; the file's size from Content-Range.
// What arrives is laid out as a local checkpoint: small files whole, each shard as a sparse file
// of its true size holding only its first bytes. The local reader then validates it exactly as it
// validates a downloaded checkpoint (same limits, same errors, same offsets), without a second
// reader to keep in step. Values only; nothing is printed.
#pragma once

#include <qpatch/error.hpp>
#include <qpatch/hub/hub_cache.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace qpatch::hub {

// Where and how to reach the Hub, read from the environment the way huggingface_hub reads it.
struct RemoteSettings {
  std::string endpoint = "https://huggingface.co"; // HF_ENDPOINT, trailing '/' removed
  std::optional<std::string> token;                // HF_TOKEN, HUGGING_FACE_HUB_TOKEN, token file
  std::string token_source;                        // "$HF_TOKEN", the token file's path, or ""
  long timeout_seconds = 10;                       // HF_HUB_DOWNLOAD_TIMEOUT
  int retries = 5;                                 // QPATCH_HTTP_RETRIES (qpatch's own)
  long deadline_seconds = 30;        // QPATCH_REMOTE_DEADLINE (qpatch's own): for the whole read
  bool offline = false;              // HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE
  std::string user_agent = "qpatch"; // the CLI adds its version
};

// constants.py (ENDPOINT, HF_HUB_DOWNLOAD_TIMEOUT, HF_HUB_OFFLINE) and utils/_auth.py
// (get_token: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file at hf_token_path(); each
// stripped of spaces and newlines, an empty one counting as none), huggingface_hub ee0a451.
RemoteSettings remote_settings(const Environment& env);

struct RemoteCheckpoint {
  std::string repo_id;
  std::string revision; // as asked ("main" by default)
  std::string commit;   // the commit the Hub resolved it to
  std::filesystem::path dir;
  size_t whole_files = 0;      // fetched whole
  size_t shards = 0;           // .safetensors files, headers only
  uint64_t bytes_received = 0; // body bytes over the network, retries included
  uint64_t bytes_in_repo = 0;  // the sizes of those files on the Hub
};

// Read `ref` from the Hub into `into` (an empty directory the caller owns and removes). Errors
// name the file (relative to the repo) and say what the Hub answered: a gated or private repo
// and whether a token was sent, a revision or repo not found, a server error or a timeout after
// the retries. `cancelled` is polled during transfers; when it turns true, the read stops with
// ErrorCode::io_error "interrupted".
Result<RemoteCheckpoint> read_remote_checkpoint(const RepoRef& ref,
                                                const RemoteSettings& settings,
                                                const std::filesystem::path& into,
                                                const std::function<bool()>& cancelled = {});

} // namespace qpatch::hub
