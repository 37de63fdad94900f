# Generates a fleet of small snapshots with ../shared/snapgen (in this process: no interpreter per file).
# Used by test_fleet.py:  python3 fleet_gen.py DIR [COUNT]
import contextlib
import importlib.util
import io
import os
import sys

SNAPGEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "snapgen", "snapgen.py")
OUTLIER = 13  # the rank made bigger (a wider model: more parameters, a higher peak)


def load_snapgen():
    if not os.path.exists(SNAPGEN):
        return None
    spec = importlib.util.spec_from_file_location("snapgen", SNAPGEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def generate(directory, count=64):
    """Writes rankNN.pickle and rankNN.truth.json for NN < count; returns the pickle paths in rank order."""
    sg = load_snapgen()
    if sg is None:
        return None
    paths = []
    for i in range(count):
        path = os.path.join(directory, "rank%02d.pickle" % i)
        width = 1024 if i == OUTLIER else 64  # peak about 3x the others'
        argv = ["snapgen", "--scenario", "train", "--seed", str(i + 1), "--steps", str(2 + i % 3),
                "--layers", "1", "--width", str(width), "--batch", "1", "--seq", "16", "-o", path]
        old = sys.argv
        sys.argv = argv
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                sg.main()
        finally:
            sys.argv = old
        paths.append(path)
    return paths


if __name__ == "__main__":
    out = generate(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64)
    if out is None:
        sys.exit("snapgen not found at " + SNAPGEN)
