#!/usr/bin/env bash
# The handle's filesystem over HTTP on fake and (as root) native; the driver (t0700-fs.py)
# prints what it checked.
B4BOX=${B4BOX:?}
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
B4BOX=$B4BOX exec python3 "$(dirname "$0")/t0700-fs.py"
