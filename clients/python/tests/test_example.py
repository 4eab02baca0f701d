# SPDX-License-Identifier: Apache-2.0
"""examples/python/software_factory.py against a server started with the example's own
config (examples/python/factory.json, fake provider), and on native when root."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import B4BOX

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
EXAMPLE = os.path.join(ROOT, "examples", "python")
TOKEN = "factory-token-0123456789"


def serve(config_path, state):
    log = open(os.path.join(state, "server.log"), "w+")
    env = dict(os.environ, B4BOX_TOKEN=TOKEN)
    sock = os.path.join(state, "sock")
    proc = subprocess.Popen([B4BOX, "-c", config_path, "--state", os.path.join(state, "st"),
                             "serve", "--listen", "unix:" + sock],
                            stdout=subprocess.DEVNULL, stderr=log, env=env)
    for _ in range(300):
        if re.search(r"msg=serving ", open(log.name).read()):
            return proc, "unix:" + sock
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    pytest.fail("server did not start: " + open(log.name).read())


def run_example(url):
    env = dict(os.environ, B4BOX_URL=url, B4BOX_TOKEN=TOKEN)
    return subprocess.run([sys.executable, os.path.join(EXAMPLE, "software_factory.py")],
                          capture_output=True, text=True, env=env, timeout=120)


def providers():
    return ["fake"] + (["native"] if os.geteuid() == 0 else [])


@pytest.mark.parametrize("provider", providers())
def test_software_factory(provider):
    state = tempfile.mkdtemp(prefix="b4factory.")
    config = os.path.join(EXAMPLE, "factory.json")
    if provider == "native":
        with open(config) as f:
            cfg = json.load(f)
        cfg["sandbox"]["provider"] = {"type": "native", "scope": "factory-%d" % os.getpid(),
                                      "image": "host"}
        cfg["sandbox"]["thread"]["command"] = [os.path.join(EXAMPLE, "resolve.py")]
        cfg["sandbox"]["env"] = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        config = os.path.join(state, "factory.json")
        with open(config, "w") as f:
            json.dump(cfg, f)
    proc, url = serve(config, state)
    try:
        r = run_example(url)
        assert r.returncode == 0, r.stdout + r.stderr
        out = r.stdout
        assert re.search(r"^staged [0-9a-f]{64}: 3 files, created$", out, re.M), out
        assert "worker: replaced 1 occurrence in calc.py at line 2" in out, out
        assert re.search(r"read back 4 files \(source [0-9a-f]{12}\); new or changed: "
                         r"REPORT\.md, calc\.py", out), out
        # the fake runs no python3 (exit 127, a result); native runs the fixed tests
        verdict = "passed" if provider == "native" else "exit 127"
        assert "worker ran the tests: %s" % verdict in out, out
        assert "- tests: %s" % verdict in out, out
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(state, ignore_errors=True)


def test_factory_names_the_config_a_plain_server_lacks():
    """Against a server without staged workspaces the script says which config it needs."""
    from b4box import B4box
    state = tempfile.mkdtemp(prefix="b4factory.")
    plain = os.path.join(state, "plain.json")
    with open(plain, "w") as f:
        json.dump({"sandbox": {"provider": {"type": "fake", "scope": "plain"}}}, f)
    proc, url = serve(plain, state)
    try:
        assert B4box(url).health() == {"ok": True}
        r = run_example(url)
        assert r.returncode == 1
        assert "does not take staged workspaces" in r.stderr and "factory.json" in r.stderr, r.stderr
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(state, ignore_errors=True)


def test_factory_refuses_a_thread_without_a_staged_workspace():
    state = tempfile.mkdtemp(prefix="b4factory.")
    proc, url = serve(os.path.join(EXAMPLE, "factory.json"), state)
    try:
        sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
        from b4box import B4box, B4boxError
        t = B4box(url, TOKEN).threads.create()
        with pytest.raises(B4boxError) as e:
            t.commands.run("echo x")
        assert (e.value.status, e.value.code) == (422, "thread_refused")
        assert e.value.message == "create threads with a staged workspace"
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(state, ignore_errors=True)
