# SPDX-License-Identifier: Apache-2.0
# fish completion for qpatch: subcommands, flags, --engine and --color values, directories.
set -l commands inspect explain restore graft
complete -c qpatch -f -a '(__fish_complete_directories)'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -a "$commands"
complete -c qpatch -s h -l help -d 'Print help and exit'
complete -c qpatch -l revision -r -d 'Branch, tag or commit for ORG/NAME arguments'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -l version -d 'Version and git commit'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -s n -l dry-run -d 'Print a unified diff; write nothing'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -l check -d 'Write nothing; exit 1 if a patch is needed'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -s r -l recursive -d 'Judge every checkpoint below each DIR'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -l no-backup -d 'Keep no backup'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -l prune -d 'Also remove dead and duplicate ignore entries'
complete -c qpatch -n "not __fish_seen_subcommand_from restore graft" -l remote -d 'DIR is a Hub repo id, read header-only'
complete -c qpatch -n "not __fish_seen_subcommand_from $commands" -s q -l quiet -d 'Errors only'
complete -c qpatch -n "not __fish_seen_subcommand_from explain restore graft" -s v -l verbose -d 'More detail, whole lines'
complete -c qpatch -n "not __fish_seen_subcommand_from explain restore" -l only -r -d 'Modules whose name matches REGEX'
complete -c qpatch -n "not __fish_seen_subcommand_from inspect restore graft" -l engine -x -a 'vllm sglang transformers all' -d 'Whose rules'
complete -c qpatch -n "not __fish_seen_subcommand_from explain restore graft" -l color -x -a 'auto always never' -d 'When to colour'
complete -c qpatch -l json -d 'One JSON document on stdout'
complete -c qpatch -n "__fish_seen_subcommand_from inspect" -l summary -d 'Summary only'
complete -c qpatch -n "__fish_seen_subcommand_from restore" -s n -l dry-run -d 'Print the diff of what would be put back'
complete -c qpatch -n "__fish_seen_subcommand_from restore" -l force -d 'Restore edited files, keeping their bytes first'
complete -c qpatch -n "__fish_seen_subcommand_from explain" -l error -r -d "An engine's error message: the finding behind it"
complete -c qpatch -n "__fish_seen_subcommand_from graft" -l from -r -a '(__fish_complete_directories)' -d 'DONOR checkpoint'
complete -c qpatch -n "__fish_seen_subcommand_from graft" -s n -l dry-run -d 'Print the plan and the config diff'
complete -c qpatch -n "__fish_seen_subcommand_from graft" -l check -d 'Write nothing; exit 1 if a graft would change something'
complete -c qpatch -n "__fish_seen_subcommand_from graft" -l no-backup -d 'Remove the replaced files'
