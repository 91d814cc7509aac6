// SPDX-License-Identifier: Apache-2.0
// What --remote reads from the environment (hub/remote_checkpoint.hpp remote_settings), and the
// URL quoting of hub/http_client.hpp, on the library.
#include "support/fake_environment.hpp"

#include <qpatch/hub/http_client.hpp>
#include <qpatch/hub/remote_checkpoint.hpp>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

namespace qpatch::hub {
namespace {

Environment fake(std::map<std::string, std::string> vars) {
  return test::fake_environment(std::move(vars));
}

TEST(RemoteSettingsTest, TheDeadlineIs30SecondsUnlessAPositiveNumberIsSet) {
  const auto with = [](const char* value) {
    return remote_settings([value](const char* name) -> const char* {
             return std::string(name) == "QPATCH_REMOTE_DEADLINE" ? value : nullptr;
           })
        .deadline_seconds;
  };
  EXPECT_EQ(with(nullptr), 30);
  EXPECT_EQ(with("120"), 120);
  EXPECT_EQ(with("0"), 30);
  EXPECT_EQ(with("soon"), 30);
}

TEST(RemoteSettingsTest, TokenAndEndpointAreReadAsHuggingfaceHubReadsThem) {
  const RemoteSettings settings = remote_settings(fake({{"HF_ENDPOINT", "https://mirror.example//"},
                                                        {"HF_TOKEN", ""},
                                                        {"HUGGING_FACE_HUB_TOKEN", " hf_abc\r\n"},
                                                        {"HF_HUB_DOWNLOAD_TIMEOUT", "20"},
                                                        {"QPATCH_HTTP_RETRIES", "21"},
                                                        {"HF_HUB_OFFLINE", "yes"}}));
  EXPECT_EQ(settings.endpoint, "https://mirror.example");
  EXPECT_EQ(settings.token, std::optional<std::string>("hf_abc"));
  EXPECT_EQ(settings.token_source, "$HUGGING_FACE_HUB_TOKEN");
  EXPECT_EQ(settings.timeout_seconds, 20);
  EXPECT_EQ(settings.retries, 5); // 21 is past the cap of 20: the default
  EXPECT_TRUE(settings.offline);
}

TEST(UrlQuoteTest, QuotesAsUrllibParseQuoteDoes) {
  EXPECT_EQ(url_quote("model-00001-of-00002.safetensors"), "model-00001-of-00002.safetensors");
  EXPECT_EQ(url_quote("a b/c~d"), "a%20b/c~d");
  EXPECT_EQ(url_quote("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(url_quote("\xC3\xA9"), "%C3%A9");
}

} // namespace
} // namespace qpatch::hub
