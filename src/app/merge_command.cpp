// `memsnap merge A.json B.json ... | -`: the fleet summary of analyze JSON outputs (one file's,
// many files', or earlier merges'), as text or as a JSON document merge itself reads back.
#include "memsnap/app/merge_command.hpp"

#include <algorithm>
#include <iostream>
#include <map>

#include "memsnap/app/output.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

void run_merge(const MergeRequest& request, const report::TextStyle& style) {
  if (std::count(request.files.begin(), request.files.end(), std::string("-")) > 1)
    throw Failure("- (stdin) can be given once", kBadInput);
  io::OutputFile output = open_output("-", request.files);  // never `merge X >> X`
  auto limit = parse_size(request.common.max_memory);
  if (!limit || *limit == 0) throw Failure("--max-memory: not a size: '" + request.common.max_memory + "'", kBadInput);
  report::Fleet fleet;
  report::FleetReadOptions read;
  read.keep_files = request.common.format == Format::Json;
  read.max_bytes = *limit;
  for (const auto& path : request.files) {
    std::string shown = terminal_safe(shown_path(path));
    read.shard = shown_path(path);
    try {
      report::add_fleet_input(fleet, read_json_input(path, *limit), read);
    } catch (const report::FleetFormatError& e) {
      throw Failure(shown + ": " + terminal_safe(e.what()), kBadInput);
    }
  }
  report::finish_fleet(fleet);
  if (request.common.format == Format::Json)
    report::write_fleet_json(std::cout, fleet);
  else
    report::write_fleet_text(std::cout, fleet, style);
  std::cout.flush();
  if (report::fleet_incomplete(fleet))
    throw Failure("the fleet is incomplete: " + std::to_string(fleet.errors.size()) + " unreadable, " +
                      std::to_string(fleet.missing.size()) + " missing, " +
                      std::to_string(analysis::doubled_files(fleet.rows).size()) + " counted twice",
                  kBadInput);
}

}  // namespace memsnap::app
