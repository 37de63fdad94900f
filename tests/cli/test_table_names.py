#!/usr/bin/env python3
"""File names in the fleet and check tables: the shortest unique suffix, cut in the middle
where the column is too narrow, never two files under one name.

  test_table_names.py MEMSNAP TESTDATA

Copies of one fixture under names like real ones (three owners' ..._memory_snapshot.pickle,
one model's medium_128/256/1024 training and inference runs, one base name in two
directories) make a fleet; each row's name must be a shortening of its own path (its
pieces between the cuts appear in the path in order, the last piece ends it), the names
of distinct files must differ, a unique short base name is shown alone, and two files
with one base name show the directory that tells them apart.
"""
import os
import shutil
import tempfile

from clitest import TESTDATA, check, finish, run

CUT = "\u2026"
NAMES = ["MAGMA27__assignment2-systems__memory_snapshot.pickle",
         "bcrafton__assignment2-systems__memory_snapshot.pickle",
         "notHanmin__assignment2-systems__memory_snapshot.pickle"]
NAMES += ["Wedsonlin__assignment2-systems__medium_%s_%s_memory_snapshot.pickle" % (size, kind)
          for size in ("128", "256", "1024") for kind in ("training", "inference")]
NAMES += [os.path.join("run_a", "snap.pickle"), os.path.join("run_b", "snap.pickle"), "tiny.pickle"]


def faithful(name, path):
    """name is path's tail with middle parts left out at each cut."""
    pieces = name.split(CUT)
    if len(pieces) == 1:  # whole components at the end of the path
        return path == name or path.endswith("/" + name)
    if not path.endswith(pieces[-1]):
        return False
    at = path.find(pieces[0])
    if at < 0:
        return False
    at += len(pieces[0])
    for p in pieces[1:-1]:
        k = path.find(p, at)
        if k < 0:
            return False
        at = k + len(p)
    return len(path) - len(pieces[-1]) >= at


with tempfile.TemporaryDirectory(prefix="memsnap-names-") as tmp:
    paths = []
    for n in NAMES:
        p = os.path.join(tmp, n)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        shutil.copy(os.path.join(TESTDATA, "snapgen", "train.pickle"), p)
        paths.append(p)
    env = {"COLUMNS": "80"}
    rc, out, err = run(["analyze"] + paths, env)
    check("fleet exit", rc == 0, "%d %r" % (rc, err[:300]))
    lines = out.splitlines()
    check("fleet fits 80 columns", all(len(l) <= 80 for l in lines), max(lines, key=len))
    head = next((k for k, l in enumerate(lines) if l.startswith("  file ")), None)
    rows = [l for l in lines[head + 1:head + 1 + len(paths)]] if head is not None else []
    shown = [l[2:2 + 31].rstrip() for l in rows]
    rc, cout, err = run(["check", "--max-fragmentation", "0.99"] + paths, env)
    clines = [l for l in cout.splitlines() if l[:4] in ("PASS", "FAIL", "SKIP")]
    check("check fits 80 columns", all(len(l) <= 80 for l in cout.splitlines()), cout)
    for table, names in (("fleet", shown), ("check", [l.split()[-1] for l in clines])):
        check(table + ": a row per file", len(names) == len(paths), "\n".join(names))
        check(table + ": distinct files, distinct names", len(set(names)) == len(names), "\n".join(names))
        # each name shortens one of the paths, and each path is shortened by one name
        owners = [[p for p in paths if faithful(n, p)] for n in names]
        check(table + ": every name shortens a path", all(owners), "\n".join(names))
        check(table + ": the base name alone when it is unique", "tiny.pickle" in names, "\n".join(names))
        check(table + ": one base name in two directories", {"run_a/snap.pickle", "run_b/snap.pickle"} <= set(names),
              "\n".join(names))
        for n in names:
            if CUT not in n:
                continue
            same = [p for p in paths if faithful(n, p)]
            check(table + ": %s names one file" % n, len(same) == 1, str(same))

finish()
