#!/usr/bin/env python3
# Fleets at scale and fleets gone wrong (issue 40), and the JSON readers under hostile input
# (issue 38, items 3, 6, 7, 8 for merge and check --config). Every input is generated here.
#
#   streamed output   analyze --format jsonl of 10,000 small ranks: peak RSS under 100 MB,
#                     -j1 and -j2 byte-identical; merge of 10,000 shard outputs under 5 s
#   failures          an unreadable rank, a shard cut short, two shards holding one rank:
#                     the summary names them and the exit status is 2
#   hostile JSON      2 MB of '[', deep objects, 200,000 keys, /dev/zero, a 60 MB input,
#                     --max-memory, u64 figures at and past 2^64: each < 10 s of CPU and < 1 GB
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from clitest import MEMSNAP as _MEMSNAP, TESTDATA, check, finish, snap

MEMSNAP = os.path.abspath(_MEMSNAP)

# A sanitizer build (SCALE > 1) gets SCALE times the time, no memory bound (the shadow memory
# is not the program's), and 1,000 ranks instead of 10,000.
SCALE = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
RSS_LIMIT = (1 << 30) if SCALE == 1.0 else 1 << 62
TIME_LIMIT = 10.0 * SCALE


def measured(args, stdin=None, cwd=None, timeout=600):
    """Runs memsnap; returns (exit status, stdout, stderr, CPU seconds, peak RSS in bytes) of that run
    alone (a python3 parent that runs nothing else reports its child's). The time bounds are on CPU
    time (user + sys): the machine is shared, and wall time measures the other builds as much."""
    probe = ["python3", "-c",
             "import resource,subprocess,sys;p=subprocess.run(sys.argv[1:]);"
             "r=resource.getrusage(resource.RUSAGE_CHILDREN);"
             "print(r.ru_maxrss,r.ru_utime+r.ru_stime,file=sys.stderr);"
             "sys.exit(p.returncode)"]
    env = dict(os.environ, NO_COLOR="1", COLUMNS="80")
    t0 = time.monotonic()
    p = subprocess.run(probe + [MEMSNAP] + args, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=cwd, env=env, timeout=timeout)
    wall = time.monotonic() - t0
    err_lines = p.stderr.decode("utf-8", "replace").rstrip("\n").split("\n")
    rss_kib, cpu = err_lines[-1].split()
    rss, seconds = int(rss_kib) * 1024, float(cpu)
    check("%s: wall time" % " ".join(args[:3]), wall < 60 * SCALE, "%.1f s" % wall)  # a hang, not a slow machine
    rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
    return rc, p.stdout.decode("utf-8", "replace"), "\n".join(err_lines[:-1]) + ("\n" if len(err_lines) > 1 else ""), \
        seconds, rss


def run_bounded(name, args, stdin=None, want_rc=None, cwd=None):
    """A run that must end within TIME_LIMIT and RSS_LIMIT, never by a signal or exit 3."""
    rc, out, err, seconds, rss = measured(args, stdin=stdin, cwd=cwd, timeout=120)
    check(name + ": no crash", rc in (0, 1, 2), "exit %d, stderr %r" % (rc, err[-300:]))
    if want_rc is not None:
        check(name + ": exit status", rc == want_rc, "exit %d, want %d, stderr %r" % (rc, want_rc, err[-300:]))
    check(name + ": CPU time", seconds < TIME_LIMIT, "%.1f s" % seconds)
    check(name + ": memory", rss < RSS_LIMIT, "%d MiB" % (rss >> 20))
    return rc, out, err, seconds, rss


def one_line_error(name, err, contains):
    check(name + ": one line", err.count("\n") == 1 and err.startswith("memsnap: "), repr(err[:300]))
    check(name + ": says why", contains in err, repr(err[:300]))


def analyze_doc(path, reserved, allocated, peak):
    """A minimal analyze document, as merge reads it."""
    return {"schema_version": 1, "input": {"path": path},
            "devices": [{"device": 0, "totals": {"reserved_bytes": reserved, "allocated_bytes": allocated},
                         "trace": {"entries": 10, "events_dropped": False},
                         "peak": None if peak is None else {"allocated_bytes": peak},
                         "oom_events": 0, "leaks": [], "leaks_judged": True}]}


def write(path, text):
    with open(path, "w" if isinstance(text, str) else "wb") as f:
        f.write(text)
    return path


def main():
    tmp = tempfile.mkdtemp(prefix="memsnap-fleet-scale-")
    try:
        hostile_json(tmp)
        u64_figures(tmp)
        fleet_failures(tmp)
        ten_thousand(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


def hostile_json(tmp):
    # Item 3: no recursion over input depth.
    deep = write(os.path.join(tmp, "deep.json"), "[" * 2_000_000)
    rc, out, err, _, _ = run_bounded("merge 2 MB of [", ["merge", deep], want_rc=2)
    one_line_error("merge 2 MB of [", err, "nested deeper than 512 levels")
    deep_obj = write(os.path.join(tmp, "deepobj.json"),
                     '{"schema_version": 1, "devices": [], "x": ' + '{"a": ' * 200_000 + "1" + "}" * 200_000 + "}")
    rc, out, err, _, _ = run_bounded("merge --format json of 200 KB deep objects",
                                     ["merge", "--format", "json", deep_obj], want_rc=2)
    one_line_error("merge deep objects", err, "nested deeper than 512 levels")
    rc, out, err, _, _ = run_bounded("check --config 2 MB of [",
                                     ["check", "--config", deep, snap("train.pickle")], want_rc=2)
    one_line_error("check --config deep", err, "nested deeper than 512 levels")
    ok = analyze_doc("ok.pickle", 100, 50, 70)
    at_limit = dict(ok, x=json.loads("[" * 500 + "]" * 500))
    rc, out, err, _, _ = run_bounded("merge: 500 levels are fine",
                                     ["merge", write(os.path.join(tmp, "d500.json"), json.dumps(at_limit))], want_rc=0)

    # Item 6: 200,000 keys in O(n log n): in a skipped object, in a kept one, and in a config.
    keys = ", ".join('"k%d": %d' % (i, i) for i in range(200_000))
    wide = dict(ok)
    text = json.dumps(wide)[:-1] + ', "extra": {' + keys + "}}"
    rc, out, err, _, _ = run_bounded("merge: 200k keys in a skipped object",
                                     ["merge", "--format", "json", write(os.path.join(tmp, "wide1.json"), text)],
                                     want_rc=0)
    check("merge: 200k keys kept in the file's document", rc == 0 and '"k199999": 199999' in out)
    text = json.dumps(ok).replace('"reserved_bytes": 100', keys + ', "reserved_bytes": 100')
    rc, out, err, _, _ = run_bounded("merge: 200k keys among a device's totals",
                                     ["merge", write(os.path.join(tmp, "wide2.json"), text)], want_rc=0)
    cfg = write(os.path.join(tmp, "wide.cfg"), "{" + ", ".join('"no-oom%d": true' % i for i in range(200_000)) + "}")
    rc, out, err, _, _ = run_bounded("check --config with 200k keys", ["check", "--config", cfg, snap("train.pickle")],
                                     want_rc=2)
    one_line_error("check --config with 200k keys", err, "unknown key 'no-oom0'")
    cfg = write(os.path.join(tmp, "dup.cfg"), "{" + ", ".join('"max-peak": "%dMiB"' % (i + 1) for i in range(200_000)) + "}")
    rc, out, err, _, _ = run_bounded("check --config: a key 200k times, the last wins",
                                     ["check", "--format", "json", "--config", cfg, snap("train.pickle")], want_rc=0)
    check("config: the last of a repeated key", rc == 0 and json.loads(out)["limits"]["max-peak"] == 200_000 << 20,
          out[:300])

    # Item 7: /dev/zero refused at its first byte, --max-memory, a 60 MB input in bounded memory.
    for args in (["merge", "/dev/zero"], ["check", "--config", "/dev/zero", snap("train.pickle")]):
        rc, out, err, seconds, _ = run_bounded(" ".join(args[:3]), args, want_rc=2)
        one_line_error(" ".join(args[:3]), err, "not JSON: starts with byte 0x00")
        check(" ".join(args[:3]) + ": quickly", seconds < 1 * SCALE, "%.1f s of CPU" % seconds)
    rc, out, err, _, _ = run_bounded("merge --max-memory", ["merge", "--max-memory", "1MiB", deep], want_rc=2)
    one_line_error("merge --max-memory", err, "larger than 1.00 MiB (--max-memory)")
    big = dict(ok, warnings=["w%08d" % i for i in range(4_000_000)])  # about 60 MB
    big_path = write(os.path.join(tmp, "big.json"), json.dumps(big, indent=2))
    check("60 MB input made", os.path.getsize(big_path) > 60_000_000, os.path.getsize(big_path))
    rc, out, err, seconds, rss = run_bounded("merge --format json of a 60 MB input",
                                             ["merge", "--format", "json", big_path], want_rc=0)
    check("60 MB input kept whole", rc == 0 and len(json.loads(out)["files"][0]["warnings"]) == 4_000_000)
    print("merge --format json of a %d MB input: %.1f s of CPU, %d MiB" % (os.path.getsize(big_path) >> 20, seconds, rss >> 20))
    rc, out, err, seconds, rss = run_bounded("merge (text) of a 60 MB input", ["merge", big_path], want_rc=0)
    print("merge of a %d MB input: %.1f s of CPU, %d MiB" % (os.path.getsize(big_path) >> 20, seconds, rss >> 20))


def u64_figures(tmp):
    # Item 8: integers throughout; every figure range-checked.
    top = 2**64 - 1
    a = write(os.path.join(tmp, "u64a.json"), json.dumps(analyze_doc("a.pickle", top, top, top)))
    b = write(os.path.join(tmp, "u64b.json"), json.dumps(analyze_doc("b.pickle", top, top, top - 1)))
    rc, out, err, _, _ = run_bounded("merge of 16 EiB figures", ["merge", "--format", "json", a, b], want_rc=0)
    fleet = json.loads(out)["fleet"] if rc == 0 else {}
    check("u64: sums saturate", fleet.get("totals", {}).get("reserved_bytes") == top, fleet.get("totals"))
    check("u64: the median is exact to the float", fleet.get("median_peak_allocated_bytes") == float(top - 1) + 0.5,
          fleet.get("median_peak_allocated_bytes"))
    check("u64: no outlier", [r["outlier"] for r in fleet.get("rows", [])] == [False, False])
    rc, out, err, _, _ = run_bounded("merge of 16 EiB figures, text", ["merge", a, b], want_rc=0)
    check("u64: the text says 16 EiB, not 0 B", "median peak 16.00 EiB" in out, out[:300])
    for name, value, what in (("2^64", "18446744073709551616", "not a non-negative integer"),
                              ("negative", "-1", "not a non-negative integer"),
                              ("a float", "1.5", "not a non-negative integer"),
                              ("a string", '"1"', "not a non-negative integer")):
        text = json.dumps(analyze_doc("c.pickle", 1, 1, 1)).replace('"reserved_bytes": 1', '"reserved_bytes": ' + value)
        rc, out, err, _, _ = run_bounded("merge: reserved " + name,
                                         ["merge", write(os.path.join(tmp, "r.json"), text)], want_rc=2)
        one_line_error("merge: reserved " + name, err, "devices[0].totals.reserved_bytes: " + what)


def ranks(tmp, n, name="ranks"):
    """n rank files: links to small fixtures, each with a name of its own."""
    d = os.path.join(tmp, name)
    os.makedirs(d, exist_ok=True)
    sources = [os.path.abspath(snap(f)) for f in ("list.pickle", "legacy.pickle", "proto2.pickle", "nostacks.pickle")]
    paths = []
    for i in range(n):
        p = os.path.join(d, "rank%05d.pickle" % i)
        os.symlink(sources[i % len(sources)], p)
        paths.append("rank%05d.pickle" % i)
    return d, paths


def fleet_failures(tmp):
    d, paths = ranks(tmp, 12, "fail")
    write(os.path.join(d, "rank00005.pickle.bad"), b"\x80\x04not a snapshot")
    os.remove(os.path.join(d, paths[5]))
    os.rename(os.path.join(d, "rank00005.pickle.bad"), os.path.join(d, paths[5]))
    # an unreadable rank: named in the JSON Lines and in the merged summary, exit 2
    rc, out, err, _, _ = run_bounded("analyze --format jsonl with an unreadable rank",
                                     ["analyze", "--format", "jsonl", "-j", "2"] + paths, cwd=d, want_rc=2)
    lines = [json.loads(l) for l in out.splitlines()]
    check("jsonl: header, 12 lines, trailer", len(lines) == 14 and "inputs" in lines[0] and "fleet" in lines[-1],
          len(lines))
    check("jsonl: the bad rank's line is its error", lines[6].get("file") == paths[5] and "error" in lines[6],
          lines[6] if len(lines) > 6 else None)
    check("jsonl: input order", [l.get("file") for l in lines[1:13]] == paths)
    shard = write(os.path.join(tmp, "shard_err.jsonl"), out)
    rc, mout, merr, _, _ = run_bounded("merge of a shard with an unreadable rank", ["merge", shard], want_rc=2)
    check("merge names the unreadable rank", "ERROR " + paths[5] in mout, mout[-600:])
    check("merge says the fleet is incomplete", "1 unreadable" in merr, merr)

    good = [p for i, p in enumerate(paths) if i != 5]
    rc, out, err, _, _ = run_bounded("analyze --format jsonl", ["analyze", "--format", "jsonl"] + good, cwd=d,
                                     want_rc=0)
    rc1, out1, _, _, _ = run_bounded("analyze --format jsonl -j1", ["analyze", "--format", "jsonl", "-j", "1"] + good,
                                     cwd=d, want_rc=0)
    rc2, out2, _, _, _ = run_bounded("analyze --format jsonl -j2", ["analyze", "--format", "jsonl", "-j", "2"] + good,
                                     cwd=d, want_rc=0)
    check("jsonl: -j1 and -j2 byte-identical", out1 == out2 and out1 != "")
    full = write(os.path.join(tmp, "full.jsonl"), out)
    # check --format jsonl: a line per file in input order (its error for the bad rank), then the summary
    args = ["check", "--format", "jsonl", "--max-reserved", "1GiB", "--no-oom"]
    rc1, c1, _, _, _ = run_bounded("check --format jsonl -j1", args + ["-j", "1"] + paths, cwd=d, want_rc=2)
    rc2, c2, _, _, _ = run_bounded("check --format jsonl -j2", args + ["-j", "2"] + paths, cwd=d, want_rc=2)
    cl = [json.loads(l) for l in c2.splitlines()]
    check("check jsonl: -j1 and -j2 byte-identical", c1 == c2 and c1 != "")
    check("check jsonl: a line per file, then the summary",
          [l.get("file") for l in cl[:-1]] == paths and "summary" in cl[-1] and "error" in cl[5], c2[:300])
    whole_check = json.loads(run_bounded("check --format json", ["check", "--format", "json", "--max-reserved", "1GiB",
                                                                 "--no-oom"] + paths, cwd=d)[1])
    check("check jsonl: the same results as --format json",
          [r for l in cl[:-1] for r in l.get("results", [])] == whole_check["results"] and
          cl[-1]["summary"] == whole_check["summary"])
    rc, whole, err, _, _ = run_bounded("analyze --format json of all", ["analyze", "--format", "json"] + good, cwd=d)
    rc, merged, err, _, _ = run_bounded("merge of the JSON Lines", ["merge", "--format", "json", full], want_rc=0)
    check("merge of JSON Lines == analyze of all", json.loads(merged)["fleet"] == json.loads(whole)["fleet"])
    check("merge of JSON Lines: the same documents",
          sorted(json.dumps(f, sort_keys=True) for f in json.loads(merged)["files"]) ==
          sorted(json.dumps(f, sort_keys=True) for f in json.loads(whole)["files"]))
    # a shard cut short (a rank killed mid-run): the ranks after the cut are missing, exit 2
    text = out.split("\n")
    cut = write(os.path.join(tmp, "cut.jsonl"), "\n".join(text[:6]) + "\n" + text[6][: len(text[6]) // 2])
    rc, mout, merr, _, _ = run_bounded("merge of a truncated shard", ["merge", cut], want_rc=2)
    missing = [p for p in good[5:]]
    check("truncated: every missing rank named", all("MISSING " + p in mout for p in missing), mout[-900:])
    check("truncated: the ranks read are counted", "fleet of 5 files" in mout, mout[:200])
    rc, jout, _, _, _ = run_bounded("merge --format json of a truncated shard", ["merge", "--format", "json", cut],
                                    want_rc=2)
    jf = json.loads(jout)["fleet"] if jout else {}
    check("truncated: JSON lists them", sorted(m["file"] for m in jf.get("missing", [])) == missing and
          jf.get("complete") is False, jf.get("missing"))
    # two shards holding the same rank
    rc, mout, merr, _, _ = run_bounded("merge of two shards with one rank", ["merge", full, cut], want_rc=2)
    check("doubled: named", "DOUBLED " + good[0] in mout and "counted twice" in merr, mout[-600:] + merr)


def ten_thousand(tmp):
    n = 10_000 if SCALE == 1.0 else 1_000
    small = 100 * 1000 * 1000 if SCALE == 1.0 else 1 << 62
    d, paths = ranks(tmp, n)
    t0 = time.monotonic()
    rc, out, err, seconds, rss = measured(["analyze", "--format", "jsonl", "-j", "2"] + paths, cwd=d)
    lines = out.count("\n")
    check("10,000 ranks: analyze --format jsonl", rc == 0 and lines == n + 2, "exit %d, %d lines, %r" % (rc, lines, err[:300]))
    check("10,000 ranks: peak RSS under 100 MB", rss < small, "%d MiB" % (rss >> 20))
    print("analyze --format jsonl of %d ranks: %.1f s of CPU, peak RSS %.1f MiB" % (n, seconds, rss / 2**20))
    rc, jout, err, seconds, rss = measured(["analyze", "--format", "json", "-j", "2"] + paths, cwd=d)
    check("10,000 ranks: analyze --format json", rc == 0 and len(jout) > 0)
    check("10,000 ranks: JSON peak RSS under 100 MB", rss < small, "%d MiB" % (rss >> 20))
    print("analyze --format json of %d ranks: %.1f s of CPU, peak RSS %.1f MiB" % (n, seconds, rss / 2**20))
    # 10,000 shard outputs: each rank's line as a file of its own
    shards = os.path.join(tmp, "shards")
    os.makedirs(shards)
    names = []
    for i, line in enumerate(out.splitlines()[1:-1]):
        names.append("s%05d.json" % i)
        write(os.path.join(shards, names[-1]), line + "\n")
    rc, mout, err, seconds, rss = measured(["merge"] + names, cwd=shards)
    check("merge of 10,000 shards", rc == 0 and "fleet of %d files" % n in mout, "exit %d %r" % (rc, err[:300]))
    check("merge of 10,000 shards under 5 s of CPU", seconds < 5 * SCALE, "%.1f s" % seconds)
    print("merge of %d shard outputs: %.2f s of CPU, peak RSS %.1f MiB" % (n, seconds, rss / 2**20))
    whole = json.loads(jout)["fleet"]
    rc, mj, err, seconds, rss = measured(["merge", "--format", "json"] + names, cwd=shards)
    check("merge of 10,000 shards == analyze of all", rc == 0 and json.loads(mj)["fleet"] == whole)
    print("merge --format json of %d shard outputs: %.2f s of CPU, peak RSS %.1f MiB" % (n, seconds, rss / 2**20))


if __name__ == "__main__":
    main()
