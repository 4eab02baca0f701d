#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Seed 001's software factory, end to end, with the Python client.

A controller hands a work order to a worker thread: it stages a snapshot of a project as a
source bundle, creates a thread from it, the worker fixes a bug in its own sandbox with the
tools, and the controller reads back what the thread produced, refusing an answer about
another workspace.

    make run CONFIG=examples/python/factory.json    # with B4BOX_TOKEN set (16+ characters)
    B4BOX_URL=http://127.0.0.1:4100 B4BOX_TOKEN=... examples/python/software_factory.py

Without --source it stages a small demo project with a bug (add() subtracts). Exit 0 when the
whole flow ran (the worker's test run may fail: its exit code is reported, not raised).

factory.json is seed 001's worker config for b4box: a resolver (resolve.py) that starts each
thread from its staged workspace and refuses a thread without one, staged uploads, HTTP
workspace reads, one principal whose token is $B4BOX_TOKEN, and bash limited to the test
command. Its provider is the fake, which runs no python3 (the test run reports exit 127); as
root, set the provider to {"type": "native", "scope": "factory", "image": "host"} for a real
run (clients/python/tests/test_example.py runs both).
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
from b4box import B4box, B4boxError, create_source_bundle  # noqa: E402

DEMO = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": ("import unittest\n\nfrom calc import add\n\n\n"
                     "class T(unittest.TestCase):\n    def test_add(self):\n"
                     "        self.assertEqual(add(2, 3), 5)\n\n\n"
                     "if __name__ == \"__main__\":\n    unittest.main()\n"),
    "README.md": "# calc\n\nA tiny library with a bug for the factory to fix.\n",
}


def stage(box, source):
    """The controller: snapshot the project and upload it (content-addressed)."""
    if source is None:
        source = tempfile.mkdtemp(prefix="factory-src.")
        for name, text in DEMO.items():
            with open(os.path.join(source, name), "w") as f:
                f.write(text)
    bundle = create_source_bundle(source)
    try:
        status = box.sources.upload(bundle)
    except B4boxError as e:
        if e.status == 404 and e.code == "not_found":
            raise B4boxError("the server does not take staged workspaces: serve "
                             "examples/python/factory.json (make run CONFIG=...)",
                             status=404, code="not_found") from e
        raise
    print("staged %s: %d files, %s" % (bundle.digest, len(bundle.files), status))
    return bundle


def work(thread):
    """The worker: read, fix, test, report, all inside its own sandbox."""
    before = thread.files.read("calc.py")
    print("worker read calc.py (%d bytes)" % len(before))
    if "return a - b" in before:
        print("worker:", thread.files.edit("calc.py", "return a - b", "return a + b"))
    test = thread.commands.run("python3 -m unittest -q test_calc", timeout_ms=60000)
    verdict = "passed" if test.exit_code == 0 else "exit %s" % test.exit_code
    print("worker ran the tests:", verdict)
    thread.files.write("REPORT.md", "# Work order fix-add\n\n- changed: calc.py\n- tests: %s\n"
                       % verdict)
    return test


def read_back(thread, bundle):
    """The controller: a read-only inventory of the workspace, tied to the staged source."""
    doc = thread.inspect(expected_source_digest=bundle.digest, unsupported="skip")
    files = doc["inspection"]["files"]
    staged = {p for p, _, _ in bundle.files}
    changed = sorted(p for p in files if p not in staged or p == "calc.py")
    print("read back %d files (source %s); new or changed: %s"
          % (len(files), doc["sourceDigest"][:12], ", ".join(changed)))
    print(files.get("REPORT.md", "(no report)"), end="")
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", help="the project directory to stage (default: a demo)")
    ap.add_argument("--url", help="the server (default: $B4BOX_URL, else http://127.0.0.1:4100)")
    ap.add_argument("--keep", action="store_true", help="keep the thread and the upload")
    args = ap.parse_args()
    box = B4box(args.url)
    try:
        bundle = stage(box, args.source)
        thread = box.threads.create(metadata={"workOrder": "fix-add"}, workspace=bundle)
        print("created thread", thread.id)
        work(thread)
        files = read_back(thread, bundle)
        if "REPORT.md" not in files:
            print("the workspace read back does not hold the worker's changes", file=sys.stderr)
            return 1
        if not args.keep:
            thread.delete()
            box.sources.delete(bundle.digest)
    except B4boxError as e:
        print("b4box: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
