// The model in PyTorch's snapshot schema: one walk of the model, written as JSON or as a pickle.
#include <array>
#include <cmath>
#include <cstdio>
#include <ios>
#include <string>
#include <vector>

#include "memsnap/pickle/pickler.hpp"
#include "memsnap/report/export.hpp"

namespace memsnap::report {

namespace {

using snapshot::Action;
using snapshot::BlockState;
using snapshot::FrameId;
using snapshot::Pool;
using snapshot::StackId;
using snapshot::StrId;

// Every fixed string of the schema: keys and enumerated values. The pickle writes each once.
// clang-format off
#define MEMSNAP_WORDS(X) \
  X(segments) X(device_traces) X(allocator_settings) X(external_annotations) X(device) X(address) \
  X(total_size) X(allocated_size) X(active_size) X(requested_size) X(stream) X(segment_type) \
  X(segment_pool_id) X(is_expandable) X(frames) X(blocks) X(size) X(state) X(filename) X(line) \
  X(name) X(action) X(addr) X(time_us) X(device_free) X(PYTORCH_CUDA_ALLOC_CONF) X(max_split_size) \
  X(garbage_collection_threshold) X(expandable_segments) X(roundup_power2_divisions) \
  X(trace_alloc_max_entries) X(trace_alloc_overflowed) X(stage) X(small) X(large) \
  X(active_allocated) X(active_pending_free) X(inactive) X(alloc) X(free_requested) \
  X(free_completed) X(segment_alloc) X(segment_free) X(segment_map) X(segment_unmap) X(snapshot) \
  X(oom) X(free) X(unknown)
// clang-format on

enum class Word : uint8_t {
#define X(w) w,
  MEMSNAP_WORDS(X)
#undef X
      kCount
};
constexpr const char* kWordText[] = {
#define X(w) #w,
    MEMSNAP_WORDS(X)
#undef X
};
static_assert(sizeof(kWordText) / sizeof(kWordText[0]) == static_cast<size_t>(Word::kCount));

std::string_view word_text(Word w) {
  return kWordText[static_cast<size_t>(w)];
}

// Objects a pickle shares through the memo, as torch's own files do.
enum class Shared : uint8_t { Frame, Stack };

Word word(Action a) {
  switch (a) {
    case Action::Alloc: return Word::alloc;
    case Action::FreeRequested: return Word::free_requested;
    case Action::FreeCompleted: return Word::free_completed;
    case Action::SegmentAlloc: return Word::segment_alloc;
    case Action::SegmentFree: return Word::segment_free;
    case Action::SegmentMap: return Word::segment_map;
    case Action::SegmentUnmap: return Word::segment_unmap;
    case Action::Snapshot: return Word::snapshot;
    case Action::Oom: return Word::oom;
    case Action::Free: return Word::free;
    case Action::Unknown: return Word::unknown;
  }
  return Word::unknown;
}

Word word(BlockState s) {
  switch (s) {
    case BlockState::ActiveAllocated: return Word::active_allocated;
    case BlockState::ActivePendingFree: return Word::active_pending_free;
    case BlockState::Inactive: return Word::inactive;
  }
  return Word::inactive;
}

// ---- the one rendering -------------------------------------------------------------------

template <class W>
class Render {
 public:
  Render(W& w, const snapshot::Snapshot& s) : w_(w), s_(s) {}

  void document() {
    w_.begin_dict();
    w_.key(Word::segments);
    w_.begin_list();
    for (const auto& d : s_.devices)
      for (const auto& seg : d.segments) segment(d, seg);
    w_.end_list();

    w_.key(Word::device_traces);
    w_.begin_list();
    int next = 0;
    for (const auto& d : s_.devices) {
      for (; next < d.index; ++next) {  // torch writes one list per device index
        w_.begin_list();
        w_.end_list();
      }
      w_.begin_list();
      for (const auto& e : d.trace) event(e);
      w_.end_list();
      next = d.index + 1;
    }
    w_.end_list();

    if (s_.settings.present) settings();
    if (!s_.annotations.empty()) annotations();
    w_.end_dict();
  }

 private:
  void frame(FrameId id) {
    if (w_.reuse(Shared::Frame, id.v)) return;
    const snapshot::Frame& f = s_.frames[id];
    w_.begin_dict();
    w_.remember(Shared::Frame, id.v);
    w_.key(Word::filename);
    w_.model_str(f.filename, s_.strings[f.filename]);
    w_.key(Word::line);
    w_.integer(f.line);
    w_.key(Word::name);
    w_.model_str(f.name, s_.strings[f.name]);
    w_.end_dict();
  }

  void stack(StackId id) {
    if (w_.reuse(Shared::Stack, id.v)) return;
    w_.begin_list();
    w_.remember(Shared::Stack, id.v);
    for (FrameId f : s_.stacks[id]) frame(f);
    w_.end_list();
  }

  void segment(const snapshot::Device& d, const snapshot::Segment& seg) {
    auto blocks = d.blocks_of(seg);
    uint64_t allocated = 0, active = 0, requested = 0;
    for (const auto& b : blocks) {
      if (b.state == BlockState::ActiveAllocated) {
        allocated += b.size;
        requested += b.requested_size;
      }
      if (b.is_active()) active += b.size;
    }
    w_.begin_dict();
    w_.key(Word::device);
    w_.integer(d.index);
    w_.key(Word::address);
    w_.uinteger(seg.address);
    w_.key(Word::total_size);
    w_.uinteger(seg.total_size);
    w_.key(Word::allocated_size);
    w_.uinteger(seg.stated_allocated.value_or(allocated));
    w_.key(Word::active_size);
    w_.uinteger(seg.stated_active.value_or(active));
    w_.key(Word::requested_size);
    w_.uinteger(seg.stated_requested.value_or(requested));
    w_.key(Word::stream);
    w_.uinteger(seg.stream);
    if (seg.pool != Pool::Unknown) {
      w_.key(Word::segment_type);
      w_.word(seg.pool == Pool::Small ? Word::small : Word::large);
    }
    w_.key(Word::segment_pool_id);
    w_.begin_tuple();
    w_.integer(seg.pool_id[0]);
    w_.integer(seg.pool_id[1]);
    w_.end_tuple();
    w_.key(Word::is_expandable);
    w_.boolean(seg.expandable);
    w_.key(Word::frames);
    stack(seg.stack);
    w_.key(Word::blocks);
    w_.begin_list();
    for (const auto& b : blocks) {
      w_.begin_dict();
      w_.key(Word::address);
      w_.uinteger(b.address);
      w_.key(Word::size);
      w_.uinteger(b.size);
      w_.key(Word::requested_size);
      w_.uinteger(b.requested_size);
      w_.key(Word::state);
      w_.word(word(b.state));
      w_.key(Word::frames);
      stack(b.is_active() ? b.stack : StackId{0});
      w_.end_dict();
    }
    w_.end_list();
    w_.end_dict();
  }

  void event(const snapshot::TraceEvent& e) {
    w_.begin_dict();
    w_.key(Word::action);
    w_.word(word(e.action));
    if (e.action == Action::Oom) {
      w_.key(Word::device_free);
      w_.uinteger(e.device_free());
    } else {
      w_.key(Word::addr);
      w_.uinteger(e.addr);
    }
    w_.key(Word::size);
    w_.uinteger(e.size);
    w_.key(Word::stream);
    w_.uinteger(e.stream);
    if (e.has_time()) {
      w_.key(Word::time_us);
      w_.integer(e.time_us);
    }
    w_.key(Word::frames);
    stack(e.stack);
    w_.end_dict();
  }

  void settings() {
    const auto& a = s_.settings;
    w_.key(Word::allocator_settings);
    w_.begin_dict();
    w_.key(Word::PYTORCH_CUDA_ALLOC_CONF);
    w_.text(a.alloc_conf);
    w_.key(Word::max_split_size);
    if (a.max_split_size)
      w_.uinteger(*a.max_split_size);
    else
      w_.integer(-1);  // unlimited, as torch reports it
    w_.key(Word::garbage_collection_threshold);
    w_.real(a.garbage_collection_threshold);
    w_.key(Word::expandable_segments);
    w_.boolean(a.expandable_segments);
    w_.key(Word::roundup_power2_divisions);
    w_.begin_dict();
    for (const auto& [bucket, divisions] : a.roundup_power2_divisions) {
      w_.key_text(std::to_string(bucket));
      w_.uinteger(divisions);
    }
    w_.end_dict();
    if (a.trace_alloc_max_entries) {
      w_.key(Word::trace_alloc_max_entries);
      w_.integer(*a.trace_alloc_max_entries);
    }
    if (a.trace_alloc_overflowed) {
      w_.key(Word::trace_alloc_overflowed);
      w_.boolean(*a.trace_alloc_overflowed);
    }
    w_.end_dict();
  }

  void annotations() {
    w_.key(Word::external_annotations);
    w_.begin_list();
    for (const auto& n : s_.annotations) {
      w_.begin_dict();
      w_.key(Word::device);
      w_.integer(n.device);
      if (n.time_us != snapshot::TraceEvent::kNoTime) {
        w_.key(Word::time_us);
        w_.integer(n.time_us);
      }
      w_.key(Word::name);
      w_.model_str(n.name, s_.strings[n.name]);
      w_.key(Word::stage);
      w_.model_str(n.stage, s_.strings[n.stage]);
      w_.end_dict();
    }
    w_.end_list();
  }

  W& w_;
  const snapshot::Snapshot& s_;
};

// ---- JSON --------------------------------------------------------------------------------

class JsonSink {
 public:
  explicit JsonSink(std::ostream& out) : out_(out) { buf_.reserve(kChunk + 4096); }

  void begin_dict() { open('{'); }
  void end_dict() { close('}'); }
  void begin_list() { open('['); }
  void end_list() { close(']'); }
  void begin_tuple() { open('['); }
  void end_tuple() { close(']'); }
  void key(Word k) { key_text(word_text(k)); }
  void key_text(std::string_view k) {
    comma();
    quote(k);
    buf_ += ':';
    after_key_ = true;
  }
  void word(Word w) { text(word_text(w)); }
  void model_str(StrId, std::string_view s) { text(s); }
  void text(std::string_view s) {
    prefix();
    quote(s);
    maybe_flush();
  }
  void integer(int64_t v) { number(std::to_string(v)); }
  void uinteger(uint64_t v) { number(std::to_string(v)); }
  void real(double v) {
    if (!std::isfinite(v)) return null();  // JSON has no NaN or infinity
    char tmp[32];
    std::snprintf(tmp, sizeof tmp, "%.17g", v);
    std::string s = tmp;
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";  // stays a float when read back
    number(s);
  }
  void boolean(bool v) { number(v ? "true" : "false"); }
  void null() { number("null"); }
  bool reuse(Shared, uint32_t) { return false; }  // JSON has no references: written in full
  void remember(Shared, uint32_t) {}

  void finish() {
    buf_ += '\n';
    flush();
    out_.flush();
    if (!out_) throw std::ios_base::failure("JSON output: write failed");
  }

 private:
  static constexpr size_t kChunk = size_t{1} << 16;

  void comma() {
    if (first_.empty()) return;
    if (!first_.back()) buf_ += ',';
    first_.back() = false;
  }
  void prefix() {
    if (after_key_)
      after_key_ = false;
    else
      comma();
  }
  void open(char c) {
    prefix();
    buf_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    buf_ += c;
    first_.pop_back();
    maybe_flush();
  }
  void number(std::string_view s) {
    prefix();
    buf_ += s;
    maybe_flush();
  }
  void quote(std::string_view raw) {
    std::string scratch;
    std::string_view s = pickle::sanitize_utf8(raw, scratch, false);
    buf_ += '"';
    for (char ch : s) {
      auto c = static_cast<unsigned char>(ch);
      switch (c) {
        case '"': buf_ += "\\\""; break;
        case '\\': buf_ += "\\\\"; break;
        case '\n': buf_ += "\\n"; break;
        case '\r': buf_ += "\\r"; break;
        case '\t': buf_ += "\\t"; break;
        case '\b': buf_ += "\\b"; break;
        case '\f': buf_ += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) {  // control characters never reach a terminal raw
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            buf_ += esc;
          } else {
            buf_ += ch;
          }
      }
    }
    buf_ += '"';
  }
  void maybe_flush() {
    if (buf_.size() >= kChunk) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
    if (!out_) throw std::ios_base::failure("JSON output: write failed");
  }

  std::ostream& out_;
  std::string buf_;
  std::vector<bool> first_;  // per open container: no item written yet
  bool after_key_ = false;
};

// ---- pickle ------------------------------------------------------------------------------

class PickleSink {
 public:
  PickleSink(std::ostream& out, const snapshot::Snapshot& s)
      : p_(out), strings_(s.strings.size(), kNone), frames_(s.frames.size(), kNone), stacks_(s.stacks.size(), kNone) {
    words_.fill(kNone);
  }

  void begin_dict() { p_.begin_dict(); }
  void end_dict() { p_.end_dict(); }
  void begin_list() { p_.begin_list(); }
  void end_list() { p_.end_list(); }
  void begin_tuple() { p_.begin_tuple(); }
  void end_tuple() { p_.end_tuple(); }
  void key(Word k) { word(k); }
  void key_text(std::string_view k) { p_.str(k); }
  void word(Word w) { shared_str(words_[static_cast<size_t>(w)], word_text(w)); }
  void model_str(StrId id, std::string_view s) { shared_str(strings_[id.v], s); }
  void text(std::string_view s) { p_.str(s); }
  void integer(int64_t v) { p_.integer(v); }
  void uinteger(uint64_t v) { p_.uinteger(v); }
  void real(double v) { p_.real(v); }
  void boolean(bool v) { p_.boolean(v); }
  void null() { p_.none(); }
  bool reuse(Shared kind, uint32_t id) {
    uint32_t m = table(kind)[id];
    if (m == kNone) return false;
    p_.get(m);
    return true;
  }
  void remember(Shared kind, uint32_t id) { table(kind)[id] = p_.memoize(); }
  void finish() { p_.finish(); }

 private:
  static constexpr uint32_t kNone = 0xFFFFFFFFu;

  void shared_str(uint32_t& memo, std::string_view s) {
    if (memo != kNone) return p_.get(memo);
    p_.str(s);
    memo = p_.memoize();
  }
  std::vector<uint32_t>& table(Shared kind) { return kind == Shared::Frame ? frames_ : stacks_; }

  pickle::Pickler p_;
  std::array<uint32_t, static_cast<size_t>(Word::kCount)> words_{};
  std::vector<uint32_t> strings_, frames_, stacks_;  // model id -> memo index
};

}  // namespace

void write_snapshot_json(std::ostream& out, const snapshot::Snapshot& snap) {
  JsonSink sink(out);
  Render<JsonSink>(sink, snap).document();
  sink.finish();
}

void write_snapshot_pickle(std::ostream& out, const snapshot::Snapshot& snap) {
  PickleSink sink(out, snap);
  Render<PickleSink>(sink, snap).document();
  sink.finish();
}

}  // namespace memsnap::report
