// Fuzz target: any bytes through the whole pipeline (detect, decode, build, every analysis).
// Built as a libFuzzer binary with -DMEMSNAP_FUZZ=ON (clang); the same entry point
// replays a corpus as an ordinary ctest (fuzz_replay.cpp).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/analysis/oom.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/slice.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/analysis/trace_analysis.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/report/export.hpp"
#include "memsnap/snapshot/load.hpp"

namespace {

// memsnap export, whole and cut: its output must always read back. Reading it back failing
// is a bug in the writer, not bad input, so it aborts.
void check_export(const memsnap::snapshot::Snapshot& s) {
  using namespace memsnap;
  auto read_back = [](const std::string& bytes, const char* what) {
    try {
      (void)snapshot::load_snapshot_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), what);
    } catch (const InputError& e) {
      std::fprintf(stderr, "memsnap export wrote a %s memsnap cannot read: %s\n", what, e.what());
      std::abort();
    }
  };
  std::ostringstream pickle, json;
  report::write_snapshot_pickle(pickle, s);
  report::write_snapshot_json(json, s);
  read_back(pickle.str(), "pickle");
  read_back(json.str(), "JSON document");
  analysis::SliceOptions window;
  window.last = 7;
  try {
    std::ostringstream cut;
    report::write_snapshot_pickle(cut, analysis::slice(s, window));
    read_back(cut.str(), "cut pickle");
  } catch (const UsageError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memsnap;
  snapshot::LoadOptions opt;
  opt.read.max_buffer_bytes = uint64_t{64} << 20;  // keep decompression bombs cheap
  try {
    auto loaded = snapshot::load_snapshot_bytes(std::vector<uint8_t>(data, data + size), "fuzz", opt);
    const auto& s = loaded.snapshot;
    analysis::Sites sites(s);
    analysis::OomOptions oom;
    oom.assumed_request = 1 << 20;
    for (const auto& d : s.devices) {
      (void)analysis::summarize(d);
      analysis::Replay replay(s, d);
      if (!d.trace.empty()) (void)replay.state_after(uint32_t(d.trace.size() / 2)).to_device(d.index);
      auto trace = analysis::analyze_trace(s, d, replay, sites);
      (void)analysis::analyze_ooms(s, d, replay, sites, trace, oom);
    }
    (void)analysis::diff_snapshots(s, s);
    check_export(s);
  } catch (const InputError&) {
    // malformed input is expected; anything else (or a crash) is a bug
  }
  return 0;
}
