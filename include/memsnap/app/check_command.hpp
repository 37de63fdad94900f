// `memsnap check FILE...`: limits for CI, PASS/FAIL/SKIP per check, file and device.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

struct CheckRequest {
  std::vector<std::string> files;
  CommonOptions common;
  unsigned jobs = 0;                         // 0: the hardware threads
  std::string junit;                         // a JUnit XML file to write too, or empty
  std::string config;                        // a JSON file of limits, or empty
  std::map<std::string, std::string> sizes;  // option name -> text, "" when not given
  std::string max_fragmentation;
  bool no_leaks = false, no_oom = false;  // given on the command line
};
/// Every file checked, the lines written in argument order on stdout or `into`; a
/// Failure with exit 2 when a file could not be read, else with exit 1 when a check failed.
void run_check(const CheckRequest& request, const report::TextStyle& style, std::ostream* into = nullptr);

}  // namespace memsnap::app
