# bash completion for sage2tp. The command names and each command's options come from the binary
# itself (`sage2tp help`, `sage2tp help CMD`), so this file never holds a second list to keep in step.

_sage2tp_commands() {
    "$1" help 2>/dev/null | awk '/^commands:/ {listing = 1; next} listing && /^  [a-z]/ {print $1; next} listing {exit}'
}

_sage2tp() {
    local cur prev program command word i
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    program=${COMP_WORDS[0]}

    # The command is the first word that is neither an option nor the value of --run, --run-id or --root.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        case $word in
            --run|--run-id|--root) ((i++)) ;;
            -*) ;;
            *) command=$word; break ;;
        esac
    done

    case $prev in
        --run|--root|--repository|--torch-include) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --manifest|--nvcc|--workload|--svg) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --format)
            if [[ $command == compare ]]; then
                COMPREPLY=($(compgen -W "text markdown csv" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "text markdown csv json" -- "$cur"))
            fi
            return ;;
    esac

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--run --run-id --root --json -q -v --help" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$(_sage2tp_commands "$program")" -- "$cur"))
        fi
    elif [[ $command == help ]]; then
        COMPREPLY=($(compgen -W "$(_sage2tp_commands "$program")" -- "$cur"))
    elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$("$program" help "$command" 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)" -- "$cur"))
    elif [[ $command == clean || $command == phases ]]; then
        # Their one word that is not an option is [RUN], a run directory.
        COMPREPLY=($(compgen -d -- "$cur"))
    elif [[ $command == compare ]]; then
        # compare's runs: the run ids under --root (sage2tp-runs unless given), and directories.
        local root=sage2tp-runs
        for ((i = 1; i < COMP_CWORD; i++)); do
            [[ ${COMP_WORDS[i]} == --root ]] && root=${COMP_WORDS[i+1]}
        done
        local ids=()
        [[ -d $root ]] && while IFS= read -r word; do ids+=("$word"); done < <(cd "$root" && for d in */; do
            [[ $d != latest/ && -f $d/experiment.toml ]] && printf '%s\n' "${d%/}"; done)
        COMPREPLY=($(compgen -W "${ids[*]}" -- "$cur") $(compgen -d -- "$cur"))
    fi
}

complete -F _sage2tp sage2tp
