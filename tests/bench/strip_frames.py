#!/usr/bin/env python3
"""Writes a copy of a snapshot recorded as if without stack capture: no 'frames' on trace
entries, empty frames on segments and blocks (what context=None / enabled='state' gives).
Usage: strip_frames.py IN OUT"""
import pickle
import sys

with open(sys.argv[1], "rb") as f:
    snap = pickle.load(f)
empty = []
for seg in snap["segments"]:
    seg["frames"] = empty
    for b in seg["blocks"]:
        b["frames"] = empty
for trace in snap.get("device_traces", []):
    for e in trace:
        e.pop("frames", None)
with open(sys.argv[2], "wb") as f:
    pickle.dump(snap, f, protocol=4)
