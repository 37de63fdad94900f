// Benchmark of the load pipeline, stage by stage: bench_load FILE [repeats]
// Prints throughput per stage and the memory the value graph and model hold.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/io/byte_source.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/snapshot/builder.hpp"

using namespace memsnap;
using Clock = std::chrono::steady_clock;

static double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

static long rss_kib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "RssAnon: %ld kB", &v) == 1) break;
  std::fclose(f);
  return v;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_load FILE [repeats]\n");
    return 2;
  }
  int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    io::ByteSource src = io::ByteSource::open(argv[1]);
    auto t1 = Clock::now();
    pickle::PickleInfo info;
    pickle::ValueGraph g = pickle::unpickle(src.data(), &info);
    auto t2 = Clock::now();
    long anon_graph = rss_kib();
    snapshot::BuildOptions bo;
    bo.input_bytes = src.data().size();
    snapshot::Snapshot s = snapshot::build_snapshot(g, bo);
    auto t3 = Clock::now();
    analysis::Context ctx(s);
    uint64_t reserved = 0;
    for (const auto& d : s.devices) reserved += analysis::account(ctx, d).reserved_bytes;
    auto t4 = Clock::now();
    double mb = double(src.data().size()) / 1e6;
    std::printf(
        "%.1f MB: read %.3f s, unpickle %.3f s (%.0f MB/s, %llu opcodes, %zu nodes, graph %.1f MB), "
        "build %.3f s, summarize %.3f s; total %.3f s (%.0f MB/s); anon RSS after unpickle %.1f MB\n",
        mb, secs(t0, t1), secs(t1, t2), mb / secs(t1, t2), static_cast<unsigned long long>(info.opcodes), g.size(),
        double(g.memory_bytes()) / 1e6, secs(t2, t3), secs(t3, t4), secs(t0, t4), mb / secs(t0, t4),
        double(anon_graph) / 1024);
    (void)reserved;
  }
  return 0;
}
