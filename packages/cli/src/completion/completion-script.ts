// biome-ignore-all lint/suspicious/noTemplateCurlyInString: shell code, whose ${…} is the shell's.
/**
 * The script `dstack completion bash|zsh` prints (our own). It speaks argcomplete's protocol, the
 * one dstack's CLI answers: the shell calls `dstack` back with `_ARGCOMPLETE=1`, the line in
 * `COMP_LINE` and the cursor in `COMP_POINT`, and reads the candidates, separated by `\v`, from
 * fd 8 (`complete.ts` answers). So this script completes dstack's CLI too, and a script installed
 * from dstack's CLI completes this one. One text serves bash and zsh, as dstack's does.
 */
export const COMPLETION_SHELLS = ['bash', 'zsh'] as const;
export type CompletionShell = (typeof COMPLETION_SHELLS)[number];

export const COMPLETION_SCRIPT: string = `#compdef dstack
# dstack's shell completion: \`eval "$(dstack completion bash)"\` (or zsh) in your shell's rc file.
# Asks dstack itself for the candidates: what it writes to fd 8, separated by vertical tabs.
_dstack_candidates() {
    "$@" 8>&1 9>&2 1>/dev/null 2>&1 </dev/null
}

_dstack_complete() {
    local IFS=$'\\013'
    if [[ -n "\${ZSH_VERSION-}" ]]; then
        local -a candidates
        candidates=($(COMP_LINE="$BUFFER" COMP_POINT="$CURSOR" _ARGCOMPLETE=1 _ARGCOMPLETE_SHELL=zsh \\
            _ARGCOMPLETE_SUPPRESS_SPACE=1 _dstack_candidates "\${words[1]}"))
        _describe dstack candidates
    else
        # A single candidate comes with its trailing space, unless it ends in = / or : (a value follows).
        COMPREPLY=($(COMP_LINE="$COMP_LINE" COMP_POINT="$COMP_POINT" COMP_TYPE="$COMP_TYPE" \\
            _ARGCOMPLETE_COMP_WORDBREAKS="$COMP_WORDBREAKS" _ARGCOMPLETE=1 _ARGCOMPLETE_SHELL=bash \\
            _dstack_candidates "$1")) || unset COMPREPLY
    fi
}

if [[ -n "\${ZSH_VERSION-}" ]]; then
    compdef _dstack_complete dstack
else
    complete -o nospace -o default -o bashdefault -F _dstack_complete dstack
fi
`;
