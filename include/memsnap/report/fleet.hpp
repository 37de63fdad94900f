// Many snapshots at once: the fleet summary of `memsnap analyze A B ...` and `memsnap merge`,
// as text and JSON, and merge's reader of analyze JSON.
//
// The rules (rows, median, outliers, worst file) are analysis/fleet.hpp's. A file's row
// comes from its analysis in `analyze`, and from its analyze JSON in `merge` (the reader
// below, tested to give the same row on every fixture).
//
// The reader takes one analyze document, a fleet document (analyze of many files, merge
// --format json) or JSON Lines (analyze/check --format jsonl: one document per line). It
// never builds the whole document: it keeps the few figures a row needs and, when asked,
// each file's document as text, in one linear pass without recursion; nesting deeper than
// kMaxJsonDepth is refused.
#pragma once

#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/fleet.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report {

/// One file's analyze JSON document as text: write_analyze_json's layout with a "file" key.
struct FleetFile {
  std::string name;
  std::string json;  // no trailing newline
};

struct Fleet {
  std::vector<FleetFile> files;  // empty when the files are not kept (text output)
  std::vector<analysis::FleetRow> rows;
  std::vector<analysis::FleetError> errors;
  /// Files a JSON Lines shard names in its header but holds no line for (a rank killed
  /// mid-run), each with the shard it was missing from.
  std::vector<analysis::FleetError> missing;
};

/// A malformed document given to merge: what was wrong, without the file name.
class FleetFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The analyze document of one file, as Fleet::files holds it.
FleetFile fleet_file(const Source& src, const analysis::AnalyzeResult& result, const std::string& file);

struct FleetReadOptions {
  bool keep_files = true;           // keep each file's document (for --format json)
  uint64_t max_bytes = UINT64_MAX;  // a bound on the kept documents' text, summed over inputs
  std::string shard;                // the input's name, for Fleet::missing
};
/// Adds one merge input (see above). Throws FleetFormatError; a JSON Lines input whose last
/// line is cut short adds what it holds and records the files its header names as missing.
void add_fleet_input(Fleet& fleet, std::string_view text, const FleetReadOptions& options);
/// The row merge reads from one analyze JSON document. Throws FleetFormatError.
analysis::FleetRow fleet_row_from_json(std::string_view analyze_json, const std::string& file);

/// Sorts rows, errors and missing files by file name, marks the outliers; `sort_files`
/// sorts the files too (false keeps the order they were added in: argument order).
void finish_fleet(Fleet& fleet, bool sort_files = true);
/// {schema_version, tool, files, fleet}: a document add_fleet_input reads back.
void write_fleet_json(std::ostream& out, const Fleet& fleet);
/// The start of that document, then each file as it comes, then the end: the same bytes
/// as write_fleet_json with the files in the order written, holding one file at a time.
void write_fleet_json_begin(std::ostream& out);
void write_fleet_json_file(std::ostream& out, const FleetFile& file, bool first);
void write_fleet_json_end(std::ostream& out, const Fleet& fleet, bool any_file);
/// The summary table, worst first (OOM, then peak), outliers marked, within style.width columns;
/// then the files that could not be read, and those missing or counted twice.
void write_fleet_text(std::ostream& out, const Fleet& fleet, const TextStyle& style);
/// Whether the fleet is incomplete: an unreadable file, a missing or a doubled one (exit 2).
bool fleet_incomplete(const Fleet& fleet);

/// JSON Lines (analyze --format jsonl): the header line naming the inputs, one line per
/// file's document or error, and the trailer with the fleet summary.
void write_jsonl_header(std::ostream& out, const char* command, const std::vector<std::string>& inputs);
void write_jsonl_file(std::ostream& out, const Source& src, const analysis::AnalyzeResult& result,
                      const std::string& file);
void write_jsonl_error(std::ostream& out, const std::string& file, const std::string& message);
void write_jsonl_fleet(std::ostream& out, const Fleet& fleet);

}  // namespace memsnap::report
