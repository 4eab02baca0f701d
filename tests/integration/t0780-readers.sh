#!/usr/bin/env bash
# Workspace readers over HTTP (POST /threads/{id}/readers ...) on fake and (as root) native;
# the driver (t0780-readers.py) prints what it checked.
B4BOX=${B4BOX:?}
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
B4BOX=$B4BOX exec python3 "$(dirname "$0")/t0780-readers.py"
