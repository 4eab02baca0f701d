# SPDX-License-Identifier: Apache-2.0
"""Source bundles (docs/workspaces.md, "Source bundles"): the same bytes and digest as
``b4box bundle create DIR -o OUT``.

``{"version":1,"digest":"<64 hex>","files":[{"path","base64","executable"}...]}``, files
sorted by path (bytewise), that key order, no whitespace; the digest is the SHA-256 of
``["b4-workspace-source-v1",[[path,base64,executable],...]]``. Capture follows the CLI's: only
regular files, a symbolic link or special file anywhere refuses the directory, a file is
executable when any execute bit is set, ``--exclude-dir`` prunes a directory of the source,
and a source captured whole must exclude ``.b4box`` (the state directory) when it has one.
The server verifies every rule again (portable paths, sizes) when the bundle is uploaded.
"""

import base64
import hashlib
import json
import os
import stat

FORMAT_TAG = "b4-workspace-source-v1"


class SourceBundle:
    """A bundle ready to upload: ``digest``, ``files`` [(path, base64, executable)],
    ``json`` (its canonical text, what ``b4box bundle create`` writes)."""

    def __init__(self, files):
        self.files = sorted(files, key=lambda f: f[0].encode("utf-8"))
        entries = [[p, b, x] for p, b, x in self.files]
        self.digest = hashlib.sha256(_canonical([FORMAT_TAG, entries])).hexdigest()
        self.json = _canonical({"version": 1, "digest": self.digest,
                                "files": [{"path": p, "base64": b, "executable": x}
                                          for p, b, x in self.files]}).decode("utf-8")

    @classmethod
    def from_files(cls, files):
        """From a mapping path -> bytes or str (or (content, executable))."""
        out = []
        for path, v in files.items():
            content, executable = v if isinstance(v, tuple) else (v, False)
            if isinstance(content, str):
                content = content.encode("utf-8")
            out.append((path, base64.b64encode(content).decode("ascii"), bool(executable)))
        return cls(out)

    @property
    def total_bytes(self):
        return sum(len(base64.b64decode(b)) for _, b, _ in self.files)


def _canonical(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def create_source_bundle(directory, include=None, exclude_dirs=()):
    """Capture ``directory`` as ``b4box bundle create`` does. ``include``: the exact inventory
    (every regular file found must be listed, and every listed path must be one); else every
    regular file. ``exclude_dirs``: directories of the source not descended (relative paths).
    Raises ValueError with the CLI's reason when the directory cannot be captured."""
    excluded = {d.strip("/") for d in exclude_dirs}
    if os.path.lexists(os.path.join(directory, ".b4box")) and ".b4box" not in excluded:
        raise ValueError('Source captured from "." must exclude ".b4box"')
    found = []

    def scan(rel):
        full = os.path.join(directory, rel) if rel else directory
        with os.scandir(full) as it:
            names = sorted(e.name for e in it)
        for name in names:
            path = rel + "/" + name if rel else name
            st = os.lstat(os.path.join(directory, path))
            if stat.S_ISLNK(st.st_mode):
                raise ValueError("Source may not contain symlinks: '%s'" % path)
            if stat.S_ISDIR(st.st_mode):
                if path not in excluded:
                    scan(path)
            elif stat.S_ISREG(st.st_mode):
                found.append((path, st))
            else:
                raise ValueError("Source may not contain special files: '%s'" % path)

    for d in excluded:
        if not os.path.isdir(os.path.join(directory, d)) or os.path.islink(os.path.join(directory, d)):
            raise ValueError("Excluded directory '%s' is not a directory of the source" % d)
    scan("")
    if include is not None:
        listed = list(include)
        if len(set(listed)) != len(listed):
            raise ValueError("Source exact inventory mismatch: a path is listed twice")
        names = {p for p, _ in found}
        for p in names - set(listed):
            raise ValueError("Source exact inventory mismatch: '%s' is not listed in include" % p)
        for p in set(listed) - names:
            raise ValueError("Source exact inventory mismatch: '%s' is listed in include but is "
                             "not a regular file of the source" % p)
    files = []
    for path, st in found:
        fd = os.open(os.path.join(directory, path), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        files.append((path, base64.b64encode(data).decode("ascii"), bool(st.st_mode & 0o111)))
    return SourceBundle(files)
