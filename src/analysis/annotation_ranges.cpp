// Record_function ranges matched to trace events by time (annotation_ranges.hpp).
#include "memsnap/analysis/annotation_ranges.hpp"

#include <algorithm>

namespace memsnap::analysis {

bool is_compile_range(std::string_view name) {
  name = name.substr(0, 4096);
  for (std::string_view key : {"(dynamo_timed)", "compile_inner", "pad_mm_benchmark", "benchmark_all_configs"})
    if (name.find(key) != std::string_view::npos) return true;
  return false;
}

std::string range_phase(std::string_view name) {
  return is_compile_range(name) ? std::string("torch.compile autotuning") : std::string(name.substr(0, 200));
}

std::string range_label(std::string_view name) {
  constexpr std::string_view kTimed = " (dynamo_timed)";
  if (name.ends_with(kTimed)) name.remove_suffix(kTimed.size());
  return std::string(name.substr(0, 120));
}

AnnotationRanges::AnnotationRanges(const snapshot::Snapshot& snap, const snapshot::Device& d)
    : snap_(snap), device_(d) {
  if (d.trace.empty()) return;
  // A file that names devices in its annotations: this device's; else every annotation.
  bool any_for_device = false;
  for (const auto& a : snap.annotations) any_for_device = any_for_device || a.device == d.index;
  for (const auto& a : snap.annotations) {
    if ((any_for_device && a.device != d.index) || a.time_us == snapshot::TraceEvent::kNoTime) continue;
    const std::string_view stage = snap.strings[a.stage];
    if (stage == "START" || stage == "END") edges_.push_back({a.time_us, a.name, stage == "START"});
  }
  std::stable_sort(edges_.begin(), edges_.end(), [](const Edge& x, const Edge& y) { return x.time < y.time; });
}

std::optional<std::string_view> AnnotationRanges::innermost(uint32_t event, bool compile_only) const {
  if (edges_.empty() || event >= device_.trace.size()) return std::nullopt;
  const int64_t t = device_.trace[event].time_us;
  if (t == snapshot::TraceEvent::kNoTime) return std::nullopt;
  std::vector<snapshot::StrId> open;
  for (const Edge& e : edges_) {
    if (e.time > t) break;
    if (e.start) {
      open.push_back(e.name);
      continue;
    }
    // An END closes the last open range of its name (an END without a START closes nothing).
    for (size_t k = open.size(); k-- > 0;)
      if (open[k] == e.name) {
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(k));
        break;
      }
  }
  for (size_t k = open.size(); k-- > 0;) {
    const std::string_view name = snap_.strings[open[k]];
    if (!compile_only || is_compile_range(name)) return name;
  }
  return std::nullopt;
}

}  // namespace memsnap::analysis
