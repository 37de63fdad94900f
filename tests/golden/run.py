#!/usr/bin/env python3
"""Golden output tests: what users read, pinned byte for byte.

Each line of cases.txt is `NAME ARGS...`: memsnap runs with ARGS (paths relative to the
repository root, COLUMNS=80, no colour) and its stdout must equal expected/NAME exactly; a
non-zero exit status or any stderr is pinned too, in expected/NAME.status. Every case runs
twice, and the two runs must agree (the output is deterministic). Text cases (.txt) must fit
80 columns.

  tests/golden/run.py BUILD/memsnap            compare
  tests/golden/run.py BUILD/memsnap --update   rewrite expected/ after a deliberate change;
                                               review it with `git diff tests/golden`
MEMSNAP_GOLDEN_UPDATE=1 in the environment does the same as --update.
"""
import difflib
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXPECTED = os.path.join(HERE, "expected")


def run(memsnap, args):
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.update({"COLUMNS": "80", "NO_COLOR": "1", "LC_ALL": "C"})
    p = subprocess.run([memsnap] + args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    status = "" if p.returncode == 0 and not p.stderr else "exit %d\n%s" % (p.returncode, p.stderr.decode())
    return p.stdout.decode("utf-8", "replace"), status


def read(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    if text == "":
        if os.path.exists(path):
            os.remove(path)
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    memsnap = os.path.abspath(sys.argv[1])
    update = "--update" in sys.argv[2:] or os.environ.get("MEMSNAP_GOLDEN_UPDATE") == "1"
    cases = []
    with open(os.path.join(HERE, "cases.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                name, *args = shlex.split(line)
                cases.append((name, args))
    failures = []
    names = set()
    for name, args in cases:
        if name in names:
            failures.append("%s: listed twice in cases.txt" % name)
        names.add(name)
        out, status = run(memsnap, args)
        out2, status2 = run(memsnap, args)
        if (out, status) != (out2, status2):
            failures.append("%s: two runs differ (output is not deterministic)" % name)
        out_path, status_path = os.path.join(EXPECTED, name), os.path.join(EXPECTED, name + ".status")
        # Text for people fits the 80 columns it was asked for (COLUMNS=80), --update or not.
        if name.endswith(".txt"):
            wide = [l for l in out.splitlines() if len(l) > 80]
            if wide:
                failures.append("%s: %d lines wider than 80 columns, e.g. %r" % (name, len(wide), wide[0]))
        if update:
            write(out_path, out)
            write(status_path, status)
            continue
        for path, got in ((out_path, out), (status_path, status)):
            want = read(path) or ""  # an absent file pins empty output
            if want != got:
                diff = "".join(difflib.unified_diff((want or "").splitlines(True), got.splitlines(True),
                                                    "expected/" + os.path.basename(path), "actual", n=2))
                failures.append("%s: output differs from %s\n%s" % (name, os.path.relpath(path, ROOT), diff[:6000]))
    if update:
        for f in failures:
            print("FAIL " + f)
        stale = [f for f in os.listdir(EXPECTED) if f.split(".status")[0] not in names]
        for f in stale:
            os.remove(os.path.join(EXPECTED, f))
        print("updated %d golden cases (%d stale files removed)" % (len(cases), len(stale)))
        return 1 if failures else 0
    for f in failures:
        print("FAIL " + f)
    print("%d cases, %d failures" % (len(cases), len(failures)))
    if failures:
        print("If the change is deliberate: tests/golden/run.py %s --update, then review git diff tests/golden"
              % os.path.relpath(memsnap, ROOT))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
