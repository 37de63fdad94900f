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

constexpr size_t kMaxStackFrames = 64;  // frames of one stack in `args`; the rest are counted

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
  for (size_t i = 0; i < frames.size() && i < kMaxStackFrames; ++i) out.push_back(frames[i]);
  if (frames.size() > kMaxStackFrames)
    out.push_back("... " + std::to_string(frames.size() - kMaxStackFrames) + " more frames");
  return out;
}

bool is_segment_action(Action a) {
  return a == Action::SegmentAlloc || a == Action::SegmentFree || a == Action::SegmentMap || a == Action::SegmentUnmap;
}

}  // namespace

void write_perfetto_json(std::ostream& out, const PerfettoView& view) {
  const analysis::Context& ctx = *view.context;
  Writer w(out);
  out << "{\"traceEvents\":[";
  Json devices = Json::array();
  for (const auto& a : view.result->devices) {
    if (!a.timeline) continue;
    const analysis::Timeline& t = *a.timeline;
    const snapshot::Device& d = a.dumped();
    const snapshot::Trace& trace = d.trace;
    const Clock clock(trace);
    const int pid = a.device;
    w.event({{"name", "process_name"},
             {"ph", "M"},
             {"pid", pid},
             {"args", {{"name", "GPU " + std::to_string(a.device) + " memory (memsnap)"}}}});
    w.event({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", a.device}}}});
    w.event({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", "allocator"}}}});
    w.event({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", "iterations"}}}});

    // Counter tracks: one sample per kept point and series.
    for (const auto& p : t.points) {
      int64_t ts = clock(p.event_index);
      w.event({{"name", "allocated"}, {"ph", "C"}, {"ts", ts}, {"pid", pid}, {"args", {{"bytes", p.allocated}}}});
      w.event({{"name", "active"}, {"ph", "C"}, {"ts", ts}, {"pid", pid}, {"args", {{"bytes", p.active}}}});
      w.event({{"name", "reserved"}, {"ph", "C"}, {"ts", ts}, {"pid", pid}, {"args", {{"bytes", p.reserved}}}});
    }

    // Iterations: a slice from each start to the next; the last one to the end of the trace.
    const auto& starts = a.iterations.boundaries;
    for (size_t k = 0; k < starts.size(); ++k) {
      uint32_t from = starts[k];
      bool last = k + 1 == starts.size();
      uint32_t to = last ? static_cast<uint32_t>(trace.size() - 1) : starts[k + 1];
      int64_t ts = clock(from), end = clock(to);
      w.event({{"name", "iteration " + std::to_string(k + 1)},
               {"ph", "X"},
               {"ts", ts},
               {"dur", end > ts ? end - ts : 0},
               {"pid", pid},
               {"tid", 1},
               {"args", {{"first_event", from}, {"end_event", to}, {"complete", !last}}}});
    }

    // The peak and every OOM, with the figures the analysis has for them.
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

    // Segment events, in trace order, up to the bound.
    uint64_t segment_events = 0, left_out = 0;
    const auto actions = trace.actions();
    for (uint32_t i = 0; i < actions.size(); ++i) {
      if (!is_segment_action(actions[i])) continue;
      ++segment_events;
      if (segment_events > view.max_segment_events) {
        ++left_out;
        continue;
      }
      const snapshot::TraceEvent e = trace[i];
      w.event({{"name", snapshot::to_string(e.action)},
               {"ph", "i"},
               {"s", "t"},
               {"ts", clock(i)},
               {"pid", pid},
               {"tid", 0},
               {"args",
                {{"event_index", i},
                 {"address", hex(e.addr)},
                 {"bytes", e.size},
                 {"stream", hex(e.stream)},
                 {"stack", stack_json(ctx, e.stack)}}}});
    }
    devices.push_back({{"device", a.device},
                       {"clock", clock.by_index() ? "event_index" : "time_us"},
                       {"trace_entries", trace.size()},
                       {"counter_points", t.points.size()},
                       {"segment_events", segment_events},
                       {"segment_events_left_out", left_out}});
  }
  Json other = {{"generator", std::string("memsnap ") + kVersion},
                {"source", view.input ? view.input->path : std::string()},
                {"units", "counters in bytes; ts in microseconds of the snapshot's clock"},
                {"devices", std::move(devices)}};
  out << "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":"
      << other.dump(-1, ' ', false, Json::error_handler_t::replace) << "}\n";
}

}  // namespace memsnap::report
