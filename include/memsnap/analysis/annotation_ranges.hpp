// The record_function ranges of a snapshot's `external_annotations` (START / END pairs by
// name) on one device, matched to its trace events by time, as phases.hpp matches them: a
// START at an event's time covers the event, an END at its time closes before it.
//
// `analyze --phases annotations` reads the user's ranges as the phases (Mosaic's annotation
// stages): the phase of a state is the innermost range open at its event. torch.compile's own
// ranges (named "... (dynamo_timed)": compile_inner, pad_mm_benchmark,
// CachingAutotuner.benchmark_all_configs ...) are its compilation and kernel autotuning: they
// are named as such, never read as the program's forward or as a loop of its own.
//
// Cost: the edges sorted once (O(a log a) for a annotations of the device); each query
// replays them up to the event's time (O(a)): analyze asks for a few states only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

/// torch.compile's own ranges: a "(dynamo_timed)" name, compile_inner, pad_mm_benchmark,
/// benchmark_all_configs.
bool is_compile_range(std::string_view name);
/// A range's name as a phase: "torch.compile autotuning" for torch.compile's, else the name.
std::string range_phase(std::string_view name);
/// A range's name for text: without torch.compile's " (dynamo_timed)", capped at 120 bytes
/// (the caller escapes it).
std::string range_label(std::string_view name);

class AnnotationRanges {
 public:
  AnnotationRanges(const snapshot::Snapshot& snap, const snapshot::Device& d);
  bool empty() const { return edges_.empty(); }
  /// The innermost range open at event i of the device's trace, or nullopt (outside every
  /// range, or an event without a time).
  std::optional<std::string_view> at(uint32_t event) const { return innermost(event, false); }
  /// The innermost torch.compile range open at event i, or nullopt.
  std::optional<std::string_view> compile_at(uint32_t event) const { return innermost(event, true); }

 private:
  std::optional<std::string_view> innermost(uint32_t event, bool compile_only) const;
  struct Edge {
    int64_t time = 0;
    snapshot::StrId name;
    bool start = false;
  };
  const snapshot::Snapshot& snap_;
  const snapshot::Device& device_;
  std::vector<Edge> edges_;  // by time, stable
};

}  // namespace memsnap::analysis
