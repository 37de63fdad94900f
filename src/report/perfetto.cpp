// Chrome trace-event JSON of the timeline (the layout is in the header).
#include "memsnap/report/perfetto.hpp"

#include <algorithm>

#include "json_util.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"

namespace memsnap::report {

namespace {

using detail::Json;
using snapshot::Action;

constexpr size_t kMaxArgsFrames = 64;  // frames of one stack in `args`; the rest are counted

// The clock of one device: the event's own time, the last one before it, or the index.
class Clock {
 public:
  explicit Clock(const snapshot::Trace& trace) : trace_(trace) {
    size_t timed = 0;
    for (const auto& e : trace) timed += e.has_time();
    by_index_ = timed == 0;
    if (timed == 0 || timed == trace.size()) return;
    carried_.resize(trace.size());
    int64_t last = 0;
    bool seen = false;
    for (size_t i = 0; i < trace.size(); ++i) {
      int64_t t = trace[i].time_us;
      if (trace[i].has_time()) {
        if (!seen)  // events before the first timed one take its time
          for (size_t k = 0; k < i; ++k) carried_[k] = t;
        last = t;
        seen = true;
      }
      carried_[i] = last;
    }
  }
  bool by_index() const { return by_index_; }
  int64_t operator()(uint32_t i) const {
    if (by_index_) return i;
    if (!carried_.empty()) return carried_[i];
    return trace_[i].time_us;
  }

 private:
  const snapshot::Trace& trace_;
  bool by_index_ = false;
  std::vector<int64_t> carried_;  // only when some events lack a time
};

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  void event(const Json& e) {
    out_ << (first_ ? "\n" : ",\n") << e.dump(-1, ' ', false, Json::error_handler_t::replace);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

Json stack_json(const analysis::Context& ctx, snapshot::StackId id) {
  std::vector<std::string> frames = ctx.sites.stack(id);
  Json out = Json::array();
  for (size_t i = 0; i < frames.size() && i < kMaxArgsFrames; ++i) out.push_back(frames[i]);
  if (frames.size() > kMaxArgsFrames)
    out.push_back("... " + std::to_string(frames.size() - kMaxArgsFrames) + " more frames");
  return out;
}

bool is_segment_action(Action a) {
  return a == Action::SegmentAlloc || a == Action::SegmentFree || a == Action::SegmentMap || a == Action::SegmentUnmap;
}

// Names the device's process and its two threads (the allocator's instants, the iterations).
void write_metadata(Writer& w, int pid) {
  w.event({{"name", "process_name"},
           {"ph", "M"},
           {"pid", pid},
           {"args", {{"name", "GPU " + std::to_string(pid) + " memory (memsnap)"}}}});
  w.event({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  w.event({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "allocator"}}}});
  w.event({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "iterations"}}}});
}

// Counter tracks (one sample per kept point and series), then the iterations: a slice from
// each start to the next, the last one to the end of the trace.
void write_counters_and_iterations(Writer& w, const analysis::DeviceAnalysis& a, const Clock& clock) {
  const int pid = a.device;
  for (const auto& p : a.timeline->points) {
    int64_t ts = clock(p.event_index);
    w.event({{"name", "allocated"}, {"ph", "C"}, {"ts", ts}, {"pid", pid}, {"args", {{"bytes", p.allocated}}}});
    w.event({{"name", "active"}, {"ph", "C"}, {"ts", ts}, {"pid", pid}, {"args", {{"bytes", p.active}}}});
    w.event({{"name", "reserved"}, {"ph", "C"}, {"ts", ts}, {"pid", pid}, {"args", {{"bytes", p.reserved}}}});
  }
  const auto& starts = a.iterations.boundaries;
  const size_t events = a.dumped().trace.size();
  for (size_t k = 0; k < starts.size(); ++k) {
    uint32_t from = starts[k];
    bool last = k + 1 == starts.size();
    uint32_t to = last ? static_cast<uint32_t>(events - 1) : starts[k + 1];
    int64_t ts = clock(from), end = clock(to);
    w.event({{"name", "iteration " + std::to_string(k + 1)},
             {"ph", "X"},
             {"ts", ts},
             {"dur", end > ts ? end - ts : 0},
             {"pid", pid},
             {"tid", 1},
             {"args", {{"first_event", from}, {"end_event", to}, {"complete", !last}}}});
  }
}

// The peak and every OOM, with the figures the analysis has for them.
void write_peak_and_ooms(Writer& w, const analysis::Context& ctx, const analysis::DeviceAnalysis& a,
                         const Clock& clock) {
  const analysis::Timeline& t = *a.timeline;
  const snapshot::Trace& trace = a.dumped().trace;
  const int pid = a.device;
  if (t.peak) {
    const auto& p = *t.peak;
    w.event({{"name", "peak allocated"},
             {"ph", "i"},
             {"s", "t"},
             {"ts", clock(p.event_index)},
             {"pid", pid},
             {"tid", 0},
             {"args",
              {{"event_index", p.event_index},
               {"allocated_bytes", p.allocated_bytes},
               {"active_bytes", p.active_bytes},
               {"reserved_bytes", p.reserved_bytes},
               {"stack", stack_json(ctx, trace.stack_at(p.event_index))}}}});
  }
  for (const auto& o : t.ooms) {
    snapshot::StackId stack = trace.stack_at(o.event_index);
    w.event({{"name", "out of memory"},
             {"ph", "i"},
             {"s", "p"},
             {"ts", clock(o.event_index)},
             {"pid", pid},
             {"tid", 0},
             {"args",
              {{"event_index", o.event_index},
               {"requested_bytes", o.requested_bytes},
               {"device_free_bytes", o.device_free_bytes},
               {"allocated_bytes", o.allocated_bytes},
               {"reserved_bytes", o.reserved_bytes},
               {"stream", hex(trace[o.event_index].stream)},
               {"site", ctx.sites.site(stack)},
               {"stack", stack_json(ctx, stack)}}}});
  }
}

struct SegmentEventCount {
  uint64_t seen = 0, left_out = 0;
};

// Segment events, in trace order, up to the bound.
SegmentEventCount write_segment_events(Writer& w, const analysis::Context& ctx, const analysis::DeviceAnalysis& a,
                                       const Clock& clock, uint64_t max_events) {
  const snapshot::Trace& trace = a.dumped().trace;
  SegmentEventCount n;
  const auto actions = trace.actions();
  for (uint32_t i = 0; i < actions.size(); ++i) {
    if (!is_segment_action(actions[i])) continue;
    if (++n.seen > max_events) {
      ++n.left_out;
      continue;
    }
    const snapshot::TraceEvent e = trace[i];
    w.event({{"name", snapshot::to_string(e.action)},
             {"ph", "i"},
             {"s", "t"},
             {"ts", clock(i)},
             {"pid", a.device},
             {"tid", 0},
             {"args",
              {{"event_index", i},
               {"address", hex(e.addr)},
               {"bytes", e.size},
               {"stream", hex(e.stream)},
               {"stack", stack_json(ctx, e.stack)}}}});
  }
  return n;
}

}  // namespace

void write_perfetto_json(std::ostream& out, const PerfettoView& view) {
  const analysis::Context& ctx = *view.context;
  Writer w(out);
  out << "{\"traceEvents\":[";
  Json devices = Json::array();
  for (const auto& a : view.result->devices) {
    if (!a.timeline) continue;
    const snapshot::Trace& trace = a.dumped().trace;
    const Clock clock(trace);
    write_metadata(w, a.device);
    write_counters_and_iterations(w, a, clock);
    write_peak_and_ooms(w, ctx, a, clock);
    SegmentEventCount segments = write_segment_events(w, ctx, a, clock, view.max_segment_events);
    devices.push_back({{"device", a.device},
                       {"clock", clock.by_index() ? "event_index" : "time_us"},
                       {"trace_entries", trace.size()},
                       {"counter_points", a.timeline->points.size()},
                       {"segment_events", segments.seen},
                       {"segment_events_left_out", segments.left_out}});
  }
  Json other = {{"generator", std::string("memsnap ") + kVersion},
                {"source", view.input ? view.input->path : std::string()},
                {"units", "counters in bytes; ts in microseconds of the snapshot's clock"},
                {"devices", std::move(devices)}};
  out << "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":"
      << other.dump(-1, ' ', false, Json::error_handler_t::replace) << "}\n";
}

}  // namespace memsnap::report
