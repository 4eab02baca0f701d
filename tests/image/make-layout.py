#!/usr/bin/env python3
"""make-layout.py OUT_DIR VARIANT: write an OCI image layout for tests/image/t0001-image.sh.
VARIANT good: two layers (the second gzip) with a whiteout, an opaque directory, a hard link,
a symlink and a setuid file, busybox as /bin/busybox; bad-digest: a layer blob changed after
its digest was taken; device, traversal, hardlink-out: a layer holding that entry;
diff-mismatch: the config's diff id of a layer is wrong."""
import gzip, hashlib, io, json, os, sys, tarfile

out, variant = sys.argv[1], sys.argv[2]
BUSYBOX = "/bin/busybox"

def entry(tf, name, data=b"", mode=0o644, **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    ti.mode = mode
    if ti.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)

def layer(build):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        build(tf)
    return buf.getvalue()

def l1(tf):
    entry(tf, "bin/", type=tarfile.DIRTYPE, mode=0o755)
    entry(tf, "bin/busybox", open(BUSYBOX, "rb").read(), 0o755)
    entry(tf, "bin/sh", type=tarfile.SYMTYPE, linkname="busybox", mode=0o777)
    entry(tf, "etc/", type=tarfile.DIRTYPE, mode=0o755)
    entry(tf, "etc/passwd", b"root:x:0:0::/root:/bin/sh\nsandbox:x:1000:1000::/home:/bin/sh\n")
    entry(tf, "dir/", type=tarfile.DIRTYPE, mode=0o755)
    entry(tf, "dir/a", b"a from layer 1\n")
    entry(tf, "dir/b", b"b from layer 1\n")
    entry(tf, "dir/hard", type=tarfile.LNKTYPE, linkname="dir/b")
    entry(tf, "opq/", type=tarfile.DIRTYPE, mode=0o755)
    entry(tf, "opq/old", b"gone after layer 2\n")
    entry(tf, "usr/bin/su", b"#!/bin/sh\n", 0o4755)

def l2(tf):
    entry(tf, "dir/.wh.a")
    entry(tf, "opq/", type=tarfile.DIRTYPE, mode=0o755)
    entry(tf, "opq/.wh..wh..opq")
    entry(tf, "opq/new", b"from layer 2\n")
    entry(tf, "etc/motd", b"hello from layer 2\n")
    if variant == "device":
        entry(tf, "dev/null", type=tarfile.CHRTYPE, devmajor=1, devminor=3)
    if variant == "traversal":
        entry(tf, "../escaped", b"out\n")
    if variant == "hardlink-out":
        entry(tf, "dir/out", type=tarfile.LNKTYPE, linkname="../../../etc/shadow")

def blob(data):
    h = hashlib.sha256(data).hexdigest()
    os.makedirs(f"{out}/blobs/sha256", exist_ok=True)
    open(f"{out}/blobs/sha256/{h}", "wb").write(data)
    return h

t1, t2 = layer(l1), layer(l2)
g2 = gzip.compress(t2, mtime=0)
h1, h2 = blob(t1), blob(g2)
diff = ["sha256:" + hashlib.sha256(t).hexdigest() for t in (t1, t2)]
if variant == "diff-mismatch":
    diff[1] = "sha256:" + "0" * 64
config = json.dumps({"architecture": "amd64", "os": "linux",
                     "config": {"Env": ["PATH=/bin:/usr/bin", "IMAGE_VAR=1"],
                                "WorkingDir": "/opq", "User": "1000"},
                     "rootfs": {"type": "layers", "diff_ids": diff}}).encode()
hc = blob(config)
manifest = json.dumps({"schemaVersion": 2,
                       "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                  "digest": "sha256:" + hc, "size": len(config)},
                       "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                   "digest": "sha256:" + h1, "size": len(t1)},
                                  {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                                   "digest": "sha256:" + h2, "size": len(g2)}]}).encode()
hm = blob(manifest)
open(f"{out}/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
json.dump({"schemaVersion": 2, "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + hm,
     "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": "test/layered:1"}}]},
    open(f"{out}/index.json", "w"))
if variant == "bad-digest":
    p = f"{out}/blobs/sha256/{h1}"
    d = bytearray(open(p, "rb").read())
    d[600] ^= 1
    open(p, "wb").write(bytes(d))
print("sha256:" + hc)
