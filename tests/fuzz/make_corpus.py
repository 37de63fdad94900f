#!/usr/bin/env python3
"""Writes the fuzz target's seed corpus (tests/fuzz/corpus/): small snapshots that reach every
analysis (a trace with an OOM, expandable segments, pending frees, a private pool, legacy
history, the list form, annotations), each a few hundred bytes. Run it again after changing it;
the files are committed so the fuzzer and the corpus ctest need no Python."""
import os
import pickle

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
BASE = 0x7F0000000000
F = [{"filename": "/w/train.py", "line": 7, "name": "step"}]


def seg(addr, size, blocks, **kw):
    s = {"device": 0, "address": addr, "total_size": size, "allocated_size": 0, "active_size": 0,
         "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
         "is_expandable": False, "frames": [], "blocks": blocks}
    s.update(kw)
    return s


def blk(addr, size, state="inactive"):
    return {"address": addr, "size": size, "requested_size": size, "state": state, "frames": F if state != "inactive" else []}


def ev(action, addr, size, t):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "frames": F, "time_us": t}


seeds = {
    "oom": {"segments": [seg(BASE, 20 << 20, [blk(BASE, 8 << 20, "active_allocated"), blk(BASE + (8 << 20), 12 << 20)])],
            "device_traces": [[ev("segment_alloc", BASE, 20 << 20, 1), ev("alloc", BASE, 8 << 20, 2),
                               {"action": "oom", "device_free": 1 << 20, "size": 64 << 20, "stream": 0, "frames": F,
                                "time_us": 3}]]},
    "expandable": {"segments": [seg(BASE, 20 << 20, [blk(BASE, 1 << 20, "active_allocated"), blk(BASE + (1 << 20), 19 << 20)],
                                    is_expandable=True)],
                   "device_traces": [[ev("segment_map", BASE, 20 << 20, 1), ev("alloc", BASE, 1 << 20, 2),
                                      ev("segment_map", BASE + (40 << 20), 20 << 20, 3),
                                      ev("segment_unmap", BASE + (40 << 20), 20 << 20, 4)]],
                   "allocator_settings": {"expandable_segments": True, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                          "max_split_size": -1, "roundup_power2_divisions": {"1": 4}}},
    "pending_private": {"segments": [seg(BASE, 2 << 20, [blk(BASE, 512, "active_pending_free"), blk(BASE + 512, (2 << 20) - 512)],
                                         segment_type="small"),
                                     seg(BASE + (4 << 20), 2 << 20, [blk(BASE + (4 << 20), 2 << 20)], segment_type="small",
                                         segment_pool_id=(1, 0))],
                        "device_traces": [[]]},
    "list_form": [seg(BASE, 2 << 20, [blk(BASE, 2 << 20)], segment_type="small")],
    "legacy": {"segments": [{"device": 0, "address": BASE, "total_size": 2 << 20, "allocated_size": 512, "active_size": 512,
                             "stream": 0, "segment_type": "small",
                             "blocks": [{"size": 512, "state": "active_allocated",
                                         "history": [{"addr": BASE, "real_size": 100, "frames": F}]},
                                        {"size": (2 << 20) - 512, "state": "inactive"}]}],
               "device_traces": [[{"action": "alloc", "addr": BASE, "size": 100, "stream": 0, "frames": F}]]},
    "annotated": {"segments": [seg(BASE, 20 << 20, [blk(BASE, 20 << 20)])],
                  "device_traces": [[ev("segment_alloc", BASE, 20 << 20, 1)] +
                                    [e for i in range(6) for e in (ev("alloc", BASE, 4096, 10 * i + 2),
                                                                   ev("free_requested", BASE, 4096, 10 * i + 3),
                                                                   ev("free_completed", BASE, 4096, 10 * i + 4))]],
                  "external_annotations": [{"name": "Optimizer.step#SGD.step", "stage": s, "device": 0, "time_us": 10 * i + 5}
                                           for i in range(6) for s in ("START", "END")]},
}

os.makedirs(OUT, exist_ok=True)
for name, obj in seeds.items():
    for proto in (2, 4):
        with open(os.path.join(OUT, "%s_p%d.pickle" % (name, proto)), "wb") as f:
            pickle.dump(obj, f, protocol=proto)
print("wrote %d seeds to %s" % (2 * len(seeds), OUT))
