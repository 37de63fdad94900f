#!/usr/bin/env python3
"""Documentation examples: every output shown in README.md and docs/*.md is the real binary's.

An example is a marker line followed by a fenced block:

    <!-- example: memsnap check --no-oom testdata/snapgen/list.pickle -->
    ```
    $ memsnap check --no-oom testdata/snapgen/list.pickle
    SKIP  oom ...
    ```

The command after `example:` runs under bash in the repository root, with `memsnap` on PATH
being the binary under test, COLUMNS=80, NO_COLOR=1 and LC_ALL=C; its stdout must equal the
block (a pipeline cuts a long output: `| head -n 20`, `| sed -n '/peak/,/^$/p'`; `2>&1` shows
stderr). A first line `$ COMMAND` in the block is shown to the reader and must be the marker's
command. Two other forms:

    <!-- example in DIR: COMMAND -->     runs in DIR (relative to the repository root);
                                        skipped when DIR does not exist (../shared/realdata)
    <!-- example in FLEET: COMMAND -->   runs in a directory of 16 snapshots rank00..rank15
                                        copied by tests/cli/fleet_gen.py from testdata/fleet

  tests/docs/examples.py BUILD/memsnap            compare
  tests/docs/examples.py BUILD/memsnap --update   rewrite every block from the binary's output,
                                                  then review it with `git diff README.md docs`
A command that exits 3 or more (an internal error or a signal) fails the example either way.
"""
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from skips import NO_SKIP  # noqa: E402  (.ci/run: an example skipped is one failed)
MARKER = re.compile(r"^<!-- example(?: in (\S+))?: (.*?) -->\s*$")
FENCE = re.compile(r"^(```+|~~~+)")
UPDATE_HINT = "tests/docs/examples.py build/memsnap --update"


class Fleet:
    """A 16-rank fleet, made once on first use."""

    def __init__(self):
        self.dir = None
        self.tried = False

    def get(self):
        if not self.tried:
            self.tried = True
            sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
            import fleet_gen  # noqa: E402

            d = tempfile.mkdtemp(prefix="memsnap-doc-fleet-")
            fleet_gen.generate(d, 16)
            for truth in glob.glob(os.path.join(d, "*.truth.json")):
                os.remove(truth)
            self.dir = d
        return self.dir

    def close(self):
        if self.dir:
            shutil.rmtree(self.dir)


def find_examples(path):
    """Yields (marker line index, dir, command, first content line, closing fence line)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            j = i + 1
            f = FENCE.match(lines[j]) if j < len(lines) else None
            if not f:
                raise SystemExit("%s:%d: an example marker must be followed by a fenced block" % (path, i + 1))
            k = j + 1
            while k < len(lines) and not lines[k].startswith(f.group(1)):
                k += 1
            if k == len(lines):
                raise SystemExit("%s:%d: the example's block is not closed" % (path, i + 1))
            out.append((i, m.group(1), m.group(2), j + 1, k))
            i = k
        i += 1
    return lines, out


def run(memsnap, cwd, command):
    env = dict(os.environ)
    env.update({"COLUMNS": "80", "NO_COLOR": "1", "LC_ALL": "C",
                "PATH": os.path.dirname(memsnap) + os.pathsep + env.get("PATH", "")})
    p = subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    update = "--update" in sys.argv[1:]
    memsnap = os.path.abspath(args[0])
    if not os.access(memsnap, os.X_OK) or os.path.basename(memsnap) != "memsnap":
        raise SystemExit("examples.py: %s: not a memsnap binary" % memsnap)
    docs = args[1:] or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    fleet = Fleet()
    passed = failed = skipped = 0
    try:
        for doc in docs:
            lines, examples = find_examples(doc)
            rel = os.path.relpath(doc, ROOT)
            changed = False
            for marker, where, command, start, end in reversed(examples):
                where_name = where or "."
                if where == "FLEET":
                    cwd = fleet.get()
                else:
                    cwd = os.path.normpath(os.path.join(ROOT, where or "."))
                    cwd = cwd if os.path.isdir(cwd) else None
                if cwd is None and NO_SKIP:
                    print("FAIL %s:%d: %s: no %s here, and a skip is a failure here (MEMSNAP_NO_SKIP=1)"
                          % (rel, marker + 1, command, where_name))
                    failed += 1
                    continue
                if cwd is None:
                    print("SKIP %s:%d: %s (no %s here)" % (rel, marker + 1, command, where_name))
                    skipped += 1
                    continue
                shown = lines[start:end]
                prompt = []
                if shown and shown[0].startswith("$ "):
                    prompt = ["$ " + command]
                    if shown[0] != prompt[0]:
                        print("FAIL %s:%d: the block's first line %r is not the marker's command"
                              % (rel, marker + 1, shown[0]))
                        if not update:
                            failed += 1
                            continue
                    shown = shown[1:]
                rc, out, err = run(memsnap, cwd, command)
                if rc >= 3:
                    print("FAIL %s:%d: %s: exit status %d\n%s" % (rel, marker + 1, command, rc, err))
                    failed += 1
                    continue
                got = out[:-1].split("\n") if out.endswith("\n") else out.split("\n")
                if out == "":
                    got = []
                if got == shown:
                    passed += 1
                    continue
                if update:
                    lines[start:end] = prompt + got
                    changed = True
                    print("UPDATED %s:%d: %s" % (rel, marker + 1, command))
                    passed += 1
                    continue
                failed += 1
                print("FAIL %s:%d: %s: the output differs from the document" % (rel, marker + 1, command))
                for d in difflib.unified_diff(shown, got, "document", "memsnap", lineterm="", n=1):
                    print("  " + d)
            if changed:
                with open(doc, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
    finally:
        fleet.close()
    if failed and not update:
        print("after a deliberate change of output: %s, then review `git diff README.md docs`" % UPDATE_HINT)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if passed + failed == 0:
        print("examples.py: no example was checked")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
