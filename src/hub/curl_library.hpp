// SPDX-License-Identifier: Apache-2.0
// libcurl, loaded with dlopen the first time --remote needs it rather than linked: linking pulls
// in 29 more shared libraries (GnuTLS, Kerberos, LDAP, SSH...), which doubled the start-up of
// every `qpatch --check` (5.3 ms -> 11 ms per process, measured) and made a run under a tight
// `ulimit -v` fail in the dynamic loader before main(). The declarations come from Debian's
// libcurl4-openssl-dev (curl/curl.h); the library is libcurl4's libcurl.so.4. Private to src/.
#pragma once

#include <curl/curl.h>

#include <string>

namespace qpatch::hub {

struct CurlLibrary {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_multi_init) multi_init;
  decltype(&curl_multi_add_handle) multi_add_handle;
  decltype(&curl_multi_remove_handle) multi_remove_handle;
  decltype(&curl_multi_perform) multi_perform;
  decltype(&curl_multi_info_read) multi_info_read;
  decltype(&curl_multi_poll) multi_poll;
  decltype(&curl_multi_cleanup) multi_cleanup;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
};

// The loaded and initialised library, or nullptr with the reason in `why` (once per process:
// later calls return the first outcome).
const CurlLibrary* curl_library(std::string& why);

} // namespace qpatch::hub
