// `memsnap merge A.json B.json ...`: one fleet summary from analyze JSON outputs.
#pragma once

#include <string>
#include <vector>

#include "memsnap/app/load.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::app {

struct MergeRequest {
  std::vector<std::string> files;
  CommonOptions common;
};
/// The merged fleet as text or JSON on stdout; a Failure (exit 2) when it is incomplete.
void run_merge(const MergeRequest& request, const report::TextStyle& style);

}  // namespace memsnap::app
