# SPDX-License-Identifier: Apache-2.0
"""The direct client, in E2B's style: ``B4box(url, token).threads.create()`` gives a Thread
whose ``files``, ``commands`` and processes are b4box's routes (docs/http-api.md)."""

import base64
import os

from .bundle import SourceBundle
from .errors import B4boxError, ToolError
from .transport import Transport, quote


class CommandResult:
    """A finished command: a non-zero exit is a result, never an exception."""

    def __init__(self, doc):
        self.raw = doc
        self.stdout = doc.get("stdout", "")
        self.stderr = doc.get("stderr", "")
        self.exit_code = doc.get("exitCode")
        self.timed_out = doc.get("timedOut", False)
        self.cancelled = doc.get("cancelled", False)
        self.truncated = doc.get("truncated", False)
        self.duration_ms = doc.get("durationMs")

    def __repr__(self):
        return "CommandResult(exit_code=%r, stdout=%r, stderr=%r)" % (
            self.exit_code, self.stdout[:60], self.stderr[:60])


class CommandEvent:
    """One event of a streamed command: ``type`` ``stdout``/``stderr`` with ``text`` (and
    ``offset``), or ``exit`` with ``result`` (a CommandResult)."""

    def __init__(self, type_, text=None, offset=None, result=None):
        self.type, self.text, self.offset, self.result = type_, text, offset, result

    def __repr__(self):
        return "CommandEvent(%s, %r)" % (self.type, self.text if self.result is None else self.result)


def _tool_result(doc):
    """A tool's result document -> its result, or ToolError for ``{"ok": false}``."""
    if not doc.get("ok"):
        raise ToolError(doc)
    return doc.get("result")


def _drop_none(d):
    return {k: v for k, v in d.items() if v is not None}


class Process:
    """A background process of a thread (``POST /threads/{id}/processes``)."""

    def __init__(self, thread, info):
        self.thread = thread
        self.pid = info["pid"]
        self.info = info

    @property
    def _path(self):
        return "%s/processes/%d" % (self.thread._path, self.pid)

    # the last answer's fields (refresh(), wait(), a followed logs() update it)
    tag = property(lambda self: self.info.get("tag"))
    command = property(lambda self: self.info.get("command"))
    state = property(lambda self: self.info.get("state"))
    exit_code = property(lambda self: self.info.get("exitCode"))
    timed_out = property(lambda self: self.info.get("timedOut"))
    stdin_open = property(lambda self: self.info.get("stdinOpen"))
    truncated = property(lambda self: self.info.get("truncated"))

    def refresh(self):
        self.info = self.thread._t.json("GET", self._path)
        return self

    def wait(self, timeout_ms=30000):
        """The process once it exited, or as it is at the deadline (``state`` says which)."""
        self.info = self.thread._t.json("POST", "%s/wait?timeoutMs=%d" % (self._path, timeout_ms),
                                        timeout=None)
        return self

    def output(self, from_offset=0):
        """(bytes, next_offset, state): the spooled output from ``from_offset`` (at most 4 MiB)."""
        r = self.thread._t.request("GET", "%s/logs?from=%d" % (self._path, from_offset),
                                   accept="application/octet-stream")
        return (r.body, int(r.headers.get("X-B4box-Next-Offset", from_offset + len(r.body))),
                r.headers.get("X-B4box-Process-State"))

    def logs(self, from_offset=0, follow=False):
        """Yield the output as text chunks (SSE); with ``follow`` until the process exits
        (then ``self.info`` is its final record). Reconnect with the last offset + the length
        of its text in bytes."""
        path = "%s/logs?from=%d%s" % (self._path, from_offset, "&follow=1" if follow else "")
        for event, _, data in self.thread._t.events("GET", path):
            if event == "stdout":
                yield data["text"]
            elif event == "exit":
                self.info = data
            elif event == "error":
                raise B4boxError(data.get("message", "stream failed"), status=200, code="stream_error")

    def send_stdin(self, data, eof=False):
        body = {"eof": True} if eof else {}
        if isinstance(data, bytes):
            body["b64"] = base64.b64encode(data).decode("ascii")
        elif data:
            body["text"] = data
        self.thread._t.json("POST", self._path + "/stdin", body)

    def close_stdin(self):
        self.thread._t.json("POST", self._path + "/stdin", {"eof": True})

    def signal(self, sig="TERM"):
        self.thread._t.json("POST", self._path + "/signal", {"signal": sig})

    def kill(self):
        self.signal("KILL")

    def delete(self):
        self.thread._t.json("DELETE", self._path)


class Commands:
    """``thread.commands``: runBash in the foreground (``run``, ``stream``) and background
    processes (``start``, ``list``, ``get``)."""

    def __init__(self, thread):
        self._thread = thread

    @staticmethod
    def _args(cmd, cwd, env, timeout_ms, max_output_bytes):
        return _drop_none({"command": cmd, "cwd": cwd, "env": env, "timeoutMs": timeout_ms,
                           "maxOutputBytes": max_output_bytes})

    def run(self, cmd, cwd=None, env=None, timeout_ms=None, max_output_bytes=None,
            on_stdout=None, on_stderr=None):
        """Run ``cmd`` (``sh -c``) and return its CommandResult; with ``on_stdout`` /
        ``on_stderr`` the output is streamed to them as it comes. A non-zero exit is a result;
        a tool failure (a denial, a bad cwd) raises ToolError, a refusal B4boxError."""
        if on_stdout is None and on_stderr is None:
            args = self._args(cmd, cwd, env, timeout_ms, max_output_bytes)
            return CommandResult(self._thread.tool_result("runBash", args))
        result = None
        for ev in self.stream(cmd, cwd, env, timeout_ms, max_output_bytes):
            if ev.type == "stdout" and on_stdout:
                on_stdout(ev.text)
            elif ev.type == "stderr" and on_stderr:
                on_stderr(ev.text)
            elif ev.type == "exit":
                result = ev.result
        if result is None:
            raise B4boxError("the stream ended without an exit event", status=200, code="stream_error")
        return result

    def stream(self, cmd, cwd=None, env=None, timeout_ms=None, max_output_bytes=None):
        """A generator of CommandEvents over Server-Sent Events: stdout/stderr chunks as the
        command prints them, then ``exit``. Closing it early cancels the command."""
        path = self._thread._path + "/tools/runBash"
        body = self._args(cmd, cwd, env, timeout_ms, max_output_bytes)
        for event, _, data in self._thread._t.events("POST", path, body):
            if event in ("stdout", "stderr"):
                yield CommandEvent(event, data["text"], data["offset"])
            elif event == "exit":
                yield CommandEvent("exit", result=CommandResult(_tool_result(data)))
            elif event == "error":
                raise B4boxError(data.get("message", "stream failed"), status=200, code="stream_error")

    def start(self, cmd, cwd=None, env=None, stdin=False, tag=None, timeout_ms=None):
        """Start a background process; it holds no run slot. Returns a Process."""
        body = _drop_none({"command": cmd, "cwd": cwd, "env": env, "stdin": stdin or None,
                           "tag": tag, "timeoutMs": timeout_ms})
        started = self._thread._t.json("POST", self._thread._path + "/processes", body)
        return Process(self._thread, started).refresh()

    def list(self):
        doc = self._thread._t.json("GET", self._thread._path + "/processes")
        return [Process(self._thread, p) for p in doc["processes"]]

    def get(self, pid):
        return Process(self._thread, {"pid": int(pid)}).refresh()


class ReadFiles:
    """The filesystem's reads (``.../fs/{op}``: read, list, walk, stat, lstat, real_path,
    exists): a thread's own (``thread.files``) or a reader's (``reader.files``). Paths are
    relative to the workspace or absolute."""

    def __init__(self, transport, base, guard=None):
        self._t = transport
        self._base = base
        self._guard = guard

    def _fs(self, op, **body):
        if self._guard:
            self._guard()
        return self._t.json("POST", "%s/fs/%s" % (self._base, op), _drop_none(body))

    def read(self, path, offset=None, length=None, binary=False):
        """The file's text (UTF-8; ``binary=True``: its bytes), or a range of it."""
        doc = self._fs("read", path=path, offset=offset, length=length,
                       encoding="base64" if binary else None)
        return base64.b64decode(doc["content"]) if binary else doc["content"]

    def list(self, path="."):
        """[{name, kind}] sorted bytewise."""
        return self._fs("list", path=path)["entries"]

    def walk(self, path=".", max_entries=None, prune=None):
        return self._fs("walk", path=path, maxEntries=max_entries, prune=prune)["entries"]

    def stat(self, path):
        return self._fs("stat", path=path)

    def lstat(self, path):
        return self._fs("lstat", path=path)

    def real_path(self, path):
        return self._fs("realPath", path=path)["path"]

    def exists(self, path):
        try:
            self._fs("lstat", path=path)
            return True
        except B4boxError as e:
            if e.status == 404 and e.code == "not_found":
                return False
            raise


class Files(ReadFiles):
    """``thread.files``: the handle's filesystem (``/fs/{op}``, exact bytes, no tool caps),
    its reads and changes, and ``edit`` (the editFile tool)."""

    def __init__(self, thread):
        ReadFiles.__init__(self, thread._t, thread._path)
        self._thread = thread

    def write(self, path, content):
        """Write the whole file (atomic; parents created). ``content``: str or bytes."""
        if isinstance(content, bytes):
            return self._fs("write", path=path, content=base64.b64encode(content).decode("ascii"),
                            encoding="base64")["bytes"]
        return self._fs("write", path=path, content=content)["bytes"]

    def edit(self, path, old_text, new_text, replace_all=None):
        """Replace an exact span (the editFile tool); ToolError when it is missing or repeated."""
        return self._thread.tool_result("editFile", _drop_none(
            {"path": path, "oldText": old_text, "newText": new_text, "replaceAll": replace_all}))

    def make_dir(self, path):
        self._fs("mkdir", path=path)

    def remove(self, path):
        self._fs("remove", path=path)

    def touch(self, path):
        self._fs("touch", path=path)


class Reader:
    """A read-only reader of a thread's workspace kept on the server (``thread.open_reader()``,
    docs/http-api.md "Readers"): ``files`` has the reads only, nothing acquires the thread's
    compute, ``close()`` is idempotent (a reader the server expired or closed with its
    thread closes as success) and reads after it raise. A context manager."""

    def __init__(self, thread, doc):
        self.thread_id = thread.id
        self.reader_id = doc["readerId"]
        self.idle_timeout_ms = doc["idleTimeoutMs"]
        self._t = thread._t
        self._path = "%s/readers/%s" % (thread._path, quote(self.reader_id))
        self._closed = False
        self._removed = False
        self.files = ReadFiles(self._t, self._path, self._check_open)

    def _check_open(self):
        if self._closed:
            raise B4boxError('Workspace reader for thread "%s" is closed' % self.thread_id,
                             status=0, code="reader_closed")

    def close(self):
        self._closed = True
        if self._removed:
            return
        try:
            self._t.request("DELETE", self._path)  # 204, no body
        except B4boxError as e:
            if e.code not in ("reader_not_found", "thread_not_found"):
                raise
        self._removed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "Reader(%r, %r)" % (self.thread_id, self.reader_id)


class Thread:
    """One thread: its view (``info``), tools, files, commands, lifecycle and inspection."""

    def __init__(self, transport, info):
        self._t = transport
        self.id = info["thread_id"]
        self.info = info
        self.files = Files(self)
        self.commands = Commands(self)

    @property
    def _path(self):
        return "/threads/" + quote(self.id)

    def __repr__(self):
        return "Thread(%r, state=%r)" % (self.id, self.info.get("sandbox", {}).get("state"))

    def refresh(self):
        self.info = self._t.json("GET", self._path)
        return self

    def tool(self, name, args=None):
        """One tool call: its result document (``{"ok": ...}``), failures included."""
        return self._t.json("POST", "%s/tools/%s" % (self._path, quote(name)), args or {},
                            timeout=None)

    def tool_result(self, name, args=None):
        """One tool call: its result, or ToolError."""
        return _tool_result(self.tool(name, args))

    def run(self, calls):
        """Calls in order under one run slot: ``[(tool, args), ...]`` -> their result documents."""
        body = {"calls": [{"tool": t, "args": a or {}} for t, a in calls]}
        return self._t.json("POST", self._path + "/runs", body, timeout=None)["results"]

    def answer_permission(self, interrupt_id, decision):
        """Answer a permission_required result (once, always, deny): the call's result."""
        return self._t.json("POST", self._path + "/permissions",
                            {"interruptId": interrupt_id, "decision": decision}, timeout=None)

    def inspect(self, root=None, exclude_root_directories=None, expected_source_digest=None,
                **options):
        """A bounded, read-only inventory of the workspace (``sandbox.workspaceRead``);
        ``options`` are the route's other keys (maxEntries, consistent, unsupported, ...).
        With ``expected_source_digest`` an answer about another source is refused."""
        body = _drop_none(dict(options, root=root, excludeRootDirectories=exclude_root_directories))
        doc = self._t.json("POST", self._path + "/workspace/inspect", body, timeout=None)
        if doc.get("threadId") != self.id:
            raise B4boxError("the inspection answers for thread %r" % doc.get("threadId"),
                             status=200, code="thread_mismatch")
        if expected_source_digest and doc.get("sourceDigest") != expected_source_digest:
            raise B4boxError("the workspace is of source %r, not %r"
                             % (doc.get("sourceDigest"), expected_source_digest),
                             status=200, code="source_mismatch")
        return doc

    def open_reader(self, idle_timeout_ms=None):
        """A Reader of the workspace (``sandbox.workspaceRead``): no run slot, no compute; the
        server closes it after ``idle_timeout_ms`` (1000-600000, default 60000) without a call."""
        body = _drop_none({"idleTimeoutMs": idle_timeout_ms})
        return Reader(self, self._t.json("POST", self._path + "/readers", body or None))

    def check(self):
        return self._t.json("GET", self._path + "/check")

    def network(self):
        return self._t.json("GET", self._path + "/network")

    def release(self):
        self.info = self._t.json("POST", self._path + "/release")
        return self

    def pause(self):
        self.info = self._t.json("POST", self._path + "/pause")
        return self

    def resume(self):
        self.info = self._t.json("POST", self._path + "/resume")
        return self

    def cancel(self):
        self._t.json("POST", self._path + "/cancel")

    def delete(self):
        self._t.json("DELETE", self._path)


class Threads:
    def __init__(self, transport):
        self._t = transport

    def create(self, thread_id=None, metadata=None, parent_thread_id=None, workspace=None):
        """A new thread. ``workspace``: a staged source (its digest, a SourceBundle, or the
        route's ``{sourceDigest, environmentLinks?, baseline?}``)."""
        if isinstance(workspace, SourceBundle):
            workspace = {"sourceDigest": workspace.digest}
        elif isinstance(workspace, str):
            workspace = {"sourceDigest": workspace}
        body = _drop_none({"thread_id": thread_id, "metadata": metadata,
                           "parent_thread_id": parent_thread_id, "workspace": workspace})
        return Thread(self._t, self._t.json("POST", "/threads", body))

    def get(self, thread_id):
        return Thread(self._t, self._t.json("GET", "/threads/" + quote(thread_id)))

    def acquire(self, thread_id, metadata=None):
        """The thread ``thread_id``, created when missing (idempotent)."""
        try:
            return self.create(thread_id, metadata)
        except B4boxError as e:
            if e.code != "thread_exists":
                raise
            return self.get(thread_id)

    def list(self):
        return [Thread(self._t, t) for t in self._t.json("GET", "/threads")["threads"]]

    def delete(self, thread_id):
        self._t.json("DELETE", "/threads/" + quote(thread_id))


class Sources:
    """Staged uploads (``sandbox.stagedWorkspaces``)."""

    def __init__(self, transport):
        self._t = transport

    def upload(self, bundle):
        """PUT a SourceBundle: ``"created"`` or ``"held"``. The answer must name its digest."""
        doc = self._t.json("PUT", "/workspace/sources/" + bundle.digest, bundle.json, timeout=None)
        if doc.get("digest") != bundle.digest:
            raise B4boxError("the server answered for digest %r" % doc.get("digest"),
                             status=200, code="digest_mismatch")
        return doc["status"]

    def list(self):
        return self._t.json("GET", "/workspace/sources")["sources"]

    def get(self, digest):
        return self._t.json("GET", "/workspace/sources/" + quote(digest))

    def delete(self, digest):
        self._t.json("DELETE", "/workspace/sources/" + quote(digest))


class B4box:
    """A b4box server. ``url``: ``http://host:port`` or ``unix:/path`` (default
    ``$B4BOX_URL``, else http://127.0.0.1:4100); ``token``: the bearer token (default
    ``$B4BOX_TOKEN``); ``timeout``: seconds per request (commands wait as long as the
    server lets them)."""

    def __init__(self, url=None, token=None, timeout=60.0):
        self.transport = Transport(url or os.environ.get("B4BOX_URL"),
                                   token if token is not None else os.environ.get("B4BOX_TOKEN"),
                                   timeout)
        self.threads = Threads(self.transport)
        self.sources = Sources(self.transport)

    def health(self):
        return self.transport.json("GET", "/healthz")

    def openapi(self):
        """The server's OpenAPI document."""
        return self.transport.json("GET", "/openapi.json")
