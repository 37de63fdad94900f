// Benchmark of the analysis alone, one device at a time on one thread, so that a change to
// the replay or the iteration search can be compared on a noisy machine:
//   bench_analyze FILE [repeats]
// loads FILE once, then for each device times the replay (undo and sweep), the iteration
// search, the leak search and the whole per-device analysis, `repeats` times (default 7),
// and prints the minimum and the median of each in ms. The minimum is the figure to compare:
// on a shared VM, other tenants only ever add time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/analysis/iterations.hpp"
#include "memsnap/analysis/leaks.hpp"
#include "memsnap/analysis/replay.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/load.hpp"

using namespace memsnap;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

void report(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("  %-11s min %8.1f ms  median %8.1f ms\n", what, v.front(), v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_analyze FILE [repeats]\n");
    return 2;
  }
  int repeats = std::max(1, argc > 2 ? std::atoi(argv[2]) : 7);
  snapshot::Loaded l = snapshot::load_snapshot(argv[1]);
  analysis::Context ctx(l.snapshot);
  for (const snapshot::Device& d : l.snapshot.devices) {
    if (d.trace.empty()) continue;
    std::vector<double> replay, iterations, leaks, whole;
    size_t found = 0;
    for (int r = 0; r < repeats; ++r) {
      auto t = Clock::now();
      analysis::Replay rp(ctx, d);
      replay.push_back(ms_since(t));
      t = Clock::now();
      analysis::IterationResult it = analysis::find_iterations(ctx, d, rp, {});
      iterations.push_back(ms_since(t));
      t = Clock::now();
      analysis::LeakResult lr = analysis::find_leaks(ctx, d, rp, it.iterations);
      leaks.push_back(ms_since(t));
      found = it.iterations.count + lr.leaks.size();
    }
    analysis::AnalyzeOptions o;
    o.device = d.index;
    o.threads = 1;
    for (int r = 0; r < repeats; ++r) {
      auto t = Clock::now();
      analysis::AnalyzeResult res = analysis::analyze(ctx, o);
      whole.push_back(ms_since(t));
      found += res.devices.size();
    }
    std::printf("device %d: %zu events (%zu: iterations + leaks + devices, so nothing is optimised away)\n", d.index,
                d.trace.size(), found);
    report("replay", replay);
    report("iterations", iterations);
    report("leaks", leaks);
    report("analyze", whole);
  }
  return 0;
}
