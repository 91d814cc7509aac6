#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install what building and testing qpatch needs, from Debian 12 packages only. Does nothing
# (and needs no network) when everything is already there. Run as root, or through sudo.
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config nlohmann-json3-dev libcli11-dev libsimdjson-dev
          libpcre2-dev libgtest-dev libxxhash-dev libcurl4-openssl-dev strace
          # tests of what users meet: a pseudo-terminal (script), the man page (man -l, groff),
          # the .deb (cpack's dpkg-shlibdeps)
          bsdutils man-db groff-base dpkg-dev
          # the completions, run in the shells that load them; the .deb, checked by lintian
          bash-completion zsh fish lintian)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(hyperfine libbenchmark-dev time python3)
fi
# The libFuzzer targets (fuzz/, -DQPATCH_FUZZ=ON): clang 14 with its libFuzzer runtime
# (libclang-rt-14-dev holds libclang_rt.fuzzer). Not needed for the corpus replays in ctest.
if [[ "${1:-}" == "--fuzz" ]]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi
