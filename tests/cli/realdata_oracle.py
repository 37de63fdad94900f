"""What the tests of memsnap against a Python oracle over ../shared/realdata share.

A test is `SCRIPT MEMSNAP ORACLE REALDATA`: the oracle (tests/oracle/) reads every real
snapshot in REALDATA once and prints {"files": {path: answer}}; memsnap's `analyze --format
json` of each file is then held against the oracle's answer by the test's own comparison.
REALDATA is never copied into the project: where it is absent the test says so and exits 77
(ctest's SKIP_RETURN_CODE).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from skips import skip  # noqa: E402



def real_snapshots(realdata):
    return sorted(os.path.join(realdata, f) for f in os.listdir(realdata)
                  if f.endswith((".pickle", ".pkl", ".json")))


def analyze_json(memsnap, path):
    """memsnap's analysis of path as JSON, or None after a FAIL line when memsnap failed."""
    run = subprocess.run([memsnap, "analyze", "--format", "json", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        print("FAIL %s: exit %d: %s" % (os.path.basename(path), run.returncode, run.stderr.strip()))
        return None
    return json.loads(run.stdout)


def run_against_oracle(compare_file, summarize):
    """The test's exit code. compare_file(name, analysis, answer) prints what differs and
    returns how many figures did; summarize(files, errors) prints the closing line and
    returns the exit code (errors counts memsnap's failures too)."""
    memsnap, oracle, realdata = sys.argv[1], sys.argv[2], sys.argv[3]
    if not os.path.isdir(realdata):
        skip("%s is absent" % realdata, suite=True)
    files = real_snapshots(realdata)
    want = json.loads(subprocess.run([sys.executable, oracle] + files, stdout=subprocess.PIPE,
                                     check=True, text=True).stdout)["files"]
    errors = 0
    for path in files:
        got = analyze_json(memsnap, path)
        if got is None:
            errors += 1
            continue
        errors += compare_file(os.path.basename(path), got, want[path])
    return summarize(files, errors)
