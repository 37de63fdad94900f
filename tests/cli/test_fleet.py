#!/usr/bin/env python3
# Many files at once (issue 13): analyze/segments/check over a generated fleet with -j, the fleet
# summary against snapgen's truth, the outlier, merge's associativity, check's exit statuses, config
# and JUnit XML (validated structurally with xml.etree), hostile file names.
import json
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

from clitest import MEMSNAP, check, expect_error, finish, run, snap
import fleet_gen


def fleet_part(doc):
    return doc["fleet"]


def merge(paths, fmt="json", stdin=None):
    rc, out, err = run(["merge", "--format", fmt] + paths, stdin=stdin)
    check("merge %s" % [os.path.basename(p) for p in paths], rc == 0, "%d %r" % (rc, err))
    return json.loads(out) if fmt == "json" and rc == 0 else out


def save(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def junit_valid(name, path, want_cases, want_failures, want_errors, want_skipped=0):
    """The common JUnit schema's required structure: testsuites > testsuite(name, tests, failures, errors)
    > testcase(name, classname) with at most one failure/error child carrying a message."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        check(name + ": well-formed XML", False, str(e))
        return None
    check(name + ": root", root.tag == "testsuites", root.tag)
    cases = failures = errors = skipped = 0
    for suite in root:
        check(name + ": testsuite", suite.tag == "testsuite", suite.tag)
        for attr in ("name", "tests", "failures", "errors"):
            check(name + ": testsuite@" + attr, attr in suite.attrib, suite.attrib)
        n_f = n_e = n_s = 0
        tc = list(suite)
        check(name + ": tests count", int(suite.get("tests", -1)) == len(tc), suite.attrib)
        for case in tc:
            check(name + ": testcase", case.tag == "testcase", case.tag)
            check(name + ": testcase@name/classname", "name" in case.attrib and "classname" in case.attrib,
                  case.attrib)
            kids = list(case)
            check(name + ": at most one child", len(kids) <= 1, kids)
            for k in kids:
                check(name + ": child", k.tag in ("failure", "error", "skipped"), k.tag)
                check(name + ": message", k.get("message"), k.attrib)
                n_f += k.tag == "failure"
                n_e += k.tag == "error"
                n_s += k.tag == "skipped"
        check(name + ": failures count", int(suite.get("failures", -1)) == n_f, suite.attrib)
        check(name + ": errors count", int(suite.get("errors", -1)) == n_e, suite.attrib)
        check(name + ": skipped count", int(suite.get("skipped", -1)) == n_s, suite.attrib)
        cases += len(tc)
        failures += n_f
        errors += n_e
        skipped += n_s
    check(name + ": testcases", cases == want_cases, "%d, want %d" % (cases, want_cases))
    check(name + ": failures", failures == want_failures, "%d, want %d" % (failures, want_failures))
    check(name + ": errors", errors == want_errors, "%d, want %d" % (errors, want_errors))
    check(name + ": skipped", skipped == want_skipped, "%d, want %d" % (skipped, want_skipped))
    check(name + ": testsuites@skipped", int(root.get("skipped", -1)) == skipped, root.attrib)
    return root


tmp = tempfile.mkdtemp(prefix="memsnap-fleet-")
try:
    files = fleet_gen.generate(tmp, 64)
    truth = {}
    for f in files:
        t = json.load(open(f[:-len(".pickle")] + ".truth.json"))
        truth[f] = (sum(d["reserved"] for d in t["per_device"]), sum(d["allocated"] for d in t["per_device"]))

    # --- analyze A B ... --format json: per-file documents in argument order, rows equal the truth -------------
    rc, out, err = run(["analyze", "--format", "json", "-j", "2"] + files)
    check("analyze fleet json", rc == 0 and err == "", "%d %r" % (rc, err))
    doc = json.loads(out)
    check("files in argument order", [d["file"] for d in doc["files"]] == files)
    rows = {r["file"]: r for r in doc["fleet"]["rows"]}
    check("one row per file", sorted(rows) == sorted(files) and doc["fleet"]["files"] == 64)
    for f in files:
        r = rows[f]
        check("row %s reserved" % os.path.basename(f), r["reserved_bytes"] == truth[f][0], (r, truth[f]))
        check("row %s allocated" % os.path.basename(f), r["allocated_bytes"] == truth[f][1], (r, truth[f]))
        check("row %s peak" % os.path.basename(f), r["peak_allocated_bytes"] >= r["allocated_bytes"], r)
        check("row %s verdicts" % os.path.basename(f), r["oom"] is False and r["oom_events"] == 0, r)
    outliers = [r["file"] for r in doc["fleet"]["rows"] if r["outlier"]]
    check("the bigger rank is the one outlier", outliers == [files[fleet_gen.OUTLIER]], outliers)
    check("rows sorted by file", [r["file"] for r in doc["fleet"]["rows"]] == sorted(files))
    check("totals", doc["fleet"]["totals"]["reserved_bytes"] == sum(t[0] for t in truth.values()))
    check("histogram counts every file",
          sum(b["files"] for b in doc["fleet"]["histograms"]["peak_allocated_bytes"]) == 64)
    per_file_same = True
    for d in doc["files"][:3]:
        rc1, one, _ = run(["analyze", "--format", "json", d["file"]])
        single = json.loads(one)
        single["file"] = d["file"]
        per_file_same &= single == d
    check("per-file documents are analyze's own", per_file_same)

    # -j1 and -j2 say the same, byte for byte
    rc1, out1, _ = run(["analyze", "--format", "json", "-j", "1"] + files)
    check("-j1 == -j2 (json)", rc1 == 0 and out1 == out)
    rc1, text1, _ = run(["analyze", "-j", "1"] + files)
    rc2, text2, err2 = run(["analyze", "-j", "2"] + files)
    check("-j1 == -j2 (text)", rc1 == 0 and rc2 == 0 and text1 == text2, err2)

    # --- analyze A B ... as text: summary first, outlier marked, 80 columns, then the worst report ----------
    lines = text2.split("\n")
    check("text starts with the fleet", lines[0].startswith("memsnap ") and "fleet of 64 files" in lines[0], lines[0])
    check("text fits 80 columns", all(len(l) <= 80 for l in lines), [l for l in lines if len(l) > 80][:3])
    marked = [l for l in lines if l.startswith("! ") and ".pickle" in l]
    check("one row marked", len(marked) == 1 and "rank%02d.pickle" % fleet_gen.OUTLIER in marked[0], marked)
    summary_rows = [l for l in lines if "rank" in l and l.startswith(("! ", "  ")) and "MiB" in l or "KiB" in l]
    check("outlier first (peak descending)", summary_rows and summary_rows[0].startswith("! "), summary_rows[:2])
    check("worst report follows", text2.count("memsnap 0.") == 2 and "the worst file" in text2)
    check("worst is the outlier", ("rank%02d.pickle" % fleet_gen.OUTLIER) in text2.split("the worst file", 1)[1])
    rc, all_text, _ = run(["analyze", "--all", "-j", "2"] + files[:5])
    check("--all prints every report", rc == 0 and all_text.count("memsnap 0.") == 6, all_text.count("memsnap 0."))

    # a long and hostile file name is escaped and cut to fit
    hostile = os.path.join(tmp, "x" * 90 + "\x1b[31m<&\">\x07.pickle")
    shutil.copy(files[0], hostile)
    rc, text, err = run(["analyze", "-j", "2", hostile, files[1]])
    check("hostile name: exit 0", rc == 0, err)
    check("hostile name: no escape byte", "\x1b" not in text and "\x07" not in text)
    check("hostile name: 80 columns", all(len(l) <= 80 for l in text.split("\n")[:12]),
          [l for l in text.split("\n") if len(l) > 80][:2])

    # --- an unreadable file among good ones: the others still reported, exit 2 -----------------------------
    bad = save(os.path.join(tmp, "broken.pickle"), "not a pickle at all")
    rc, out, err = run(["analyze", "--format", "json", "-j", "2", files[0], bad, files[1]])
    check("unreadable: exit 2", rc == 2, "%d %r" % (rc, err))
    d = json.loads(out) if out else {"files": [], "fleet": {"errors": []}}
    check("unreadable: others reported", [x["file"] for x in d["files"]] == [files[0], files[1]])
    check("unreadable: named in fleet.errors", [e["file"] for e in d["fleet"]["errors"]] == [bad])
    check("unreadable: stderr names it", bad in err and err.strip().endswith("1 of 3 files could not be read"), err)

    # --- segments A B ...: argument order ----------------------------------------------------------------
    rc, out, err = run(["segments", "-j", "2", files[2], files[0], files[1]])
    pos = [out.find(os.path.basename(f)) for f in (files[2], files[0], files[1])]
    check("segments: argument order", rc == 0 and -1 not in pos and pos == sorted(pos), pos)
    rc, out, err = run(["segments", "--format", "json", "-j", "2", files[2], files[0]])
    check("segments json", rc == 0 and [x["file"] for x in json.loads(out)["files"]] == [files[2], files[0]])

    # --- merge: associative, order-independent, mergeable, equal to analyze of all ------------------------
    parts = [files[:20], files[20:45], files[45:]]
    jsons = []
    for i, part in enumerate(parts):
        rc, out, err = run(["analyze", "--format", "json", "-j", "2"] + part)
        jsons.append(save(os.path.join(tmp, "part%d.json" % i), out))
    a, b, c = jsons
    ab = save(os.path.join(tmp, "ab.json"), json.dumps(merge([a, b])))
    bc = save(os.path.join(tmp, "bc.json"), json.dumps(merge([b, c])))
    left, right, rev = merge([ab, c]), merge([a, bc]), merge([c, b, a])
    check("merge associative", fleet_part(left) == fleet_part(right))
    check("merge order-independent", fleet_part(left) == fleet_part(rev))
    check("merged files identical", left["files"] == right["files"] == rev["files"])
    check("merge == analyze of all", fleet_part(left) == doc["fleet"],
          json.dumps(fleet_part(left))[:300] + " vs " + json.dumps(doc["fleet"])[:300])
    # single-file analyze outputs merge into the same rows
    singles = []
    for f in files[:4]:
        rc, out, err = run(["analyze", "--format", "json", f])
        singles.append(save(os.path.join(tmp, os.path.basename(f) + ".json"), out))
    rc, out4, err = run(["analyze", "--format", "json"] + files[:4])
    check("merge of singles == analyze of four", fleet_part(merge(singles[::-1])) == json.loads(out4)["fleet"])
    check("merge from stdin", fleet_part(merge(["-", singles[0]], stdin=open(singles[1], "rb").read()))
          == fleet_part(merge(singles[:2])))
    text = merge([a, b, c], fmt="text")
    check("merge text", "fleet of 64 files" in text and all(len(l) <= 80 for l in text.split("\n")), text[:200])
    # leaks: a file whose trace has fewer than 5 iterations (nostacks.pickle: none) is "not judged"
    # ("?"), never counted as leak-free; a leaking one (leak.pickle) is judged; the flag survives a
    # merge of merges.
    judged_in = []
    for name in ("nostacks.pickle", "leak.pickle"):
        rc, out, err = run(["analyze", "--format", "json", snap(name)])
        its = json.loads(out)["devices"][0]["iterations"]["count"]
        judged_in.append(save(os.path.join(tmp, name + ".json"), out))
        check("iterations of " + name, (its >= 5) == (name == "leak.pickle"), its)
    m = merge(judged_in)
    jrows = {os.path.basename(r["file"]): r for r in m["fleet"]["rows"]}
    check("merge: leaks not judged without iterations", jrows["nostacks.pickle"]["leaks_judged"] is False and
          jrows["nostacks.pickle"]["leaks"] == 0 and jrows["leak.pickle"]["leaks_judged"] is True and
          m["fleet"]["totals"]["files_leaks_not_judged"] == 1, jrows)
    mm = save(os.path.join(tmp, "judged.json"), json.dumps(m))
    check("merge of a merge keeps leaks_judged", fleet_part(merge([mm])) == fleet_part(m))
    text = merge(judged_in, fmt="text")
    nostacks_line = [l for l in text.split("\n") if "nostacks.pickle" in l]
    check("merge text: ? for not judged", len(nostacks_line) == 1 and nostacks_line[0].endswith("?") and
          "1 leaking, 1 not judged for leaks" in text, text)
    # bad input: one line naming the file and what was wrong, exit 2
    nj = save(os.path.join(tmp, "bad.json"), "{\"schema_version\": 1, ")
    rc, out, err = run(["merge", a, nj])
    check("merge bad JSON", rc == 2 and out == "" and err.startswith("memsnap: " + nj + ": not JSON: ")
          and err.count("\n") == 1, "%d %r" % (rc, err))
    wrong = save(os.path.join(tmp, "wrong.json"), json.dumps({"schema_version": 1, "fleet": {"rows": [{"file": 3}]}}))
    expect_error("merge wrong row", ["merge", wrong], wrong + ": fleet.rows[0].file: not a string")
    other = save(os.path.join(tmp, "other.json"), "[1, 2]")
    expect_error("merge not an object", ["merge", other], other + ": not a JSON object")
    # An analyze document with a root "files" key lost its text to the fleet case and was an
    # empty element of the merged "files", which then did not parse (memsnap_fuzz_json).
    with_files = json.load(open(singles[0]))
    with_files["files"] = {"path": "x"}
    wf = save(os.path.join(tmp, "with_files.json"), json.dumps(with_files))
    expect_error("merge analyze with files", ["merge", "--format", "json", wf],
                 wf + ": \"files\" in an analyze document (one with \"devices\" and no \"fleet\")")
    nos = save(os.path.join(tmp, "nos.json"), "{}")
    expect_error("merge no schema", ["merge", nos],
                 nos + ": no \"schema_version\": not a memsnap analyze JSON document")

    # --- check -----------------------------------------------------------------------------------------
    big, small = files[fleet_gen.OUTLIER], files[0]
    peak_big = rows[big]["peak_allocated_bytes"]
    limit = str(peak_big - 1)
    rc, out, err = run(["check", "-j", "2", "--max-peak", limit, "--no-oom", small, big])
    check("check: exit 1 on a failure", rc == 1, "%d %r" % (rc, err))
    lines = out.strip().split("\n")
    check("check: one line per check, file and device", len(lines) == 5, lines)
    check("check: PASS small", lines[0].startswith("PASS  peak") and lines[0].endswith(os.path.basename(small))
          and "dev 0" in lines[0], lines)
    check("check: FAIL big", lines[2].startswith("FAIL  peak") and big.split("/")[-1] in lines[2], lines)
    check("check: summary", lines[-1] == "4 checks: 3 passed, 1 failed", lines[-1])
    check("check: stderr says why", err == "memsnap: 1 of 4 checks failed\n", err)
    check("check: 80 columns", all(len(l) <= 80 for l in lines), lines)
    rc, out, err = run(["check", "--max-peak", str(peak_big), small, big])
    check("check: exit 0 when all pass", rc == 0 and err == "", "%d %r" % (rc, err))
    rc, out, err = run(["check", "--format", "json", "--max-peak", limit, "--max-reserved", "1GiB",
                        "--max-fragmentation", "0.99", "--max-stranded", "1GiB", "--max-allocated", "1GiB",
                        "--no-leaks", "--no-oom", big])
    j = json.loads(out)
    an = json.loads(run(["analyze", "--format", "json", big])[1])["devices"][0]
    # Leaks are judged over 5 iterations or more; with fewer the check is not judged (skip), never passed.
    judged = an["iterations"]["count"] >= 5
    check("check json", rc == 1 and j["status"] == "fail" and
          j["summary"] == {"checks": 7, "passed": 5 + judged, "failed": 1, "errors": 0, "skipped": 1 - judged},
          j.get("summary"))
    leaks_row = [r for r in j["results"] if r["check"] == "no-leaks"]
    check("check json: no-leaks judged only with 5 iterations",
          len(leaks_row) == 1 and leaks_row[0]["status"] == ("pass" if judged else "skip") and
          (judged or (leaks_row[0]["figure"] is None and "not judged" in leaks_row[0]["reason"])), leaks_row)
    fails = [r for r in j["results"] if r["status"] == "fail"]
    check("check json: the failure", len(fails) == 1 and fails[0]["check"] == "max-peak" and
          fails[0]["figure"] == peak_big and fails[0]["limit"] == peak_big - 1, fails)
    check("check json: limits", j["limits"]["max-reserved"] == 1 << 30 and j["limits"]["no-leaks"] is True)
    # figures are analyze's figures
    by = {r["check"]: r["figure"] for r in j["results"]}
    check("check figures == analyze", by["max-reserved"] == an["totals"]["reserved_bytes"] and
          by["max-allocated"] == an["totals"]["allocated_bytes"] and
          by["max-stranded"] == an["fragmentation"]["stranded_bytes"] and
          by["max-fragmentation"] == max([p["fragmentation"] for p in an["fragmentation"]["pools"]
                                          if p["stranded_bytes"] >= 32 << 20] + [0]) and
          by["no-leaks"] == (len(an["leaks"]) if judged else None) and by["no-oom"] == an["oom_events"],
          (by, an["totals"]))
    # OOM and leaks from the shipped fixtures
    rc, out, err = run(["check", "--no-oom", "--no-leaks", snap("frag.pickle"), snap("leak.pickle")])
    check("check: frag has an OOM", rc == 1 and any(l.startswith("FAIL  oom") and "frag.pickle" in l
                                                    for l in out.split("\n")), out)
    check("check: leak leaks", any(l.startswith("FAIL  leaks") and "leak.pickle" in l for l in out.split("\n")), out)
    # A check the file cannot answer is SKIP with its reason, never PASS: nostacks.pickle
    # (a trace without stacks: no iterations, so no leak can be judged) and list.pickle (no
    # trace: no OOM event can be seen). Neither fails the run.
    rc, out, err = run(["check", "--no-oom", "--no-leaks", snap("nostacks.pickle"), snap("list.pickle")])
    lines = out.split("\n")
    check("check: not judged is not a failure", rc == 0 and err == "", "%d %r" % (rc, err))
    check("check: no stacks, leaks SKIP", any(l.startswith("SKIP  leaks") and "nostacks.pickle" in l for l in lines)
          and "recorded without stacks" in " ".join(out.split()), out)
    check("check: no trace, oom SKIP", any(l.startswith("SKIP  oom") and "list.pickle" in l for l in lines) and
          "OOM events are recorded only" in " ".join(out.split()), out)
    check("check: no stacks, oom judged", any(l.startswith("PASS  oom") and "nostacks.pickle" in l for l in lines),
          out)
    check("check: skipped counted", "4 checks: 1 passed, 0 failed, 3 not judged" in out, out)
    check("check: 80 columns when skipped", all(len(l) <= 80 for l in lines), lines)
    xml_skip = os.path.join(tmp, "skip.xml")
    rc, out, err = run(["check", "--no-oom", "--no-leaks", "--junit", xml_skip, snap("nostacks.pickle"),
                        snap("list.pickle")])
    junit_valid("junit skipped", xml_skip, want_cases=4, want_failures=0, want_errors=0, want_skipped=3)

    # A trace whose ring buffer dropped older events cannot show an OOM among them: --no-oom
    # is SKIP, with the file's own evidence, unless an OOM is still in the trace (FAIL).
    # The variants are the shipped fixtures with one setting (or the trace) changed.
    import pickle

    def variant(src, name, settings=None, keep_last=None):
        with open(snap(src), "rb") as fh:
            s = pickle.load(fh)  # our own fixture: safe to unpickle here
        s.setdefault("allocator_settings", {}).update(settings or {})
        if keep_last is not None:
            s["device_traces"] = [t[-keep_last:] for t in s["device_traces"]]
        path = os.path.join(tmp, name)
        with open(path, "wb") as fh:
            pickle.dump(s, fh, protocol=4)
        return path, s

    def dropped_of(path):
        rc, out, _ = run(["analyze", "--format", "json", path])
        t = json.loads(out)["devices"][0]["trace"]
        return t["events_dropped"], t["events_dropped_evidence"], t["entries"]

    def oom_status(path):
        rc, out, _ = run(["check", "--no-oom", "--format", "json", path])
        return rc, [(l["status"], l.get("reason", "")) for l in json.loads(out)["results"]]

    train_entries = len(variant("train.pickle", "plain.pickle")[1]["device_traces"][0])
    overflowed, _ = variant("train.pickle", "overflowed.pickle", {"trace_alloc_overflowed": True})
    full, _ = variant("train.pickle", "full.pickle", {"trace_alloc_max_entries": train_entries})
    roomy, _ = variant("train.pickle", "roomy.pickle", {"trace_alloc_max_entries": train_entries + 1})
    one, _ = variant("train.pickle", "one.pickle", keep_last=1)
    oom_kept, frag = variant("frag.pickle", "frag_overflowed.pickle", {"trace_alloc_overflowed": True})
    check("dropped: plain trace shows none", dropped_of(snap("train.pickle")) == (False, None, train_entries))
    check("dropped: overflowed", dropped_of(overflowed) == (True, "overflowed", train_entries))
    check("dropped: full buffer", dropped_of(full) == (True, "full", train_entries))
    check("dropped: room left", dropped_of(roomy) == (False, None, train_entries))
    check("dropped: one entry after allocations", dropped_of(one) == (True, "one_entry", 1))
    for path, word in ((overflowed, "trace_alloc_overflowed"), (full, "trace_alloc_max_entries (%d)" % train_entries),
                       (one, "trace_alloc_max_entries=1")):
        rc, st = oom_status(path)
        check("no-oom SKIP: " + os.path.basename(path), rc == 0 and len(st) == 1 and st[0][0] == "skip" and
              word in st[0][1], (rc, st))
    # --max-peak likewise: within the limit is SKIP where older events were dropped (a higher
    # peak may be among them), above it FAIL; with nothing dropped, PASS.
    def peak_of(path):
        rc, out, _ = run(["analyze", "--format", "json", path])
        return json.loads(out)["devices"][0]["peak"]["allocated_bytes"]

    for path, dropped in ((one, True), (overflowed, True), (roomy, False)):
        peak = peak_of(path)
        rc, out, _ = run(["check", "--max-peak", str(peak), "--format", "json", path])
        st = [(l["status"], l.get("reason", "")) for l in json.loads(out)["results"]]
        want = "skip" if dropped else "pass"
        check("max-peak at the peak: %s %s" % (want, os.path.basename(path)),
              rc == 0 and st[0][0] == want and (not dropped or "a higher peak among them" in st[0][1]), (rc, st))
        rc, out, _ = run(["check", "--max-peak", str(peak - 1), "--format", "json", path])
        check("max-peak below the peak: fail " + os.path.basename(path),
              rc == 1 and json.loads(out)["results"][0]["status"] == "fail", (rc, out[:300]))
    rc, st = oom_status(roomy)
    check("no-oom PASS with room in the buffer", rc == 0 and st == [("pass", "")], (rc, st))
    frag_ooms = sum(e["action"] == "oom" for e in frag["device_traces"][0])
    rc, st = oom_status(oom_kept)
    check("no-oom FAIL: an OOM still in an overflowed trace", frag_ooms > 0 and rc == 1 and st[0][0] == "fail",
          (frag_ooms, rc, st))
    # ... and the fleet: such a file's OOM column is '?' (oom_judged false), as is a file
    # without a trace; an OOM seen is judged whatever was dropped. merge keeps the verdict.
    group = [snap("train.pickle"), one, overflowed, oom_kept, snap("list.pickle")]
    rc, out, _ = run(["analyze", "--format", "json"] + group)
    rows = {r["file"]: r for r in json.loads(out)["fleet"]["rows"]}
    want_judged = {snap("train.pickle"): True, one: False, overflowed: False, oom_kept: True,
                   snap("list.pickle"): False}
    check("fleet: oom_judged per file", {f: rows[f]["oom_judged"] for f in group} == want_judged, rows)
    check("fleet: files_oom_not_judged", json.loads(out)["fleet"]["totals"]["files_oom_not_judged"] == 3)
    parts = []
    for i, f in enumerate(group):
        rc, part, _ = run(["analyze", "--format", "json", f])
        parts.append(save(os.path.join(tmp, "part%d.json" % i), part))
    merged = merge(parts)
    mrows = {r["file"]: r["oom_judged"] for r in fleet_part(merged)["rows"]}
    check("merge: oom_judged kept", mrows == want_judged, mrows)
    rc, out, _ = run(["analyze"] + group)
    want_column = {snap("train.pickle"): "-", one: "?", overflowed: "?", oom_kept: str(frag_ooms),
                   snap("list.pickle"): "?"}
    for f, want in want_column.items():
        lines = [l for l in out.split("\n") if l[:2] in ("  ", "! ") and len(l.split()) >= 6 and
                 l[2:].split()[0] in (os.path.basename(f), f)]  # the shortest unique name: the base name here
        check("fleet text OOM column: " + os.path.basename(f), len(lines) == 1 and lines[0].split()[-2] == want,
              (want, lines))
    check("fleet text: not judged for OOMs counted", "3 not judged for OOMs" in " ".join(out.split()), out)
    rc, out, _ = run(["analyze", one])
    # a 2.1+ file (allocator_settings): the one-entry buffer, not PyTorch 2.0's default
    check("analyze text names the one-entry buffer", "ring buffer of one entry" in " ".join(out.split()) and
          "PyTorch 2.0" not in " ".join(out.split()) and
          "the highest in the trace only: older events were dropped" in " ".join(out.split()) and
          "--oom-size SIZE" in out and all(len(l) <= 80 for l in out.split("\n")), out)
    # an unreadable file: an ERROR line, the others checked, exit 2 (it outranks a failure)
    rc, out, err = run(["check", "-j", "2", "--max-peak", limit, small, bad, big])
    check("check: input error exit 2", rc == 2, "%d %r" % (rc, err))
    check("check: ERROR line", "ERROR " + bad in out and out.count("PASS") == 1 and out.count("FAIL") == 1, out)
    check("check: stderr", bad in err and err.endswith("memsnap: 1 file could not be read\n"), err)
    # usage errors
    expect_error("check: no limit", ["check", small], "check: no limit given (--max-reserved, --max-allocated, "
                 "--max-peak, --max-fragmentation, --max-stranded, --no-leaks, --no-oom, --capacity, --min-headroom or --config)")
    expect_error("check: bad size", ["check", "--max-peak", "lots", small], "--max-peak: not a size: 'lots'")
    expect_error("check: bad fraction", ["check", "--max-fragmentation", "1.5", small],
                 "--max-fragmentation: not a fraction from 0 to 1: '1.5'")
    # --config: keys are the options without dashes; the command line overrides it
    cfg = save(os.path.join(tmp, "memsnap.json"), json.dumps({"max-peak": limit, "no-leaks": True,
                                                              "max-fragmentation": 0.99}))
    rc, out, err = run(["check", "--format", "json", "--config", cfg, big])
    j = json.loads(out) if out else {}
    check("config applied", rc == 1 and j.get("limits") == {"max-peak": peak_big - 1, "max-fragmentation": 0.99,
                                                           "no-leaks": True}, (rc, j.get("limits"), err))
    rc, out, err = run(["check", "--format", "json", "--config", cfg, "--max-peak", "1GiB", big])
    check("command line overrides config", rc == 0 and json.loads(out)["limits"]["max-peak"] == 1 << 30, (rc, err))
    unk = save(os.path.join(tmp, "unknown.json"), json.dumps({"max-peak": "1GiB", "max-pek": "2GiB"}))
    expect_error("config: unknown key", ["check", "--config", unk, big],
                 unk + ": unknown key 'max-pek' (known: max-reserved, max-allocated, max-peak, max-fragmentation, "
                 "max-stranded, no-leaks, no-oom, capacity, min-headroom)")
    badcfg = save(os.path.join(tmp, "badcfg.json"), json.dumps({"no-oom": "yes"}))
    expect_error("config: wrong type", ["check", "--config", badcfg, big], badcfg + ": no-oom: true or false")
    # --junit: the structure of the common JUnit schema, hostile names escaped
    xml = os.path.join(tmp, "report.xml")
    rc, out, err = run(["check", "-j", "2", "--max-peak", limit, "--no-oom", "--junit", xml, small, hostile, bad, big])
    check("junit run", rc == 2, "%d %r" % (rc, err))
    root = junit_valid("junit", xml, want_cases=7, want_failures=1, want_errors=1)
    if root is not None:
        names = [s.get("name") for s in root]
        check("junit suites in argument order", names[0] == small and names[2] == bad and names[3] == big, names)
        check("junit hostile name kept readable", "<&\">" in names[1] and "\x1b" not in names[1], names[1])
        fail = root.find(".//failure")
        check("junit failure message: figure and limit", fail is not None and str(peak_big) not in "" and
              "limit" in fail.get("message"), None if fail is None else fail.attrib)
    with open(xml, "w") as f:
        f.write("OLD")
    expect_error("junit: no limit leaves the file", ["check", "--junit", xml, small],
                 "check: no limit given (--max-reserved, --max-allocated, --max-peak, --max-fragmentation, "
                 "--max-stranded, --no-leaks, --no-oom, --capacity, --min-headroom or --config)")
    check("junit untouched on usage error", open(xml).read() == "OLD")
    expect_error("junit refuses an input", ["check", "--max-peak", "1GiB", "--junit", small, small],
                 run(["export", small, "-o", small])[2][len("memsnap: "):-1])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
