# The harness every CLI test script shares: run the binary, record failed checks, report.
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from skips import skip  # noqa: E402,F401  (the scripts' one way to say SKIPPED)

MEMSNAP, TESTDATA = sys.argv[1], sys.argv[2]
failures = []


def run(args, env=None, stdin=None, timeout=120):
    """Runs memsnap; returns (exit status, stdout, stderr). NO_COLOR is cleared unless `env` sets it."""
    e = dict(os.environ)
    e.pop("NO_COLOR", None)
    e.update(env or {})
    p = subprocess.run([MEMSNAP] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, env=e)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(name, cond, detail=""):
    if not cond:
        failures.append("%s: %s" % (name, detail))


def expect_error(name, args, line, stdin=None):
    """An input or usage error: exit 2, nothing on stdout, exactly `memsnap: LINE` on stderr."""
    rc, out, err = run(args, stdin=stdin)
    check(name, rc == 2, "exit %d, want 2 (stderr %r)" % (rc, err))
    check(name, out == "", "stdout should be empty, got %r" % out[:200])
    check(name, err == "memsnap: " + line + "\n", "stderr %r, want %r" % (err, "memsnap: " + line + "\n"))


def format_size(n):
    """c10's format_size, as PyTorch prints sizes in its OOM message."""
    if n <= 1024:
        return "%d bytes" % n
    for limit, unit, scale in ((1 << 20, "KiB", 1 << 10), (1 << 30, "MiB", 1 << 20)):
        if n <= limit:
            return "%.2f %s" % (n / scale, unit)
    return "%.2f GiB" % (n / (1 << 30))


def snap(name):
    return os.path.join(TESTDATA, "snapgen", name)


def finish():
    for f in failures:
        print("FAIL " + f)
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)
