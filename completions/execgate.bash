# Bash completion for execgate, the MCP server.            -*- shell-script -*-
#
# Installed as share/bash-completion/completions/execgate, where
# bash-completion finds it; or source it from ~/.bashrc.

_execgate()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev='' eq=''
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    # --opt=value: with "=" in COMP_WORDBREAKS (the default) bash makes
    # "--opt", "=" and "value" three words; without it, one.
    if [[ $cur == = ]]; then
        cur=
    elif [[ $prev == = ]] && ((COMP_CWORD > 1)); then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    elif [[ $cur == --*=* ]]; then
        prev=${cur%%=*}
        eq=$prev=
        cur=${cur#*=}
    fi

    case $prev in
    --bash | --execve | --sandbox-helper | --audit-log | --allow-unix-socket)
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -P "$eq" -- "$cur")
        return
        ;;
    --rules)
        # a .rules file, or a directory of them
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -d -P "$eq" -- "$cur"; compgen -f -X '!*.rules' -P "$eq" -- "$cur")
        return
        ;;
    --log-level)
        mapfile -t COMPREPLY < <(compgen -W 'error warn info debug' -P "$eq" -- "$cur")
        return
        ;;
    --log-format)
        mapfile -t COMPREPLY < <(compgen -W 'text json' -P "$eq" -- "$cur")
        return
        ;;
    --exec-enforcement)
        mapfile -t COMPREPLY < <(compgen -W 'tree shell' -P "$eq" -- "$cur")
        return
        ;;
    --escalated-children)
        mapfile -t COMPREPLY < <(compgen -W 'ask inherit' -P "$eq" -- "$cur")
        return
        ;;
    --shell)
        # bash, zsh, or the path of a patched shell
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -W 'bash zsh' -P "$eq" -- "$cur"; compgen -f -P "$eq" -- "$cur")
        return
        ;;
    --network-proxy)
        mapfile -t COMPREPLY < <(compgen -W 'auto on off' -P "$eq" -- "$cur")
        return
        ;;
    --pass-env)
        mapfile -t COMPREPLY < <(compgen -e -P "$eq" -- "$cur")
        return
        ;;
    --token-file)
        mapfile -t COMPREPLY < <(compgen -f -P "$eq" -- "$cur")
        return
        ;;
    --sandbox | --default-timeout-ms | --max-output-bytes | --max-calls | \
        --max-processes | --max-memory | --max-pending-output | --max-ask-ms | \
        --max-background | --max-background-output | \
        --max-message-bytes | --kill-grace-ms | --login-snapshot-timeout-ms | \
        --listen | --session-idle-ms | --header-timeout-ms | --max-sessions | \
        --write-timeout-ms | --task-ttl-ms | --max-tasks | --max-prepared | \
        --prepared-idle-ms)
        # JSON or a number: nothing to offer
        COMPREPLY=()
        return
        ;;
    esac

    mapfile -t COMPREPLY < <(compgen -W '--bash --shell --execve --preserve-program-paths
        --sandbox-helper --rules --sandbox --default-timeout-ms
        --max-output-bytes --max-calls --max-processes --max-memory --doctor
        --max-pending-output --max-background --max-background-output --max-ask-ms
        --max-message-bytes --kill-grace-ms
        --log-level --log-format --audit-log --exec-enforcement --exec-strict
        --escalated-children --allow-unix-socket
        --pass-env --network-proxy --no-login-snapshot --login-snapshot-timeout-ms
        --prepare --no-prepare --max-prepared --prepared-idle-ms
        --listen --token-file --session-idle-ms --header-timeout-ms --max-sessions
        --write-timeout-ms --task-ttl-ms --max-tasks
        --help --version' -- "$cur")
}
complete -F _execgate execgate
