// The schema walk: value graph -> Snapshot. One pass per dict, keys matched through a
// per-schema cache keyed by the key string's node (keys are memo-shared in real files).
#include "memsnap/snapshot/builder.hpp"

#include <array>
#include <cmath>
#include <map>
#include <type_traits>
#include <unordered_map>

#include "memsnap/snapshot/schema.hpp"
#include "memsnap/snapshot/validate.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/hash.hpp"

namespace memsnap::snapshot {

namespace {

using pickle::Kind;
using pickle::ValueGraph;
using pickle::ValueId;
using schema::Role;
using schema::slot;

constexpr uint32_t kUnset = 0xFFFFFFFFu;

// The fields one schema reads from a dict, found in one pass over its items.
template <Role R, size_t N = size_t(schema::field_count(R))>
class Schema {
 public:
  Schema() {
    for (size_t i = 0; i < N; ++i) names_[i] = schema::row(R, int(i)).key;
    cache_id_.fill(kUnset);
  }

  struct Found {
    std::array<ValueId, N> v{};
    uint32_t mask = 0;
    bool has(size_t f) const { return (mask >> f) & 1u; }
  };

  Found scan(const ValueGraph& g, ValueId dict) {
    Found out;
    auto items = g.items(dict);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      ValueId k = items[i];
      size_t slot = k.v & (kSlots - 1);
      uint8_t f;
      if (cache_id_[slot] == k.v) {
        f = cache_field_[slot];
      } else {
        f = N;
        if (g.kind(k) == Kind::Str) {
          std::string_view s = g.bytes(k);
          for (size_t j = 0; j < N; ++j) {
            if (s == names_[j]) {
              f = static_cast<uint8_t>(j);
              break;
            }
          }
        }
        cache_id_[slot] = k.v;
        cache_field_[slot] = f;
      }
      if (f < N) {  // a later duplicate key wins, as in Python
        out.v[f] = items[i + 1];
        out.mask |= 1u << f;
      }
    }
    return out;
  }
  std::string_view name(size_t f) const { return names_[f]; }

 private:
  static constexpr size_t kSlots = 256;
  std::array<std::string_view, N> names_;
  std::array<uint32_t, kSlots> cache_id_{};
  std::array<uint8_t, kSlots> cache_field_{};
};

// Each dict's field slots, from the schema table (a key the table lacks does not compile).
constexpr int S_device = slot(Role::segment, "device"), S_total_size = slot(Role::segment, "total_size"),
              S_segment_type = slot(Role::segment, "segment_type"),
              S_segment_pool_id = slot(Role::segment, "segment_pool_id"), S_frames = slot(Role::segment, "frames"),
              S_blocks = slot(Role::segment, "blocks");
constexpr int B_address = slot(Role::block, "address"), B_size = slot(Role::block, "size"),
              B_requested_size = slot(Role::block, "requested_size"), B_state = slot(Role::block, "state"),
              B_frames = slot(Role::block, "frames"), B_history = slot(Role::block, "history");
constexpr int H_real_size = slot(Role::history, "real_size"), H_frames = slot(Role::history, "frames");
constexpr int F_filename = slot(Role::frame, "filename"), F_line = slot(Role::frame, "line"),
              F_name = slot(Role::frame, "name");
constexpr int E_action = slot(Role::event, "action"), E_addr = slot(Role::event, "addr"),
              E_size = slot(Role::event, "size"), E_stream = slot(Role::event, "stream"),
              E_frames = slot(Role::event, "frames"), E_time_us = slot(Role::event, "time_us"),
              E_device_free = slot(Role::event, "device_free");
constexpr int T_segments = slot(Role::top, "segments"), T_device_traces = slot(Role::top, "device_traces"),
              T_allocator_settings = slot(Role::top, "allocator_settings"),
              T_external_annotations = slot(Role::top, "external_annotations");
constexpr int A_max_split = slot(Role::settings, "max_split_size"),
              A_gc = slot(Role::settings, "garbage_collection_threshold"),
              A_roundup = slot(Role::settings, "roundup_power2_divisions");
constexpr int N_device = slot(Role::annotation, "device"), N_time_us = slot(Role::annotation, "time_us"),
              N_name = slot(Role::annotation, "name"), N_stage = slot(Role::annotation, "stage");

class Builder {
 public:
  Builder(const ValueGraph& g, const BuildOptions& o)
      : g_(g),
        budget_(o.budget),
        work_budget_(64 * (o.input_bytes ? o.input_bytes : g.size() * 16) + (uint64_t{1} << 22)) {}

  Snapshot run();

 private:
  // ---- typed access with paths in errors -------------------------------------
  [[noreturn]] void type_error(const std::string& path, const char* want, ValueId got) const {
    throw_at_path(path, std::string("expected ") + want + ", got " + pickle::kind_name(g_.kind(got)));
  }
  template <class W>
  uint64_t size_of(ValueId v, const W& where) const {
    Kind k = g_.kind(v);
    if (k == Kind::Int) {
      if (!g_.is_unsigned(v) && g_.as_int(v) < 0)
        throw_at_path(where(), "expected a non-negative int, got " + std::to_string(g_.as_int(v)));
      return g_.as_uint(v);
    }
    if (k == Kind::BigInt) throw_at_path(where(), "integer does not fit in 64 bits");
    type_error(where(), "int", v);
  }
  // Addresses and stream handles: any 64-bit pattern (a signed writer may cast them).
  template <class W>
  uint64_t bits_of(ValueId v, const W& where) const {
    Kind k = g_.kind(v);
    if (k == Kind::Int) return g_.as_uint(v);
    if (k == Kind::BigInt) throw_at_path(where(), "integer does not fit in 64 bits");
    type_error(where(), "int", v);
  }
  template <class W>
  int64_t int_of(ValueId v, const W& where) const {
    Kind k = g_.kind(v);
    if (k == Kind::Int) {
      if (g_.is_unsigned(v)) throw_at_path(where(), "integer does not fit in 64 bits");
      return g_.as_int(v);
    }
    if (k == Kind::BigInt) throw_at_path(where(), "integer does not fit in 64 bits");
    type_error(where(), "int", v);
  }
  template <class W>
  std::string_view str_of(ValueId v, const W& where) const {
    if (g_.kind(v) != Kind::Str) type_error(where(), "str", v);
    return g_.bytes(v);
  }
  template <class W>
  bool bool_of(ValueId v, const W& where) const {
    if (g_.kind(v) == Kind::Bool) return g_.as_bool(v);
    if (g_.kind(v) == Kind::Int) return g_.as_int(v) != 0;
    type_error(where(), "bool", v);
  }
  template <class W>
  std::span<const ValueId> list_of(ValueId v, const W& where) const {
    Kind k = g_.kind(v);
    if (k != Kind::List && k != Kind::Tuple) type_error(where(), "list", v);
    return g_.items(v);
  }
  template <class W>
  void need_dict(ValueId v, const W& where) const {
    if (g_.kind(v) != Kind::Dict) type_error(where(), "dict", v);
  }
  // The plain fields of role R (schema.hpp: those with a member pointer), each converted by
  // its type into its member of `obj`; `at(slot)` names the field's path for an error.
  template <Role R, class Obj, class Found, class At>
  void plain(Obj& obj, const Found& f, const At& at) const {
    schema::for_each_plain<R>([&](int k, schema::Type type, std::string_view, auto member) {
      if (!f.has(size_t(k))) return;
      using V = typename schema::Plain<std::remove_cvref_t<decltype(obj.*member)>>::value;
      ValueId v = f.v[size_t(k)];
      if constexpr (std::is_same_v<V, uint64_t>)
        obj.*member = type == schema::Type::Size ? size_of(v, at(size_t(k))) : bits_of(v, at(size_t(k)));
      else if constexpr (std::is_same_v<V, int64_t>)
        obj.*member = int_of(v, at(size_t(k)));
      else if constexpr (std::is_same_v<V, bool>)
        obj.*member = bool_of(v, at(size_t(k)));
      else
        obj.*member = V(str_of(v, at(size_t(k))));
    });
  }
  // The model against the run's memory bound, every 64Ki elements.
  void account() {
    if (!budget_) return;
    uint64_t bytes = snap_.tables_bytes();
    for (const auto& [i, d] : devices_) bytes += d.memory_bytes();
    budget_->set(util::Account::Model, bytes);
  }
  void spend(uint64_t n) {
    if (((work_ + n) >> 16) != (work_ >> 16)) account();
    work_ += n;
    if (work_ > work_budget_)
      throw InputError("",
                       "the snapshot expands to far more elements than its size allows "
                       "(objects shared through the pickle memo are referenced too many times)");
  }

  Device& device(int64_t index, const std::string& where);
  template <class W>
  StackId stack_of(ValueId list, const W& where);
  template <class W>
  FrameId frame_of(ValueId dict, const W& where);
  static constexpr size_t kLongString = 256;
  template <class W>
  StrId intern_str(ValueId v, const W& where);
  void segment(ValueId v, size_t si);
  void traces(ValueId v);
  void settings(ValueId v);
  void annotations(ValueId v);
  template <class W>
  BlockState state_of(ValueId v, const W& where);
  template <class W>
  Action action_of(ValueId v, const W& where);

  const ValueGraph& g_;
  util::MemoryBudget* budget_ = nullptr;
  uint64_t work_budget_;
  uint64_t work_ = 0;
  Snapshot snap_;
  std::map<int64_t, Device> devices_;

  Schema<Role::segment> seg_;
  Schema<Role::block> block_;
  Schema<Role::history> hist_;
  Schema<Role::frame> frame_;
  Schema<Role::event> event_;
  Schema<Role::top> top_;
  Schema<Role::settings> settings_;
  Schema<Role::annotation> ann_;

  // Stacks: a frames list is looked up by its item range (shared by identical
  // lists), frames by node (genuine files share each frame dict), both then by content.
  std::unordered_map<uint64_t, StackId, util::Hasher> stack_of_range_;
  std::unordered_map<uint32_t, FrameId, util::Hasher> frame_of_node_;
  std::unordered_map<uint32_t, StrId, util::Hasher> long_string_of_node_;
  std::vector<FrameId> tmp_frames_;
  std::unordered_map<uint32_t, uint8_t, util::Hasher> state_cache_;
  std::unordered_map<uint32_t, uint8_t, util::Hasher> action_cache_;
  std::map<std::string, uint64_t> unknown_actions_;
};

Device& Builder::device(int64_t index, const std::string& where) {
  if (index < 0 || index > 65535) throw_at_path(where, "device index " + std::to_string(index) + " out of range");
  auto [it, inserted] = devices_.try_emplace(index);
  if (inserted) it->second.index = static_cast<int>(index);
  return it->second;
}

// A long string (a file name thousands of frames share through the pickle memo) is one value
// node: interned once per node, not hashed and compared again for every frame naming it.
template <class W>
StrId Builder::intern_str(ValueId v, const W& where) {
  std::string_view s = str_of(v, where);
  if (s.size() < kLongString) return snap_.strings.intern(s);
  auto [it, added] = long_string_of_node_.try_emplace(v.v, StrId{});
  if (added) it->second = snap_.strings.intern(s);
  return it->second;
}

template <class W>
FrameId Builder::frame_of(ValueId v, const W& where) {
  if (auto it = frame_of_node_.find(v.v); it != frame_of_node_.end()) return it->second;
  need_dict(v, where);
  auto f = frame_.scan(g_, v);
  Frame fr;
  if (f.has(F_filename)) fr.filename = intern_str(f.v[F_filename], [&] { return where() + ".filename"; });
  if (f.has(F_name)) fr.name = intern_str(f.v[F_name], [&] { return where() + ".name"; });
  if (f.has(F_line)) fr.line = int_of(f.v[F_line], [&] { return where() + ".line"; });
  FrameId id = snap_.frames.intern(fr);
  frame_of_node_.emplace(v.v, id);
  return id;
}

template <class W>
StackId Builder::stack_of(ValueId list, const W& where) {
  auto items = list_of(list, where);
  if (items.empty()) return StackId{0};
  // The unpickler merges lists with identical items into one range, so the range
  // identifies the traceback: one lookup per reference, frames resolved once.
  auto [it, inserted] = stack_of_range_.try_emplace(g_.range_key(list), StackId{0});
  if (!inserted) return it->second;
  spend(items.size());
  tmp_frames_.clear();
  for (size_t i = 0; i < items.size(); ++i)
    tmp_frames_.push_back(frame_of(items[i], [&] { return where() + "[" + std::to_string(i) + "]"; }));
  it->second = snap_.stacks.intern(tmp_frames_);
  return it->second;
}

template <class W>
BlockState Builder::state_of(ValueId v, const W& where) {
  if (auto it = state_cache_.find(v.v); it != state_cache_.end()) return BlockState(it->second);
  std::string_view s = str_of(v, where);
  BlockState st;
  if (s == "active_allocated")
    st = BlockState::ActiveAllocated;
  else if (s == "active_pending_free" || s == "active_awaiting_free")
    st = BlockState::ActivePendingFree;
  else if (s == "inactive")
    st = BlockState::Inactive;
  else
    throw_at_path(where(), "unknown block state '" + std::string(s.substr(0, 60)) + "'");
  state_cache_.emplace(v.v, uint8_t(st));
  return st;
}

template <class W>
Action Builder::action_of(ValueId v, const W& where) {
  if (auto it = action_cache_.find(v.v); it != action_cache_.end()) {
    if (Action(it->second) == Action::Unknown) ++unknown_actions_[std::string(g_.bytes(v))];
    return Action(it->second);
  }
  std::string_view s = str_of(v, where);
  static const std::pair<std::string_view, Action> table[] = {{"alloc", Action::Alloc},
                                                              {"free_requested", Action::FreeRequested},
                                                              {"free_completed", Action::FreeCompleted},
                                                              {"segment_alloc", Action::SegmentAlloc},
                                                              {"segment_free", Action::SegmentFree},
                                                              {"segment_map", Action::SegmentMap},
                                                              {"segment_unmap", Action::SegmentUnmap},
                                                              {"snapshot", Action::Snapshot},
                                                              {"oom", Action::Oom},
                                                              {"free", Action::Free}};
  Action a = Action::Unknown;
  for (auto& [name, act] : table)
    if (s == name) a = act;
  if (a == Action::Unknown) ++unknown_actions_[std::string(s.substr(0, 60))];
  action_cache_.emplace(v.v, uint8_t(a));
  return a;
}

void Builder::segment(ValueId v, size_t si) {
  auto where = [&] { return "segments[" + std::to_string(si) + "]"; };
  auto at = [&](size_t f) { return [&, f] { return where() + "." + std::string(seg_.name(f)); }; };
  need_dict(v, where);
  spend(1);
  auto f = seg_.scan(g_, v);
  int64_t dev = f.has(S_device) ? int_of(f.v[S_device], at(S_device)) : 0;
  Device& d = device(dev, at(S_device)());
  if (!f.has(S_blocks)) throw_at_path(where(), "missing key 'blocks'");
  if (!f.has(S_total_size)) throw_at_path(where(), "missing key 'total_size'");
  Segment s;
  s.file_index = static_cast<uint32_t>(si);
  plain<Role::segment>(s, f, at);
  if (f.has(S_segment_type)) {
    std::string_view t = str_of(f.v[S_segment_type], at(S_segment_type));
    s.pool = t == "small" ? Pool::Small : t == "large" ? Pool::Large : Pool::Unknown;
  }
  if (f.has(S_segment_pool_id)) {
    auto ids = list_of(f.v[S_segment_pool_id], at(S_segment_pool_id));
    for (size_t i = 0; i < ids.size() && i < 2; ++i) s.pool_id[i] = int_of(ids[i], at(S_segment_pool_id));
  }
  if (f.has(S_frames)) s.stack = stack_of(f.v[S_frames], at(S_frames));

  auto blocks = list_of(f.v[S_blocks], at(S_blocks));
  spend(blocks.size());
  if (d.blocks.size() + blocks.size() > std::numeric_limits<uint32_t>::max()) throw_at_path(where(), "too many blocks");
  s.first_block = static_cast<uint32_t>(d.blocks.size());
  s.block_count = static_cast<uint32_t>(blocks.size());
  uint64_t cursor = s.address;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    auto bwhere = [&] { return where() + ".blocks[" + std::to_string(bi) + "]"; };
    auto bat = [&](size_t k) { return [&, k] { return bwhere() + "." + std::string(block_.name(k)); }; };
    need_dict(blocks[bi], bwhere);
    auto b = block_.scan(g_, blocks[bi]);
    Block blk;
    if (!b.has(B_size)) throw_at_path(bwhere(), "missing key 'size'");
    if (!b.has(B_state)) throw_at_path(bwhere(), "missing key 'state'");
    plain<Role::block>(blk, b, bat);
    blk.state = state_of(b.v[B_state], bat(B_state));
    if (b.has(B_address)) {
      blk.address = bits_of(b.v[B_address], bat(B_address));
    } else {
      blk.address = cursor;
      blk.address_derived = true;
    }
    cursor = blk.address + blk.size;
    blk.requested_size = blk.size;
    bool active = blk.is_active();
    if (b.has(B_requested_size)) {
      blk.requested_size = size_of(b.v[B_requested_size], bat(B_requested_size));
      blk.requested_known = true;
    }
    if (b.has(B_frames)) {
      if (active) blk.stack = stack_of(b.v[B_frames], bat(B_frames));
    } else if (b.has(B_history)) {
      // torch 1.13/2.0: the allocation that owns the block is history[0]
      snap_.legacy_history = true;
      auto hist = list_of(b.v[B_history], bat(B_history));
      if (!hist.empty() && active) {
        auto hwhere = [&] { return bwhere() + ".history[0]"; };
        need_dict(hist[0], hwhere);
        auto h = hist_.scan(g_, hist[0]);
        if (h.has(H_real_size) && !blk.requested_known) {
          blk.requested_size = size_of(h.v[H_real_size], [&] { return hwhere() + ".real_size"; });
          blk.requested_known = true;
        }
        if (h.has(H_frames)) blk.stack = stack_of(h.v[H_frames], [&] { return hwhere() + ".frames"; });
      }
    }
    d.blocks.push_back(blk);
  }
  d.segments.push_back(s);
}

void Builder::traces(ValueId v) {
  auto per_device = list_of(v, [] { return std::string("device_traces"); });
  for (size_t di = 0; di < per_device.size(); ++di) {
    auto dwhere = [&] { return "device_traces[" + std::to_string(di) + "]"; };
    if (g_.kind(per_device[di]) == Kind::None) continue;
    auto entries = list_of(per_device[di], dwhere);
    Device& d = device(static_cast<int64_t>(di), dwhere());
    spend(entries.size());
    d.trace.reserve(d.trace.size() + entries.size());
    for (size_t ei = 0; ei < entries.size(); ++ei) {
      auto where = [&] { return dwhere() + "[" + std::to_string(ei) + "]"; };
      auto at = [&](size_t k) { return [&, k] { return where() + "." + std::string(event_.name(k)); }; };
      need_dict(entries[ei], where);
      auto f = event_.scan(g_, entries[ei]);
      if (!f.has(E_action)) throw_at_path(where(), "missing key 'action'");
      TraceEvent e;
      e.action = action_of(f.v[E_action], at(E_action));
      if (f.has(E_addr)) e.addr = bits_of(f.v[E_addr], at(E_addr));
      if (f.has(E_size)) e.size = size_of(f.v[E_size], at(E_size));
      if (f.has(E_stream)) e.stream = bits_of(f.v[E_stream], at(E_stream));
      if (f.has(E_time_us)) e.time_us = int_of(f.v[E_time_us], at(E_time_us));
      if (f.has(E_frames)) e.stack = stack_of(f.v[E_frames], at(E_frames));
      if (e.action == Action::Oom) e.addr = f.has(E_device_free) ? size_of(f.v[E_device_free], at(E_device_free)) : 0;
      d.trace.push_back(e);
      if ((ei & 0xFFFF) == 0xFFFF) account();
    }
  }
}

void Builder::settings(ValueId v) {
  auto where = [] { return std::string("allocator_settings"); };
  auto at = [&](size_t k) { return [&, k] { return where() + "." + std::string(settings_.name(k)); }; };
  need_dict(v, where);
  auto f = settings_.scan(g_, v);
  AllocatorSettings& s = snap_.settings;
  s.present = true;
  plain<Role::settings>(s, f, at);
  if (f.has(A_max_split)) {
    ValueId m = f.v[A_max_split];
    // -1, or SIZE_MAX-like, means unlimited
    if (g_.kind(m) == Kind::Int && !g_.is_unsigned(m) && g_.as_int(m) > 0 && g_.as_int(m) < (int64_t{1} << 62))
      s.max_split_size = static_cast<uint64_t>(g_.as_int(m));
    else if (g_.kind(m) != Kind::Int && g_.kind(m) != Kind::BigInt)
      type_error(at(A_max_split)(), "int", m);
  }
  if (f.has(A_gc)) {
    ValueId m = f.v[A_gc];
    if (g_.kind(m) == Kind::Float) {
      // PyTorch accepts only a fraction in (0, 1), or 0 for off: NaN or an infinity is no
      // setting it can have written, and JSON output could not carry it.
      double g = g_.as_float(m);
      if (std::isnan(g)) throw_at_path(at(A_gc)(), "expected a finite number, got nan");
      if (std::isinf(g))
        throw_at_path(at(A_gc)(), g > 0 ? "expected a finite number, got inf" : "expected a finite number, got -inf");
      s.garbage_collection_threshold = g;
    } else
      s.garbage_collection_threshold = double(int_of(m, at(A_gc)));
  }
  if (f.has(A_roundup) && g_.kind(f.v[A_roundup]) == Kind::Dict) {
    auto items = g_.items(f.v[A_roundup]);
    for (size_t i = 0; i + 1 < items.size(); i += 2) {
      if (g_.kind(items[i]) != Kind::Str || g_.kind(items[i + 1]) != Kind::Int) continue;
      std::string key(g_.bytes(items[i]));
      char* end = nullptr;
      unsigned long long bucket = std::strtoull(key.c_str(), &end, 10);
      if (end == key.c_str() || *end != '\0') continue;
      s.roundup_power2_divisions.emplace_back(bucket, g_.as_uint(items[i + 1]));
    }
  }
}

void Builder::annotations(ValueId v) {
  auto list = list_of(v, [] { return std::string("external_annotations"); });
  spend(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    if (g_.kind(list[i]) != Kind::Dict) continue;  // free-form user data: take what fits
    auto f = ann_.scan(g_, list[i]);
    Annotation a;
    if (f.has(N_device) && g_.kind(f.v[N_device]) == Kind::Int) a.device = static_cast<int>(g_.as_int(f.v[N_device]));
    if (f.has(N_time_us) && g_.kind(f.v[N_time_us]) == Kind::Int) a.time_us = g_.as_int(f.v[N_time_us]);
    if (f.has(N_name) && g_.kind(f.v[N_name]) == Kind::Str) a.name = snap_.strings.intern(g_.bytes(f.v[N_name]));
    if (f.has(N_stage) && g_.kind(f.v[N_stage]) == Kind::Str) a.stage = snap_.strings.intern(g_.bytes(f.v[N_stage]));
    snap_.annotations.push_back(a);
  }
}

Snapshot Builder::run() {
  ValueId root = g_.root();
  ValueId segments{};
  bool have_segments = false;
  if (g_.kind(root) == Kind::List) {
    snap_.form = Form::List;
    segments = root;
    have_segments = true;
  } else if (g_.kind(root) == Kind::Dict) {
    snap_.form = Form::Dict;
    auto f = top_.scan(g_, root);
    if (!f.has(T_segments)) {
      std::string keys;
      auto items = g_.items(root);
      for (size_t i = 0; i + 1 < items.size() && i < 16; i += 2)
        if (g_.kind(items[i]) == Kind::Str)
          keys += (keys.empty() ? "" : ", ") + std::string(g_.bytes(items[i]).substr(0, 40));
      throw InputError("", "not a memory snapshot: the top-level dict has no 'segments' key" +
                               (keys.empty() ? std::string() : " (its keys: " + keys + ")"));
    }
    segments = f.v[T_segments];
    have_segments = true;
    if (f.has(T_device_traces)) traces(f.v[T_device_traces]);
    if (f.has(T_allocator_settings)) settings(f.v[T_allocator_settings]);
    if (f.has(T_external_annotations)) annotations(f.v[T_external_annotations]);
  } else {
    throw InputError("", std::string("not a memory snapshot: the top-level object is of type ") +
                             pickle::kind_name(g_.kind(root)) + ", not a dict or a list of segments");
  }
  if (have_segments) {
    auto segs = list_of(segments, [] { return std::string("segments"); });
    spend(segs.size());
    for (size_t i = 0; i < segs.size(); ++i) segment(segs[i], i);
  }
  for (auto& [name, count] : unknown_actions_)
    snap_.warnings.push_back(std::to_string(count) + " trace entries with unknown action '" + name +
                             "' were kept but not interpreted");
  snap_.devices.reserve(devices_.size());
  for (auto& [index, d] : devices_) snap_.devices.push_back(std::move(d));
  for (std::string& w : validate(snap_)) snap_.warnings.push_back(std::move(w));
  if (budget_) {
    uint64_t bytes = snap_.tables_bytes();
    for (const Device& d : snap_.devices) bytes += d.memory_bytes();
    budget_->set(util::Account::Model, bytes);
  }
  return std::move(snap_);
}

}  // namespace

Snapshot build_snapshot(const pickle::ValueGraph& graph, const BuildOptions& options) {
  Builder b(graph, options);
  return b.run();
}

}  // namespace memsnap::snapshot
