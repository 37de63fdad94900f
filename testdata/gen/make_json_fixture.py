#!/usr/bin/env python3
# Writes testdata/json/train.json: a JSON rendering of testdata/snapgen/train.pickle (the viewer accepts both).
import json
import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))


class SafeUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused global %s.%s" % (module, name))


def main():
    with open(os.path.join(HERE, "..", "snapgen", "train.pickle"), "rb") as f:
        snap = SafeUnpickler(f).load()
    with open(os.path.join(HERE, "..", "json", "train.json"), "w") as f:
        json.dump(snap, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
