#!/usr/bin/env python3
# Independent test oracle: the exact allocated/reserved peaks of a traced snapshot, by a replay
# written from the allocator's rules (SNAPSHOT_FORMAT.md), not from memsnap's code.
"""Usage: python3 tests/oracle/exact_peaks.py FILE [FILE...]

Prints {"files": {FILE: {"devices": [{device, allocated_bytes, allocated_event_index,
reserved_bytes, reserved_event_index, layout_equal}, ...]}}}. Event index -1 is the state when
the recorded window opened (only when something was live or reserved then). Devices with
expandable segments or no trace are left out.

How: undo the trace from the dumped state back to the window's start (which blocks and segments
existed then), then replay forwards with the caching allocator's block rules: an alloc takes the
free block at its address and splits off the remainder only when should_split says so (small
pool: 512 B or more left; large pool: more than 1 MiB left and the block below max_split_size);
a completed free merges with free neighbours. The final layout must equal the dump.
"""
import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from snapshot_totals import load  # noqa: E402  (the safe loader: never runs code)

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
PENDING = ("active_pending_free", "active_awaiting_free")


def round_size(n):
    return MIN_BLOCK if n < MIN_BLOCK else MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


def norm_trace(e):
    return e.get("action"), e.get("addr", 0), e.get("size", 0)


def device_lists(obj):
    segs = obj.get("segments", []) if isinstance(obj, dict) else obj
    traces = obj.get("device_traces", []) if isinstance(obj, dict) else []
    settings = obj.get("allocator_settings", {}) if isinstance(obj, dict) else {}
    return segs, traces, settings


def dumped_blocks(seg):
    addr = seg["address"]
    out = []
    for b in seg.get("blocks", []):
        a = b.get("address", addr)
        state = b.get("state", "inactive")
        st = "free" if state == "inactive" else ("pending" if state in PENDING else "alloc")
        out.append((a, b["size"], st))
        addr = a + b["size"]
    return out


def replay_device(dev, segs, trace, max_split):
    # ---- backwards to the window's start
    seg_size = {s["address"]: s["total_size"] for s in segs}
    seg_small = {s["address"]: s.get("segment_type") == "small" for s in segs}
    live = {}  # addr -> [size or None, requested, pending]
    exact = {}  # alloc event index -> dumped size
    for s in segs:
        for a, size, st in dumped_blocks(s):
            if st != "free":
                live[a] = [size, None, st == "pending", True]
    for k in range(len(trace) - 1, -1, -1):
        act, a, size = norm_trace(trace[k])
        if act == "alloc":
            b = live.pop(a, None)
            if b and b[3]:
                exact[k] = b[0]
        elif act == "free_completed":
            live[a] = [None, size, True, False]
        elif act == "free_requested":
            if a in live:
                live[a][2] = False
            else:
                live[a] = [None, size, False, False]
        elif act == "free":
            live[a] = [None, size, False, False]
        elif act == "segment_alloc":
            seg_size.pop(a, None)
        elif act == "segment_free":
            seg_size[a] = size
            seg_small[a] = size == 2 << 20
    # ---- the start layout: per segment, sorted block starts; blocks addr -> [size, state, seg]
    blocks, starts = {}, {}
    for sa, ssize in seg_size.items():
        starts[sa] = []
    seg_sorted = sorted(seg_size)

    def seg_of(a):
        i = bisect.bisect_right(seg_sorted, a) - 1
        if i >= 0 and a < seg_sorted[i] + seg_size[seg_sorted[i]]:
            return seg_sorted[i]
        return None

    live_sorted = sorted(live.items())
    for idx, (a, (size, req, pending, from_dump)) in enumerate(live_sorted):
        sa = seg_of(a)
        if sa is None:
            return None
        if size is None:
            size = round_size(req)
            limit = sa + seg_size[sa]
            if idx + 1 < len(live_sorted) and live_sorted[idx + 1][0] < limit:
                limit = live_sorted[idx + 1][0]
            gap = limit - (a + size)
            whole = max_split is not None and size >= max_split
            if not seg_small[sa] and 0 < gap <= SMALL_SIZE and not whole:
                size += gap
        blocks[a] = [size, "pending" if pending else "alloc", sa]
        starts[sa].append(a)
    for sa in seg_size:  # the gaps are free blocks
        cursor, out = sa, []
        for a in sorted(starts[sa]):
            if a > cursor:
                blocks[cursor] = [a - cursor, "free", sa]
                out.append(cursor)
            out.append(a)
            cursor = a + blocks[a][0]
        if cursor < sa + seg_size[sa]:
            blocks[cursor] = [sa + seg_size[sa] - cursor, "free", sa]
            out.append(cursor)
        starts[sa] = out

    allocated = sum(b[0] for b in blocks.values() if b[1] == "alloc")
    reserved = sum(seg_size.values())
    mid_run = bool(live) or bool(seg_size)
    pa, pae, pr, pre = (allocated, -1, reserved, -1) if mid_run and (allocated or reserved) else (-1, None, -1, None)

    def neighbours(a):
        lst = starts[blocks[a][2]]
        i = bisect.bisect_left(lst, a)
        return (lst[i - 1] if i > 0 else None), (lst[i + 1] if i + 1 < len(lst) else None), i

    def free_merge(a):
        prev, nxt, i = neighbours(a)
        lst = starts[blocks[a][2]]
        if nxt is not None and blocks[nxt][1] == "free":
            blocks[a][0] += blocks.pop(nxt)[0]
            lst.pop(i + 1)
        if prev is not None and blocks[prev][1] == "free":
            blocks[prev][0] += blocks.pop(a)[0]
            lst.pop(i)

    for k, e in enumerate(trace):
        act, a, size = norm_trace(e)
        if act == "alloc":
            b = blocks.get(a)
            if b is None or b[1] != "free":
                return None  # the rules cannot follow this trace
            r = round_size(size)
            small = seg_small[b[2]]
            rem = b[0] - r
            split = rem >= MIN_BLOCK if small else (rem > SMALL_SIZE and (max_split is None or r < max_split))
            if split:
                blocks[a + r] = [rem, "free", b[2]]
                lst = starts[b[2]]
                lst.insert(bisect.bisect_left(lst, a) + 1, a + r)
                b[0] = r
            if k in exact and exact[k] != b[0]:
                return None
            b[1] = "alloc"
            allocated += b[0]
        elif act == "free_requested":
            b = blocks.get(a)
            if b and b[1] == "alloc":
                b[1] = "pending"
                allocated -= b[0]
        elif act in ("free_completed", "free"):
            b = blocks.get(a)
            if b and b[1] != "free":
                if b[1] == "alloc":
                    allocated -= b[0]
                b[1] = "free"
                free_merge(a)
        elif act == "segment_alloc":
            seg_size[a] = size
            seg_small[a] = size == 2 << 20
            bisect.insort(seg_sorted, a)
            blocks[a] = [size, "free", a]
            starts[a] = [a]
            reserved += size
        elif act == "segment_free":
            for s in starts.pop(a, []):
                blocks.pop(s, None)
            reserved -= seg_size.pop(a, 0)
            seg_sorted.remove(a)
        elif act in ("segment_map", "segment_unmap"):
            return None
        if allocated > pa:
            pa, pae = allocated, k
        if reserved > pr:
            pr, pre = reserved, k
    # the final layout against the dump
    want = {s["address"]: dumped_blocks(s) for s in segs}
    got = {sa: [(a, blocks[a][0], blocks[a][1]) for a in starts[sa]] for sa in starts}
    return dict(device=dev, allocated_bytes=pa, allocated_event_index=pae, reserved_bytes=pr,
                reserved_event_index=pre, layout_equal=want == got)


def analyse(path):
    obj, _ = load(path)
    segs, traces, settings = device_lists(obj)
    mss = settings.get("max_split_size") if isinstance(settings, dict) else None
    if isinstance(mss, int) and (mss < 0 or mss >= (1 << 62)):
        mss = None
    out = []
    for dev, trace in enumerate(traces):
        if not trace:
            continue
        dsegs = [s for s in segs if s.get("device", 0) == dev]
        if any(s.get("is_expandable") for s in dsegs):
            continue
        r = replay_device(dev, dsegs, trace, mss if isinstance(mss, int) else None)
        if r:
            out.append(r)
    return {"devices": out}


def main():
    print(json.dumps({"files": {p: analyse(p) for p in sys.argv[1:]}}))


if __name__ == "__main__":
    main()
