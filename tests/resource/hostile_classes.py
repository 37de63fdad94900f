#!/usr/bin/env python3
"""Issue 38's classes of hostile input, each made here by its own generator: every run must
finish in under 10 s of CPU time with a peak RSS under 1 GB at the default bounds, and do what
the class requires (the input intact, output that parses, no injection, bounded output, bounded
memory). CPU time (user + system, from wait4), not wall time: the machine is shared, and a
loaded one stretches wall time without any more work done; a run past 60 s of wall time
fails as a hang.

Usage: hostile_classes.py MEMSNAP [SCALE]

SCALE > 1 marks a sanitizer build: time bounds are multiplied by it and the RSS bound is left
out (AddressSanitizer's shadow memory and quarantine).

  1  the input is never lost: -o onto an input (same file, symbolic link, hard link, diff's
     either file, "-" read from the file) and stdout appended onto it (`>>`), for every command
  2  output that parses: a frame name, a block state, a file's own name with bytes F8 88 80
     (a lead byte no UTF-8 has) in JUnit XML, SVG, DOT, JSON and CSV
  4  CSV injection: control characters and formula leads in the timeline's site columns
  7  memory: /dev/zero, a stream of zeros on standard input and a gzip or zstd bomb of zeros
     stop at their first byte (0x00 starts no pickle and no JSON)
     memo-shared segments (one 20,000-block segment referenced 3,000 times: 60 million blocks
     from 0.6 MB) stop at the default bound, 8x the input plus 128 MiB, alone and two at once
     under -j 2 (one budget for the run)
  9  a zstd file that starts with a skippable frame is read
  5  bounded output: one memoised 1 MiB file name shared by every frame (export refused at the
     output bound, before writing, no file left; every other command on it runs in time: the
     frames' rules are worked out once per distinct string, 6); deep distinct paths (the flame
     graph, and diff --flame's, leaves out frames narrower than a pixel and counts them; folded
     and DOT stay small); --max-output, also for diff --flame; 10,000 sites calling one library
     file of a 64 MiB name (each site's "via" context capped, worked out once for the file; the
     report's loader interns the name once, its flame labels are worked out once per frame, the
     anti-patterns' frame questions once per file); the report on 150,000 sites of a 1 MiB
     library name (each flame embeds only the frames its kept nodes name: the page bounded by
     what it draws); 40,000 sites each building a module three
     times (the model-per-step search looks at the open runs of parameters only);
     15,000 flame graph boxes of three 1 MiB C++ names (each frame's label worked out once)
"""
import csv
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from skips import skip  # noqa: E402

MEMSNAP = sys.argv[1]
SCALE = int(sys.argv[2]) if len(sys.argv) > 2 else 1
SANITIZED = SCALE > 1
TIME_LIMIT = 10.0 * SCALE  # seconds of CPU time
HANG_LIMIT = 60.0 * SCALE  # seconds of wall time
RSS_LIMIT = 1 << 30
BASE = 0x7F0000000000
F8 = b"\xf8\x88\x80"  # a lead byte above F4 and two continuation bytes: no character at all
failures = 0
passed = 0


def check(name, ok, detail=""):
    global failures, passed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failures += 1
        print("FAIL " + name + ": " + str(detail)[:800])


def run_once(args, stdin, stdout, name):
    """One run: (rc, stdout bytes, stderr text, CPU seconds, wall seconds, rusage), or None on a hang."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        p = subprocess.Popen([MEMSNAP] + args, stdin=stdin if stdin is not None else subprocess.DEVNULL,
                             stdout=stdout if stdout is not None else out, stderr=err)
        deadline = start + HANG_LIMIT
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                os.wait4(p.pid, 0)
                check(name + ": finishes", False, "still running after %.0f s" % HANG_LIMIT)
                return None
            time.sleep(0.005)
        p.returncode = rc = os.waitstatus_to_exitcode(status)
        elapsed = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return rc, out.read(), err.read().decode(errors="replace"), usage.ru_utime + usage.ru_stime, elapsed, usage


def run(args, stdin=None, stdout=None, name=None):
    """Runs memsnap, stdout to `stdout` (a file) or captured; checks that it ends in under 10 s
    of CPU time with a peak RSS (its own, from wait4) under 1 GB; returns (rc, stdout bytes,
    stderr text). A loaded machine inflates CPU time too (shared caches and cores: a 7.5 s run
    measured 10.5 s beside three parallel builds), so a run over the bound whose input and
    output this script owns runs once more and the faster run counts: work that is really over
    the bound is over it both times."""
    name = name or " ".join(os.fsdecode(a) for a in args[:2])
    r = run_once(args, stdin, stdout, name)
    if r is None:
        return None, b"", ""
    if r[3] >= TIME_LIMIT and stdin is None and stdout is None:
        print("note %s: %.1f s of CPU, over the bound: once more" % (name, r[3]))
        again = run_once(args, stdin, stdout, name)
        if again is None:
            return None, b"", ""
        r = min(r, again, key=lambda x: x[3])
    rc, o, e, cpu, elapsed, usage = r
    check(name + ": under %.0f s of CPU" % TIME_LIMIT, cpu < TIME_LIMIT, "%.1f s CPU, %.1f s wall" % (cpu, elapsed))
    if not SANITIZED:
        peak = usage.ru_maxrss * 1024
        check(name + ": peak RSS under 1 GB", peak < RSS_LIMIT, "%d MiB" % (peak >> 20))
    return rc, o, e


def one_line_error(rc, err, *fragments):
    return rc == 2 and err.count("\n") == 1 and err.startswith("memsnap: ") and all(f in err for f in fragments)


# ---- generators --------------------------------------------------------------------------

def frames(file, name, line=7):
    return [{"filename": file, "line": line, "name": name}]


def small_snapshot(file="/w/train.py", name="step", state="active_allocated"):
    """One segment with one allocated block and a two-event trace, its stack `file:7:name`."""
    fr = frames(file, name)
    blocks = [{"address": BASE, "size": 1 << 20, "requested_size": 1 << 20, "state": state, "frames": fr},
              {"address": BASE + (1 << 20), "size": 1 << 20, "requested_size": 0, "state": "inactive", "frames": []}]
    trace = [{"action": "segment_alloc", "addr": BASE, "size": 2 << 20, "stream": 0, "frames": fr, "time_us": 1},
             {"action": "alloc", "addr": BASE, "size": 1 << 20, "stream": 0, "frames": fr, "time_us": 2}]
    return {"segments": [{"device": 0, "address": BASE, "total_size": 2 << 20, "allocated_size": 1 << 20,
                          "active_size": 1 << 20, "requested_size": 1 << 20, "stream": 0, "segment_type": "large",
                          "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [trace]}


def sites_snapshot(names):
    """One allocation per (file, name) pair, each its own site, so that they all become columns
    of `timeline --by-site --format csv`."""
    blocks, trace, addr = [], [{"action": "segment_alloc", "addr": BASE, "size": 64 << 20, "stream": 0,
                                "frames": [], "time_us": 1}], BASE
    for i, (file, name) in enumerate(names):
        fr = frames(file, name, 10 + i)
        size = (i + 1) << 16
        blocks.append({"address": addr, "size": size, "requested_size": size, "state": "active_allocated",
                       "frames": fr})
        trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": fr, "time_us": 2 + i})
        addr += size
    blocks.append({"address": addr, "size": BASE + (64 << 20) - addr, "requested_size": 0, "state": "inactive",
                   "frames": []})
    allocated = addr - BASE
    return {"segments": [{"device": 0, "address": BASE, "total_size": 64 << 20, "allocated_size": allocated,
                          "active_size": allocated, "requested_size": allocated, "stream": 0,
                          "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                          "frames": [], "blocks": blocks}],
            "device_traces": [trace]}


def pickled(snap, marker=None, replacement=None):
    """The snapshot as protocol 4; `marker` bytes in it replaced by `replacement` of the same length
    (so that strings Python cannot hold, like F8 88 80, end up in BINUNICODE payloads)."""
    data = pickle.dumps(snap, protocol=4)
    if marker is not None:
        assert len(marker) == len(replacement) and marker in data
        data = data.replace(marker, replacement)
    return data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---- class 1: the input is never lost ----------------------------------------------------

def class_input_lost(tmp):
    snap = write(os.path.join(tmp, "snap.pickle"), pickled(small_snapshot()))
    other = write(os.path.join(tmp, "other.pickle"), pickled(small_snapshot(name="other")))
    original = {p: open(p, "rb").read() for p in (snap, other)}
    link = os.path.join(tmp, "link.pickle")
    os.symlink(snap, link)
    hard = os.path.join(tmp, "hard.pickle")
    os.link(snap, hard)

    def intact(name):
        ok = all(open(p, "rb").read() == b for p, b in original.items())
        check(name + ": input intact", ok)
        if not ok:  # the next case starts from the inputs as they were
            for p, b in original.items():
                if os.path.exists(p):
                    os.remove(p)
                write(p, b)
            for p in (link, hard):
                if os.path.lexists(p):
                    os.remove(p)
            os.symlink(snap, link)
            os.link(snap, hard)

    # -o onto the input, spelled every way, for every command that writes a named file.
    for target in (snap, link, hard, os.path.join(tmp, ".", "snap.pickle")):
        for args in (["flame", snap, "-o", target], ["flame", snap, "--format", "svg", "-o", target],
                     ["diff", "--flame", snap, other, "-o", target], ["diff", "--flame", other, snap, "-o", target],
                     ["timeline", snap, "--format", "csv", "-o", target], ["export", snap, "-o", target]):
            name = "1 %s -o %s" % (" ".join(a for a in args[:2]), os.path.basename(target))
            rc, out, err = run(args, name=name)
            check(name + ": refused", one_line_error(rc, err, "refusing to write onto it"), "%r %r" % (rc, err))
            intact(name)
    # "-" read from the file: the output may not replace it either.
    with open(snap, "rb") as stdin:
        rc, out, err = run(["flame", "-", "-o", snap], stdin=stdin, name="1 flame - < X -o X")
    check("1 flame - < X -o X: refused", one_line_error(rc, err, "<stdin>", "refusing"), "%r %r" % (rc, err))
    intact("1 flame - < X -o X")
    # Standard output appended onto an input (`memsnap CMD X >> X`), for every command.
    config = write(os.path.join(tmp, "limits.json"), b'{"max-peak": "1GiB"}')
    doc = os.path.join(tmp, "doc.json")
    with open(doc, "wb") as f:
        subprocess.run([MEMSNAP, "analyze", "--format", "json", snap], stdout=f, check=True)
    original[doc] = open(doc, "rb").read()
    original[config] = open(config, "rb").read()
    commands = [["analyze", snap], ["segments", snap], ["events", snap], ["timeline", snap, "--format", "csv", "-o", "-"],
                ["flame", snap], ["callgraph", snap], ["callgraph", "--dot", snap], ["export", snap],
                ["diff", snap, other], ["diff", other, snap], ["diff", "--flame", snap, other],
                ["check", "--max-peak", "1GiB", snap], ["check", "--config", config, snap], ["merge", doc],
                ["analyze", "-j", "2", other, snap]]
    for args in commands:
        target = config if "--config" in args else doc if args[0] == "merge" else snap
        name = "1 %s >> %s" % (" ".join(os.path.basename(a) for a in args), os.path.basename(target))
        with open(target, "ab") as appended:
            rc, out, err = run(args, stdout=appended, name=name)
        check(name + ": refused", rc == 2 and "<stdout>: is the input file" in err and "refusing" in err,
              "%r %r" % (rc, err))
        intact(name)
    with open(snap, "rb") as stdin, open(snap, "ab") as appended:
        rc, out, err = run(["flame", "-"], stdin=stdin, stdout=appended, name="1 flame - < X >> X")
    check("1 flame - < X >> X: refused", rc == 2 and "<stdin>" in err and "refusing" in err, "%r %r" % (rc, err))
    intact("1 flame - < X >> X")
    # A named output is written beside the target and renamed over it: a new inode, no temporary left.
    out_path = write(os.path.join(tmp, "out.folded"), b"OLD")
    old_inode = os.stat(out_path).st_ino
    rc, out, err = run(["flame", snap, "-o", out_path], name="1 flame -o new file")
    check("1 flame -o: written by rename", rc == 0 and os.stat(out_path).st_ino != old_inode and
          open(out_path, "rb").read().endswith(b"1048576\n"), "%r %r" % (rc, err))
    check("1 flame -o: no temporary file left", not [n for n in os.listdir(tmp) if "memsnap-" in n], os.listdir(tmp))


# ---- class 2: output that parses -----------------------------------------------------------

def parses_as_xml(name, data):
    try:
        ET.fromstring(data)
        check(name + ": XML well-formed", True)
    except ET.ParseError as e:
        check(name + ": XML well-formed", False, e)


def class_utf8(tmp):
    bad_name = write(os.path.join(tmp, "badname.pickle"),
                     pickled(small_snapshot("/w/trainQQQ.py", "stepQQQ"), b"QQQ", F8))
    bad_state = write(os.path.join(tmp, "badstate.pickle"),
                      pickled(small_snapshot(state="active_allocatedQQQ"), b"QQQ", F8))
    bad_file = os.path.join(os.fsencode(tmp), b"file" + F8 + b".pickle")
    write(bad_file, pickled(small_snapshot()))
    for label, path in (("frame name", bad_name), ("block state", bad_state), ("file name", bad_file)):
        junit = os.path.join(tmp, "junit.xml")
        rc, out, err = run(["check", "--max-peak", "1KiB", "--junit", junit, path], name="2 check --junit " + label)
        check("2 check --junit %s: ran" % label, rc in (1, 2) and os.path.exists(junit), "%r %r" % (rc, err))
        if os.path.exists(junit):
            parses_as_xml("2 check --junit " + label, open(junit, "rb").read())
            os.remove(junit)
    for label, path in (("frame name", bad_name), ("file name", bad_file)):
        for args, what in ((["timeline", path, "--by-site", "--format", "svg", "-o", "-"], "timeline SVG"),
                           (["flame", path, "--format", "svg"], "flame SVG")):
            rc, out, err = run(args, name="2 %s %s" % (what, label))
            check("2 %s %s: ran" % (what, label), rc == 0, err)
            parses_as_xml("2 %s %s" % (what, label), out)
        for args, what in ((["callgraph", "--dot", path], "DOT"), (["analyze", path], "text"),
                           (["timeline", path, "--by-site", "--format", "csv", "-o", "-"], "CSV"),
                           (["flame", path], "folded")):
            rc, out, err = run(args, name="2 %s %s" % (what, label))
            try:
                out.decode("utf-8")
                check("2 %s %s: valid UTF-8" % (what, label), rc == 0, err)
            except UnicodeDecodeError as e:
                check("2 %s %s: valid UTF-8" % (what, label), False, e)
        for args in (["analyze", "--format", "json", path], ["callgraph", "--format", "json", path],
                     ["events", "--format", "json", "--stacks", path], ["export", path]):
            rc, out, err = run(args, name="2 %s JSON %s" % (args[0], label))
            try:
                json.loads(out.decode("utf-8"))
                check("2 %s JSON %s: parses" % (args[0], label), rc == 0, err)
            except (UnicodeDecodeError, ValueError) as e:
                check("2 %s JSON %s: parses" % (args[0], label), False, e)


# ---- class 4: CSV injection ------------------------------------------------------------------

def class_csv(tmp):
    hostile = [("=2+5*7", "f"), ("-2+3", "g"), ("+1", "h"), ("@SUM(1,2)", "i"), ("\t=1", "j"), ("\r=1", "k"),
               ("/w/a.py", "esc\x1b]0;title\x07"), ("/w/b.py", "cr\rlf\nnul\x00del\x7f"), ("/w/c,d.py", 'q"uote'),
               ("/w/e.py", "c1\u009b31m")]
    path = write(os.path.join(tmp, "csv.pickle"), pickled(sites_snapshot(hostile)))
    rc, out, err = run(["timeline", path, "--by-site", "--top-sites", "20", "--format", "csv", "-o", "-"],
                      name="4 timeline csv")
    check("4 timeline csv: ran", rc == 0, err)
    text = out.decode("utf-8", errors="strict")
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F]
    check("4 no control character in the CSV", not bad, [hex(ord(c)) for c in bad])
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    sites = header[6:-1]
    check("4 every hostile site is a column", len(sites) == len(hostile), header)
    for cell in (c for row in rows for c in row):
        check("4 cell %r: no formula" % cell[:20], not cell or cell[0] not in "=+-@\t\r" or cell.lstrip("-").isdigit(),
              cell)
    check("4 formulas kept readable behind a quote", any(c.startswith("'=2+5*7") for c in sites) and
          any(c.startswith("'@SUM(1,2)") for c in sites), sites)


# ---- class 5: bounded output -----------------------------------------------------------------

def segment_of(blocks_frames, size=1 << 20):
    """One segment of equal allocated blocks, block i with stack blocks_frames[i]; no trace."""
    blocks, addr = [], BASE
    for fr in blocks_frames:
        blocks.append({"address": addr, "size": size, "requested_size": size, "state": "active_allocated",
                       "frames": fr})
        addr += size
    total = addr - BASE
    return {"segments": [{"device": 0, "address": BASE, "total_size": total, "allocated_size": total,
                          "active_size": total, "requested_size": total, "stream": 0, "segment_type": "large",
                          "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [[]]}


def memo_name_bomb(blocks=500, depth=4, trace=False):
    """Every frame names the same 1 MiB file: pickle memoises it once, a JSON export would
    write it blocks * depth times (2 GB). With `trace`, each block's allocation is in the trace
    with the same (memoised) frames."""
    big = "/w/" + "x" * (1 << 20) + ".py"
    snap = segment_of([[{"filename": big, "line": i * depth + j, "name": "f"} for j in range(depth)]
                       for i in range(blocks)])
    if trace:
        blocks = snap["segments"][0]["blocks"]
        snap["device_traces"] = [[{"action": "alloc", "addr": b["address"], "size": b["size"], "stream": 0,
                                   "frames": b["frames"], "time_us": i + 1} for i, b in enumerate(blocks)]]
    return snap


def deep_paths(paths, depth, size=1 << 20):
    """`paths` stacks of `depth` shared frames under a distinct outermost frame each: paths * (depth
    + 1) distinct flame-graph frames, each path 1 / paths of the width."""
    shared = [{"filename": "/w/model.py", "line": j, "name": "layer%d" % j} for j in range(depth)]
    return segment_of([shared + [{"filename": "/w/root.py", "line": i, "name": "r%d" % i}] for i in range(paths)],
                      size)


# Sites and name length: work per site that reads the name must cost more than the bound. A
# 1 MiB name stays in the cache, where a scan of it is cheaper than the report's own work per
# site: no count of sites under the RSS bound told a per-site scan (report at 40,000 sites:
# 2.5 s before the anti-patterns read Sites' per-file answers, 1.7 s after). 64 MiB is past the
# last-level cache: report on 10,000 sites took 83 s (59 s of CPU) before, 1.2 s after (load 4
# to 5, 2 cores).
# Under the sanitizers (which look for memory errors, not for time) the name is 1 MiB and the
# sites fewer, still past the page's flame bound: the 64 MiB name alone took a third of the
# 114 s this suite took in the CI's sanitizer stage.
LIBRARY_SITES = 10000
LIBRARY_NAME_MIB = 1 if SANITIZED else 64
GENERAL_SITES = 30000 if SANITIZED else 150000
REPORT_SITES = 5000 if SANITIZED else 150000
LIBRARY = "%s sites via a %d MiB name" % (format(LIBRARY_SITES, ","), LIBRARY_NAME_MIB)


def library_name_bomb(sites=LIBRARY_SITES, name_mib=1):
    """`sites` sites of the user's code, each calling the one library file whose name is
    `name_mib` MiB (memoised once): each site's context, "via" that library's call, would copy
    the name, and each question of a site's frames that reads its file name would scan it."""
    big = "/x/site-packages/" + "y" * (name_mib << 20) + ".py"
    snap = segment_of([[{"filename": big, "line": i, "name": "f"}, {"filename": "/w/train.py", "line": i,
                                                                     "name": "step"}] for i in range(sites)])
    snap["device_traces"] = [[{"action": "alloc", "addr": b["address"], "size": b["size"], "stream": 0,
                               "frames": b["frames"], "time_us": i + 1}
                              for i, b in enumerate(snap["segments"][0]["blocks"])]]
    return snap


MODEL_SITES, MODEL_ROUNDS = 40000, 3


def model_sites(sites=MODEL_SITES, rounds=MODEL_ROUNDS, size=512):
    """`rounds` times, each of `sites` lines of the user's code builds a torch.nn module (one
    parameter) and then allocates something else: `sites` runs of parameter allocations each
    round, every one ended by the next allocation (the model-per-step anti-pattern's input)."""
    lib = {"filename": "/x/site-packages/torch/nn/modules/linear.py", "line": 1, "name": "__init__"}
    builds = [[lib, {"filename": "/w/model.py", "line": i, "name": "build"}] for i in range(sites)]
    other = [{"filename": "/w/train.py", "line": 3, "name": "step"}]
    trace = [{"action": "alloc", "addr": BASE + k * size, "size": size, "stream": 0, "frames": fr, "time_us": k + 1}
             for k, fr in enumerate(fr for _ in range(rounds) for i in range(sites) for fr in (builds[i], other))]
    return {"segments": [], "device_traces": [trace]}


def long_cpp_names(paths=100, depth=150, names=3, length=1 << 20):
    """A flame graph of paths * depth boxes, all drawn (1200 px / paths each), every box one of
    `names` C++ frames whose (memoised) names are `length` bytes of template arguments."""
    long = ["ns%d::Kernel<%s>::run(%s)" % (j, "T," * (length // 4), "int," * (length // 8)) for j in range(names)]
    shared = [{"filename": "??", "line": 0, "name": long[j % names]} for j in range(depth)]
    return segment_of([shared + [{"filename": "", "line": 0, "name": "root%d" % i}] for i in range(paths)])


def report_sites(tmp):
    """The report on REPORT_SITES sites through a 1 MiB library name, with the trace: the page
    embeds what it draws, bounded by the page's caps, not by the sites (each flame kept the text
    of every frame of the tree it had pruned: a 132 MiB page, 1.27 GB RSS, at 150,000 sites)."""
    path = os.path.join(tmp, "report_sites.pickle")
    # Made in a child: the snapshot's 150,000 dicts would grow this process past 1 GB, and a
    # child's peak RSS (wait4) starts from its parent's at the fork.
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            write(path, pickle.dumps(library_name_bomb(REPORT_SITES), protocol=4))
            code = 0
        finally:
            os._exit(code)
    check("5 report sites: the snapshot made", os.waitpid(pid, 0)[1] == 0 and os.path.exists(path))
    page = os.path.join(tmp, "report_sites.html")
    name = "5 report on %s sites via a 1 MiB name" % format(REPORT_SITES, ",")
    rc, o, err = run(["report", path, "-o", page], name=name)
    data = {}
    if rc == 0 and os.path.exists(page):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        start = text.find('id="memsnap-data">') + len('id="memsnap-data">')
        data = json.loads(text[start:text.find("</script>", start)])
    flames = data["files"][0]["devices"][0]["flames"] if data else []
    check(name + ": each flame bounded by its nodes",
          flames and all(len(fl["frames"]) < len(fl["frame"]) <= 4000 for fl in flames),
          "%r %r" % (rc, [(len(fl["frames"]), len(fl["frame"])) for fl in flames]))
    # Every frame label is capped at 400 characters and the stacks the page keeps at 256 frames:
    # the page grows with what it draws, not with the sites (the 1 MiB name is never copied).
    size = os.path.getsize(page) if os.path.exists(page) else 0
    check(name + ": the page under 16 MiB", 0 < size < 16 << 20, "%d bytes" % size)
    os.remove(path)


def class_output(tmp):
    bomb = write(os.path.join(tmp, "bomb.pickle"), pickle.dumps(memo_name_bomb(), protocol=4))
    size = os.path.getsize(bomb)
    out = os.path.join(tmp, "out.json")
    for args, name in ((["export", bomb, "-o", out], "5 export bomb -o"), (["export", bomb], "5 export bomb stdout")):
        rc, o, err = run(args, name=name)
        check(name + ": refused at the output bound", one_line_error(rc, err, "the output would exceed",
                                                                   "256x the input", "--max-output"), "%r %r" % (rc, err))
        check(name + ": nothing written", not os.path.exists(out) and len(o) < (256 * size), len(o))
    check("5 export bomb: no temporary file left", not [n for n in os.listdir(tmp) if "memsnap-" in n], os.listdir(tmp))
    # --max-output: a small export refused below its size, accepted above it; the old file kept.
    small = write(os.path.join(tmp, "small.pickle"), pickled(small_snapshot()))
    write(out, b"OLD")
    rc, o, err = run(["export", small, "-o", out, "--max-output", "100"], name="5 export --max-output 100")
    check("5 export --max-output 100: refused", one_line_error(rc, err, "exceed 100 B", "(--max-output)"),
          "%r %r" % (rc, err))
    check("5 export --max-output 100: the old file kept", open(out, "rb").read() == b"OLD")
    rc, o, err = run(["export", small, "-o", out, "--max-output", "1MiB"], name="5 export --max-output 1MiB")
    check("5 export --max-output 1MiB: written", rc == 0 and json.load(open(out))["segments"], err)
    rc, o, err = run(["flame", small, "--format", "svg", "--max-output", "100"], name="5 flame --max-output 100")
    check("5 flame --max-output 100: refused", one_line_error(rc, err, "exceed 100 B"), "%r %r" % (rc, err))
    rc, o, err = run(["export", small, "--max-output", "lots"], name="5 export --max-output lots")
    check("5 --max-output lots: refused", one_line_error(rc, err, "--max-output: not a size"), "%r %r" % (rc, err))

    # Every command on the name bomb, with a trace: 2,000 frames each naming the one 1 MiB file
    # (class 5/6; segments took 35 s of CPU when each frame's rules read the name again).
    bomb = write(os.path.join(tmp, "bomb_trace.pickle"), pickle.dumps(memo_name_bomb(trace=True), protocol=4))
    bomb2 = write(os.path.join(tmp, "bomb_copy.pickle"), open(bomb, "rb").read())  # equal names, other views
    bomb_doc = os.path.join(tmp, "bomb_analyze.json")
    config = write(os.path.join(tmp, "limits.json"), b'{"max-peak": "1GiB"}')
    for args in (["analyze", bomb], ["analyze", "--format", "json", bomb], ["segments", bomb],
                 ["segments", "--format", "json", bomb], ["events", "--stacks", bomb],
                 ["events", "--stacks", "--format", "json", bomb], ["timeline", bomb, "--by-site", "--format", "csv",
                                                                     "-o", "-"],
                 ["timeline", bomb, "--by-site", "--format", "svg", "-o", "-"], ["callgraph", bomb],
                 ["callgraph", "--dot", bomb], ["callgraph", "--format", "json", bomb], ["flame", bomb],
                 ["flame", "--format", "svg", bomb], ["diff", bomb, small], ["diff", bomb, bomb2], ["diff", "--flame", bomb, bomb2],
                 ["check", "--max-peak", "1KiB", "--config", config, "--junit", os.path.join(tmp, "j.xml"), bomb],
                 ["export", "--format", "pickle", bomb], ["report", bomb, "-o", os.path.join(tmp, "r.html")]):
        name = "5 " + " ".join(os.path.basename(a) for a in args if a != bomb) + " on the name bomb"
        rc, o, err = run(args, name=name)
        check(name + ": ran", rc in (0, 1) and err.count("\n") <= 2, "%r %r" % (rc, err[:300]))
        if args[:3] == ["analyze", "--format", "json"] and rc == 0:
            write(bomb_doc, o)
    if os.path.exists(bomb_doc):
        rc, o, err = run(["merge", bomb_doc], name="5 merge on the name bomb's analyze JSON")
        check("5 merge on the name bomb's analyze JSON: ran", rc == 0, err)

    # Sites through one library file of a long name: the library call each site's context names
    # is worked out once for the file, and shown capped (issue 38; 56 s on 4,000 sites of a 1 MiB
    # name when each site's context copied the name, 1.6 s since); the model anti-patterns ask
    # each frame's questions once per file (analyze --format json: 101 s, 58 s of CPU, when they
    # scanned it per stack; 1.1 s after).
    libbomb = write(os.path.join(tmp, "library_bomb.pickle"),
                    pickle.dumps(library_name_bomb(name_mib=LIBRARY_NAME_MIB), protocol=4))
    rc, o, err = run(["analyze", "--format", "json", libbomb], name="5 analyze json, " + LIBRARY)
    contexts = [s.get("library_context") for d in (json.loads(o)["devices"] if rc == 0 else [])
                for s in (d.get("peak") or {}).get("top_sites", [])]
    check("5 analyze json, " + LIBRARY + ": each via the capped call",
          contexts and all(c and c.startswith("y" * 1000) and len(c) < 1100 for c in contexts),
          "%r %r" % (rc, [len(c or "") for c in contexts][:5]))
    for args in (["analyze", libbomb], ["timeline", libbomb, "--by-site", "--format", "csv", "-o", "-"]):
        name = "5 " + " ".join(os.path.basename(a) for a in args if a != libbomb) + " on " + LIBRARY
        rc, o, err = run(args, name=name)
        check(name + ": ran", rc in (0, 1), "%r %r" % (rc, err[:300]))
    # The general parser (where the fast path gives way) interns the name once per value node,
    # not once per frame naming it: 150,000 frames hashed 1 MiB each, 15 s of CPU, before.
    # (The dump alone, no trace: this is the parse's cost, not the analyses' of 150,000 events.)
    parse_only = library_name_bomb(GENERAL_SITES)
    parse_only["device_traces"] = [[]]
    general = write(os.path.join(tmp, "library_bomb_general.pickle"), pickle.dumps(parse_only, protocol=4))
    name = "5 analyze --parser general on %d sites via a 1 MiB name" % GENERAL_SITES
    rc, o, err = run(["analyze", "--parser", "general", "--format", "json", general], name=name)
    doc = json.loads(o) if rc == 0 else {}
    check(name + ": every block", rc == 0 and doc["devices"][0]["totals"]["allocated_bytes"] == GENERAL_SITES << 20,
          "%r %r" % (rc, err[:300]))
    os.remove(general)
    # The report: the loader interns the name once, not per reference, and each flame frame's
    # label (its path read up to 8 KiB) is worked out once for the page, the path once per file.
    page = os.path.join(tmp, "lib.html")
    rc, o, err = run(["report", libbomb, "-o", page], name="5 report on " + LIBRARY)
    flames = []
    if rc == 0 and os.path.exists(page):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        start = text.find('id="memsnap-data">') + len('id="memsnap-data">')
        data = json.loads(text[start:text.find("</script>", start)])
        flames = data["files"][0]["devices"][0]["flames"]
    # Each flame keeps its widest nodes (20,001 here, above the page's bound) and only the frames
    # those nodes name: every library frame among them labelled, capped.
    lib_labels = [[x[0] for x in fl["frames"] if x[0].startswith("f (\u2026y")] for fl in flames]
    check("5 report on " + LIBRARY + ": every library frame of each flame labelled, capped",
          flames and all(ls and all(len(x) <= 400 for x in ls) for ls in lib_labels),
          "%r %r %r" % (rc, err[:300], [len(ls) for ls in lib_labels]))
    check("5 report on " + LIBRARY + ": each flame's frames exactly those its nodes name",
          flames and all(sorted(set(fl["frame"][1:])) == list(range(len(fl["frames"]))) for fl in flames),
          [(len(fl["frames"]), len(set(fl["frame"][1:]))) for fl in flames])
    report_sites(tmp)

    # 40,000 module-building sites, each run of parameters ended by the next allocation: each
    # allocation looks at the open runs only (it looked at every site's: 34 s, 0.25 s since).
    models = write(os.path.join(tmp, "model_sites.pickle"), pickle.dumps(model_sites(), protocol=4))
    name = "5 analyze json, %s sites each building a module %d times" % (format(MODEL_SITES, ","), MODEL_ROUNDS)
    rc, o, err = run(["analyze", "--format", "json", models], name=name)
    found = json.loads(o)["devices"][0].get("model_per_step") if rc == 0 else None
    want = {"site": "model.py:0:build", "builds": MODEL_ROUNDS, "bytes_per_build": 512,
            "total_bytes": 512 * MODEL_ROUNDS}
    check(name + ": the first site's builds", found and all(found.get(k) == v for k, v in want.items()),
          (rc, err, found))

    # 15,000 drawn boxes of three 1 MiB C++ names: each frame's label is worked out once, not per
    # box (27 s when each box read its name, 0.2 s since).
    cpp = write(os.path.join(tmp, "long_cpp.pickle"), pickle.dumps(long_cpp_names(), protocol=4))
    rc, o, err = run(["flame", "--format", "svg", cpp], name="5 flame svg, 15,100 boxes of 1 MiB C++ names")
    check("5 flame svg, 15,100 boxes of 1 MiB C++ names: every box drawn",
          rc == 0 and b"15,101 frames</text>" in o and "left out" not in err, (rc, err, o[-300:]))
    parses_as_xml("5 flame svg, 15,100 boxes of 1 MiB C++ names", o)

    # 2,000 paths of 201 frames: each 0.59 px wide at 1200 px, all left out and counted.
    deep = write(os.path.join(tmp, "deep.pickle"), pickle.dumps(deep_paths(2000, 200), protocol=4))
    svg = os.path.join(tmp, "deep.svg")
    rc, o, err = run(["flame", deep, "-o", svg], name="5 flame svg deep paths")
    check("5 flame svg deep paths: ran", rc == 0, err)
    check("5 flame svg deep paths: says how many it left out",
          "402,000 frames narrower than 1 px left out" in err, err)
    data = open(svg, "rb").read() if os.path.exists(svg) else b""
    parses_as_xml("5 flame svg deep paths", data)
    check("5 flame svg deep paths: footer counts them", b"1 frame; 402,000 narrower than 1 px left out" in data,
          data[-400:])
    check("5 flame svg deep paths: small", len(data) < 64 << 10, len(data))
    # 1,000 paths of 201 frames, each 1.18 px: all drawn, at most one frame per pixel per row.
    deep1k = write(os.path.join(tmp, "deep1k.pickle"), pickle.dumps(deep_paths(1000, 200), protocol=4))
    rc, o, err = run(["flame", deep1k, "--format", "svg"], name="5 flame svg 1,000 paths")
    check("5 flame svg 1,000 paths: every frame drawn", rc == 0 and b"201,001 frames</text>" in o and
          "left out" not in err, (rc, err, o[-300:]))
    check("5 flame svg 1,000 paths: within the output bound",
          len(o) <= max(256 * os.path.getsize(deep1k), 64 << 20), len(o))
    # diff --flame: the same pruning against a copy with twice the bytes, and the same bound.
    grown = write(os.path.join(tmp, "grown.pickle"), pickle.dumps(deep_paths(2000, 200, 2 << 20), protocol=4))
    rc, o, err = run(["diff", "--flame", deep, grown, "-o", svg], name="5 diff --flame svg deep paths")
    check("5 diff --flame svg deep paths: says how many it left out",
          rc == 0 and "%s frames narrower than 1 px left out" % format(2000 * 201, ",") in err, (rc, err))
    data = open(svg, "rb").read() if os.path.exists(svg) else b""
    parses_as_xml("5 diff --flame svg deep paths", data)
    check("5 diff --flame svg deep paths: small", len(data) < 64 << 10, len(data))
    rc, o, err = run(["diff", "--flame", deep, grown], name="5 diff --flame folded deep paths")
    check("5 diff --flame folded deep paths: within the output bound",
          rc == 0 and 0 < len(o) <= 256 * (os.path.getsize(deep) + os.path.getsize(grown)), (rc, len(o), err))
    write(svg, b"OLD")
    rc, o, err = run(["diff", "--flame", deep, grown, "-o", svg, "--max-output", "1000"],
                     name="5 diff --flame --max-output 1000")
    check("5 diff --flame --max-output 1000: refused", one_line_error(rc, err, "exceed 1000 B", "(--max-output)"),
          "%r %r" % (rc, err))
    check("5 diff --flame --max-output 1000: the old file kept", open(svg, "rb").read() == b"OLD")
    rc, o, err = run(["diff", "--flame", deep, grown, "--max-output", "1000"], name="5 diff --flame stdout bound")
    check("5 diff --flame --max-output 1000 on stdout: stopped there",
          one_line_error(rc, err, "exceed 1000 B", "stopped there") and len(o) <= 1000, "%r %r %d" % (rc, err, len(o)))
    for args, what in ((["flame", deep], "folded"), (["callgraph", "--dot", deep], "DOT"),
                       (["callgraph", "--format", "json", deep], "callgraph JSON")):
        rc, o, err = run(args, name="5 %s deep paths" % what)
        check("5 %s deep paths: within the output bound" % what,
              rc == 0 and len(o) <= 256 * os.path.getsize(deep), (rc, len(o), err))


# ---- class 7: refused at the first byte; class 9: zstd skippable frames ----------------------

def zstd(data):
    return subprocess.run(["zstd", "-q", "-c", "-3"], input=data, stdout=subprocess.PIPE, check=True).stdout


def class_first_bytes(tmp):
    import gzip
    import struct
    import shutil
    zeros = b"\0" * (256 << 20)
    cases = [(["analyze", "/dev/zero"], None, "offset 0: not a snapshot"),
             (["segments", "-"], "zero", "offset 0: not a snapshot"),
             (["analyze", write(os.path.join(tmp, "bomb.gz"), gzip.compress(zeros, 9))], None,
              "decoded offset 0: not a snapshot")]
    have_zstd = shutil.which("zstd") is not None
    if have_zstd:
        cases.append((["analyze", write(os.path.join(tmp, "bomb.zst"), zstd(zeros))], None,
                      "decoded offset 0: not a snapshot"))
    for args, stdin, fragment in cases:
        name = "7 " + " ".join(os.path.basename(a) for a in args) + (" < /dev/zero" if stdin else "")
        with open("/dev/zero", "rb") as zero:
            rc, o, err = run(args, stdin=zero if stdin else None, name=name)
        check(name + ": refused at the first byte", one_line_error(rc, err, fragment, "starts with bytes 00"),
              "%r %r" % (rc, err))
    # Memo-shared segments: the model they expand to passes the default bound, not 4 GiB.
    blocks = [{"address": BASE + i * 512, "size": 512, "requested_size": 512, "state": "active_allocated",
               "frames": []} for i in range(20000)]
    seg = {"device": 0, "address": BASE, "total_size": 20000 * 512, "allocated_size": 20000 * 512,
           "active_size": 20000 * 512, "requested_size": 20000 * 512, "stream": 0, "segment_type": "large",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}
    memo = write(os.path.join(tmp, "memo.pickle"), pickle.dumps({"segments": [seg] * 3000, "device_traces": [[]]},
                                                                 protocol=4))
    memo2 = write(os.path.join(tmp, "memo2.pickle"), open(memo, "rb").read())
    for args in (["analyze", memo], ["analyze", "-j", "2", memo, memo2], ["flame", memo]):
        name = "7 " + " ".join(os.path.basename(a) for a in args)
        rc, o, err = run(args, name=name)
        check(name + ": refused within the default bound", rc == 2 and "memsnap: " in err and
              ("--max-memory" in err or "referenced too many times" in err), "%r %r" % (rc, err))
    if not have_zstd:
        skip("zstd is not installed (class 9)")
        return
    snap = pickled(small_snapshot())
    skippable = struct.pack("<II", 0x184D2A5E, 11) + b"hello world"
    path = write(os.path.join(tmp, "skip.pickle.zst"), skippable + zstd(snap))
    rc, o, err = run(["analyze", "--format", "json", path], name="9 zstd after a skippable frame")
    check("9 zstd after a skippable frame: read", rc == 0 and json.loads(o)["input"]["compression"] == "zstd",
          "%r %r" % (rc, err))
    plain = subprocess.run([MEMSNAP, "analyze", "--format", "json", write(os.path.join(tmp, "plain.pickle"), snap)],
                           stdout=subprocess.PIPE).stdout
    check("9 zstd after a skippable frame: the same figures",
          rc == 0 and json.loads(o)["devices"] == json.loads(plain)["devices"])


CLASSES = [class_input_lost, class_utf8, class_csv, class_output, class_first_bytes]
ONLY = os.environ.get("HOSTILE_ONLY")  # e.g. "class_output": one class while working on it
if ONLY:
    CLASSES = [c for c in CLASSES if c.__name__ in ONLY.split(",")]

with tempfile.TemporaryDirectory() as tmp:
    for cls in CLASSES:
        sub = os.path.join(tmp, cls.__name__)
        os.mkdir(sub)
        cls(sub)

print("%d passed, %d failed" % (passed, failures))
sys.exit(1 if failures else 0)
