// `memsnap segments FILE...`: the segment map, each segment's blocks to scale.
#pragma once

#include <string>
#include <vector>

#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

struct SegmentsRequest {
  std::vector<std::string> files;
  long long top = 20;  // segments per device; 0: all
  unsigned jobs = 0;   // 0: the hardware threads
  CommonOptions common;
  StateOptions state;
};
/// Each file's segment map, in argument order (several files on -j workers), on stdout or `into`.
void run_segments(const SegmentsRequest& request, const report::TextStyle& style, std::ostream* into = nullptr);

}  // namespace memsnap::app
