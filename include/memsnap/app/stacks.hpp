// Which allocator state `flame`, `callgraph` and `diff --flame` describe: `--at dump|peak|oom|INDEX`.
//
// flame_state() is the one place these commands touch the trace replay; every
// other part of them sees a snapshot::Device (dumped or rebuilt) and nothing else.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/stacks.hpp"
#include "memsnap/app/load.hpp"
#include "memsnap/app/output.hpp"
#include "memsnap/report/flame.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::app {

struct FlameAt {
  enum class Kind { Dump, Event, Peak, Oom };
  Kind kind = Kind::Dump;
  uint32_t event = 0;  // Kind::Event
};
/// "dump", "peak", "oom" or a trace event index; Failure otherwise.
FlameAt parse_flame_at(const std::string& text);

struct FlameState {
  const snapshot::Device* dumped = nullptr;  // the device in the snapshot
  std::optional<snapshot::Device> rebuilt;   // the replayed state, when not the dump
  report::ProfileSource::Point point;
  /// The state to aggregate.
  const snapshot::Device& device() const { return rebuilt ? *rebuilt : *dumped; }
};

/// The state of one device at `at`: as dumped, or rebuilt by replaying its trace
/// to the event named, to the event after which allocated memory was highest
/// (the first such event), or to its last out-of-memory event. nullopt when the
/// device has no such event (no trace, or no OOM); Failure when INDEX is out of range.
std::optional<FlameState> flame_state(const snapshot::Snapshot& snap, const snapshot::Device& dumped,
                                      const FlameAt& at);

/// The states of the selected devices (every device when `device` is empty).
/// Devices without the point are skipped with a note on stderr; Failure when
/// none is left, or when the one named by --device lacks it.
std::vector<FlameState> flame_states(const snapshot::Snapshot& snap, const std::string& shown_path,
                                     std::optional<int> device, const FlameAt& at);

/// The profile of these states; several states get a `<device N>` root frame each.
analysis::StackProfile profile_of(const snapshot::Snapshot& snap, const std::vector<FlameState>& states,
                                  const analysis::StackOptions& options);

/// What `flame` and `callgraph` share: --device, --at, --state, --cpp, --max-memory, -q.
struct StackArgs {
  std::string file;
  std::optional<int> device;
  std::string at = "dump";
  analysis::StackOptions stack;
  std::string max_memory = kDefaultMaxMemory;
  std::string max_output;  // empty: the default output bound (app/output.hpp)
  bool quiet = false;      // no progress line
};
/// Loads the file and resolves the states; fills `source` for titles and JSON.
struct LoadedStates {
  snapshot::Loaded loaded;
  std::vector<FlameState> states;
  report::ProfileSource source;
};
LoadedStates load_states(const StackArgs& args);

/// `memsnap flame FILE`: folded stacks, or an SVG flame graph.
enum class FlameFormat { Folded, Svg };
struct FlameRequest {
  StackArgs stack;
  std::string output = "-";
  std::optional<FlameFormat> format;  // default: by the output's name
  int width = 1200;
  bool script = false;
};
/// With `into` and output "-", the folded stacks or SVG go `into` instead of stdout.
void run_flame(const FlameRequest& request, std::ostream* into = nullptr);

/// `memsnap callgraph FILE`: the call graph of live memory and its dominator tree.
struct CallgraphRequest {
  StackArgs stack;
  std::string min_share = "1%";
  bool dispatch = false;
  bool dot = false;
  Format format = Format::Text;
};
/// `width`: the terminal's, for the text output.
void run_callgraph(const CallgraphRequest& request, int width);

/// `memsnap diff --flame BEFORE AFTER [-o OUT]`: the differential profile of two dumps,
/// folded (`stack BEFORE AFTER`) into `output` (opened by the caller before loading, so that
/// an input is never its target), or an SVG when its name ends in .svg; committed here.
void write_diff_flame(const snapshot::Loaded& before, const snapshot::Loaded& after, io::OutputFile& output,
                      bool quiet);

}  // namespace memsnap::app
