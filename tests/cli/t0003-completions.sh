#!/usr/bin/env bash
# The shell completions list every subcommand of the table behind `b4box help` and every
# option its `help CMD` shows, so they cannot drift. Usage: t0003-completions.sh B4BOX
set -u
B4BOX=${1:?usage: $0 B4BOX}
SRC=${B4BOX_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bash_file=$SRC/completions/b4box.bash
zsh_file=$SRC/completions/_b4box
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }

commands=$("$B4BOX" help | sed -n '/^Commands:$/,/^$/p' | awk 'NF > 1 { print $1 }')
[ -n "$commands" ] && ok "b4box help lists commands" || not_ok "b4box help lists commands"

bash_commands=$(sed -n 's/^ *local commands="\(.*\)"$/\1/p' "$bash_file")
for c in $commands; do
    opts=$("$B4BOX" help "$c" | grep -o -- '--[a-z][a-z-]*' | grep -vx -- '--config\|--state' | sort -u)
    bline=$(grep -E "^ +$c\) opts=" "$bash_file")
    zline=$(grep -E "^ +$c '" "$zsh_file")
    missing=
    for o in $opts; do
        case " $(printf '%s' "$bline" | sed 's/.*opts="\([^"]*\)".*/\1/') " in *" $o "*) ;; *) missing="$missing bash:$o" ;; esac
        case " $(printf '%s' "$zline" | sed "s/^ *$c '\\([^']*\\)'.*/\\1/") " in *" $o "*) ;; *) missing="$missing zsh:$o" ;; esac
    done
    if printf ' %s ' "$bash_commands" | grep -q " $c " && [ -n "$bline" ] && [ -n "$zline" ] &&
        grep -q "^ *'$c:" "$zsh_file" && [ -z "$missing" ]; then
        ok "completions know $c and its options"
    else
        not_ok "completions know $c and its options" "bash: $bline" "zsh: $zline" "missing:$missing"
    fi
done
bash -n "$bash_file" && ok "b4box.bash parses" || not_ok "b4box.bash parses"
if command -v zsh >/dev/null; then
    zsh -n "$zsh_file" && ok "_b4box parses" || not_ok "_b4box parses"
else
    n=$((n + 1)); echo "ok $n - _b4box parses # SKIP zsh not installed"
fi
# In bash, completing the first word offers every command.
got=$(bash -c 'source "$1"; COMP_WORDS=(b4box ""); COMP_CWORD=1; _b4box; printf "%s\n" "${COMPREPLY[@]}"' _ "$bash_file")
missing=
for c in $commands; do printf '%s\n' "$got" | grep -qx "$c" || missing="$missing $c"; done
[ -z "$missing" ] && ok "bash completes every command" || not_ok "bash completes every command" "missing:$missing"
got=$(bash -c 'source "$1"; COMP_WORDS=(b4box check --); COMP_CWORD=2; _b4box; printf "%s\n" "${COMPREPLY[@]}"' _ "$bash_file")
printf '%s\n' "$got" | grep -qx -- --strict && ok "bash completes check's options" ||
    not_ok "bash completes check's options" "$got"
echo "1..$n"
