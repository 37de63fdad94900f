#!/usr/bin/env bash
# The Debian package, as a user gets it: `cpack -G DEB` from a built tree (no second build), its
# contents and computed dependencies, `apt-get install ./memsnap_*.deb`, the installed binary, manual
# page and completions used from their installed paths, then `apt-get remove` and nothing left.
# Usage: tests/package/deb.sh BUILD_DIR (run by .ci/run; needs root or sudo, apt and dpkg-dev).
# Exit 77 (SKIP) where apt-get or root is missing, or memsnap is installed by something else.
set -euo pipefail
build=$(cd "${1:?usage: deb.sh BUILD_DIR}" && pwd)
cd "$(dirname "$0")/../.."
sudo=$(command -v sudo || true)
fail() { echo "deb: FAIL $*" >&2; exit 1; }

if ! command -v apt-get >/dev/null || { [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; }; then
  echo "deb: SKIPPED: no apt-get, or neither root nor sudo"
  exit 77
fi
if dpkg-query -W -f='${Status}' memsnap 2>/dev/null | grep -q "install ok installed"; then
  echo "deb: SKIPPED: a memsnap package is installed already; remove it first (apt-get remove memsnap)"
  exit 77
fi
command -v dpkg-shlibdeps >/dev/null || $sudo apt-get install -y dpkg-dev >/dev/null

# --- build the package from the tree as built -----------------------------------------------------
out="$build/package"
rm -rf "$out"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" >"$build/cpack.log" 2>&1 || {
  tail -20 "$build/cpack.log" >&2
  fail "cpack -G DEB"
}
version=$("$build/memsnap" --version | awk '{print $2}')
deb="$out/memsnap_${version}_$(dpkg --print-architecture).deb"
[ -f "$deb" ] || fail "no $deb (cpack wrote: $(ls "$out"))"
echo "deb: built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

# What is in it: the binary, the page, the three completions; Depends computed, not written.
contents=$(dpkg-deb --contents "$deb" | awk '{print $NF}')
for path in ./usr/bin/memsnap ./usr/share/man/man1/memsnap.1 ./usr/share/bash-completion/completions/memsnap \
  ./usr/share/zsh/site-functions/_memsnap ./usr/share/fish/vendor_completions.d/memsnap.fish; do
  grep -qx "$path" <<<"$contents" || fail "$path is not in the package: $contents"
done
depends=$(dpkg-deb --field "$deb" Depends)
echo "deb: Depends: $depends"
for lib in libc6 libzstd1 zlib1g; do
  grep -q "\b$lib\b" <<<"$depends" || fail "Depends lacks $lib (dpkg-shlibdeps): $depends"
done
grep -q "libstdc++" <<<"$depends" && fail "Depends names libstdc++, which the binary links in: $depends"

# --- install, use, remove --------------------------------------------------------------------------
removed=0
cleanup() { [ "$removed" -eq 1 ] || $sudo apt-get remove -y memsnap >/dev/null 2>&1 || true; }
trap cleanup EXIT
$sudo apt-get install -y "$deb" >"$build/apt-install.log" 2>&1 || {
  tail -20 "$build/apt-install.log" >&2
  fail "apt-get install $deb"
}
[ "$(command -v memsnap)" = /usr/bin/memsnap ] || fail "memsnap is not /usr/bin/memsnap: $(command -v memsnap)"
got=$(/usr/bin/memsnap --version)
[ "$got" = "memsnap $version" ] || fail "/usr/bin/memsnap --version: $got"
page=$(man -w memsnap) || fail "man -w memsnap"
[ "$page" = /usr/share/man/man1/memsnap.1 ] || [ "$page" = /usr/share/man/man1/memsnap.1.gz ] || fail "man -w: $page"
/usr/bin/memsnap analyze testdata/snapgen/frag.pickle >"$build/deb-analyze.txt" || fail "installed memsnap analyze"
grep -q "out of memory at event" "$build/deb-analyze.txt" || fail "installed memsnap analyze: no OOM in its report"
/usr/bin/memsnap completions bash | cmp -s - /usr/share/bash-completion/completions/memsnap ||
  fail "the installed bash completion is not the binary's"
echo "deb: installed: $got, manual page $page, analyze of testdata/snapgen/frag.pickle as expected"

$sudo apt-get remove -y memsnap >/dev/null 2>&1 || fail "apt-get remove memsnap"
removed=1
for path in /usr/bin/memsnap /usr/share/man/man1/memsnap.1 /usr/share/fish/vendor_completions.d/memsnap.fish; do
  [ ! -e "$path" ] || fail "$path is still there after apt-get remove"
done
echo "deb: removed: nothing of it left"
