// Benchmark of the load pipeline alone (what every command pays before analysing):
// bench_load FILE [repeats [threads]]. Prints CPU and wall time, throughput and the memory the model
// holds, per repeat; then the minimum and median wall time (the minimum is the figure to
// compare on a shared machine: other tenants only ever add time).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "memsnap/snapshot/load.hpp"

using namespace memsnap;

static double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static long rss_anon_kib() {
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
    std::fprintf(stderr, "usage: bench_load FILE [repeats [threads]]\n");
    return 2;
  }
  int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  snapshot::LoadOptions options;  // threads 1: the parse on one core (no split, no read-ahead)
  if (argc > 3) options.threads = static_cast<unsigned>(std::atoi(argv[3]));
  std::vector<double> walls;
  for (int r = 0; r < repeats; ++r) {
    double t0 = cpu_seconds();
    auto w0 = std::chrono::steady_clock::now();
    snapshot::Loaded l = snapshot::load_snapshot(argv[1], options);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    double t1 = cpu_seconds();
    walls.push_back(wall);
    size_t events = 0, model = l.snapshot.tables_bytes();
    for (const auto& d : l.snapshot.devices) events += d.trace.size(), model += d.memory_bytes();
    double mb = double(l.input.decoded_bytes) / 1e6;
    std::printf(
        "%.1f MB: load %.3f s CPU (%.0f MB/s), %.3f s wall, %zu events, model %.1f MB (%.1f B/event), anon RSS now "
        "%.1f MB\n",
        mb, t1 - t0, mb / (t1 - t0), wall, events, double(model) / 1e6, events ? double(model) / double(events) : 0.0,
        double(rss_anon_kib()) / 1024);
  }
  std::sort(walls.begin(), walls.end());
  if (!walls.empty())
    std::printf("wall: min %.1f ms, median %.1f ms\n", walls.front() * 1e3, walls[walls.size() / 2] * 1e3);
  return 0;
}
