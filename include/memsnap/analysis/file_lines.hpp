// One source file's memory by line (`analyze --file PATH`, `diff --file PATH`): what each line
// holds live at the peak and at the dump, and what it allocated over the trace.
//
// Which frames are the file's: a frame's file name matches PATH when PATH's path components are
// its last components, so `model.py` matches /work/src/model.py and model.py, `src/model.py`
// matches /work/src/model.py but not /work/othersrc/model.py, and an absolute PATH matches
// only itself (`./` and repeated slashes in PATH are dropped). Several files can match (two
// model.py in different directories): each is named, and their lines are kept apart.
//
// A line's bytes are those of the blocks whose stack passes through it, each block counted once
// per line however often recursion repeats the line, with stacks filtered as the flame graph
// filters them (StackProfileBuilder: noise frames go, C++ frames go from stacks with Python
// ones). So for every line, at the dump and at the peak, the bytes are the sum of the folded
// lines of `memsnap flame --at dump|peak` that hold a frame `function (FILE:LINE)` of it.
// Allocated over the trace: the trace's alloc events, each its size as the trace records it,
// by the same rule. The totals are the bytes through any line of the file, each block once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/stacks.hpp"
#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

/// Whether frame file name `file` ends with the path components of `query` (see above).
bool file_matches(std::string_view file, std::string_view query);

/// The snapshot's frame files that match `query`, sorted; when none does, `closest` holds up to
/// five frame files whose base names are nearest the query's (edit distance), nearest first.
struct FileMatch {
  std::vector<std::string> files;
  std::vector<std::string> closest;
};
FileMatch match_file(const snapshot::Snapshot& snap, std::string_view query);

/// What one line (or, as a total, the whole file) holds and allocated.
struct LineBytes {
  std::string file;  // the frame's file name as recorded
  int64_t line = 0;
  std::string function;  // the first frame seen on the line
  uint64_t at_peak = 0, at_dump = 0, allocated = 0;
  uint64_t blocks_at_peak = 0, blocks_at_dump = 0, allocations = 0;
};

/// The states one device's view reads: the dump, the state at its allocated peak (nullptr
/// without a trace) and the trace whose allocations count (nullptr: none).
struct FileLinesInput {
  const snapshot::Device* dump = nullptr;
  const snapshot::Device* peak = nullptr;
  std::optional<int64_t> peak_event;  // the peak's event index (-1: the window's start)
  const snapshot::Trace* trace = nullptr;
};

struct DeviceFileLines {
  int device = 0;
  std::optional<int64_t> peak_event;  // nullopt: no peak (no trace)
  bool has_trace = false;
  uint64_t trace_allocations = 0;  // alloc events in the trace
  std::vector<LineBytes> lines;    // by file, then line; lines with no bytes anywhere left out
  LineBytes total;                 // through any line of the files, each block once
};

/// The whole view of one snapshot: the query, the files it matched, each device's lines.
struct FileLines {
  std::string query;
  std::vector<std::string> files;
  std::vector<DeviceFileLines> devices;
};

/// The lines of `files` (match_file's) on one device. `options` filters stacks (cpp, code rules).
DeviceFileLines file_lines(const snapshot::Snapshot& snap, const FileLinesInput& input,
                           const std::vector<std::string>& files, const StackOptions& options);

}  // namespace memsnap::analysis
