// `memsnap events FILE`: trace events in order around an OOM, the peak or an index.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

struct EventsRequest {
  std::string file;
  CommonOptions common;
  std::optional<int> device;
  std::string around;
  size_t count = 40;
  bool stacks = false;
};
/// The events of each device (or --device's), as text or JSON, on stdout or `into`.
void run_events(const EventsRequest& request, const report::TextStyle& style, std::ostream* into = nullptr);

}  // namespace memsnap::app
