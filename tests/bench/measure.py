#!/usr/bin/env python3
"""Runs the benchmark commands alternately on each input and prints the table for run.sh.

CPU time is user + sys of the finished child (os.wait4), the median of RUNS alternating
runs. Peak anonymous memory is the largest RssAnon read from /proc/PID/status, polled
every millisecond while the command runs (RssAnon counts heap and anonymous mappings,
not the read-only mapped input, which is page cache); VmHWM would include the mapped
file. The poller takes a core of its own, which a two-threaded run (a .zst decoded
beside the parse) needs on a 2-core machine, so the peak comes from a run of its own
each round, and the timed runs are not polled. Usage: measure.py MEMSNAP OPWALK RUNS
FILE[:label] ...
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd, stdin_path=None, poll=False):
    """Runs cmd; returns (CPU seconds, wall seconds, peak RssAnon bytes or 0 unless poll)."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    err = tempfile.TemporaryFile()  # a file, not a pipe: a blocking wait cannot deadlock on it
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=err)
    peak = 0
    status = "/proc/%d/status" % p.pid
    if not poll:
        pid, rc, ru = os.wait4(p.pid, 0)
    while poll:
        try:
            with open(status) as f:
                for line in f:
                    if line.startswith("RssAnon:"):
                        peak = max(peak, int(line.split()[1]) * 1024)
                        break
        except OSError:
            pass
        pid, rc, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        time.sleep(0.001)
    wall = time.monotonic() - t0
    if stdin_path:
        stdin.close()
    if rc != 0:
        err.seek(0)
        raise SystemExit("%s failed (%d): %s" % (" ".join(cmd), rc, err.read().decode(errors="replace")[-300:]))
    return ru.ru_utime + ru.ru_stime, wall, peak


def main():
    memsnap, opwalk, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rows = []
    for arg in sys.argv[4:]:
        path, _, label = arg.partition(":")
        size = os.path.getsize(path)
        zst = path + ".zst" if os.path.exists(path + ".zst") else None
        # Each .zst run follows its plain run: after pickle.load has freed gigabytes, the next
        # process to touch fresh memory pays for it on a VM, and .zst holds more of it.
        cmds = {"plain": ([memsnap, "analyze", "--format", "json", path], None)}
        if zst:
            cmds["zst"] = ([memsnap, "analyze", "--format", "json", zst], None)
        cmds["stdin"] = ([memsnap, "analyze", "--format", "json", "-"], path)
        cmds["walk"] = ([opwalk, path], None)
        cmds["python"] = ([sys.executable, "-c", "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))", path], None)
        res = {k: [] for k in cmds}
        peaks = []
        for _ in range(runs):
            for k, (cmd, stdin) in cmds.items():  # alternate: each round runs every command once
                res[k].append(run(cmd, stdin))
            peaks.append(run(*cmds["plain"], poll=True)[2])
        med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in res.items()}
        med["plain"] += (statistics.median(peaks),)
        rows.append((label or os.path.basename(path), size, med))
    print("| input | size | memsnap CPU | wall | MB/s (CPU) | peak anon | x file | .zst CPU | .zst wall | stdin CPU "
          "| opcode walk | Python pickle.load | Python / memsnap CPU | wall |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, size, m in rows:
        cpu, wall, anon = m["plain"]
        # CPU counts both threads (the decoder runs on the second core); wall is what a user waits.
        zst = "%.2f s (%.2fx) | %.2f s (%.2fx)" % (m["zst"][0], m["zst"][0] / cpu, m["zst"][1], m["zst"][1] / wall) \
            if "zst" in m else "- | -"
        # Python's pickle.load is one thread: its CPU time is its wall time. The wall ratio
        # counts what memsnap overlaps on the second core (the 30x goal).
        print("| %s | %.0f MB | %.3f s | %.3f s | %.0f | %.0f MiB | %.2f | %s | %.2f s | %.3f s | %.2f s | %.1fx | %.1fx |" % (
            label, size / 1e6, cpu, wall, size / 1e6 / cpu, anon / 2**20, anon / size, zst, m["stdin"][0],
            m["walk"][0], m["python"][0], m["python"][0] / cpu, m["python"][1] / wall))


if __name__ == "__main__":
    main()
