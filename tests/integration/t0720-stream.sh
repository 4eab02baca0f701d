#!/usr/bin/env bash
# Streaming runBash, per-call options and accounting (issue 16): the driver
# (t0720-stream.py) runs the fake part always and the native part as root.
B4BOX=${B4BOX:?}
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
B4BOX=$B4BOX exec python3 "$(dirname "$0")/t0720-stream.py"
