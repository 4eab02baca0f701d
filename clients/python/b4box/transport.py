# SPDX-License-Identifier: Apache-2.0
"""HTTP/1.1 to a b4box server over TCP (``http://host:port``) or a unix socket
(``unix:/abs/path``), with http.client; JSON bodies, bearer token, streamed answers."""

import http.client
import json
import socket
import urllib.parse

from .errors import B4boxError, from_response

DEFAULT_URL = "http://127.0.0.1:4100"


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose socket is a unix stream socket at ``path``."""

    def __init__(self, path, timeout=None):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.timeout is not None:
                sock.settimeout(self.timeout)
            sock.connect(self.unix_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Response:
    """A finished answer: ``status``, ``headers`` (case-insensitive), ``body`` (bytes)."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode("utf-8"))


class Transport:
    """One server: ``url`` (``http://host:port[/prefix]`` or ``unix:/path``), ``token``.

    ``timeout`` (seconds, None = none) bounds connecting and each socket read; a long command
    passes its own (``None``) so that the server's own deadline decides."""

    def __init__(self, url=None, token=None, timeout=60.0):
        self.url = url or DEFAULT_URL
        self.token = token
        self.timeout = timeout
        if self.url.startswith("unix:"):
            self._unix = self.url[len("unix:"):]
            self._host, self._port, self._prefix = None, None, ""
            if not self._unix.startswith("/"):
                raise ValueError("a unix: URL names an absolute socket path: %r" % self.url)
        else:
            u = urllib.parse.urlsplit(self.url)
            if u.scheme != "http" or not u.hostname:
                raise ValueError("b4box URL must be http://host:port or unix:/path: %r" % self.url)
            self._unix = None
            self._host, self._port = u.hostname, u.port or 80
            self._prefix = u.path.rstrip("/")

    def _connection(self, timeout):
        if self._unix:
            return UnixHTTPConnection(self._unix, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _headers(self, body, accept, extra):
        h = {"Accept": accept or "application/json"}
        if body is not None:
            h["Content-Type"] = "application/json"
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def open(self, method, path, body=None, accept=None, headers=None, timeout="default"):
        """Send; return (connection, http.client.HTTPResponse) for the caller to read.
        A refusal (status >= 400) is read and raised as a B4boxError here."""
        if timeout == "default":
            timeout = self.timeout
        data = None
        if body is not None:
            data = body if isinstance(body, (bytes, str)) else json.dumps(body)
            data = data.encode("utf-8") if isinstance(data, str) else data
        conn = self._connection(timeout)
        try:
            try:
                conn.request(method, self._prefix + path, body=data,
                             headers=self._headers(data, accept, headers))
            except (BrokenPipeError, ConnectionResetError):
                # The server refuses before it reads a body (the policy, an option off, the
                # cap) and closes: its answer may be waiting behind the send that failed.
                if data is None:
                    raise
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise B4boxError("cannot reach %s: %s" % (self.url, e), status=0,
                             code="unreachable") from e
        if resp.status >= 400:
            raw = resp.read()
            conn.close()
            try:
                parsed = json.loads(raw.decode("utf-8"))
            except ValueError:
                parsed = None
            raise from_response(resp.status, parsed, resp.headers)
        return conn, resp

    def request(self, method, path, body=None, accept=None, headers=None, timeout="default"):
        """One request, read whole: a Response (2xx) or a raised B4boxError."""
        conn, resp = self.open(method, path, body, accept, headers, timeout)
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise B4boxError("the answer from %s was cut: %s" % (self.url, e),
                             code="unreachable") from e
        finally:
            conn.close()
        return Response(resp.status, resp.headers, raw)

    def json(self, method, path, body=None, **kw):
        """One request whose answer is JSON: the parsed value."""
        return self.request(method, path, body, **kw).json()

    def events(self, method, path, body=None, timeout=None):
        """A streamed request (Server-Sent Events): yield (event, id or None, data) as the
        server sends them; keepalive comments are skipped. Closing the generator closes the
        connection, which the server takes as a cancel of the run."""
        conn, resp = self.open(method, path, body, accept="text/event-stream", timeout=timeout)
        try:
            yield from parse_sse(resp)
        finally:
            conn.close()


def parse_sse(stream):
    """Yield (event, id, data) from an SSE byte stream (``data`` parsed as JSON)."""
    event, ident, data = None, None, []
    while True:
        line = stream.readline()
        if not line:
            return
        line = line.decode("utf-8").rstrip("\r\n")
        if not line:
            if event is not None:
                yield event, ident, json.loads("\n".join(data)) if data else None
            event, ident, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "event":
            event = value
        elif key == "id":
            ident = int(value) if value.isdigit() else value
        elif key == "data":
            data.append(value)


def quote(segment):
    """A path segment, percent-encoded (a thread id may hold any UTF-8 but /)."""
    return urllib.parse.quote(str(segment), safe="")
