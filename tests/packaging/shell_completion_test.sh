#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The three completions run in the real shells (bash with bash-completion, zsh, fish), as a user
# pressing TAB gets them: after `qpatch [SUBCOMMAND] --` each offers exactly the long options that
# `qpatch [SUBCOMMAND] --help` lists (fish offered `explain --only` and `graft --engine`, which
# qpatch rejects), and `qpatch <TAB>` offers the subcommands and directories without an error
# (zsh printed "(eval):1: unknown file attribute: i" and offered nothing).
# Usage: shell_completion_test.sh QPATCH SOURCE_DIR
set -euo pipefail
qpatch=$1 source=$2
completions=$source/packaging/completions
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/cwd/ckdir" "$work/zfp"
cp "$completions/_qpatch" "$work/zfp/"
cd "$work/cwd" # what a user types in: one directory, ckdir

help_flags() { # the long options `qpatch $1 --help` lists, sorted
  "$qpatch" $1 --help | awk '/^Options:/ { on = 1; next } /^$/ { on = 0 } on' |
    grep -oE -- '--[a-z][a-z-]+' | sort -u | tr '\n' ' '
}
bash_offers() { # what bash completes for the words "$@" (the last one being typed)
  bash -c 'source /usr/share/bash-completion/bash_completion; source "$1"; shift
           COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _qpatch; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$completions/qpatch.bash" "$@" | sort -u | tr '\n' ' '
}
zsh_offers() { # what zsh completes for the line "$*"
  zsh -f "$source/tests/packaging/zsh_complete.zsh" "$work/zfp" "$work/zsh.out" "$*"
  if grep -aq 'eval\|_arguments:' "$work/zsh.out.tty"; then
    fail "zsh printed an error for '$*': $(grep -a 'eval\|_arguments:' "$work/zsh.out.tty")"
  fi
  sort -u "$work/zsh.out" | grep -v "^$" | tr '\n' ' '
}
fish_offers() { # what fish completes for the line "$*"
  fish --no-config -c "source '$completions/qpatch.fish'; complete -C '$*'" | cut -f1 |
    sort -u | tr '\n' ' '
}

for command in "" inspect explain restore graft; do
  want=$(help_flags "$command")
  words=(qpatch $command --)
  got=$(bash_offers "${words[@]}")
  [[ $got == "$want" ]] || fail "bash after '${words[*]}': offers '$got', --help lists '$want'"
  got=$(zsh_offers "${words[*]}")
  [[ $got == "$want" ]] || fail "zsh after '${words[*]}': offers '$got', --help lists '$want'"
  got=$(fish_offers "${words[*]}")
  [[ $got == "$want" ]] || fail "fish after '${words[*]}': offers '$got', --help lists '$want'"
done

first="ckdir explain graft inspect restore "
got=$(zsh_offers "qpatch ")
[[ $got == "$first" ]] || fail "zsh after 'qpatch ': '$got', not '$first'"
got=$(fish_offers "qpatch ")
[[ $got == "ckdir/ explain graft inspect restore " ]] || fail "fish after 'qpatch ': '$got'"
got=$(bash_offers qpatch "")
[[ $got == "$first" ]] || fail "bash after 'qpatch ': '$got', not '$first'"
for shell in zsh fish; do
  got=$(${shell}_offers "qpatch --engine ")
  [[ $got == "all sglang transformers vllm " ]] || fail "$shell --engine values: '$got'"
done
echo "shell completions: bash, zsh and fish offer what --help lists"
