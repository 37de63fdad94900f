#!/usr/bin/env python3
# Independent test oracle: per-device byte totals of PyTorch CUDA memory snapshots, printed as JSON.
"""Usage: python3 tests/oracle/snapshot_totals.py FILE [FILE...]

Prints {"files": {FILE: {"form", "pickle_protocol", "devices": [...]}}}. Inputs may be pickle
(never executes code: find_class and persistent_load raise), JSON, or either compressed with
gzip or zstd (detected by magic bytes; zstd through the `zstd` command).
"""
import gzip
import io
import json
import pickle
import subprocess
import sys

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
PENDING = ("active_pending_free", "active_awaiting_free")


class SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused global %s.%s" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused persistent id")


def decompress(data):
    if data.startswith(ZSTD_MAGIC):
        return subprocess.run(["zstd", "-dc"], input=data, stdout=subprocess.PIPE, check=True).stdout
    if data.startswith(GZIP_MAGIC):
        return gzip.decompress(data)
    return data


def load(path):
    """Returns (top-level object, pickle protocol or None for JSON)."""
    with open(path, "rb") as f:
        data = decompress(f.read())
    if data.lstrip()[:1] in (b"{", b"["):
        return json.loads(data), None
    proto = data[1] if data[:1] == b"\x80" and len(data) > 1 else 0
    return SafeUnpickler(io.BytesIO(data)).load(), proto


def requested(block):
    if "requested_size" in block:
        return block["requested_size"]
    history = block.get("history")
    if history:
        return history[0]["real_size"]
    return block["size"]


def device_totals(dev, segments, trace):
    t = dict(device=dev, reserved_bytes=0, allocated_bytes=0, active_bytes=0, requested_bytes=0,
             inactive_bytes=0, pending_free_bytes=0, internal_free_bytes=0, segments=len(segments),
             blocks=0, largest_free_block_bytes=0, trace_entries=len(trace),
             first_time_us=trace[0].get("time_us") if trace else None,
             last_time_us=trace[-1].get("time_us") if trace else None,
             segments_by_pool={"small": 0, "large": 0})
    for seg in segments:
        t["reserved_bytes"] += seg["total_size"]
        pool = seg.get("segment_type")
        if pool in t["segments_by_pool"]:
            t["segments_by_pool"][pool] += 1
        for b in seg.get("blocks", []):
            size, state = b["size"], b.get("state")
            t["blocks"] += 1
            if state == "active_allocated":
                t["allocated_bytes"] += size
                t["requested_bytes"] += requested(b)
            if state == "inactive":
                t["inactive_bytes"] += size
                t["largest_free_block_bytes"] = max(t["largest_free_block_bytes"], size)
            else:
                t["active_bytes"] += size
            if state in PENDING:
                t["pending_free_bytes"] += size
    t["internal_free_bytes"] = t["allocated_bytes"] - t["requested_bytes"]
    return t


def dropped_evidence(settings, segments, trace):
    """What shows the trace's ring buffer dropped older events: memsnap's
    devices[].trace.events_dropped_evidence, worked out here from the settings and,
    for a one-entry trace, from what that one event could have made."""
    if not trace:
        return None
    if settings.get("trace_alloc_overflowed") is True:
        return "overflowed"
    cap = settings.get("trace_alloc_max_entries")
    if isinstance(cap, int) and not isinstance(cap, bool) and 0 < cap <= len(trace):
        return "full"
    if len(trace) == 1:
        action = trace[0].get("action")
        if action in ("free_requested", "free_completed", "segment_free", "segment_unmap"):
            return "one_entry"  # what it frees was there before it
        if action in ("segment_alloc", "segment_map"):
            return "one_entry" if len(segments) > 1 else None
        return "one_entry" if segments else None  # an alloc's segment, or any memory, predates it
    return None


def totals(path):
    top, proto = load(path)
    if isinstance(top, list):
        form, segments, traces = "list", top, []
    else:
        form, segments, traces = "dict", top.get("segments", []), top.get("device_traces") or []
    devices = sorted({s.get("device", 0) for s in segments} | set(range(len(traces))))
    settings = (top.get("allocator_settings") if form == "dict" else None) or {}
    per_device = []
    for d in devices:
        segs, trace = [s for s in segments if s.get("device", 0) == d], traces[d] if d < len(traces) else []
        per_device.append(device_totals(d, segs, trace))
        per_device[-1]["events_dropped_evidence"] = dropped_evidence(settings, segs, trace)
    return {"form": form, "pickle_protocol": proto, "devices": per_device}


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    json.dump({"files": {p: totals(p) for p in argv}}, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
