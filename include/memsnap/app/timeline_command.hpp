// `memsnap timeline FILE -o OUT`: allocated, active and reserved bytes over time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "memsnap/app/load.hpp"

namespace memsnap::app {

enum class PlotFormat { Svg, Csv };

struct TimelineRequest {
  std::string file;
  std::string output;
  std::optional<PlotFormat> format;
  CommonOptions common;
  std::optional<int> device;
  bool by_site = false;
  size_t top_sites = 8;
  bool by_role = false;
  std::vector<std::string> roles;  // --role NAME=GLOB, repeatable
  size_t points = 2000;
  int width = 1200;
  int height = 420;
  std::string iteration_marker;
};
/// The timeline of every device with a trace, as SVG or CSV, written to `output`.
void run_timeline(const TimelineRequest& request);

}  // namespace memsnap::app
