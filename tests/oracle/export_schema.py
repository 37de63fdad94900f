#!/usr/bin/env python3
# Independent oracle for `memsnap export`: what the export of a snapshot must load as in Python.
"""normalize(original) is the dict `pickle.load` must return for `memsnap export ORIGINAL -o x.pickle`:
the original in torch >= 2.1's dict form, restricted to the keys memsnap models, with the defaults
memsnap's reader gives to absent keys. It is written from SNAPSHOT_FORMAT.md, not from memsnap's
code, and documents what an export drops (docs/export.md):

- frames keep filename, line, name (fx_* keys are dropped); inactive blocks have no frames;
- a 1.13/2.0 block `history` becomes frames + requested_size (history[0], as _memory_viz reads it);
- trace entries keep action, addr (device_free for oom), size, stream, time_us, frames: not
  compile_context, user_metadata, cpp_frames, pool_id, forward_frames, category; an unknown action
  is "unknown"; `active_awaiting_free` is `active_pending_free`;
- allocator_settings keeps PYTORCH_CUDA_ALLOC_CONF, max_split_size (-1: unlimited),
  garbage_collection_threshold, expandable_segments, roundup_power2_divisions,
  trace_alloc_max_entries, trace_alloc_overflowed;
- external_annotations keep device, time_us, name, stage; other top-level keys are dropped;
- segments are grouped by device (stable); device_traces has one list per device index.

    python3 tests/oracle/export_schema.py FILE   prints normalize(FILE) as JSON
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from snapshot_totals import load  # noqa: E402  (restricted unpickler, decompression)

U64 = (1 << 64) - 1
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom", "free"}


# Normal forms computed once per original object (torch shares frame dicts and lists):
# id -> (the object, kept alive so that its id stays unique; its normal form).
_seen = {}


def frame(f):
    hit = _seen.get(id(f))
    if hit is None or hit[0] is not f:
        hit = _seen[id(f)] = (f, {"filename": f.get("filename", ""), "line": f.get("line", 0),
                                  "name": f.get("name", "")})
    return hit[1]


def frames(fs):
    hit = _seen.get(id(fs))
    if hit is None or hit[0] is not fs:
        hit = _seen[id(fs)] = (fs, [frame(f) for f in fs])
    return hit[1]


def block(b, cursor):
    state = b["state"]
    if state == "active_awaiting_free":
        state = "active_pending_free"
    active = state != "inactive"
    requested, fs = b["size"], []
    if "requested_size" in b:
        requested = b["requested_size"]
    if "frames" in b:
        fs = b["frames"] if active else []
    elif b.get("history") and active:
        h = b["history"][0]
        if "requested_size" not in b and "real_size" in h:
            requested = h["real_size"]
        fs = h.get("frames", [])
    return {"address": b["address"] & U64 if "address" in b else cursor, "size": b["size"],
            "requested_size": requested, "state": state, "frames": frames(fs)}


def segment(s):
    blocks, cursor = [], s.get("address", 0) & U64
    for b in s["blocks"]:
        nb = block(b, cursor)
        cursor = nb["address"] + nb["size"]
        blocks.append(nb)
    allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    active = sum(b["size"] for b in blocks if b["state"] != "inactive")
    requested = sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated")
    out = {"device": s.get("device", 0), "address": s.get("address", 0) & U64, "total_size": s["total_size"],
           "allocated_size": s.get("allocated_size", allocated), "active_size": s.get("active_size", active),
           "requested_size": s.get("requested_size", requested), "stream": s.get("stream", 0) & U64}
    if s.get("segment_type") in ("small", "large"):
        out["segment_type"] = s["segment_type"]
    pool = list(s.get("segment_pool_id", (0, 0)))[:2]
    out["segment_pool_id"] = tuple(pool + [0] * (2 - len(pool)))
    out["is_expandable"] = bool(s.get("is_expandable", False))
    out["frames"] = frames(s.get("frames", []))
    out["blocks"] = blocks
    return out


def event(e):
    action = e["action"] if e["action"] in ACTIONS else "unknown"
    out = {"action": action}
    if action == "oom":
        out["device_free"] = e.get("device_free", 0)
    else:
        out["addr"] = e.get("addr", 0) & U64
    out["size"] = e.get("size", 0)
    out["stream"] = e.get("stream", 0) & U64
    if "time_us" in e:
        out["time_us"] = e["time_us"]
    out["frames"] = frames(e.get("frames", []))
    return out


def settings(a):
    m = a.get("max_split_size")
    out = {"PYTORCH_CUDA_ALLOC_CONF": a.get("PYTORCH_CUDA_ALLOC_CONF", ""),
           "max_split_size": m if isinstance(m, int) and 0 < m < (1 << 62) else -1,
           "garbage_collection_threshold": float(a.get("garbage_collection_threshold", 0.0)),
           "expandable_segments": bool(a.get("expandable_segments", False))}
    r = a.get("roundup_power2_divisions", {})
    out["roundup_power2_divisions"] = {str(int(k)): v for k, v in r.items()
                                       if isinstance(k, str) and k.isdigit() and isinstance(v, int)} \
        if isinstance(r, dict) else {}
    if "trace_alloc_max_entries" in a:
        out["trace_alloc_max_entries"] = a["trace_alloc_max_entries"]
    if "trace_alloc_overflowed" in a:
        out["trace_alloc_overflowed"] = bool(a["trace_alloc_overflowed"])
    return out


def annotation(a):
    out = {"device": a["device"] if isinstance(a.get("device"), int) else 0}
    if isinstance(a.get("time_us"), int):
        out["time_us"] = a["time_us"]
    out["name"] = a["name"] if isinstance(a.get("name"), str) else ""
    out["stage"] = a["stage"] if isinstance(a.get("stage"), str) else ""
    return out


def normalize(top):
    _seen.clear()
    if isinstance(top, list):
        top = {"segments": top}
    segs = sorted((segment(s) for s in top["segments"]), key=lambda s: s["device"])
    traces = top.get("device_traces") or []
    devices = {s["device"] for s in segs} | {i for i, t in enumerate(traces) if t is not None}
    out = {"segments": segs,
           "device_traces": [[event(e) for e in (traces[i] if i < len(traces) and traces[i] else [])]
                             for i in range(max(devices) + 1 if devices else 0)]}
    if "allocator_settings" in top:
        out["allocator_settings"] = settings(top["allocator_settings"])
    ann = [annotation(a) for a in top.get("external_annotations", []) if isinstance(a, dict)]
    if ann:
        out["external_annotations"] = ann
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    json.dump(normalize(load(sys.argv[1])[0]), sys.stdout, indent=1, default=list)
    sys.stdout.write("\n")
