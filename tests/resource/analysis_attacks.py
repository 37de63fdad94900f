#!/usr/bin/env python3
"""Hostile inputs aimed at the analyses: each is generated here, small, and every command
must finish within a time limit and a memory bound (ulimit -v) with exit 0 or 2. The limit
is on the command's CPU time (user + system), which a loaded machine does not stretch; a
wall-clock limit of six times as much catches a hang.

  analysis_attacks.py MEMSNAP [SCALE]     SCALE multiplies the time limits (sanitizer builds: 10)

The shapes are the ones a quadratic or unbounded analysis would choke on: many OOM
events, many optimizer-step annotations, expandable segments mapped and unmapped tens of
thousands of times, thousands of sites over thousands of iterations, addresses chosen to
collide in an identity hash, multi-megabyte names, hostile timestamps, a huge COLUMNS.
"""
import os
import pickle
import resource
import subprocess
import sys
import tempfile

MEMSNAP = sys.argv[1]
SCALE = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
LIMIT_S = 10.0 * SCALE
WALL_S = 6 * LIMIT_S
MEM_BYTES = 4 << 30
BASE = 0x7F0000000000
failures = []


def frames(name, line=1, file="/w/train.py"):
    return [{"filename": file, "line": line, "name": name}]


def segment(addr, size, blocks, expandable=False, pool="large"):
    return {"device": 0, "address": addr, "total_size": size, "allocated_size": sum(
        b["size"] for b in blocks if b["state"] == "active_allocated"), "active_size": 0, "requested_size": 0,
            "stream": 0, "segment_type": pool, "segment_pool_id": (0, 0), "is_expandable": expandable,
            "frames": [], "blocks": blocks}


def block(addr, size, state="inactive", fr=None):
    return {"address": addr, "size": size, "requested_size": size if state != "inactive" else 0, "state": state,
            "frames": fr or []}


def ev(action, addr, size, fr=None, t=None, **extra):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "frames": fr or []}
    if t is not None:
        e["time_us"] = t
    e.update(extra)
    return e


def write(tmp, name, snap):
    path = os.path.join(tmp, name + ".pickle")
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    return path


def attack_many_ooms(tmp):
    # 100k OOM events after one segment: each would cost a replay from the start.
    trace = [ev("segment_alloc", BASE, 20 << 20, t=1)]
    trace += [{"action": "oom", "device_free": 1 << 20, "size": 40 << 20, "stream": 0, "frames": frames("step"),
               "time_us": 2 + i} for i in range(100000)]
    return {"segments": [segment(BASE, 20 << 20, [block(BASE, 20 << 20)])], "device_traces": [trace]}


def attack_many_steps(tmp):
    # 200k Optimizer.step annotations over 20k events: each would rescan the trace.
    trace = [ev("segment_alloc", BASE, 20 << 20, t=0)]
    for i in range(10000):
        trace.append(ev("alloc", BASE, 512, frames("step", 10), t=10 * i + 1))
        trace.append(ev("free_completed", BASE, 512, frames("step", 10), t=10 * i + 2))
    ann = []
    for i in range(200000):
        ann.append({"name": "Optimizer.step#Adam.step", "stage": "START", "device": 0, "time_us": i})
        ann.append({"name": "Optimizer.step#Adam.step", "stage": "END", "device": 0, "time_us": i})
    return {"segments": [segment(BASE, 20 << 20, [block(BASE, 20 << 20)])], "device_traces": [trace],
            "external_annotations": ann}


def attack_expandable_churn(tmp):
    # 30k expandable ranges, 300k map/unmap events.
    page = 20 << 20
    segs, trace = [], []
    for k in range(30000):
        a = BASE + k * 2 * page
        segs.append(segment(a, page, [block(a, page)], expandable=True))
    for i in range(150000):
        a = BASE + (i % 30000) * 2 * page + page
        trace.append(ev("segment_map", a, page, t=2 * i))
        trace.append(ev("segment_unmap", a, page, t=2 * i + 1))
    return {"segments": segs, "device_traces": [trace],
            "allocator_settings": {"expandable_segments": True, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}


def attack_sites_by_iterations(tmp):
    # 12k distinct sites, each retaining one allocation in one of 12k marked iterations.
    trace = [ev("segment_alloc", BASE, 1 << 30, t=0)]
    blocks = []
    for i in range(12000):
        a = BASE + i * 512
        trace.append(ev("alloc", a, 512, frames("site%d" % i, i + 100), t=i + 1))
        blocks.append(block(a, 512, "active_allocated", frames("site%d" % i, i + 100)))
    used = 12000 * 512
    blocks.append(block(BASE + used, (1 << 30) - used))
    return {"segments": [segment(BASE, 1 << 30, blocks)], "device_traces": [trace]}


def attack_colliding_addresses(tmp):
    # Addresses that are multiples of a large power of two (identity hashes collide).
    trace = [ev("segment_alloc", BASE, 1 << 40, t=0)]
    for i in range(60000):
        a = BASE + i * (1 << 24)
        trace.append(ev("alloc", a, 512, frames("f"), t=i + 1))
    for i in range(60000):
        a = BASE + i * (1 << 24)
        trace.append(ev("free_completed", a, 512, frames("f"), t=60001 + i))
    return {"segments": [segment(BASE, 1 << 40, [block(BASE, 1 << 40)])], "device_traces": [trace]}


def attack_long_names(tmp):
    # 4 MB file and function names, a 4 MB allocator setting, in many stacks.
    big = "x" * (4 << 20)
    fr = [{"filename": "/w/" + big + ".py", "line": 1, "name": big}]
    blocks, trace = [], [ev("segment_alloc", BASE, 20 << 20, t=0)]
    for i in range(64):
        f = fr + [{"filename": "/w/caller.py", "line": i, "name": "main"}]
        a = BASE + i * 4096
        blocks.append(block(a, 4096, "active_allocated", f))
        trace.append(ev("alloc", a, 4096, f, t=i + 1))
    blocks.append(block(BASE + 64 * 4096, (20 << 20) - 64 * 4096))
    return {"segments": [segment(BASE, 20 << 20, blocks)], "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": big, "expandable_segments": False}}


def attack_times(tmp):
    # Timestamps at the ends of the int64 range: spans must not overflow.
    trace = [ev("segment_alloc", BASE, 2 << 20, t=1), ev("alloc", BASE, 512, frames("f"), t=-(2 ** 63) + 1),
             ev("free_completed", BASE, 512, frames("f"), t=2 ** 63 - 1)]
    return {"segments": [segment(BASE, 2 << 20, [block(BASE, 2 << 20)], pool="small")], "device_traces": [trace]}


ATTACKS = [attack_many_ooms, attack_many_steps, attack_expandable_churn, attack_sites_by_iterations,
           attack_colliding_addresses, attack_long_names, attack_times]


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEM_BYTES, MEM_BYTES))


def run(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        p = subprocess.run([MEMSNAP] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=WALL_S,
                           preexec_fn=limit_memory if SCALE == 1.0 else None, env=e)
    except subprocess.TimeoutExpired:
        return None, WALL_S, b"", b""
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return p.returncode, cpu, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as tmp:
    for attack in ATTACKS:
        name = attack.__name__[len("attack_"):]
        path = write(tmp, name, attack(tmp))
        out_svg = os.path.join(tmp, name + ".svg")
        marker = ["--iteration-marker", "train.py:100"] if name == "sites_by_iterations" else []
        commands = [["analyze", path] + marker, ["analyze", "--format", "json", path] + marker,
                    ["segments", "--top", "0", path], ["events", "--around", "peak", path],
                    ["timeline", "--by-site", path, "-o", out_svg], ["diff", path, path],
                    ["flame", path], ["callgraph", path]]
        if SCALE > 1:  # a sanitizer build: the commands that reach every analysis and reporter
            commands = [commands[0], commands[1], commands[4]]
        for args in commands:
            rc, secs, out, err = run(args)
            what = "%s: %s" % (name, " ".join(a if a != path else os.path.basename(path) for a in args))
            if rc is None:
                failures.append("%s: still running after %.0f s (wall clock)" % (what, secs))
            elif secs > LIMIT_S:
                failures.append("%s: %.1f s of CPU, over the %.0f s limit" % (what, secs, LIMIT_S))
            elif rc not in (0, 2):
                failures.append("%s: exit %d: %s" % (what, rc, err.decode(errors="replace")[-300:]))
            elif len(out) > 64 << 20:
                failures.append("%s: %d bytes of output" % (what, len(out)))
            else:
                print("ok %5.2f s CPU  %s" % (secs, what))
    # A terminal that claims to be 100 million columns wide.
    path = write(tmp, "frag_like", attack_sites_by_iterations(tmp))
    rc, secs, out, err = run(["segments", path], {"COLUMNS": "100000000"})
    if rc != 0 or max((len(l) for l in out.splitlines()), default=0) > 240:
        failures.append("COLUMNS=100000000: exit %s, widest line %d" % (rc, max((len(l) for l in out.splitlines()), default=0)))

for f in failures:
    print("FAIL " + f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
