# Bash completion for execgate-rules.                      -*- shell-script -*-
#
# Installed as share/bash-completion/completions/execgate-rules, where
# bash-completion finds it; or source it from ~/.bashrc.

# _execgate_rules_value_end I: the index after the option at I and its
# value ("--rules FILE" is two words, "--rules=FILE" three when bash splits
# at "=").
_execgate_rules_value_end()
{
    if [[ ${COMP_WORDS[$1]} == *=* ]]; then
        echo $(($1 + 1))
    elif [[ ${COMP_WORDS[$1 + 1]} == = ]]; then
        echo $(($1 + 3))
    else
        echo $(($1 + 2))
    fi
}

# The words of a command to check (CMD... or PREFIX...), from index $1.
_execgate_rules_command()
{
    if (($1 == COMP_CWORD)); then
        mapfile -t COMPREPLY < <(compgen -c -- "${COMP_WORDS[COMP_CWORD]}")
    elif declare -F _command_offset >/dev/null; then
        # bash-completion: complete the command as if it were typed alone
        _command_offset "$1"
    else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "${COMP_WORDS[COMP_CWORD]}")
    fi
}

_execgate_rules_files()
{
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -d -- "$1"; compgen -f -X '!*.rules' -- "$1")
}

_execgate_rules()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev='' i w start=0
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi

    if ((COMP_CWORD == 1)); then
        mapfile -t COMPREPLY < <(compgen -W 'check lint explain amend eval --help --version' -- "$cur")
        return
    fi

    local cmd=${COMP_WORDS[1]} opts=
    case $cmd in
    check) opts='--rules --resolve-host-executables --pretty --' ;;
    explain) opts='--rules --preserve-program-paths --' ;;
    amend) opts='--allow --rules-dir --' ;;
    lint)
        # lint [--] [FILE]...
        if [[ $cur == -* && ${COMP_WORDS[2]} != -- ]] && ((COMP_CWORD == 2)); then
            mapfile -t COMPREPLY < <(compgen -W '--' -- "$cur")
        else
            _execgate_rules_files "$cur"
        fi
        return
        ;;
    eval)
        if ((COMP_CWORD == 2)); then
            compopt -o filenames 2>/dev/null
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return
        ;;
    *) return ;;
    esac

    # Walk the options before the cursor to find where the command starts:
    # after "--", or (check only) at the first word that is not an option.
    i=2
    while ((i < COMP_CWORD)); do
        w=${COMP_WORDS[i]}
        case $w in
        --)
            start=$((i + 1))
            break
            ;;
        --rules | -r | --rules=* | --rules-dir | --rules-dir=*)
            i=$(_execgate_rules_value_end "$i")
            ;;
        -*)
            ((i++))
            ;;
        *)
            if [[ $cmd == check ]]; then
                start=$i
                break
            fi
            ((i++))
            ;;
        esac
    done
    if ((start > 0)); then
        _execgate_rules_command "$start"
        return
    fi

    case $prev in
    --rules | -r)
        # check takes files, explain files or directories; directories
        # are offered to both, to get to the files
        _execgate_rules_files "$cur"
        return
        ;;
    --rules-dir)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -- "$cur")
        return
        ;;
    esac

    if [[ $cmd == check && -n $cur && $cur != -* ]]; then
        # check: the first word that is not an option starts the command
        _execgate_rules_command "$COMP_CWORD"
        return
    fi
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
}
complete -F _execgate_rules execgate-rules
