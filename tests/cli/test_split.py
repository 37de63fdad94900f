#!/usr/bin/env python3
# The parse in two halves (SplitParse in src/snapshot/fast_build.cpp) end to end: a plain file
# of 64 MiB or more, generated here, is analyzed with the split and without it
# (MEMSNAP_SPLIT=0); every output must be the same, and MEMSNAP_FAST_DEBUG=1 must show that
# the split ran and its second half's work was taken. The file is shaped to exercise what the
# second half defers: free events that name their alloc's traceback by memo GET, frames first
# met after the second half started (their dicts memoized late, then named by GET), and one
# event list per device, so that the second half starts at a list (moved whole) or inside one.
import os
import pickle
import tempfile

from clitest import check, finish, run

MIB = 1 << 20


def build(devices, events_per_device, late_every):
    """A snapshot pickle (protocol 4, with FRAMEs) of about 70 MiB."""
    files = ["/w/model/layer%d.py" % i for i in range(40)]
    frame_pool = [{"filename": files[i % 40], "line": 10 + i, "name": "forward_%d" % i} for i in range(400)]
    stacks = [[frame_pool[(s * 7 + k) % 400] for k in range(30)] for s in range(64)]
    traces, segments = [], []
    for d in range(devices):
        base = 0x7F0000000000 + d * (1 << 36)
        segments.append({"device": d, "address": base, "total_size": 1 << 34, "allocated_size": 0,
                         "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
                         "blocks": [{"address": base, "size": 1 << 34, "requested_size": 0, "state": "inactive"}]})
        trace = []
        t = 1_700_000_000_000_000
        for i in range(events_per_device // 3):
            if late_every and i and i % late_every == 0:
                # A call site first met late: a new frame dict, used twice.
                late = {"filename": files[i % 40], "line": 100000 + i, "name": "late_%d" % i}
                st = [late] + stacks[i % 64][1:] + [late]
            else:
                st = stacks[i % 64]
            addr = base + (i % 4096) * (1 << 21)
            size = 512 * (1 + i % 977)
            st = list(st)  # each alloc's own traceback list, as PyTorch writes it; its frees share it
            trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": st})
            trace.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": t + 1,
                          "frames": st})
            trace.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t + 2,
                          "frames": st})
            t += 3
        traces.append(trace)
    snap = {"segments": segments, "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0, "expandable_segments": False,
                                   "roundup_power2_divisions": {}, "trace_alloc_max_entries": 10 ** 9,
                                   "trace_alloc_overflowed": False}}
    return pickle.dumps(snap, protocol=4)


with tempfile.TemporaryDirectory() as tmp:
    for name, devices, per_device, late in (("two devices", 2, 420_000, 997), ("one device", 1, 840_000, 0)):
        data = build(devices, per_device, late)
        path = os.path.join(tmp, "big.pickle")
        with open(path, "wb") as f:
            f.write(data)
        check(name + ": input from 64 MiB", len(data) >= 64 * MIB, "%d bytes" % len(data))
        # MEMSNAP_SPLIT=wait: the first half waits for the second at the hand-over, so that the
        # second half runs on a loaded machine too (else the first may read on alone, and did
        # once here under a load of 8). The export below keeps the default timing.
        env = {"MEMSNAP_FAST_DEBUG": "1", "MEMSNAP_SPLIT": "wait"}
        rc, split, err = run(["analyze", "--format", "json", path], env, timeout=600)
        check(name + ": split exit", rc == 0, "%d %r" % (rc, err[-300:]))
        check(name + ": second half taken", "second half done" in err and "took the second half" in err,
              err[-500:])
        check(name + ": fast path kept", "generic path used" not in err, err[-300:])
        rc, whole, err = run(["analyze", "--format", "json", path], {"MEMSNAP_SPLIT": "0"}, timeout=600)
        check(name + ": one-pass exit", rc == 0, "%d %r" % (rc, err[-300:]))
        check(name + ": same analysis", split == whole and len(split) > 1000,
              "%d vs %d bytes" % (len(split), len(whole)))
        a = run(["segments", "--format", "json", path], timeout=600)
        b = run(["segments", "--format", "json", path], {"MEMSNAP_SPLIT": "0"}, timeout=600)
        check(name + ": same segments", a == b and a[0] == 0, "%r vs %r" % (a[2][-200:], b[2][-200:]))
        # The whole model, every event's stack included: export writes it back as a pickle.
        outs = []
        for env, out in (({}, "split.pickle"), ({"MEMSNAP_SPLIT": "0"}, "whole.pickle")):
            out = os.path.join(tmp, out)
            rc, _, err = run(["export", "--format", "pickle", "-o", out, path], env, timeout=600)
            check(name + ": export exit", rc == 0, "%d %r" % (rc, err[-300:]))
            with open(out, "rb") as f:
                outs.append(f.read())
        check(name + ": same export", outs[0] == outs[1] and len(outs[0]) > MIB,
              "%d vs %d bytes" % (len(outs[0]), len(outs[1])))

finish()
