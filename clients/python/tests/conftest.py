# SPDX-License-Identifier: Apache-2.0
"""A real `b4box serve` per provider (fake always; native too when root), on a unix socket
in a temporary directory, stopped by its own pid at the end of the session."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

B4BOX = os.environ.get("B4BOX")
TOKEN = "py-client-token-0123456789"
ALL_OPS = ["thread.create", "thread.read", "thread.update", "thread.delete", "thread.run",
           "thread.workspace", "workspace.source.put", "thread.approve",
           "workspace.source.read", "workspace.source.delete"]
RESOLVER = """#!/usr/bin/python3
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"workspace": d["staged"] or {"source": {"directory": "empty", "include": []}}}))
"""


class Server:
    def __init__(self, provider, tcp=False, permissions=None):
        if not B4BOX:
            pytest.fail("B4BOX must name the b4box binary")
        self.provider = provider
        self.dir = tempfile.mkdtemp(prefix="b4py.")
        os.mkdir(os.path.join(self.dir, "empty"))
        with open(os.path.join(self.dir, "token"), "w") as f:
            f.write(TOKEN + "\n")
        resolver = os.path.join(self.dir, "resolve.py")
        with open(resolver, "w") as f:
            f.write(RESOLVER)
        os.chmod(resolver, 0o755)
        prov = {"type": provider, "scope": "py-%s-%d" % (provider, os.getpid())}
        if provider == "native":
            prov["image"] = "host"
        cfg = {"sandbox": {"provider": prov, "thread": {"command": [resolver]},
                           "stagedWorkspaces": True, "workspaceRead": "http"},
               "permissions": permissions or {"mode": "bypass"},
               "threadAccess": {"principals": [{"name": "py", "tokenFile": os.path.join(self.dir, "token"),
                                                "operations": ALL_OPS, "threads": "all"}]}}
        if provider == "native":
            cfg["sandbox"]["env"] = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        with open(os.path.join(self.dir, "b4box.json"), "w") as f:
            json.dump(cfg, f)
        listen = "127.0.0.1:0" if tcp else "unix:" + os.path.join(self.dir, "sock")
        self.log = open(os.path.join(self.dir, "server.log"), "w+")
        self.proc = subprocess.Popen(
            [B4BOX, "-c", os.path.join(self.dir, "b4box.json"), "--state",
             os.path.join(self.dir, "state"), "serve", "--listen", listen],
            stdout=subprocess.DEVNULL, stderr=self.log)
        self.url = self._wait_address()
        self.token = TOKEN

    def _wait_address(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with open(self.log.name) as f:
                m = re.search(r"msg=serving address=(\S+)", f.read())
            if m:
                a = m.group(1)
                return a if a.startswith("unix:") else "http://" + a
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        with open(self.log.name) as f:
            pytest.fail("server did not start:\n" + f.read())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "native_only: runs against the native server only")


def pytest_collection_modifyitems(config, items):
    """A native_only test is not collected for the fake server (not a skip: it does not run)."""
    keep, drop = [], []
    for item in items:
        cs = getattr(item, "callspec", None)
        native = cs is not None and cs.params.get("server") == "native"
        (drop if item.get_closest_marker("native_only") and not native else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


PROVIDERS = ["fake"] + (["native"] if os.geteuid() == 0 else [])


@pytest.fixture(scope="session", params=PROVIDERS)
def server(request):
    s = Server(request.param)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def fake_server():
    """The fake over TCP, in interactive mode (echo allowed): permission requests."""
    s = Server("fake", tcp=True, permissions={"mode": "interactive", "allow": {"bash": ["echo"]}})
    yield s
    s.stop()


@pytest.fixture
def box(server):
    from b4box import B4box
    return B4box(server.url, server.token)


_n = [0]


@pytest.fixture
def thread(box, request):
    _n[0] += 1
    t = box.threads.create("py-%d-%s" % (_n[0], request.node.name[:40].replace("/", "_")))
    yield t
    try:
        t.delete()
    except Exception:
        pass
