# bash completion for b4box. The lists below mirror the command table in src/cli/main.c;
# tests/cli/t0003-completions.sh fails when a command or option is missing here.
_b4box() {
    local cur prev cmd i
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    local commands="serve threads exec tool read network release destroy bundle ps logs kill upload image check conformance kube probe help version"
    local globals="-c --config --state --help -h"

    case $prev in
    -c | --config | --include-from | -o | --output)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --state | --root | --exclude | --exclude-dir)
        COMPREPLY=($(compgen -d -- "$cur"))
        return
        ;;
    esac
    cmd=
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
        -c | --config | --state) ((i++)) ;;
        -*) ;;
        *)
            cmd=${COMP_WORDS[i]}
            break
            ;;
        esac
    done
    if [ -z "$cmd" ]; then
        COMPREPLY=($(compgen -W "$commands $globals" -- "$cur"))
        return
    fi
    local opts words=
    case $cmd in
    serve) opts="--listen --reap-interval-ms --log-format" ;;
    threads) opts="--server --id --metadata --parent --source --link --baseline --json" words="create ls show rm release" ;;
    exec) opts="--thread --timeout --max-output --cwd --env --server" ;;
    tool) opts="--thread --server --provider --mode --allow --deny --read-cap" words="readFile writeFile editFile listDir runBash" ;;
    read) opts="--root --exclude --exclude-path --skip-unsupported --expect-source --consistent --json --server" ;;
    network) opts="--json --server" ;;
    release) opts="" ;;
    destroy) opts="" ;;
    bundle) opts="--include-from --exclude-dir --output -o --json" words="create verify" ;;
    ps) opts="--thread --server --json" ;;
    logs) opts="--thread --from --follow --server" ;;
    kill) opts="--thread --signal --rm --server" ;;
    upload) opts="--server --json" ;;
    image) opts="--name --from-docker --docker-host --json" ;;
    check) opts="--json --strict" ;;
    conformance) opts="--provider" ;;
    kube) opts="--namespace --ttl-hours --dry-run" words="reap" ;;
    probe) opts="--json" ;;
    help) opts="" words="$commands" ;;
    version) opts="--json" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $globals" -- "$cur"))
    else
        COMPREPLY=($(compgen -W "$words" -- "$cur") $(compgen -f -- "$cur"))
    fi
}
complete -F _b4box b4box
