#!/usr/bin/env python3
# Output files and lost writes (issues 11 and 13): a full disk is an error, -o replaces a file only
# when complete, an input is never overwritten, a signal leaves no half-written or temporary file,
# and the progress line appears only on a terminal, only for large inputs, never with --quiet.
import gzip
import os
import pickle
import pty
import select
import shutil
import signal
import subprocess
import tempfile
import time

from clitest import MEMSNAP, check, expect_error, finish, run, skip, snap

FULL = "memsnap: <stdout>: cannot write: No space left on device\n"


def run_to(args, stdout):
    """Runs memsnap with stdout going to an open file object (e.g. /dev/full)."""
    p = subprocess.run([MEMSNAP] + args, stdout=stdout, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def listing(d):
    return sorted(os.listdir(d))


# --- a full disk: exit 2 and one line, never 0 with the output lost ---------------------------------------
if os.path.exists("/dev/full"):
    with open("/dev/full", "wb") as full:
        for args in (["analyze", snap("train.pickle")],
                     ["analyze", "--format", "json", snap("frag.pickle")],
                     ["segments", snap("frag.pickle")],
                     ["diff", snap("leak.step4.pickle"), snap("leak.step10.pickle")],
                     ["timeline", snap("leak.pickle"), "-o", "-"],
                     ["export", snap("frag.pickle")],
                     ["export", snap("frag.pickle"), "--format", "pickle"],
                     ["--help"], ["export", "--help"]):
            rc, err = run_to(args, full)
            check("/dev/full " + " ".join(args[:2]), rc == 2 and err == FULL, "%d %r" % (rc, err))
    for args in (["timeline", snap("leak.pickle"), "--format", "svg", "-o", "/dev/full"],
                 ["export", snap("frag.pickle"), "-o", "/dev/full"]):
        expect_error("-o /dev/full " + args[0], args, "/dev/full: cannot write: No space left on device")
else:
    skip("/dev/full is absent")

with tempfile.TemporaryDirectory() as tmp:
    # --- -o replaces a file only when complete; the old one survives a failure ---------------------------
    out = os.path.join(tmp, "mem.svg")
    with open(out, "w") as f:
        f.write("OLD")
    os.chmod(out, 0o640)
    expect_error("failure after -o was opened", ["timeline", snap("list.pickle"), "-o", out],
                 snap("list.pickle") + ": the snapshot has no trace entries (recorded with enabled='state' or "
                 "history off): nothing to plot")
    check("old file intact", open(out).read() == "OLD")
    check("no temporary left", listing(tmp) == ["mem.svg"], listing(tmp))
    rc, so, se = run(["timeline", snap("leak.pickle"), "-o", out])
    check("replaced", rc == 0 and open(out).read().startswith("<svg") or open(out).read().startswith("<?xml"),
          open(out).read()[:40])
    check("mode kept", os.stat(out).st_mode & 0o777 == 0o640, oct(os.stat(out).st_mode))
    check("still one file", listing(tmp) == ["mem.svg"], listing(tmp))
    old_umask = os.umask(0o027)
    try:
        new = os.path.join(tmp, "new.pickle")
        rc, so, se = run(["export", snap("frag.pickle"), "-o", new, "--quiet"])
        check("new file", rc == 0 and se == "" and os.path.getsize(new) > 0, "%d %r" % (rc, se))
        check("new file mode from umask", os.stat(new).st_mode & 0o777 == 0o640, oct(os.stat(new).st_mode))
    finally:
        os.umask(old_umask)
    os.remove(new)

    # --- the input is never the output: by inode, whatever the spelling --------------------------------
    inp = os.path.join(tmp, "snap.pickle")
    shutil.copy(snap("leak.pickle"), inp)
    before = open(inp, "rb").read()
    os.symlink(inp, os.path.join(tmp, "link.pickle"))
    os.link(inp, os.path.join(tmp, "hard.pickle"))
    for cmd in (["timeline", inp, "--format", "csv", "-o"], ["export", inp, "-o"]):
        for target in (inp, os.path.join(tmp, ".", "snap.pickle"), os.path.join(tmp, "link.pickle"),
                       os.path.join(tmp, "hard.pickle")):
            expect_error("%s onto %s" % (cmd[0], os.path.basename(target)), cmd + [target],
                         target + ": is the input file " + inp + ": refusing to write onto it")
    check("input intact", open(inp, "rb").read() == before)
    with open(inp, "ab") as appended:  # `memsnap export snap.pickle >> snap.pickle`
        rc, err = run_to(["export", inp], appended)
    check("stdout onto the input", rc == 2 and err == "memsnap: <stdout>: is the input file " + inp +
          " (redirected onto it with > or >>): refusing to write onto it\n", "%d %r" % (rc, err))
    check("input intact after >>", open(inp, "rb").read() == before)
    for name in ("link.pickle", "hard.pickle"):
        os.remove(os.path.join(tmp, name))

    # --- a signal mid-run: the target is untouched and the temporary file removed ----------------------
    # memsnap waits on the FIFO, using no CPU: the two waits below are hang guards, generous because
    # a loaded machine (a parallel build, the sanitizers) stretches a start-up, not bounds on memsnap.
    fifo = os.path.join(tmp, "slow.fifo")
    os.mkfifo(fifo)
    target = os.path.join(tmp, "out.json")
    for existing in (False, True):
        if existing:
            with open(target, "w") as f:
                f.write("OLD")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            p = subprocess.Popen([MEMSNAP, "export", fifo, "-o", target], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any(n.startswith(".out.json.") for n in os.listdir(tmp)):
                time.sleep(0.01)
            check("temporary exists while running", any(n.startswith(".out.json.") for n in os.listdir(tmp)),
                  listing(tmp))
            p.send_signal(sig)
            p.wait(timeout=120)
            check("killed by %s" % sig.name, p.returncode == -sig, p.returncode)
            want = ["mem.svg", "out.json", "slow.fifo", "snap.pickle"] if existing else \
                ["mem.svg", "slow.fifo", "snap.pickle"]
            check("%s: nothing left behind (existing=%s)" % (sig.name, existing), listing(tmp) == want, listing(tmp))
            if existing:
                check("%s: old file intact" % sig.name, open(target).read() == "OLD")

    # --- progress: a terminal, a large input, and not --quiet --------------------------------------------
    big = os.path.join(tmp, "big.pickle")
    with open(big, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [[]], "padding": "x" * 120_000_000}, f, protocol=4)
    with open(big, "rb") as f, gzip.open(big + ".gz", "wb", compresslevel=1) as g:
        shutil.copyfileobj(f, g)

    def stderr_on_tty(args):
        master, slave = pty.openpty()
        p = subprocess.Popen([MEMSNAP] + args, stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            r, _, _ = select.select([master], [], [], 30)
            if not r:
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        p.wait(timeout=60)
        os.close(master)
        return p.returncode, b"".join(chunks).decode("utf-8", "replace")

    for path in (big, big + ".gz"):
        name = os.path.basename(path)
        rc, err = stderr_on_tty(["analyze", path])
        check(name + " progress on a terminal", rc == 0 and "memsnap: reading " in err and " MB of 120 MB" in err,
              "%d %r" % (rc, err[-300:]))
        check(name + " progress line cleared", err.endswith("\r\x1b[K"), repr(err[-40:]))
        rc, err = stderr_on_tty(["analyze", "--quiet", path])
        check(name + " --quiet", rc == 0 and "reading" not in err, "%d %r" % (rc, err[-200:]))
        rc, so, se = run(["analyze", path])
        check(name + " no progress when stderr is not a terminal", rc == 0 and se == "", "%d %r" % (rc, se))
    rc, err = stderr_on_tty(["analyze", snap("frag.pickle")])
    check("no progress for a small input", rc == 0 and err == "", "%d %r" % (rc, err))
    # Every command that reads a snapshot shows the line and takes -q (flame and callgraph
    # had no -q).
    out = os.path.join(tmp, "out")
    for args in (["segments"], ["events"], ["check", "--no-oom"], ["flame"], ["callgraph"],
                 ["export", "--format", "json", "-o", out + ".json"]):  # timeline: no trace to plot here
        name = args[0] + " on a terminal"
        rc, err = stderr_on_tty(args + [big])
        check(name + ": progress", rc == 0 and "memsnap: reading " in err, "%d %r" % (rc, err[-300:]))
        rc, err = stderr_on_tty(args + ["-q", big])
        check(name + ": -q", rc == 0 and "reading" not in err, "%d %r" % (rc, err[-200:]))

finish()
