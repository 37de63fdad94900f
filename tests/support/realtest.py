# The harness of the suites over the real snapshots in ../shared/realdata (never copied into the
# project): argv is MEMSNAP REAL; the whole suite is SKIPPED (exit 77) when REAL is absent.
# check() records a failure, analyze() returns `analyze --format json`'s document (None and a
# recorded failure when it exits non-zero), finish() reports and exits.
import json
import os
import subprocess
import sys

from skips import skip

MEMSNAP, REAL = sys.argv[1], sys.argv[2]
if not os.path.isdir(REAL):
    skip("no real data at %s" % REAL, suite=True)
failures = []


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))


def memsnap(*args):
    """stdout of `memsnap ARGS`, or None (a recorded failure) when it exits non-zero."""
    p = subprocess.run([MEMSNAP] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    check(" ".join(args[:3]) + ": exit", p.returncode == 0, p.stderr.decode()[:300])
    return p.stdout.decode() if p.returncode == 0 else None


def analyze(path, *extra):
    p = subprocess.run([MEMSNAP, "analyze", "--format", "json", path] + list(extra), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    check(os.path.basename(path) + ": exit", p.returncode == 0, p.stderr.decode()[:300])
    return json.loads(p.stdout) if p.returncode == 0 else None


def finish():
    for f in failures:
        print("FAIL " + f)
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)
