// Fuzz target: any bytes through the whole pipeline (detect, decode, build, every analysis).
// Built as a libFuzzer binary with -DMEMSNAP_FUZZ=ON (clang); the same entry point
// replays a corpus as an ordinary ctest (fuzz_replay.cpp).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "memsnap/analysis/diff.hpp"
#include "memsnap/analysis/oom.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/summary.hpp"
#include "memsnap/analysis/trace_analysis.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/snapshot/load.hpp"

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
  } catch (const InputError&) {
    // malformed input is expected; anything else (or a crash) is a bug
  }
  return 0;
}
