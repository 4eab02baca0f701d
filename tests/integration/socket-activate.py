#!/usr/bin/env python3
# socket-activate.py ADDR PROG ARGS...: what systemd does for a .socket unit, without systemd:
# bind and listen on ADDR (host:port or unix:/path), then exec PROG with the socket as fd 3
# and LISTEN_PID/LISTEN_FDS set for it (sd_listen_fds(3)).
import os, socket, sys

addr = sys.argv[1]
if addr.startswith("unix:"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(addr[5:])
else:
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host.strip("[]"), int(port)))
s.listen(64)
if s.fileno() != 3:
    os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_PID"] = str(os.getpid())
os.environ["LISTEN_FDS"] = os.environ.get("TEST_LISTEN_FDS", "1")
os.execv(sys.argv[2], sys.argv[2:])
