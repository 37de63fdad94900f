// The model in PyTorch's snapshot schema: one walk of the model, written as JSON or as a pickle.
#include "memsnap/report/export.hpp"

#include <array>
#include <cmath>
#include <cstdio>
#include <ios>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "memsnap/pickle/pickler.hpp"
#include "memsnap/snapshot/schema.hpp"

namespace memsnap::report {

namespace {

using snapshot::Action;
using snapshot::BlockState;
using snapshot::FrameId;
using snapshot::Pool;
using snapshot::StackId;
using snapshot::StrId;

// Every fixed string of the schema: keys and enumerated values. The pickle writes each once.
// The words a snapshot is written with: the schema's (snapshot/schema.hpp), so a field the
// table gains is written too (Render::fields).
using snapshot::schema::Word;
using snapshot::schema::operator""_w;
using snapshot::schema::Role;

std::string_view word_text(Word w) {
  return snapshot::schema::text(w);
}

// Objects a pickle shares through the memo, as torch's own files do.
enum class Shared : uint8_t { Frame, Stack };

// ---- the one rendering -------------------------------------------------------------------

template <class W>
class Render {
 public:
  Render(W& w, const snapshot::Snapshot& s, const ExportRoles* roles) : w_(w), s_(s), roles_(roles) {}

  void document() {
    w_.begin_dict();
    w_.key("segments"_w);
    w_.begin_list();
    for (const auto& d : s_.devices)
      for (const auto& seg : d.segments) segment(d, seg);
    w_.end_list();

    w_.key("device_traces"_w);
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
    w_.key("filename"_w);
    w_.model_str(f.filename, s_.strings[f.filename]);
    w_.key("line"_w);
    w_.integer(f.line);
    w_.key("name"_w);
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
    auto mode = [&](Word key) {
      switch (key) {
        case "segment_type"_w: return seg.pool != Pool::Unknown ? Write::own : Write::skip;
        case "allocated_size"_w:  // the file's figure, or the blocks' (plain when read, not here)
        case "active_size"_w:
        case "requested_size"_w: return Write::own;
        default: return Write::table;
      }
    };
    fields<Role::segment>(seg, mode, [&](Word key) {
      switch (key) {
        case "device"_w: w_.integer(d.index); break;
        case "allocated_size"_w: w_.uinteger(seg.stated_allocated.value_or(allocated)); break;
        case "active_size"_w: w_.uinteger(seg.stated_active.value_or(active)); break;
        case "requested_size"_w: w_.uinteger(seg.stated_requested.value_or(requested)); break;
        case "segment_type"_w: w_.word(seg.pool == Pool::Small ? "small"_w : "large"_w); break;
        case "segment_pool_id"_w:
          w_.begin_tuple();
          w_.integer(seg.pool_id[0]);
          w_.integer(seg.pool_id[1]);
          w_.end_tuple();
          break;
        case "frames"_w: stack(seg.stack); break;
        default: block_list(d, blocks); break;  // "blocks"
      }
    });
    w_.end_dict();
  }

  void block_list(const snapshot::Device& d, std::span<const snapshot::Block> blocks) {
    // This device's roles, when given (by the device's position in the snapshot).
    const analysis::DumpRoles* roles = nullptr;
    if (const auto pos = static_cast<size_t>(&d - s_.devices.data()); roles_ && pos < roles_->size())
      roles = &(*roles_)[pos];
    w_.begin_list();
    for (const auto& b : blocks) {
      w_.begin_dict();
      // history: read from old files, never written
      auto mode = [](Word key) { return key == "history"_w ? Write::skip : Write::table; };
      fields<Role::block>(b, mode, [&](Word key) {
        switch (key) {
          case "address"_w: w_.uinteger(b.address); break;
          case "requested_size"_w: w_.uinteger(b.requested_size); break;
          case "state"_w: w_.word(snapshot::schema::word_of(b.state)); break;
          default: stack(b.is_active() ? b.stack : StackId{0}); break;  // "frames"
        }
      });
      if (roles) block_role(*roles, static_cast<size_t>(&b - d.blocks.data()));
      w_.end_dict();
    }
    w_.end_list();
  }

  // memsnap's keys of an active block: its role, and the phase its alloc ran in when known.
  void block_role(const analysis::DumpRoles& roles, size_t k) {
    if (k >= roles.role.size() || roles.role[k] == analysis::DumpRoles::kNone) return;
    w_.key_text("role");
    w_.text(roles.names.at(roles.role[k]));
    if (roles.phase[k] == analysis::DumpRoles::kNone) return;
    w_.key_text("phase");
    w_.text(analysis::to_string(analysis::Phase(roles.phase[k])));
  }

  // How a field is written: from the table (a plain field from its member, an optional one
  // only when it has a value; any other by `value`), by `value` alone, or not at all.
  enum class Write { table, own, skip };
  // The fields of role R in the schema's order, each as mode(key) says; `value(key)` writes
  // the value of a field that is not plain. A plain field the table gains is written with
  // no code here.
  template <Role R, class Obj, class Mode, class Value>
  void fields(const Obj& obj, Mode mode, Value value) {
    snapshot::schema::for_each_row<R>([&](Word key, snapshot::schema::Type, auto member) {
      Write m = mode(key);
      if (m == Write::skip) return;
      if constexpr (!std::is_null_pointer_v<decltype(member)>) {
        if (m == Write::table) return plain(key, obj.*member);
      }
      w_.key(key);
      value(key);
    });
  }
  void plain(Word key, uint64_t v) {
    w_.key(key);
    w_.uinteger(v);
  }
  void plain(Word key, int64_t v) {
    w_.key(key);
    w_.integer(v);
  }
  void plain(Word key, bool v) {
    w_.key(key);
    w_.boolean(v);
  }
  void plain(Word key, const std::string& v) {
    w_.key(key);
    w_.text(v);
  }
  template <class T>
  void plain(Word key, const std::optional<T>& v) {
    if (v) plain(key, *v);
  }

  void event(const snapshot::TraceEvent& e) {
    w_.begin_dict();
    w_.key("action"_w);
    w_.word(snapshot::schema::word_of(e.action));
    if (e.action == Action::Oom) {
      w_.key("device_free"_w);
      w_.uinteger(e.device_free());
    } else {
      w_.key("addr"_w);
      w_.uinteger(e.addr);
    }
    w_.key("size"_w);
    w_.uinteger(e.size);
    w_.key("stream"_w);
    w_.uinteger(e.stream);
    if (e.has_time()) {
      w_.key("time_us"_w);
      w_.integer(e.time_us);
    }
    w_.key("frames"_w);
    stack(e.stack);
    w_.end_dict();
  }

  void settings() {
    const auto& a = s_.settings;
    w_.key("allocator_settings"_w);
    w_.begin_dict();
    fields<Role::settings>(
        a, [](Word) { return Write::table; },
        [&](Word key) {
          switch (key) {
            case "max_split_size"_w:
              if (a.max_split_size)
                w_.uinteger(*a.max_split_size);
              else
                w_.integer(-1);  // unlimited, as torch reports it
              break;
            case "garbage_collection_threshold"_w: w_.real(a.garbage_collection_threshold); break;
            default:  // "roundup_power2_divisions"
              w_.begin_dict();
              for (const auto& [bucket, divisions] : a.roundup_power2_divisions) {
                w_.key_text(std::to_string(bucket));
                w_.uinteger(divisions);
              }
              w_.end_dict();
          }
        });
    w_.end_dict();
  }

  void annotations() {
    w_.key("external_annotations"_w);
    w_.begin_list();
    for (const auto& n : s_.annotations) {
      w_.begin_dict();
      w_.key("device"_w);
      w_.integer(n.device);
      if (n.time_us != snapshot::TraceEvent::kNoTime) {
        w_.key("time_us"_w);
        w_.integer(n.time_us);
      }
      w_.key("name"_w);
      w_.model_str(n.name, s_.strings[n.name]);
      w_.key("stage"_w);
      w_.model_str(n.stage, s_.strings[n.stage]);
      w_.end_dict();
    }
    w_.end_list();
  }

  W& w_;
  const snapshot::Snapshot& s_;
  const ExportRoles* roles_;
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
  std::array<uint32_t, snapshot::schema::kWordCount> words_{};
  std::vector<uint32_t> strings_, frames_, stacks_;  // model id -> memo index
};

}  // namespace

void write_snapshot_json(std::ostream& out, const snapshot::Snapshot& snap, const ExportRoles* roles) {
  JsonSink sink(out);
  Render<JsonSink>(sink, snap, roles).document();
  sink.finish();
}

void write_snapshot_pickle(std::ostream& out, const snapshot::Snapshot& snap, const ExportRoles* roles) {
  PickleSink sink(out, snap);
  Render<PickleSink>(sink, snap, roles).document();
  sink.finish();
}

}  // namespace memsnap::report
