// SPDX-License-Identifier: Apache-2.0
#include "curl_library.hpp"

#include <dlfcn.h>

#include <mutex>

namespace qpatch::hub {

namespace {

template <class F> bool load(void* handle, const char* name, F& out, std::string& why) {
  void* symbol = ::dlsym(handle, name);
  if (symbol == nullptr) {
    why = std::string("libcurl.so.4 has no ") + name;
    return false;
  }
  out = reinterpret_cast<F>(symbol);
  return true;
}

} // namespace

const CurlLibrary* curl_library(std::string& why) {
  static std::once_flag once;
  static CurlLibrary library{};
  static const CurlLibrary* loaded = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    void* handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = ::dlerror();
      failure = std::string("cannot load libcurl (install Debian's libcurl4): ") +
                (error != nullptr ? error : "dlopen failed");
      return;
    }
    CurlLibrary& l = library;
    const bool all = load(handle, "curl_global_init", l.global_init, failure) &&
                     load(handle, "curl_easy_init", l.easy_init, failure) &&
                     load(handle, "curl_easy_setopt", l.easy_setopt, failure) &&
                     load(handle, "curl_easy_getinfo", l.easy_getinfo, failure) &&
                     load(handle, "curl_easy_cleanup", l.easy_cleanup, failure) &&
                     load(handle, "curl_easy_strerror", l.easy_strerror, failure) &&
                     load(handle, "curl_multi_init", l.multi_init, failure) &&
                     load(handle, "curl_multi_add_handle", l.multi_add_handle, failure) &&
                     load(handle, "curl_multi_remove_handle", l.multi_remove_handle, failure) &&
                     load(handle, "curl_multi_perform", l.multi_perform, failure) &&
                     load(handle, "curl_multi_info_read", l.multi_info_read, failure) &&
                     load(handle, "curl_multi_poll", l.multi_poll, failure) &&
                     load(handle, "curl_multi_cleanup", l.multi_cleanup, failure) &&
                     load(handle, "curl_slist_append", l.slist_append, failure) &&
                     load(handle, "curl_slist_free_all", l.slist_free_all, failure);
    if (!all) {
      return;
    }
    // curl_global_init is not thread-safe before libcurl 7.84: here, once, under call_once.
    if (l.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
      failure = "libcurl could not be initialised";
      return;
    }
    loaded = &library;
  });
  why = failure;
  return loaded;
}

} // namespace qpatch::hub
