#!/usr/bin/env python3
"""Writes testdata/snapgen/retry.pickle (+ retry.truth.json): a job near its device's
capacity whose cudaMalloc fails RETRIES times; each time the allocator frees every cached
segment (a burst of segment_free carrying the failing request's stack, as PyTorch records
it), then gets the segment it needs (segment_alloc) and serves the request (alloc). The
truth: retries, bytes freed, segments freed, the request size and its site."""
import json, os, pickle, sys

MB = 1 << 20
here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "..", "snapgen")
TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
S = "/workspace/train.py"


def fr(*py):
    return [{"filename": f, "line": l, "name": n} for f, l, n in py]


STEP = fr((S, 150, "train_step"), (S, 205, "main"), (S, 240, "<module>"))
BIG = fr((f"{TORCH}/nn/functional.py", 1704, "relu"), (S, 122, "forward"), (S, 150, "train_step"),
         (S, 205, "main"), (S, 240, "<module>"))

trace, t = [], [1_700_000_000_000_000]
addr = [0x7F0000000000]


def ev(action, a, size, frames):
    t[0] += 10
    trace.append({"action": action, "addr": a, "size": size, "stream": 0, "time_us": t[0], "frames": frames})


RETRIES, CACHED = 3, 3  # each retry frees CACHED segments of 20 MiB
freed = 0
live = None
for step in range(RETRIES):
    segs = []
    for k in range(CACHED):  # temporaries that leave whole cached segments behind
        a = addr[0]; addr[0] += 64 * MB
        ev("segment_alloc", a, 20 * MB, STEP)
        ev("alloc", a, 20 * MB, STEP)
        ev("free_requested", a, 20 * MB, STEP)
        ev("free_completed", a, 20 * MB, STEP)
        segs.append(a)
    if live is not None:  # the previous big block goes; its segment stays cached
        ev("free_requested", live, 60 * MB, BIG)
        ev("free_completed", live, 60 * MB, BIG)
        segs.append(live)
    for a in segs:  # cudaMalloc failed: the cache is emptied, with the request's stack
        size = 60 * MB if a == live else 20 * MB
        ev("segment_free", a, size, BIG)
        freed += size
    a = addr[0]; addr[0] += 64 * MB
    ev("segment_alloc", a, 60 * MB, BIG)
    ev("alloc", a, 60 * MB, BIG)
    live = a

snap = {
    "segments": [{"address": live, "total_size": 60 * MB, "stream": 0, "segment_type": "large",
                  "allocated_size": 60 * MB, "active_size": 60 * MB, "requested_size": 60 * MB, "device": 0,
                  "segment_pool_id": (0, 0), "is_expandable": False, "frames": BIG,
                  "blocks": [{"address": live, "size": 60 * MB, "requested_size": 60 * MB,
                              "state": "active_allocated", "frames": BIG}]}],
    "device_traces": [trace],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
                           "expandable_segments": False},
}
with open(os.path.join(out, "retry.pickle"), "wb") as f:
    pickle.dump(snap, f, protocol=4)
truth = {"cache_flush_retry": {"retries": RETRIES, "freed_bytes": freed,
                               "segments": RETRIES * CACHED + RETRIES - 1,
                               "request_bytes": 60 * MB, "site": "train.py:122:forward"}}
with open(os.path.join(out, "retry.truth.json"), "w") as f:
    json.dump(truth, f, indent=1)
