#!/usr/bin/env python3
# The mcp_client ctest: installs the official MCP TypeScript SDK (package.json and
# package-lock.json beside this file, pinned) with `npm ci` into WORKDIR, once per build tree,
# and runs test_mcp.mjs there with Node.js against `memsnap mcp --allow testdata`.
# Usage: run.py MEMSNAP SOURCE_DIR WORKDIR. Exit 77 (SKIPPED; a failure under MEMSNAP_NO_SKIP=1)
# where node or npm is missing or the package cannot be installed (no registry); .ci/run installs
# both, so CI runs it.
import json
import os
import shutil
import subprocess
import sys

MEMSNAP, SOURCE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import skips  # noqa: E402  (SKIPPED, or a failure where MEMSNAP_NO_SKIP=1)


def skip(why):
    skips.skip(why, suite=True)


node, npm = shutil.which("node"), shutil.which("npm")
if not node or not npm:
    skip("node or npm is not installed (apt-get install nodejs npm)")
version = subprocess.run([node, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
if int(version.lstrip("v").split(".")[0]) < 18:
    skip("node %s is older than 18, the SDK's oldest" % version)

os.makedirs(WORK, exist_ok=True)
for name in ("package.json", "package-lock.json"):
    shutil.copyfile(os.path.join(HERE, name), os.path.join(WORK, name))
with open(os.path.join(HERE, "package-lock.json")) as f:
    want = json.load(f)["packages"]["node_modules/@modelcontextprotocol/sdk"]["version"]
installed = os.path.join(WORK, "node_modules", "@modelcontextprotocol", "sdk", "package.json")
have = None
if os.path.isfile(installed):
    with open(installed) as f:
        have = json.load(f).get("version")
if have != want:
    p = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts"], cwd=WORK, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    if p.returncode != 0:
        print(p.stdout[-2000:])
        skip("npm ci could not install @modelcontextprotocol/sdk %s" % want)
    print("installed @modelcontextprotocol/sdk %s with npm ci in %s" % (want, WORK))

# The script runs from WORK so that its imports find WORK/node_modules.
shutil.copyfile(os.path.join(HERE, "test_mcp.mjs"), os.path.join(WORK, "test_mcp.mjs"))
p = subprocess.run([node, os.path.join(WORK, "test_mcp.mjs"), os.path.abspath(MEMSNAP)], cwd=SOURCE, timeout=600)
sys.exit(p.returncode)
