#!/usr/bin/env bash
# Crash consistency: 1,000 mixed operations, the server SIGKILLed mid-request ~10 times and
# restarted; the driver (t0500-crash.py) prints what it checked. B4CRASH_SEED=N reproduces.
B4BOX=${B4BOX:?}
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP native sandboxes need root here"; exit 0; }
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 0; }
B4BOX=$B4BOX exec python3 "$(dirname "$0")/t0500-crash.py"
