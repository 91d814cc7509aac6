# SPDX-License-Identifier: Apache-2.0
# bash completion for qpatch: subcommands, flags, --engine and --color values, directories.
# tests/packaging/completions_test.sh checks that every flag of `qpatch --help` is here.
_qpatch() {
  local cur prev command word
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD - 1]}
  command=""
  for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case $word in
    inspect | explain | restore | graft) command=$word && break ;;
    esac
  done
  case $prev in
  --engine)
    mapfile -t COMPREPLY < <(compgen -W "vllm sglang transformers all" -- "$cur")
    return
    ;;
  --color)
    mapfile -t COMPREPLY < <(compgen -W "auto always never" -- "$cur")
    return
    ;;
  --from)
    mapfile -t COMPREPLY < <(compgen -d -- "$cur")
    return
    ;;
  --only | --revision | --error)
    return
    ;;
  esac
  local flags
  case $command in
  inspect) flags="--help --json --summary --only --verbose --color --revision --remote" ;;
  explain) flags="--help --engine --error --json --revision --remote" ;;
  restore) flags="--help --dry-run --json --force --revision" ;;
  graft) flags="--help --from --only --dry-run --check --json --no-backup --revision" ;;
  *) flags="--help --version --dry-run --check --json --only --engine --recursive --no-backup --prune
            --color --quiet --verbose --revision --remote" ;;
  esac
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$flags" -- "$cur")
    return
  fi
  mapfile -t COMPREPLY < <(compgen -d -- "$cur")
  if [[ -z $command && $COMP_CWORD -eq 1 ]]; then
    mapfile -t -O "${#COMPREPLY[@]}" COMPREPLY < <(compgen -W "inspect explain restore graft" -- "$cur")
  fi
}
complete -o filenames -F _qpatch qpatch
