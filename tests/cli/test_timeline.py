#!/usr/bin/env python3
# `memsnap timeline` through the built binary: well-formed self-contained SVG, CSV, errors and exit codes.
import csv
import io
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from clitest import TESTDATA, check, finish, run, snap
SVG = "{http://www.w3.org/2000/svg}"


def check_svg(name, text, devices):
    check(name + " no script", "<script" not in text.lower())
    check(name + " no external reference", "href" not in text and "@import" not in text and "url(http" not in text)
    try:
        root = ET.fromstring(text.encode("utf-8"))
    except ET.ParseError as e:
        check(name + " well-formed", False, str(e))
        return
    check(name + " root", root.tag == SVG + "svg", root.tag)
    panels = [g for g in root.iter(SVG + "g") if g.get("class") == "panel"]
    check(name + " panels", [g.get("id") for g in panels] == ["device-%d" % d for d in devices],
          [g.get("id") for g in panels])


with tempfile.TemporaryDirectory() as tmp:
    # One panel per device, nothing on stdout, one line on stderr.
    out = os.path.join(tmp, "mem.svg")
    rc, so, se = run(["timeline", snap("devices2.pickle"), "-o", out])
    check("devices2 exit", rc == 0, "%d %r" % (rc, se))
    check("devices2 stdout empty", so == "", so[:200])
    check("devices2 stderr", se.startswith("wrote " + out + " (2 devices, ") and se.count("\n") == 1, se)
    with open(out, encoding="utf-8") as f:
        check_svg("devices2", f.read(), [0, 1])

    # --by-site, the OOM fixture, a chosen device, sizes.
    for args, devices in ((["--by-site", snap("frag.pickle")], [0]),
                          (["--by-site", "--top-sites", "3", snap("cpp.pickle")], [0]),
                          (["--device", "1", "--width", "800", "--height", "300", snap("devices2.pickle")], [1]),
                          ([snap("expandable.pickle"), "--points", "50"], [0])):
        rc, so, se = run(["timeline", "-o", out] + args)
        check("%s exit" % args, rc == 0, "%d %r" % (rc, se))
        with open(out, encoding="utf-8") as f:
            text = f.read()
        check_svg(" ".join(args), text, devices)
        if "frag.pickle" in args[-1]:
            check("frag OOM label", "OOM: 25.13 MiB requested" in text, "no OOM label")
    rc, so, se = run(["timeline", "-o", out, "--width", "800", "--height", "300", snap("devices2.pickle")])
    root = ET.fromstring(open(out, "rb").read())
    check("--width", root.get("width") == "800", root.get("width"))

    # -o - writes SVG to stdout; --format csv overrides.
    rc, so, se = run(["timeline", snap("leak.pickle"), "-o", "-"])
    check("stdout svg", rc == 0 and se == "", "%d %r" % (rc, se))
    check_svg("stdout svg", so, [0])
    rc, so, se = run(["timeline", snap("leak.pickle"), "-o", "-", "--format", "csv"])
    rows = list(csv.reader(io.StringIO(so)))
    check("stdout csv", rc == 0 and rows and rows[0] == ["device", "event_index", "time_us", "allocated_bytes",
                                                         "active_bytes", "reserved_bytes"], rows[:1])

    # CSV from the extension, with site columns; every row sums to allocated.
    out_csv = os.path.join(tmp, "MEM.CSV")
    rc, so, se = run(["timeline", snap("frag.pickle"), "-o", out_csv, "--by-site", "--points", "300"])
    check("csv exit", rc == 0 and so == "", "%d %r" % (rc, se))
    with open(out_csv, newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    check("csv header", head[:6] == ["device", "event_index", "time_us", "allocated_bytes", "active_bytes",
                                     "reserved_bytes"] and head[-1] == "other" and len(head) == 6 + 8 + 1, head)
    check("csv rows", 2 <= len(rows) - 1 <= 300, len(rows))
    check("csv stderr names the points", ("%d points" % (len(rows) - 1)) in se.replace(",", ""), se)
    for r in rows[1:]:
        if sum(int(v) for v in r[6:] if v) != int(r[3]):
            check("csv sites sum to allocated", False, r)
            break

    # Errors: exit 2, one line on stderr, nothing on stdout.
    def expect_error(name, args, line):
        rc, so, se = run(args)
        check(name, rc == 2 and so == "" and se == "memsnap: " + line + "\n", "%d %r %r" % (rc, so[:100], se))

    expect_error("no trace", ["timeline", snap("list.pickle"), "-o", out],
                 snap("list.pickle") + ": the snapshot has no trace entries (recorded with enabled='state' or "
                 "history off): nothing to plot")
    bad = os.path.join(tmp, "no", "such", "dir", "mem.svg")
    expect_error("unwritable", ["timeline", snap("leak.pickle"), "-o", bad],
                 bad + ": cannot write: No such file or directory")
    expect_error("unknown extension", ["timeline", snap("leak.pickle"), "-o", os.path.join(tmp, "mem.png")],
                 "-o " + os.path.join(tmp, "mem.png") +
                 ": cannot tell the format from the name (use .svg or .csv, or --format svg|csv)")
    expect_error("no such device", ["timeline", snap("leak.pickle"), "--device", "7", "-o", out],
                 "--device 7: the snapshot has no such device")
    rc, so, se = run(["timeline", snap("leak.pickle")])
    check("-o required", rc == 2 and "--output" in se, "%d %r" % (rc, se))
    rc, so, se = run(["timeline", snap("leak.pickle"), "-o", out, "--format", "png"])
    check("bad --format", rc == 2 and "--format" in se, "%d %r" % (rc, se))

finish()
