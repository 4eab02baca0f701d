#!/usr/bin/env python3
# A fake upstream resolver for the closed topology (tests/native/net-netd.sh), over UDP and
# TCP on ADDR:53, with what dnsmasq cannot do: a name answered late (slow.test, after
# SLOW seconds), large TXT answers (mid.test ~800 B, big.test ~1.6 KB) cut with TC over UDP
# beyond the query's EDNS size (512 without one) and whole over TCP. Every query is logged
# to LOG as "udp|tcp NAME". No recursion, no other network.
#   fake-dns.py ADDR LOG [SLOW]
import socket
import struct
import sys
import threading
import time

addr, log = sys.argv[1], sys.argv[2]
slow = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
A = {"slow.test": "192.0.2.10", "fast.test": "192.0.2.10", "other.test": "192.0.2.11",
     "allowed.test": "192.0.2.10"}
TXT = {"mid.test": 3, "big.test": 6}  # records of 250 bytes
lock = threading.Lock()


def note(proto, name):
    with lock, open(log, "a") as f:
        f.write(f"{proto} {name}\n")


def parse(q):
    qid, flags, qd, an, ns, ar = struct.unpack(">6H", q[:12])
    off, labels = 12, []
    while q[off]:
        labels.append(q[off + 1:off + 1 + q[off]].decode().lower())
        off += 1 + q[off]
    qtype, qclass = struct.unpack(">HH", q[off + 1:off + 5])
    question = q[12:off + 5]
    size = 512
    if ar == 1 and len(q) >= off + 5 + 11 and q[off + 5] == 0:
        size = max(512, struct.unpack(">H", q[off + 8:off + 10])[0])
    return qid, flags, ".".join(labels), qtype, question, size


def answer(q, limit):
    qid, flags, name, qtype, question, size = parse(q)
    if name == "slow.test":
        time.sleep(slow)
    rrs = []
    if qtype == 1 and name in A:
        rrs.append(b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 30, 4) + socket.inet_aton(A[name]))
    if qtype == 16 and name in TXT:
        for i in range(TXT[name]):
            text = (b"%d" % i) * 249
            rdata = bytes([249]) + text
            rrs.append(b"\xc0\x0c" + struct.pack(">HHIH", 16, 1, 30, len(rdata)) + rdata)
    rcode = 0 if name in A or name in TXT else 3
    out = struct.pack(">6H", qid, 0x8180 | (flags & 0x0100) | rcode, 1, len(rrs), 0, 0) + question
    body = b"".join(rrs)
    cap = size if limit else 65535
    if len(out) + len(body) > cap:
        return struct.pack(">6H", qid, 0x8380 | (flags & 0x0100) | rcode, 1, 0, 0, 0) + question
    return out[:6] + struct.pack(">H", len(rrs)) + out[8:] + body


def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, 53))
    while True:
        q, peer = s.recvfrom(4096)
        note("udp", parse(q)[2])
        threading.Thread(target=lambda q=q, peer=peer: s.sendto(answer(q, True), peer),
                         daemon=True).start()


def tcp_client(c):
    with c:
        n = struct.unpack(">H", c.recv(2))[0]
        q = b""
        while len(q) < n:
            q += c.recv(n - len(q))
        note("tcp", parse(q)[2])
        a = answer(q, False)
        c.sendall(struct.pack(">H", len(a)) + a)


def tcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 53))
    s.listen(16)
    while True:
        c, _ = s.accept()
        threading.Thread(target=tcp_client, args=(c,), daemon=True).start()


threading.Thread(target=tcp, daemon=True).start()
udp()
