# SPDX-License-Identifier: Apache-2.0
"""The Python client against a real `b4box serve` (conftest.py: fake, and native when root)."""

import os
import subprocess
import time

import pytest

from b4box import B4box, B4boxError, SourceBundle, ToolError, create_source_bundle

from conftest import B4BOX


def test_health_and_openapi(box):
    assert box.health() == {"ok": True}
    doc = box.openapi()
    assert doc["openapi"] == "3.1.0"
    assert "/threads/{id}/tools/{tool}" in doc["paths"]


def test_threads_lifecycle_and_idempotent_acquire(box, request):
    tid = "lc-" + request.node.callspec.id
    t = box.threads.create(tid, metadata={"job": 7})
    assert t.id == tid and t.info["metadata"] == {"job": 7}
    again = box.threads.acquire(tid)
    assert again.id == tid and again.info["created_ms"] == t.info["created_ms"]
    assert tid in [x.id for x in box.threads.list()]
    assert box.threads.get(tid).info["sandbox"]["state"] in ("released", "live")
    t.commands.run("true")
    assert t.refresh().info["sandbox"]["state"] == "live"
    assert t.release().info["sandbox"]["state"] == "released"
    box.threads.delete(tid)
    with pytest.raises(B4boxError) as e:
        box.threads.get(tid)
    assert (e.value.status, e.value.code) == (404, "thread_not_found")
    assert "not found" in e.value.message


def test_refusals_are_typed(box, thread):
    with pytest.raises(B4boxError) as e:
        box.threads.create("a/b")
    assert (e.value.status, e.value.code) == (400, "invalid_request")
    with pytest.raises(B4boxError) as e:
        box.threads.create(thread.id)
    assert (e.value.status, e.value.code) == (409, "thread_exists")
    with pytest.raises(B4boxError) as e:
        thread.cancel()
    assert (e.value.status, e.value.code) == (409, "no_run_in_flight")
    with pytest.raises(B4boxError) as e:
        B4box(box.transport.url, "wrong-token-0123456789").threads.list()
    assert (e.value.status, e.value.code) == (401, "unauthorized")


def test_unreachable_server_is_a_typed_error(tmp_path):
    with pytest.raises(B4boxError) as e:
        B4box("unix:" + str(tmp_path / "nothing")).health()
    assert (e.value.status, e.value.code) == (0, "unreachable")
    with pytest.raises(ValueError):
        B4box("ftp://x")


def test_files(thread):
    f = thread.files
    assert f.write("d/a.txt", "hello\nworld\n") == 12
    assert f.read("d/a.txt") == "hello\nworld\n"
    assert f.read("d/a.txt", offset=6, length=5) == "world"
    f.write("d/b.bin", b"\x00\xff\x01")
    assert f.read("d/b.bin", binary=True) == b"\x00\xff\x01"
    assert [e["name"] for e in f.list("d")] == ["a.txt", "b.bin"]
    st = f.stat("d/a.txt")
    assert st["kind"] == "file" and st["size"] == 12
    assert f.real_path("d/../d/a.txt").endswith("/d/a.txt")
    assert f.exists("d/a.txt") and not f.exists("d/none")
    f.make_dir("e/f")
    f.touch("e/f/t")
    assert len(f.walk("e")) == 2
    f.remove("e/f/t")
    assert not f.exists("e/f/t")
    assert "replaced 1 occurrence" in f.edit("d/a.txt", "world", "there")
    assert f.read("d/a.txt") == "hello\nthere\n"
    with pytest.raises(ToolError) as e:
        f.edit("d/a.txt", "absent", "x")
    assert e.value.status == 200 and "oldText not found" in e.value.message
    with pytest.raises(B4boxError) as e:
        f.read("missing")
    assert (e.value.status, e.value.code) == (404, "not_found")
    with pytest.raises(B4boxError) as e:
        f.remove("d")
    assert (e.value.status, e.value.code) == (409, "not_empty")


def test_reader(server, thread):
    """thread.open_reader(): the fs reads through a reader, no change on it, live, kept across
    a release, closed idempotently; reads after close raise; a thread with no workspace."""
    from b4box import Files
    thread.files.write("r/a.txt", "hi\n")
    with thread.open_reader() as r:
        assert r.idle_timeout_ms == 60000 and len(r.reader_id) == 32
        assert r.files.read("r/a.txt") == "hi\n"
        assert r.files.stat("r/a.txt") == thread.files.stat("r/a.txt")
        assert r.files.walk(".") == thread.files.walk(".")
        assert [e["name"] for e in r.files.list("r")] == ["a.txt"]
        for m in ("write", "edit", "make_dir", "remove", "touch"):
            assert not hasattr(r.files, m) and hasattr(Files, m), m
        thread.files.make_dir("r/empty")
        assert r.files.list("r/empty") == []
        thread.release()
        assert r.files.read("r/a.txt", offset=1) == "i\n"
    r.close()
    with pytest.raises(B4boxError) as e:
        r.files.read("r/a.txt")
    assert e.value.code == "reader_closed" and "is closed" in str(e.value)
    box = B4box(server.url, server.token)
    fresh = box.threads.create()
    try:
        with pytest.raises(B4boxError) as e:
            fresh.open_reader()
        assert (e.value.status, e.value.code) == (404, "workspace_not_found")
    finally:
        fresh.delete()


def test_nonzero_exit_is_a_result(thread):
    r = thread.commands.run("exit 3")
    assert r.exit_code == 3 and not r.timed_out
    r = thread.commands.run("echo hi")
    assert (r.exit_code, r.stdout) == (0, "hi\n")


def test_run_cwd_env_timeout(server, thread):
    thread.files.make_dir("sub")
    if server.provider == "native":
        r = thread.commands.run('echo "$(pwd) $X"', cwd="sub", env={"X": "forty-two"})
        assert r.stdout == "/workspace/sub forty-two\n"
        r = thread.commands.run("sleep 5", timeout_ms=300)
        assert r.timed_out and r.exit_code != 0
    else:  # the fake runs no shell: the options are still checked and accepted
        r = thread.commands.run("echo ok", cwd="sub", env={"X": "1"}, timeout_ms=1000)
        assert r.stdout == "ok\n"
    with pytest.raises(ToolError) as e:
        thread.commands.run("echo x", cwd="nowhere")
    assert e.value.code == "tool_error"
    with pytest.raises(ToolError) as e:
        thread.commands.run("echo x", env={"1bad": "v"})
    assert e.value.code == "invalid_arguments"


def test_streaming_generator_and_callbacks(server, thread):
    cmd = "printf 'a\\n'" if server.provider == "fake" else "echo a; sleep 0.3; echo b >&2; echo c"
    events = list(thread.commands.stream(cmd))
    assert events[-1].type == "exit"
    assert all(e.type in ("stdout", "stderr") for e in events[:-1])
    out = "".join(e.text for e in events if e.type == "stdout")
    assert out == events[-1].result.stdout
    got = []
    r = thread.commands.run(cmd, on_stdout=got.append, on_stderr=lambda s: got.append("E:" + s))
    assert "".join(x for x in got if not x.startswith("E:")) == r.stdout
    if server.provider == "native":
        assert "E:b\n" in got and r.stdout == "a\nc\n"
        # live: the first chunk comes while the command still runs
        t0 = time.monotonic()
        stamps = [(e.type, time.monotonic() - t0) for e in thread.commands.stream("echo a; sleep 1; echo b")]
        assert stamps[0][0] == "stdout" and stamps[-1][0] == "exit"
        assert stamps[-1][1] - stamps[0][1] >= 0.7, stamps


def test_background_processes(server, thread):
    cmds = thread.commands
    p = cmds.start("echo background", tag="bg")
    assert p.pid >= 1 and p.tag == "bg"
    p.wait(10000)
    assert p.state == "exited" and p.exit_code == 0
    data, nxt, state = p.output()
    assert data == b"background\n" and nxt == len(data) and state == "exited"
    assert "".join(p.logs(follow=True)) == "background\n"
    assert p.info["state"] == "exited"
    assert "".join(p.logs(from_offset=4)) == "ground\n"
    assert [x.pid for x in cmds.list()] == [p.pid]
    assert cmds.get(p.pid).command == "echo background"
    p.signal("TERM")  # exited: success, nothing sent
    p.delete()
    with pytest.raises(B4boxError) as e:
        cmds.get(p.pid)
    assert (e.value.status, e.value.code) == (404, "process_not_found")
    with pytest.raises(B4boxError) as e:
        p.send_stdin("x")
    assert e.value.code == "process_not_found"
    if server.provider == "native":
        q = cmds.start("cat; echo done", stdin=True)
        q.send_stdin("line\n")
        q.send_stdin(b"\x01raw\n", eof=True)
        assert q.wait(10000).exit_code == 0
        assert q.output()[0] == b"line\n\x01raw\ndone\n"
        s = cmds.start("sleep 30")
        s.signal("KILL")
        assert s.wait(10000).exit_code == 128 + 9


def _tree(tmp_path):
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "README.md").write_text("# demo\n")
    (src / "lib" / "a b.txt").write_text("spaced\n")
    (src / "lib" / "z.py").write_bytes(b"\xff\x00binary")
    run = src / "run.sh"
    run.write_text("#!/bin/sh\necho run\n")
    run.chmod(0o755)
    (src / "skip").mkdir()
    (src / "skip" / "big.bin").write_bytes(b"x" * 100)
    return src


def test_bundle_digest_parity_with_the_cli(tmp_path):
    src = _tree(tmp_path)
    for excl in ([], ["skip"]):
        out = tmp_path / "cli.json"
        args = [B4BOX, "bundle", "create", str(src), "-o", str(out)]
        for d in excl:
            args += ["--exclude-dir", d]
        cli = subprocess.run(args, check=True, capture_output=True, text=True)
        b = create_source_bundle(str(src), exclude_dirs=excl)
        assert b.digest == cli.stdout.strip()
        assert b.json == out.read_text()
    inc = ["README.md", "run.sh", "lib/a b.txt", "lib/z.py", "skip/big.bin"]
    assert create_source_bundle(str(src), include=inc).digest == create_source_bundle(str(src)).digest
    with pytest.raises(ValueError, match="not listed in include"):
        create_source_bundle(str(src), include=inc[1:])
    os.symlink("README.md", src / "link")
    with pytest.raises(ValueError, match="symlinks"):
        create_source_bundle(str(src))
    os.unlink(src / "link")
    (src / ".b4box").mkdir()
    with pytest.raises(ValueError, match=".b4box"):
        create_source_bundle(str(src))
    with_state = create_source_bundle(str(src), exclude_dirs=[".b4box"])
    os.rmdir(src / ".b4box")
    assert with_state.digest == create_source_bundle(str(src)).digest
    # the reference's first vector (docs/workspaces.md): an empty bundle
    empty = SourceBundle([])
    assert empty.json == '{"version":1,"digest":"%s","files":[]}' % empty.digest


def test_staged_upload_create_and_inspect(box, tmp_path, request):
    src = _tree(tmp_path)
    b = create_source_bundle(str(src), exclude_dirs=["skip"])
    assert box.sources.upload(b) == "created"
    assert box.sources.upload(b) == "held"
    assert box.sources.get(b.digest)["references"] == 0
    assert b.digest in [s["digest"] for s in box.sources.list()]
    t = box.threads.create("staged-" + request.node.callspec.id, workspace=b)
    assert t.info["workspace"] == {"sourceDigest": b.digest}
    assert t.files.read("lib/a b.txt") == "spaced\n"
    assert t.files.stat("run.sh")["executable"] is True
    assert t.commands.run("echo ok").exit_code == 0
    t.files.write("out/report.txt", "built\n")
    doc = t.inspect(expected_source_digest=b.digest, unsupported="skip")
    files = doc["inspection"]["files"]
    assert files["out/report.txt"] == "built\n" and files["README.md"] == "# demo\n"
    with pytest.raises(B4boxError) as e:
        t.inspect(expected_source_digest="0" * 64, unsupported="skip")
    assert e.value.code == "source_mismatch"
    with pytest.raises(B4boxError) as e:
        box.sources.delete(b.digest)
    assert (e.value.status, e.value.code) == (409, "source_in_use")
    t.delete()
    box.sources.delete(b.digest)
    with pytest.raises(B4boxError) as e:
        box.sources.get(b.digest)
    assert (e.value.status, e.value.code) == (404, "source_not_found")
    with pytest.raises(B4boxError) as e:
        box.threads.create(workspace="1" * 64)
    assert (e.value.status, e.value.code) == (422, "workspace_source_not_held")


def test_tcp_url_and_permission_requests(fake_server):
    box = B4box(fake_server.url, fake_server.token)
    t = box.threads.create()
    assert t.id.startswith("thr_")
    assert t.commands.run("echo tcp").stdout == "tcp\n"
    with pytest.raises(ToolError) as e:
        t.commands.run("printf x")  # not allowed: interactive mode asks
    assert e.value.code == "permission_required"
    req = e.value.permission_request
    assert req["kind"] == "command" and req["interruptId"].startswith("perm-")
    answered = t.answer_permission(req["interruptId"], "once")
    assert answered["ok"] is True and answered["result"]["stdout"] == "x"
    with pytest.raises(B4boxError) as e:
        t.answer_permission(req["interruptId"], "once")
    assert (e.value.status, e.value.code) == (404, "interrupt_not_found")
    t.delete()


def test_conformance_isolation_release_and_destroy(box, request):
    """The seed's provider conformance, as a client sees it: threads do not share a
    workspace, a release keeps it, a destroy removes it, and both are repeatable by id."""
    sfx = request.node.callspec.id
    a = box.threads.acquire("iso-a-" + sfx)
    b = box.threads.acquire("iso-b-" + sfx)
    a.files.write("mine.txt", "a's\n")
    assert not b.files.exists("mine.txt")
    a.release()
    assert box.threads.acquire(a.id).files.read("mine.txt") == "a's\n"  # reattached, kept
    a.delete()
    again = box.threads.acquire(a.id)
    assert not again.files.exists("mine.txt")  # a new thread of the same id starts empty
    for t in (again, b):
        t.delete()
    with pytest.raises(B4boxError) as e:
        b.delete()
    assert e.value.code == "thread_not_found"


@pytest.mark.native_only  # the fake's commands end at once: nothing holds the run slot
def test_run_in_flight_is_typed_with_retry_after(thread):
    import threading
    done = []
    th = threading.Thread(target=lambda: done.append(thread.commands.run("sleep 1.5")))
    th.start()
    time.sleep(0.5)
    with pytest.raises(B4boxError) as e:
        thread.commands.run("true")
    th.join()
    assert (e.value.status, e.value.code, e.value.retry_after) == (409, "run_in_flight", 1)
    assert done[0].exit_code == 0


def test_a_refusal_before_the_body_is_still_typed(server, fake_server):
    """The server answers a refused upload before reading its body and closes: the client
    reads that answer instead of reporting the broken send."""
    big = SourceBundle.from_files({"big.bin": os.urandom(6 * 1024 * 1024)})
    for s in (server, fake_server):
        with pytest.raises(B4boxError) as e:
            B4box(s.url, "wrong-token-0123456789").sources.upload(big)
        assert (e.value.status, e.value.code) == (401, "unauthorized"), (s.url, str(e.value))
