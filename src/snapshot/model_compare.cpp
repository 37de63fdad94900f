// Equality of models and the printer that names where two models first differ (the
// differential test of the two parsers compares whole Snapshots with these).
#include <algorithm>
#include <sstream>
#include <string>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::snapshot {

bool StackTable::operator==(const StackTable& o) const {
  if (size() != o.size()) return false;
  for (uint32_t i = 0; i < size(); ++i) {
    auto a = (*this)[StackId{i}], b = o[StackId{i}];
    if (!std::equal(a.begin(), a.end(), b.begin(), b.end())) return false;
  }
  return true;
}

bool Trace::operator==(const Trace& o) const {
  if (size() != o.size()) return false;
  for (size_t i = 0; i < size(); ++i)
    if (!((*this)[i] == o[i])) return false;
  return true;
}

namespace {

// Values as text for the message.
std::string show(uint64_t v) {
  return std::to_string(v);
}
std::string show(int64_t v) {
  return std::to_string(v);
}
std::string show(int v) {
  return std::to_string(v);
}
std::string show(uint32_t v) {
  return std::to_string(v);
}
std::string show(bool v) {
  return v ? "true" : "false";
}
std::string show(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}
std::string show(const std::string& v) {
  return "'" + v.substr(0, 60) + "'";
}
template <class T>
std::string show(Id<T> v) {
  return "#" + std::to_string(v.v);
}
std::string show(BlockState v) {
  return to_string(v);
}
std::string show(Pool v) {
  return to_string(v);
}
std::string show(Action v) {
  return to_string(v);
}
std::string show(Form v) {
  return to_string(v);
}
template <class T>
std::string show(const std::optional<T>& v) {
  return v ? show(*v) : "none";
}
template <class A, class B>
std::string show(const std::pair<A, B>& v) {
  return "(" + show(v.first) + ", " + show(v.second) + ")";
}
template <class T>
std::string show(const std::vector<T>& v) {
  return std::to_string(v.size()) + " items";
}

// Collects the first difference: each field is named once, in the struct's order.
class Diff {
 public:
  template <class T>
  Diff& field(const std::string& path, const T& a, const T& b) {
    if (found_.empty() && !(a == b)) found_ = path + ": " + show(a) + " vs " + show(b);
    return *this;
  }
  // After the named fields: a struct that still differs does so in a field not named here.
  template <class T>
  void rest(const std::string& path, const T& a, const T& b) {
    if (found_.empty() && !(a == b)) found_ = path + ": differs in a field the printer does not name";
  }
  bool done() const { return !found_.empty(); }
  std::string result() const { return found_; }

 private:
  std::string found_;
};

void segment(Diff& d, const std::string& p, const Segment& a, const Segment& b) {
  d.field(p + ".address", a.address, b.address)
      .field(p + ".total_size", a.total_size, b.total_size)
      .field(p + ".stream", a.stream, b.stream)
      .field(p + ".pool", a.pool, b.pool)
      .field(p + ".pool_id[0]", a.pool_id[0], b.pool_id[0])
      .field(p + ".pool_id[1]", a.pool_id[1], b.pool_id[1])
      .field(p + ".expandable", a.expandable, b.expandable)
      .field(p + ".stack", a.stack, b.stack)
      .field(p + ".file_index", a.file_index, b.file_index)
      .field(p + ".first_block", a.first_block, b.first_block)
      .field(p + ".block_count", a.block_count, b.block_count)
      .field(p + ".stated_allocated", a.stated_allocated, b.stated_allocated)
      .field(p + ".stated_active", a.stated_active, b.stated_active)
      .field(p + ".stated_requested", a.stated_requested, b.stated_requested)
      .rest(p, a, b);
}

void block(Diff& d, const std::string& p, const Block& a, const Block& b) {
  d.field(p + ".address", a.address, b.address)
      .field(p + ".size", a.size, b.size)
      .field(p + ".requested_size", a.requested_size, b.requested_size)
      .field(p + ".stack", a.stack, b.stack)
      .field(p + ".state", a.state, b.state)
      .field(p + ".address_derived", a.address_derived, b.address_derived)
      .field(p + ".requested_known", a.requested_known, b.requested_known)
      .rest(p, a, b);
}

void event(Diff& d, const std::string& p, const TraceEvent& a, const TraceEvent& b) {
  d.field(p + ".action", a.action, b.action)
      .field(p + ".addr", a.addr, b.addr)
      .field(p + ".size", a.size, b.size)
      .field(p + ".stream", a.stream, b.stream)
      .field(p + ".time_us", a.time_us, b.time_us)
      .field(p + ".stack", a.stack, b.stack)
      .rest(p, a, b);
}

template <class T, class F>
void each(Diff& d, const std::string& p, const std::vector<T>& a, const std::vector<T>& b, F f) {
  d.field(p + ".size()", a.size(), b.size());
  for (size_t i = 0; i < a.size() && i < b.size() && !d.done(); ++i)
    f(d, p + "[" + std::to_string(i) + "]", a[i], b[i]);
}

void device(Diff& d, const std::string& p, const Device& a, const Device& b) {
  d.field(p + ".index", a.index, b.index);
  each(d, p + ".segments", a.segments, b.segments, segment);
  each(d, p + ".blocks", a.blocks, b.blocks, block);
  d.field(p + ".trace.size()", a.trace.size(), b.trace.size());
  for (size_t i = 0; i < a.trace.size() && i < b.trace.size() && !d.done(); ++i)
    event(d, p + ".trace[" + std::to_string(i) + "]", a.trace[i], b.trace[i]);
  d.rest(p, a, b);
}

void settings(Diff& d, const AllocatorSettings& a, const AllocatorSettings& b) {
  const std::string p = "settings";
  d.field(p + ".present", a.present, b.present)
      .field(p + ".alloc_conf", a.alloc_conf, b.alloc_conf)
      .field(p + ".max_split_size", a.max_split_size, b.max_split_size)
      .field(p + ".garbage_collection_threshold", a.garbage_collection_threshold, b.garbage_collection_threshold)
      .field(p + ".expandable_segments", a.expandable_segments, b.expandable_segments)
      .field(p + ".roundup_power2_divisions", a.roundup_power2_divisions, b.roundup_power2_divisions)
      .field(p + ".trace_alloc_overflowed", a.trace_alloc_overflowed, b.trace_alloc_overflowed)
      .field(p + ".trace_alloc_max_entries", a.trace_alloc_max_entries, b.trace_alloc_max_entries)
      .rest(p, a, b);
}

void tables(Diff& d, const Snapshot& a, const Snapshot& b) {
  d.field("strings.size()", a.strings.size(), b.strings.size());
  for (uint32_t i = 0; i < a.strings.size() && i < b.strings.size() && !d.done(); ++i)
    d.field("strings[" + std::to_string(i) + "]", std::string(a.strings[StrId{i}]), std::string(b.strings[StrId{i}]));
  d.field("frames.size()", a.frames.size(), b.frames.size());
  for (uint32_t i = 0; i < a.frames.size() && i < b.frames.size() && !d.done(); ++i) {
    const Frame &x = a.frames[FrameId{i}], &y = b.frames[FrameId{i}];
    std::string p = "frames[" + std::to_string(i) + "]";
    d.field(p + ".filename", x.filename, y.filename)
        .field(p + ".name", x.name, y.name)
        .field(p + ".line", x.line, y.line);
  }
  d.field("stacks.size()", a.stacks.size(), b.stacks.size());
  for (uint32_t i = 0; i < a.stacks.size() && i < b.stacks.size() && !d.done(); ++i) {
    auto x = a.stacks[StackId{i}], y = b.stacks[StackId{i}];
    d.field("stacks[" + std::to_string(i) + "]", std::vector<FrameId>(x.begin(), x.end()),
            std::vector<FrameId>(y.begin(), y.end()));
  }
}

}  // namespace

std::string first_difference(const Snapshot& a, const Snapshot& b) {
  Diff d;
  d.field("form", a.form, b.form).field("legacy_history", a.legacy_history, b.legacy_history);
  d.field("warnings", a.warnings, b.warnings);
  for (size_t i = 0; i < a.warnings.size() && i < b.warnings.size(); ++i)
    d.field("warnings[" + std::to_string(i) + "]", a.warnings[i], b.warnings[i]);
  tables(d, a, b);
  settings(d, a.settings, b.settings);
  each(d, "annotations", a.annotations, b.annotations,
       [](Diff& x, const std::string& p, const Annotation& u, const Annotation& v) {
         x.field(p + ".device", u.device, v.device)
             .field(p + ".time_us", u.time_us, v.time_us)
             .field(p + ".name", u.name, v.name)
             .field(p + ".stage", u.stage, v.stage)
             .rest(p, u, v);
       });
  each(d, "devices", a.devices, b.devices, device);
  d.rest("snapshot", a, b);
  return d.result();
}

}  // namespace memsnap::snapshot
