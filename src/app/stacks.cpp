// The device states `flame`, `callgraph` and `diff --flame` describe, and what those commands share.
#include "memsnap/app/stacks.hpp"

#include <iostream>

#include "memsnap/analysis/events.hpp"
#include "memsnap/analysis/replay.hpp"

namespace memsnap::app {

FlameAt parse_flame_at(const std::string& text) {
  if (text == "dump") return {};
  if (text == "peak") return {FlameAt::Kind::Peak, 0};
  if (text == "oom") return {FlameAt::Kind::Oom, 0};
  bool digits = !text.empty() && text.size() <= 10 && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoull(text) > 0xFFFFFFFEull)
    throw Failure("--at: expected dump, peak, oom or a trace event index, got '" + text + "'", kBadInput);
  return {FlameAt::Kind::Event, static_cast<uint32_t>(std::stoull(text))};
}

std::optional<FlameState> flame_state(const snapshot::Snapshot& snap, const snapshot::Device& dumped,
                                      const FlameAt& at) {
  FlameState out;
  out.dumped = &dumped;
  out.point.device = dumped.index;
  if (at.kind == FlameAt::Kind::Dump) return out;
  const auto& trace = dumped.trace;
  std::optional<uint32_t> index;
  switch (at.kind) {
    case FlameAt::Kind::Dump: break;
    case FlameAt::Kind::Event:
      if (std::string why = analysis::event_index_problem(dumped, at.event); !why.empty())
        throw Failure("--at " + std::to_string(at.event) + ": " + why, kBadInput);
      index = at.event;
      out.point.what = "event";
      break;
    case FlameAt::Kind::Peak: out.point.what = "peak"; break;
    case FlameAt::Kind::Oom:
      for (uint32_t i = 0; i < trace.size(); ++i)
        if (trace[i].action == snapshot::Action::Oom) index = i;
      out.point.what = "oom";
      break;
  }
  if (trace.empty() || (at.kind != FlameAt::Kind::Peak && !index)) return std::nullopt;
  analysis::Context ctx(snap, code_rules());
  analysis::Replay replay(ctx, dumped);
  // The first event after which allocated memory was highest: analyze's peak, from the same sweep.
  if (at.kind == FlameAt::Kind::Peak && replay.peak_allocated()) index = replay.peak_allocated()->event;
  if (!index) return std::nullopt;
  out.rebuilt = replay.state_after(*index).device;
  out.point.event_index = *index;
  if (trace[*index].has_time()) out.point.time_us = trace[*index].time_us;
  return out;
}

std::vector<FlameState> flame_states(const snapshot::Snapshot& snap, const std::string& shown,
                                     std::optional<int> device, const FlameAt& at) {
  if (device && !snap.device(*device))
    throw Failure("--device " + std::to_string(*device) + ": the snapshot has no such device", kBadInput);
  const bool peak = at.kind == FlameAt::Kind::Peak;
  auto missing = [&](const std::string& who) {
    return peak ? who + " no trace entries (recorded without history): no peak to rebuild"
                : who + " no out-of-memory event in its trace";
  };
  std::vector<FlameState> states;
  std::vector<int> skipped;
  for (const auto& d : snap.devices) {
    if (device && d.index != *device) continue;
    if (auto s = flame_state(snap, d, at))
      states.push_back(std::move(*s));
    else if (device || snap.devices.size() == 1)
      throw Failure(shown + ": " + missing("device " + std::to_string(d.index) + " has"), kBadInput);
    else
      skipped.push_back(d.index);
  }
  if (states.empty() && !skipped.empty())
    throw Failure(shown + ": " +
                      (peak ? std::string("no device has trace entries (recorded without history): no "
                                          "peak to rebuild")
                            : std::string("no device has an out-of-memory event in its trace")),
                  kBadInput);
  if (states.empty()) throw Failure(shown + ": the snapshot has no devices", kBadInput);
  for (int d : skipped)
    std::cerr << "memsnap: note: " << shown << ": " << missing("device " + std::to_string(d) + " has")
              << ": left out\n";
  return states;
}

analysis::StackProfile profile_of(const snapshot::Snapshot& snap, const std::vector<FlameState>& states,
                                  const analysis::StackOptions& options) {
  analysis::StackOptions o = options;
  o.code = code_rules();
  analysis::StackProfileBuilder b(snap, o);
  for (const auto& s : states) b.add(s.device(), states.size() > 1);
  return b.take();
}

LoadedStates load_states(const StackArgs& a) {
  FlameAt at = parse_flame_at(a.at);
  CommonOptions common;
  common.max_memory = a.max_memory;
  common.quiet = a.quiet;
  LoadedStates out{load(a.file, common), {}, {}};
  print_warnings(out.loaded);
  out.source.path = a.file == "-" ? "<stdin>" : a.file;
  out.states = flame_states(out.loaded.snapshot, out.source.path, a.device, at);
  for (const auto& s : out.states) out.source.points.push_back(s.point);
  out.source.state = a.stack.state;
  return out;
}

}  // namespace memsnap::app
