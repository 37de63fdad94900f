#!/usr/bin/env python3
# `memsnap export` through the built binary, against Python: the pickle loads under a restricted
# Unpickler, equals the oracle's reading of the original (tests/oracle/export_schema.py), shares
# frames as torch's files do, uses only opcodes MemoryViz.js knows; slices replay as the viewer
# replays them; bad windows are one-line errors.
import glob
import io
import json
import os
import pickle
import pickletools
import sys
import tempfile

from clitest import TESTDATA, check, expect_error, finish, run, skip, snap

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "oracle"))
from export_schema import normalize  # noqa: E402
from snapshot_totals import load  # noqa: E402

REALDATA = sys.argv[3] if len(sys.argv) > 3 else ""
# Opcodes the unpickler of torch/utils/viz/MemoryViz.js (pytorch.org/memory_viz) handles.
VIEWER_OPS = {"PROTO", "APPEND", "APPENDS", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE",
              "NEWTRUE", "NEWFALSE", "NONE", "BINGET", "LONG_BINGET", "BININT", "BININT1", "BININT2",
              "EMPTY_DICT", "EMPTY_LIST", "FRAME", "LONG1", "MARK", "MEMOIZE", "BINPUT", "LONG_BINPUT",
              "SETITEMS", "SETITEM", "DICT", "SHORT_BINUNICODE", "BINUNICODE", "BINFLOAT", "STOP"}


class Refuse(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused %s.%s" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused persistent id")


def restricted_load(data):
    return Refuse(io.BytesIO(data)).load()


def lists(x):
    """Tuples as lists (JSON has no tuples)."""
    return json.loads(json.dumps(x))


def first_difference(a, b, path="$"):
    if type(a) is not type(b):
        return "%s: %s vs %s" % (path, type(a).__name__, type(b).__name__)
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return "%s: keys %s vs %s" % (path, sorted(a.keys()), sorted(b.keys()))
        for k in a:
            d = first_difference(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return "%s: %d vs %d items" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r vs %r" % (path, a, b)


ROLE_KEYS = ("role", "phase")


def take_roles(name, doc):
    """Removes memsnap's own block keys (role, phase: tests/cli/test_export_roles.py checks their
    figures) so that the rest compares with the oracle; every active block has a role, a free one none."""
    for seg in doc["segments"]:
        for b in seg["blocks"]:
            active = b["state"] != "inactive"
            check(name + ": a role on every active block and none on a free one", ("role" in b) == active, repr(b)[:200])
            for k in ROLE_KEYS:
                b.pop(k, None)
    return doc


def all_stacks(doc):
    for s in doc["segments"]:
        yield s["frames"]
        for b in s["blocks"]:
            yield b["frames"]
    for t in doc["device_traces"]:
        for e in t:
            yield e["frames"]


def check_sharing(name, doc):
    """One object per distinct frame and per distinct frames list, as torch's own files have."""
    stacks = list(all_stacks(doc))
    frames = [f for st in stacks for f in st]
    frame_ids = {id(f) for f in frames}
    frame_values = {(f["filename"], f["line"], f["name"]) for f in frames}
    check(name + " one dict per frame", len(frame_ids) == len(frame_values), "%d objects for %d frames" %
          (len(frame_ids), len(frame_values)))
    stack_ids = {id(st) for st in stacks}
    stack_values = {tuple((f["filename"], f["line"], f["name"]) for f in st) for st in stacks}
    check(name + " one list per stack", len(stack_ids) == len(stack_values), "%d objects for %d stacks" %
          (len(stack_ids), len(stack_values)))


def check_opcodes(name, data):
    ops = [op.name for op, _, _ in pickletools.genops(data)]
    check(name + " protocol 4", data[:2] == b"\x80\x04", data[:2])
    check(name + " no FRAME", "FRAME" not in ops)
    check(name + " viewer opcodes", set(ops) <= VIEWER_OPS, sorted(set(ops) - VIEWER_OPS))


def viewer_replay(doc, device):
    """MemoryViz.js's 'Allocator State History' undoes every event from the segments backwards;
    it fails on an event whose block is not there. Returns the first such event, or None."""
    live = {}
    segs = {}
    for s in doc["segments"]:
        if s["device"] != device:
            continue
        segs[s["address"]] = s["total_size"]
        for b in s["blocks"]:
            if b["state"] != "inactive":
                live[b["address"]] = b["state"] == "active_pending_free"
    trace = doc["device_traces"][device]
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        a = e["action"]
        if a == "alloc":
            if live.pop(e["addr"], None) is not False:  # must be live and not pending after it
                return i
        elif a == "free_requested":
            if live.get(e["addr"]) is not True:
                return i
            live[e["addr"]] = False
        elif a == "free_completed":
            if e["addr"] in live:
                return i
            live[e["addr"]] = True
        elif a == "segment_alloc":
            if segs.pop(e["addr"], None) != e["size"]:
                return i
        elif a == "segment_free":
            if e["addr"] in segs:
                return i
            segs[e["addr"]] = e["size"]
    return None


def analyze_json(path, extra=()):
    rc, out, err = run(["analyze", "--format", "json"] + list(extra) + [path])
    return json.loads(out) if rc == 0 else None


def same_analysis(name, a, b, at_end_only=False):
    if a is None or b is None:
        check(name + " analyze", False, "analyze failed")
        return
    da = {d["device"]: d for d in a["devices"]}
    db = {d["device"]: d for d in b["devices"]}
    for dev, d in da.items():
        e = db.get(dev)
        if e is None:
            check(name + " device %d" % dev, False, "missing after export")
            continue
        for k in ("reserved_bytes", "allocated_bytes", "active_bytes", "requested_bytes", "inactive_bytes",
                  "pending_free_bytes", "segments", "blocks", "largest_free_block_bytes"):
            check("%s device %d %s" % (name, dev, k), d["totals"][k] == e["totals"][k],
                  "%s vs %s" % (d["totals"][k], e["totals"][k]))
        if not at_end_only:
            for k in ("entries", "first_time_us", "last_time_us", "consistent"):
                check("%s device %d trace.%s" % (name, dev, k), d["trace"][k] == e["trace"][k],
                      "%s vs %s" % (d["trace"][k], e["trace"][k]))


with tempfile.TemporaryDirectory() as tmp:
    out_p = os.path.join(tmp, "x.pickle")
    out_j = os.path.join(tmp, "x.json")

    # --- whole exports: every fixture, and the real files when present --------------------------------
    inputs = sorted(glob.glob(os.path.join(TESTDATA, "snapgen", "*.pickle*"))) + \
        [os.path.join(TESTDATA, "json", "train.json")]
    if REALDATA and os.path.isdir(REALDATA):
        inputs += sorted(glob.glob(os.path.join(REALDATA, "*.pickle")) + glob.glob(os.path.join(REALDATA, "*.pkl")) +
                         glob.glob(os.path.join(REALDATA, "*.json")))
    else:
        skip("real snapshots (%s is absent)" % REALDATA)
    for path in inputs:
        name = os.path.basename(path)
        rc, so, se = run(["export", path, "-o", out_p])
        check(name + " export exit", rc == 0 and so == "", "%d %r" % (rc, se))
        check(name + " export note", se.startswith("wrote " + out_p + " (pickle, ") and se.count("\n") == 1, se)
        with open(out_p, "rb") as f:
            data = f.read()
        small = os.path.getsize(path) < (1 << 20) or not path.startswith(REALDATA or "\0")
        if small:  # pure-Python scans: the fixtures and the small real files suffice
            check_opcodes(name, data)
        got = take_roles(name, restricted_load(data))
        want = normalize(load(path)[0])
        d = None if want == got else first_difference(want, got)
        check(name + " equals the oracle's reading of the original", d is None, d)
        if small:
            check_sharing(name, got)
        same_analysis(name + " re-read", analyze_json(path), analyze_json(out_p))
        if small:
            rc, so, se = run(["export", path, "--format", "json"])  # to stdout
            check(name + " json exit", rc == 0 and se == "", "%d %r" % (rc, se))
            try:
                doc = json.loads(so)
            except ValueError as e:
                check(name + " json parses", False, str(e))
                continue
            plain = lists(got)
            doc = take_roles(name + " json", doc)
            d = None if plain == doc else first_difference(plain, doc)
            check(name + " JSON export equals the pickle export", d is None, d)

    # --- slices: a window replays as the viewer replays it, to exactly its segments ---------------------
    for fixture in ("frag.pickle", "leak.pickle", "expandable.pickle", "streams2.pickle", "ring.pickle",
                    "devices2.pickle", "train_zst.pickle.zst"):
        path = snap(fixture)
        full = analyze_json(path)
        for dev_info in full["devices"]:
            dev, n = dev_info["device"], dev_info["trace"]["entries"]
            for window, first, last in ((["--last", "100"], max(0, n - 100), n - 1),
                                        (["--from", str(n // 3), "--to", str(2 * n // 3)], n // 3, 2 * n // 3)):
                name = "%s device %d %s" % (fixture, dev, " ".join(window))
                rc, so, se = run(["export", path, "--device", str(dev)] + window + ["-o", out_p])
                check(name + " exit", rc == 0 and so == "", "%d %r" % (rc, se))
                with open(out_p, "rb") as f:
                    data = f.read()
                check_opcodes(name, data)
                doc = restricted_load(data)
                check(name + " one device", {s["device"] for s in doc["segments"]} <= {dev} and
                      len(doc["device_traces"]) == dev + 1 and all(not t for t in doc["device_traces"][:dev]),
                      [len(t) for t in doc["device_traces"]])
                check(name + " events", len(doc["device_traces"][dev]) == last - first + 1,
                      len(doc["device_traces"][dev]))
                original = normalize(load(path)[0])["device_traces"][dev][first:last + 1]
                d = first_difference(original, doc["device_traces"][dev])
                check(name + " the window's events", d is None, d)
                bad = viewer_replay(doc, dev)
                check(name + " the viewer replays every event", bad is None, "fails at event %s" % bad)
                cut = analyze_json(out_p)
                check(name + " memsnap replays it consistently",
                      cut is not None and cut["devices"][0]["trace"]["consistent"], "")
                at = analyze_json(path, ["--device", str(dev), "--at", str(last)])
                same_analysis(name + " state = --at " + str(last), at, cut, at_end_only=True)
    # the JSON form of a slice is the same document
    rc, so, se = run(["export", snap("frag.pickle"), "--last", "10", "--format", "json", "-o", out_j])
    with open(out_j) as f:
        as_json = json.load(f)
    run(["export", snap("frag.pickle"), "--last", "10", "-o", out_p])
    with open(out_p, "rb") as f:
        check("slice json = pickle", lists(restricted_load(f.read())) == as_json)
    # time windows
    full = restricted_load(open(snap("leak.pickle"), "rb").read())
    times = [e["time_us"] for e in full["device_traces"][0]]
    lo, hi = times[len(times) // 4], times[len(times) // 2]
    rc, so, se = run(["export", snap("leak.pickle"), "--from-time", str(lo), "--to-time", str(hi), "-o", out_p])
    doc = restricted_load(open(out_p, "rb").read())
    check("time window", rc == 0 and [e["time_us"] for e in doc["device_traces"][0]] ==
          [t for t in times if lo <= t <= hi], "%d %r" % (rc, se))
    check("time window replays", viewer_replay(doc, 0) is None)

    # --- hostile strings: escaped in JSON, exact in the pickle, never raw control bytes -------------------
    evil = "\x1b]0;owned\x07\x1b[2J\"quote\\back\nline\u2028\ud800\x7f\u00e9"
    frames = [{"filename": evil, "line": 1, "name": "f\x00n"}]
    doc = {"segments": [{"device": 0, "address": 1 << 40, "total_size": 2097152, "stream": 0,
                         "segment_type": "small", "allocated_size": 512, "active_size": 512,
                         "requested_size": 100, "blocks": [
                             {"address": 1 << 40, "size": 512, "requested_size": 100, "state": "active_allocated",
                              "frames": frames},
                             {"address": (1 << 40) + 512, "size": 2097152 - 512, "requested_size": 0,
                              "state": "inactive", "frames": []}]}],
           "device_traces": [[{"action": "alloc", "addr": 1 << 40, "size": 100, "stream": 0, "frames": frames,
                               "time_us": 5}]],
           "external_annotations": [{"device": 0, "time_us": 5, "name": evil, "stage": "START"}]}
    evil_path = os.path.join(tmp, "evil.pickle")
    with open(evil_path, "wb") as f:
        pickle.dump(doc, f, protocol=4)
    rc, so, se = run(["export", evil_path, "--format", "json"])
    raw = so.encode("utf-8", "surrogatepass")
    check("hostile json exit", rc == 0, se)
    check("hostile json has no raw control bytes", not any(c < 0x20 and c != 0x0a or c == 0x7f for c in raw[:-1]),
          repr(raw[:200]))
    try:
        j = json.loads(raw.decode("utf-8"))  # strict UTF-8: a lone surrogate would not decode
        check("hostile json string", j["segments"][0]["blocks"][0]["frames"][0]["filename"] ==
              evil.encode("utf-8", "surrogatepass").decode("utf-8", "replace"), repr(j["segments"][0]["blocks"][0]["frames"][0]["filename"]))
    except ValueError as e:
        check("hostile json parses", False, str(e))
    rc, so, se = run(["export", evil_path, "-o", out_p])
    got = restricted_load(open(out_p, "rb").read())
    check("hostile pickle strings exact", got["segments"][0]["blocks"][0]["frames"][0] == frames[0] and
          got["external_annotations"][0]["name"] == evil, repr(got["segments"][0]["blocks"][0]["frames"]))

    # --- errors: one line, exit 2, nothing written ---------------------------------------------------------
    f = snap("frag.pickle")
    for args, line in (
            (["--from", "10", "--to", "5"], "--from 10 is after --to 5"),
            (["--to", "5000"], "--to 5000: device 0 has 3089 trace entries (valid indices 0 to 3088)"),
            (["--last", "0"], "--last 0: a window holds at least one event"),
            (["--last", "3", "--from", "1"],
             "--last, --from/--to and --from-time/--to-time exclude each other: choose one window"),
            (["--device", "4"], "--device 4: the snapshot has no such device"),
            (["--from-time", "1", "--to-time", "2"], "--from-time/--to-time: no trace entry lies in that window "
                                                     "on any device")):
        expect_error(" ".join(args), ["export", f] + args + ["-o", os.path.join(tmp, "never.pickle")], line)
        check(" ".join(args) + " wrote nothing", not os.path.exists(os.path.join(tmp, "never.pickle")))
    expect_error("index window over 2 devices", ["export", snap("devices2.pickle"), "--from", "1", "-o", out_p],
                 "--from/--to: trace indices are per device and 2 devices have traces: choose one with --device")
    expect_error("no trace", ["export", snap("list.pickle"), "--to", "3", "-o", out_p],
                 "--from/--to: device 0 has no trace entries")
    expect_error("time window without times", ["export", snap("legacy.pickle"), "--from-time", "3", "-o", out_p],
                 "--from-time/--to-time: device 0's trace has no timestamps (use --from/--to or --last)")
    rc, so, se = run(["export", f, "--format", "xml"])
    check("bad --format", rc == 2 and so == "" and "--format" in se, "%d %r" % (rc, se))

finish()
