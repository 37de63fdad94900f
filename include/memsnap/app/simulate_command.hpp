// `memsnap simulate FILE`: the recorded requests under other allocator settings or device sizes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

struct SimulateRequest {
  std::string file;
  CommonOptions common;
  std::optional<int> device;
  std::vector<std::string> sets;
  std::string capacity;
  bool min_capacity = false;
  std::vector<std::string> scales;  // --scale ROLE:F, repeatable
  std::vector<std::string> drops;   // --drop ROLE, repeatable
  std::vector<std::string> roles;   // --role NAME=GLOB, repeatable
};
/// The simulated runs of one device (--device, else the first OOM, else the largest) on stdout
/// or `into`.
void run_simulate(const SimulateRequest& request, const report::TextStyle& style, std::ostream* into = nullptr);

}  // namespace memsnap::app
