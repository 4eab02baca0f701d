#!/usr/bin/env python3
"""rootfs-layout.py ROOTFS_TAR OUT_DIR REF: an OCI image layout of one layer made from a root
filesystem tar (debootstrap's, tests/image/t0004-image-debian.sh), as image builders make one:
device nodes, sockets and fifos are left out (a container runtime makes /dev itself), every
other entry is kept as it is. The config sets Env PATH and a marker variable, and names REF in
index.json's ref.name annotation."""
import hashlib, json, os, sys, tarfile

src, out, ref = sys.argv[1], sys.argv[2], sys.argv[3]
blobs = os.path.join(out, "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)
tmp = os.path.join(out, "layer.tmp")
with tarfile.open(src) as tin, tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tout:
    for ti in tin:
        if ti.ischr() or ti.isblk() or ti.isfifo():
            continue
        tout.addfile(ti, tin.extractfile(ti) if ti.isreg() else None)

def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

layer = sha(tmp)
os.rename(tmp, os.path.join(blobs, layer))

def blob(doc):
    data = json.dumps(doc, sort_keys=True).encode()
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, h), "wb") as f:
        f.write(data)
    return h, len(data)

cfg, cfg_len = blob({"architecture": "amd64", "os": "linux",
                     "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                        "IMAGE_FLAVOUR=debian"]},
                     "rootfs": {"type": "layers", "diff_ids": ["sha256:" + layer]}})
man, man_len = blob({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                     "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                "digest": "sha256:" + cfg, "size": cfg_len},
                     "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                 "digest": "sha256:" + layer,
                                 "size": os.path.getsize(os.path.join(blobs, layer))}]})
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + man,
         "size": man_len, "annotations": {"org.opencontainers.image.ref.name": ref}}]}, f)
with open(os.path.join(out, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
print("sha256:" + cfg)
