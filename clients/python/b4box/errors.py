# SPDX-License-Identifier: Apache-2.0
"""Typed errors: a refusal of the server (HTTP status + named code) or a tool's failure."""


class B4boxError(Exception):
    """The server refused a request, or a tool call failed.

    ``status`` is the HTTP status (200 for a tool failure, which is a result, not a refusal;
    0 when the server could not be reached), ``code`` the named code (``thread_not_found``,
    ``run_in_flight``, ``tool_error``, ...), ``registry_code`` the ``B4_Exxxx`` code when one
    applies, ``details`` the refusal's ``error.details`` (or the tool's ``error``),
    ``retry_after`` the ``Retry-After`` seconds when the server sent one.
    """

    def __init__(self, message, status=0, code=None, registry_code=None, details=None,
                 retry_after=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.registry_code = registry_code
        self.details = details or {}
        self.retry_after = retry_after

    def __str__(self):
        where = "HTTP %d" % self.status if self.status else "no answer"
        return "%s: %s (%s)" % (self.code or "error", self.message, where)


class ToolError(B4boxError):
    """A tool's ``{"ok": false}`` result: ``code`` is its ``error.code`` (``tool_error``,
    ``invalid_arguments``, ``B4_E3001``, ``permission_required``, ...), ``errno`` the errno
    name for a ``tool_error``, ``result`` the whole result document."""

    def __init__(self, result):
        err = result.get("error") or {}
        super().__init__(err.get("message", "tool call failed"), status=200, code=err.get("code"),
                         details=err)
        self.errno = err.get("errno")
        self.result = result
        self.permission_request = result.get("permissionRequest")


def from_response(status, body, headers):
    """The B4boxError for a refusal: ``body`` is the parsed JSON (or None)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return B4boxError("HTTP %d" % status, status=status)
    details = err.get("details") if isinstance(err.get("details"), dict) else {}
    retry = headers.get("Retry-After")
    return B4boxError(err.get("message", "HTTP %d" % status), status=status,
                      code=details.get("code"), registry_code=err.get("code"), details=details,
                      retry_after=int(retry) if retry and retry.isdigit() else None)
