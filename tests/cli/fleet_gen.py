# The fleet of small snapshots the many-file tests use (cli_fleet, the docs' `in FLEET` examples,
# tests/cluster/slurm.sh): 64 ranks committed in testdata/fleet/ with their snapgen truth, so a
# bare clone runs those tests; copied into the test's own directory, where it may add files.
#
#   python3 fleet_gen.py DIR [COUNT]                 copy ranks 0..COUNT-1 into DIR
#   python3 fleet_gen.py --regenerate DIR [COUNT]    make them anew with snapgen (SNAPGEN=path,
#                                                    default ../shared/snapgen/snapgen.py; used by
#                                                    testdata/gen/make_fleet_fixtures.sh)
import contextlib
import importlib.util
import io
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FLEET = os.path.normpath(os.path.join(HERE, "..", "..", "testdata", "fleet"))
SNAPGEN = os.environ.get("SNAPGEN") or os.path.join(HERE, "..", "..", "..", "shared", "snapgen", "snapgen.py")
OUTLIER = 13  # the rank made bigger (a wider model: more parameters, a higher peak)
RANKS = 64  # how many testdata/fleet/ holds


def snapgen_args(i, path):
    """snapgen's arguments for rank i: seeds 1.., 2 to 4 steps, rank OUTLIER ~3x the others' peak."""
    width = 1024 if i == OUTLIER else 64
    return ["--scenario", "train", "--seed", str(i + 1), "--steps", str(2 + i % 3), "--layers", "1",
            "--width", str(width), "--batch", "1", "--seq", "16", "-o", path]


def generate(directory, count=RANKS):
    """Copies rankNN.pickle and rankNN.truth.json for NN < count into `directory`; returns the
    pickle paths in rank order."""
    if count > RANKS:
        raise ValueError("testdata/fleet holds %d ranks, %d asked" % (RANKS, count))
    paths = []
    for i in range(count):
        for ext in (".pickle", ".truth.json"):
            shutil.copyfile(os.path.join(FLEET, "rank%02d%s" % (i, ext)), os.path.join(directory, "rank%02d%s" % (i, ext)))
        paths.append(os.path.join(directory, "rank%02d.pickle" % i))
    return paths


def regenerate(directory, count=RANKS):
    """Writes the ranks anew with snapgen (in this process: no interpreter per file)."""
    if not os.path.exists(SNAPGEN):
        sys.exit("snapgen not found at %s (set SNAPGEN=...)" % SNAPGEN)
    spec = importlib.util.spec_from_file_location("snapgen", SNAPGEN)
    sg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sg)
    for i in range(count):
        old = sys.argv
        sys.argv = ["snapgen"] + snapgen_args(i, os.path.join(directory, "rank%02d.pickle" % i))
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                sg.main()
        finally:
            sys.argv = old


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--regenerate"]
    n = int(args[1]) if len(args) > 1 else RANKS
    (regenerate if "--regenerate" in sys.argv[1:] else generate)(args[0], n)
