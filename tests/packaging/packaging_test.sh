#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What a package ships, checked as a user meets it: the bash completion loads and completes
# subcommands, flags and --engine values, and names every flag --help lists; the man page renders
# with `man -l` without roff warnings; `cmake --install` lays out the binary, man page and the
# three completions.
# Usage: packaging_test.sh QPATCH SOURCE_DIR BUILD_DIR
set -euo pipefail
qpatch=$1 source=$2 build=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

completion=$source/packaging/completions/qpatch.bash
loaded=$(bash -c "source '$completion' && complete -p qpatch")
[[ $loaded == "complete -o filenames -F _qpatch qpatch" ]] || fail "complete -p qpatch: $loaded"
complete_words() { # the completions bash offers for the words "$@" (the last is being typed)
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _qpatch
           printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$@"
}
[[ $(complete_words qpatch --engine "") == $'vllm\nsglang\ntransformers\nall' ]] ||
  fail "--engine values: $(complete_words qpatch --engine '')"
[[ $(cd "$out" && complete_words qpatch ins) == "inspect" ]] || fail "subcommand: ins"
[[ $(complete_words qpatch restore --dr) == "--dry-run" ]] || fail "restore --dr"
# Every long flag of every --help is offered, so the completion cannot fall behind the CLI.
for command in "" inspect explain restore; do
  options=$("$qpatch" $command --help | awk '/^Options:/ { on = 1; next } /^$/ { on = 0 } on')
  for flag in $(grep -oE -- '--[a-z][a-z-]+' <<<"$options" | sort -u); do
    complete_words qpatch $command "$flag" | grep -qx -- "$flag" ||
      fail "bash completion lacks ${command:-qpatch} $flag"
    grep -q -- "$flag" "$source/packaging/completions/_qpatch" || fail "zsh lacks $flag"
    grep -q -- "-l ${flag#--}" "$source/packaging/completions/qpatch.fish" || fail "fish lacks $flag"
  done
done

page=$build/qpatch.1
warnings=$(groff -man -ww -z "$page" 2>&1)
[[ -z $warnings ]] || fail "groff warnings: $warnings"
rendered=$(MANWIDTH=100 MANPAGER=cat man -l "$page" 2>&1 | col -b)
grep -q '^QPATCH(1)' <<<"$rendered" || fail "man -l: no QPATCH(1) heading"
grep -qF -- '-n,--dry-run' <<<"$rendered" || fail "man -l: no --dry-run"
grep -qF 'QPATCH restore' <<<"$rendered" || fail "man -l: no restore section"
# The page is the --help text: each line of it appears in the rendered page.
"$qpatch" --help | grep -F 'Exit status:' >/dev/null
grep -qF '70 internal error (a bug: please report it)' <<<"$rendered" || fail "man: exit codes"
grep -qF 'QPATCH graft' <<<"$rendered" || fail "man -l: no graft section"
grep -qF 'qpatch graft --from DONOR [OPTIONS] DIR' <<<"$rendered" || fail "man -l: no graft synopsis"
# --help and the page made of it fit 80 columns (descriptions were pasted unfilled, up to 188).
for command in "" inspect explain restore graft; do
  wide=$("$qpatch" $command --help | awk 'length > 80')
  [[ -z $wide ]] || fail "qpatch $command --help is wider than 80 columns: $wide"
done
wide=$(MANWIDTH=80 MANPAGER=cat man -l "$page" 2>&1 | col -b | awk 'length > 80')
[[ -z $wide ]] || fail "man -l at 80 columns has wider lines: $wide"
# The page installed is the same page, compressed.
[[ $(gzip -dc "$build/qpatch.1.gz") == "$(cat "$page")" ]] || fail "qpatch.1.gz is not qpatch.1"

cmake --install "$build" --prefix "$out/usr" >/dev/null
for file in bin/qpatch share/man/man1/qpatch.1.gz share/bash-completion/completions/qpatch \
  share/zsh/vendor-completions/_qpatch share/fish/vendor_completions.d/qpatch.fish \
  share/doc/qpatch/copyright share/doc/qpatch/changelog.gz; do
  [[ -f $out/usr/$file ]] || fail "cmake --install did not install $file"
done
"$out/usr/bin/qpatch" --version | grep -q '^qpatch ' || fail "the installed binary does not run"
