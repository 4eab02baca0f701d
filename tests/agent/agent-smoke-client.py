#!/usr/bin/env python3
# A minimal b4box-agent client over a command's stdin/stdout (docs/agent-protocol.md), for
# tests/agent/docker-smoke.sh: handshake, write, read, a timed-out command (124), then the
# p50 of 50 lstat and 30 `true` commands. Usage: agent-smoke-client.py COMMAND [ARGS...]
import struct,subprocess,sys,time
p=subprocess.Popen(sys.argv[1:],stdin=subprocess.PIPE,stdout=subprocess.PIPE)
def send(i,t,pl): p.stdin.write(struct.pack("<IIHH",len(pl),i,t,0)+pl); p.stdin.flush()
def recv():
    h=p.stdout.read(12); l,i,t,f=struct.unpack("<IIHH",h); return i,t,f,(p.stdout.read(l) if l else b"")
def s(b): return struct.pack("<I",len(b))+b
t0=time.time()
send(0,1,struct.pack("<III",0x61346262,1,1)); print("hello", recv()[3][16:], "%.0f ms"%((time.time()-t0)*1e3))
send(1,23,struct.pack("<IQ",0,5)+s(b"/tmp/x/y")); send(1,68,b"hello"); print("write", recv()[1])
send(2,19,struct.pack("<IQ",0,100)+s(b"/tmp/x/y")); print("read", recv()[3], recv()[1])
cmd=b"id -u; sleep 5"
send(3,29,struct.pack("<IQQI",1,300,4096,0)+s(b"/tmp")+struct.pack("<I",1)+s(cmd)+struct.pack("<I",0))
while True:
    i,t,f,pl=recv()
    if t==74: print("exit", struct.unpack("<IIQQQ",pl)); break
    if t==68: print("out", pl)
    if t==65: print("error", pl); break
lat=[]
for k in range(50):
    a=time.time(); send(100+k,16,s(b"/tmp/x/y")); recv(); lat.append((time.time()-a)*1e6)
lat.sort(); print("lstat over docker run -i: p50 %.0f us"%lat[25])
lat=[]
for k in range(30):
    a=time.time(); send(200+k,29,struct.pack("<IQQI",1,0,4096,0)+s(b"/")+struct.pack("<I",1)+s(b"true")+struct.pack("<I",0))
    while recv()[1]!=74: pass
    lat.append((time.time()-a)*1e3)
lat.sort(); print("exec true over docker run -i: p50 %.2f ms"%lat[15])
p.stdin.close(); print("agent exit", p.wait())
