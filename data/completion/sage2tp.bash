# bash completion for sage2tp. The command names and each command's options come from the binary
# itself (`sage2tp help`, `sage2tp help CMD`), so this file never holds a second list to keep in step.

_sage2tp_commands() {
    "$1" help 2>/dev/null | awk '/^commands:/ {listing = 1; next} listing && /^  [a-z]/ {print $1; next} listing {exit}'
}

# The run ids under the runs root as the binary finds it (--root ROOT when given, else SAGE2TP_ROOT or
# the nearest sage2tp-runs), from `sage2tp runs --json`.
_sage2tp_run_ids() {
    "$@" runs --json 2>/dev/null | sed -n 's/^ *"id" : "\(.*\)",\{0,1\}$/\1/p'
}

# The words of OPTION's help in `sage2tp help COMMAND`, its wrapped lines joined.
_sage2tp_option_help() {
    "$1" help "$2" 2>/dev/null | awk -v option="--$3" '
        $1 == option {on = 1; print; next}
        on && /^ +--/ {exit}
        on {print}' | tr -s ' \n' '  '
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

    # The binary and the --root given, if any: what finds the runs this command line means.
    local runs_program=("$program")
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ ${COMP_WORDS[i]} == --root ]] && runs_program+=(--root "${COMP_WORDS[i+1]}")
    done

    case $prev in
        --run|--root|--repository) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --nvcc|--workload|--svg) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --run-id) COMPREPLY=($(compgen -W "$(_sage2tp_run_ids "${runs_program[@]}")" -- "$cur")); return ;;
        --manifest)
            # The shipped manifests' names, as prepare's help lists them, and files.
            local names
            names=$(_sage2tp_option_help "$program" prepare manifest | sed -n "s/.*shipped manifest's name: \([^(]*\)(.*/\1/p" | tr -d ',')
            COMPREPLY=($(compgen -W "$names" -- "$cur") $(compgen -f -- "$cur"))
            return ;;
        --arch)
            # The targets build's help lists, auto among them.
            COMPREPLY=($(compgen -W "$(_sage2tp_option_help "$program" build arch | grep -oE 'sm_[0-9]+a?|auto' | sort -u)" -- "$cur"))
            return ;;
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
        # compare's runs: the run ids under the runs root, and directories.
        COMPREPLY=($(compgen -W "$(_sage2tp_run_ids "${runs_program[@]}")" -- "$cur") $(compgen -d -- "$cur"))
    fi
}

complete -F _sage2tp sage2tp
