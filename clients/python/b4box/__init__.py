# SPDX-License-Identifier: Apache-2.0
"""b4box: a stdlib-only client for a b4box server (docs/http-api.md).

    from b4box import B4box
    box = B4box("unix:/run/b4box/b4box.sock")
    t = box.threads.create(metadata={"job": 1})
    t.files.write("a.txt", "hi\\n")
    r = t.commands.run("cat a.txt")      # r.exit_code, r.stdout; a non-zero exit is a result
"""

from .bundle import SourceBundle, create_source_bundle
from .client import (B4box, CommandEvent, CommandResult, Commands, Files, Process, ReadFiles,
                     Reader, Sources, Thread, Threads)
from .errors import B4boxError, ToolError
from .transport import Transport, UnixHTTPConnection

__all__ = ["B4box", "B4boxError", "ToolError", "Thread", "Threads", "Files", "Commands",
           "ReadFiles", "Reader", "Process", "CommandResult", "CommandEvent", "Sources", "SourceBundle",
           "create_source_bundle", "Transport", "UnixHTTPConnection"]
__version__ = "0.1.0"
