#!/usr/bin/zsh -f
# SPDX-License-Identifier: Apache-2.0
# zsh_complete.zsh COMPDIR OUT WORDS...: type WORDS and a TAB into an interactive zsh whose fpath
# holds COMPDIR; each match zsh would offer is written to OUT, everything zsh printed to OUT.tty.
# compadd is wrapped to record what it is asked to add (calls that only compute, -O/-A/-D, pass
# through), so the matches are the ones the completion function really produced. A function in
# comppostfuncs marks the end of the completion, waited for up to 20 s (a loaded CI machine).
zmodload zsh/zpty
compdir=$1 out=$2; shift 2
: >$out.raw
typeset tty= chunk=
drain() { while zpty -r -t q chunk; do tty+=$chunk; done }
zpty q zsh -f -i
zpty -w q "PS1=; fpath=($compdir \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w q "zstyle ':completion:*' insert-tab false; bindkey '^I' complete-word"
zpty -w q "compadd() { if [[ \${(j: :)@} == *-[OAD]\\ * ]]; then builtin compadd \"\$@\"; return; fi; local -a __m; builtin compadd -A __m \"\$@\"; print -rl -- \$__m >>$out.raw; builtin compadd \"\$@\"; }"
zpty -w q "__done() { print -r -- '<done>' >>$out.raw }; comppostfuncs=(__done)"
zpty -w -n q "$*"$'\t'
for i in {1..200}; do
  drain
  grep -qx '<done>' $out.raw && break
  sleep 0.1
done
zpty -w q $'\C-c'
zpty -w q 'exit'
sleep 0.2
drain
grep -vx '<done>' $out.raw >$out
rm -f $out.raw
print -r -- "$tty" >$out.tty
zpty -d q 2>/dev/null
