#!/usr/bin/env python3
"""Benchmark for issue 10's last target: a trace with 10,000 OOM events or 10,000 optimizer
steps costs no more than twice a trace of the same length without them (not a ctest).

  tests/bench/no_superlinear.py MEMSNAP [EVENTS] [RUNS]     defaults: 400000 events, 5 runs

Writes three snapshots of EVENTS trace events each under $MEMSNAP_BENCH_DIR (default
/tmp/memsnap-bench): a plain loop of allocations and frees (the baseline), the same loop
with 10,000 of its events replaced by OOM events, and the same loop with 10,000
Optimizer.step annotations (so iterations come from annotations: 10,000 boundaries). Runs
`memsnap analyze --format json` on the three in turn, RUNS times, and prints the median CPU
time (user + sys of the child) of each and its ratio to the baseline. Exit status 1 when a
ratio exceeds 2.
"""
import os
import pickle
import statistics
import subprocess
import sys

BASE = 0x7F0000000000
MIB = 1 << 20
SLOTS = 64  # blocks live at once


def frames(line):
    return [{"filename": "/w/train.py", "line": line, "name": "step"},
            {"filename": "/w/train.py", "line": 200, "name": "main"}]


def snapshot(events, ooms=0, steps=0):
    """A 64 MiB segment; allocations and their frees cycling over 64 one-MiB slots, all free at the dump."""
    trace = [{"action": "segment_alloc", "addr": BASE, "size": SLOTS * MIB, "stream": 0, "frames": [],
              "time_us": 0}]
    oom_every = (events // ooms) if ooms else 0
    t = 1
    i = 0
    while len(trace) < events:
        if oom_every and len(trace) % oom_every == 0:
            trace.append({"action": "oom", "addr": 0, "size": 128 * MIB, "stream": 0, "device_free": MIB,
                          "frames": frames(30), "time_us": t})
        else:
            addr = BASE + (i % SLOTS) * MIB
            trace.append({"action": "alloc", "addr": addr, "size": MIB, "stream": 0, "frames": frames(10 + i % 7),
                          "time_us": t})
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": addr, "size": MIB, "stream": 0,
                              "frames": frames(10 + i % 7), "time_us": t + 1})
            i += 1
        t += 2
    del trace[events:]
    while trace[-1]["action"] != "free_completed" and trace[-1]["action"] != "oom":
        trace.pop()  # every slot free at the dump: the trace ends after a completed free
    snap = {"segments": [{"device": 0, "address": BASE, "total_size": SLOTS * MIB, "allocated_size": 0,
                          "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
                          "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                          "blocks": [{"address": BASE, "size": SLOTS * MIB, "requested_size": 0,
                                      "state": "inactive", "frames": []}]}],
            "device_traces": [trace]}
    if steps:
        span = t // steps
        snap["external_annotations"] = [
            {"name": "Optimizer.step#Adam.step", "stage": stage, "device": 0, "time_us": k * span + off}
            for k in range(steps) for stage, off in (("START", 0), ("END", 1))]
    return snap


def cpu_of(cmd):
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execv(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("%s failed with status %d" % (" ".join(cmd), os.waitstatus_to_exitcode(status)))
    return ru.ru_utime + ru.ru_stime


def main():
    memsnap = sys.argv[1]
    events = int(sys.argv[2]) if len(sys.argv) > 2 else 400000
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    out = os.environ.get("MEMSNAP_BENCH_DIR", "/tmp/memsnap-bench")
    os.makedirs(out, exist_ok=True)
    cases = [("baseline", {}), ("10,000 OOM events", {"ooms": 10000}),
             ("10,000 optimizer steps", {"steps": 10000})]
    paths = []
    for name, kw in cases:
        path = os.path.join(out, "superlinear-%d-%s.pickle" % (events, "-".join("%s%d" % i for i in kw.items())
                                                                  or "plain"))
        if not os.path.exists(path):
            with open(path + ".tmp", "wb") as f:
                pickle.dump(snapshot(events, **kw), f, protocol=4)
            os.replace(path + ".tmp", path)
        paths.append(path)
    times = [[] for _ in cases]
    for _ in range(runs):
        for k, path in enumerate(paths):
            times[k].append(cpu_of([memsnap, "analyze", "--format", "json", path]))
    base = statistics.median(times[0])
    print("| trace (%d events) | memsnap CPU (median of %d) | x baseline |" % (events, runs))
    print("|---|---:|---:|")
    worst = 0.0
    for (name, _), ts in zip(cases, times):
        m = statistics.median(ts)
        ratio = m / base if base > 0 else 0.0
        worst = max(worst, ratio)
        print("| %s | %.3f s | %.2f |" % (name, m, ratio))
    return 1 if worst > 2.0 else 0


if __name__ == "__main__":
    sys.exit(main())
