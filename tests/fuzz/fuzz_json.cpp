// Fuzz target for memsnap's JSON readers: any bytes as a merge input (one analyze document,
// a fleet document or JSON Lines) and as a `check --config` document. What a reader takes,
// memsnap writes out again, and that output must be well-formed and read back the same:
// the fleet document merge writes, its summary text, and check's JSON with the limits read.
// Built as a libFuzzer binary (memsnap_fuzz_json) with -DMEMSNAP_FUZZ=ON; fuzz_replay runs
// the same entry point over every corpus file.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "memsnap/analysis/check.hpp"
#include "memsnap/report/check.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/util/terminal.hpp"
#include "wellformed.hpp"

namespace {

using memsnap::fuzz::check_json;
using memsnap::fuzz::check_text;

[[noreturn]] void writer_bug(const char* what, const std::string& why) {
  std::fprintf(stderr, "%s: %s\n", what, why.c_str());
  std::abort();
}

// An error as the CLI prints it (main.cpp: terminal_safe): one line of clean text.
void check_error(const char* what, const char* message) {
  std::string shown = memsnap::terminal_safe(message);
  check_text(what, shown);
  if (shown.empty() || shown.find('\n') != std::string::npos) writer_bug(what, "not one line: " + shown);
}

// The fleet as merge writes it (JSON and text); the JSON must read back to the same rows.
void check_fleet(memsnap::report::Fleet& fleet) {
  using namespace memsnap;
  report::finish_fleet(fleet);
  std::ostringstream json, text;
  report::write_fleet_json(json, fleet);
  check_json("merge JSON", json.str());
  report::write_fleet_text(text, fleet, report::TextStyle{});
  check_text("merge text", text.str());
  report::Fleet again;
  try {
    report::add_fleet_input(again, json.str(), report::FleetReadOptions{});
  } catch (const report::FleetFormatError& e) {
    writer_bug("merge refuses the document merge wrote", e.what());
  }
  report::finish_fleet(again);
  if (again.rows.size() != fleet.rows.size() || again.files.size() != fleet.files.size())
    writer_bug("merge's document reads back other rows",
               std::to_string(again.rows.size()) + " rows, not " + std::to_string(fleet.rows.size()));
  for (size_t i = 0; i < fleet.rows.size(); ++i)
    if (!(again.rows[i] == fleet.rows[i])) writer_bug("merge's document reads back another row", again.rows[i].file);
}

void fuzz_merge(std::string_view text) {
  using namespace memsnap;
  for (bool keep : {true, false}) {
    report::Fleet fleet;
    report::FleetReadOptions options;
    options.keep_files = keep;
    options.max_bytes = uint64_t{64} << 20;
    options.shard = "shard\xf8\x88\x80<&>";
    try {
      report::add_fleet_input(fleet, text, options);
    } catch (const report::FleetFormatError& e) {
      check_error("merge's error", e.what());
      continue;
    }
    if (keep) check_fleet(fleet);
  }
  try {
    (void)report::fleet_row_from_json(text, "fuzz");
  } catch (const report::FleetFormatError& e) {
    check_error("merge's error", e.what());
  }
}

// check --config: limits read are written back in check's JSON; an error is one clean line.
void fuzz_check_config(std::string_view text) {
  using namespace memsnap;
  analysis::Limits limits;
  try {
    report::read_check_config(text, limits);
  } catch (const report::CheckConfigError& e) {
    check_error("check --config's error", e.what());
    return;
  }
  if (limits.max_fragmentation && !(*limits.max_fragmentation >= 0 && *limits.max_fragmentation <= 1))
    writer_bug("check --config", "took a fragmentation outside 0 to 1");
  std::ostringstream json;
  report::write_check_json(json, {}, limits);
  check_json("check JSON", json.str());
}

}  // namespace

extern "C" int MemsnapFuzzJson(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fuzz_merge(text);
  fuzz_check_config(text);
  return 0;
}

#ifdef MEMSNAP_FUZZ_JSON_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return MemsnapFuzzJson(data, size);
}
#endif
