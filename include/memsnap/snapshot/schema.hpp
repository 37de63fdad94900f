// The snapshot schema, written once: every key memsnap reads, the dict it belongs to, its
// type, and (for a plain field) the model member it fills.
//
// Everything that knows the schema is made from this table: the general builder's walk
// (builder.cpp: the keys each dict is scanned for), the fast path's roles and field slots
// (fast/roles.hpp: which container a key's value is, which slot it fills), and the
// exporter's words (report/export.cpp). A plain field (a member pointer in the last
// column) is read by both parsers and written by the exporter with no code of its own:
//
//   1. add its member to the model struct (e.g. `std::optional<uint64_t> foo;` in Segment),
//   2. add a row: X(segment, "foo", Size, &Segment::foo).
//
// A field whose reading is more than a typed copy (a block's state, an event's action, the
// frames lists, segment_type, ...) has nullptr there and is read by hand in both parsers;
// the differential test (tests/unit/test_fast_build.cpp) compares the two paths' whole
// Snapshots, so a field one of them fills and the other drops fails it. Trace events are
// stored as columns (model.hpp, Trace), so an event field needs a column too: event rows
// are all read by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::snapshot::schema {

/// The dicts of a snapshot, by where they sit.
enum class Role : uint8_t { top, segment, block, history, frame, event, settings, annotation, kCount };

/// What a key's value is. Size: an int >= 0; Bits: any 64-bit pattern (addresses, streams);
/// Int: a signed 64-bit int; Number: an int or a float; Word: a string from kValues;
/// Tuple: a tuple or list of ints; Stack: a frames list; Items: a list of dicts; Dict: a
/// dict; Map: a dict of arbitrary str keys.
enum class Type : uint8_t { Size, Bits, Int, Bool, Str, Number, Word, Tuple, Stack, Items, Dict, Map };

// clang-format off
// X(role, key, type, member): member is the model field a plain row fills, or nullptr for a
// field read by hand. Within a role, the rows' order is the order the exporter writes them.
#define MEMSNAP_SCHEMA(X) \
  X(top, "segments", Items, nullptr) \
  X(top, "device_traces", Items, nullptr) \
  X(top, "allocator_settings", Dict, nullptr) \
  X(top, "external_annotations", Items, nullptr) \
  X(segment, "device", Int, nullptr) \
  X(segment, "address", Bits, &Segment::address) \
  X(segment, "total_size", Size, &Segment::total_size) \
  X(segment, "allocated_size", Size, &Segment::stated_allocated) \
  X(segment, "active_size", Size, &Segment::stated_active) \
  X(segment, "requested_size", Size, &Segment::stated_requested) \
  X(segment, "stream", Bits, &Segment::stream) \
  X(segment, "segment_type", Word, nullptr) \
  X(segment, "segment_pool_id", Tuple, nullptr) \
  X(segment, "is_expandable", Bool, &Segment::expandable) \
  X(segment, "frames", Stack, nullptr) \
  X(segment, "blocks", Items, nullptr) \
  X(block, "address", Bits, nullptr) \
  X(block, "size", Size, &Block::size) \
  X(block, "requested_size", Size, nullptr) \
  X(block, "state", Word, nullptr) \
  X(block, "frames", Stack, nullptr) \
  X(block, "history", Items, nullptr) \
  X(history, "real_size", Size, nullptr) \
  X(history, "frames", Stack, nullptr) \
  X(frame, "filename", Str, nullptr) \
  X(frame, "line", Int, nullptr) \
  X(frame, "name", Str, nullptr) \
  X(event, "action", Word, nullptr) \
  X(event, "addr", Bits, nullptr) \
  X(event, "size", Size, nullptr) \
  X(event, "stream", Bits, nullptr) \
  X(event, "frames", Stack, nullptr) \
  X(event, "time_us", Int, nullptr) \
  X(event, "device_free", Size, nullptr) \
  X(settings, "PYTORCH_CUDA_ALLOC_CONF", Str, &AllocatorSettings::alloc_conf) \
  X(settings, "max_split_size", Int, nullptr) \
  X(settings, "garbage_collection_threshold", Number, nullptr) \
  X(settings, "expandable_segments", Bool, &AllocatorSettings::expandable_segments) \
  X(settings, "roundup_power2_divisions", Map, nullptr) \
  X(settings, "trace_alloc_max_entries", Int, &AllocatorSettings::trace_alloc_max_entries) \
  X(settings, "trace_alloc_overflowed", Bool, &AllocatorSettings::trace_alloc_overflowed) \
  X(annotation, "device", Int, nullptr) \
  X(annotation, "time_us", Int, nullptr) \
  X(annotation, "name", Str, nullptr) \
  X(annotation, "stage", Str, nullptr)
// clang-format on

/// The string values the schema knows (Type::Word), after the keys in the word list.
inline constexpr std::string_view kValues[] = {"small",
                                               "large",
                                               "active_allocated",
                                               "active_pending_free",
                                               "active_awaiting_free",
                                               "inactive",
                                               "alloc",
                                               "free_requested",
                                               "free_completed",
                                               "segment_alloc",
                                               "segment_free",
                                               "segment_map",
                                               "segment_unmap",
                                               "snapshot",
                                               "oom",
                                               "free",
                                               "unknown"};

struct Field {
  Role role;
  std::string_view key;
  Type type;
  bool plain;  // read and written through its member pointer
};

inline constexpr Field kFields[] = {
#define MEMSNAP_SCHEMA_ROW(role, key, type, member) \
  Field{Role::role, key, Type::type, !std::is_null_pointer_v<decltype(member)>},
    MEMSNAP_SCHEMA(MEMSNAP_SCHEMA_ROW)
#undef MEMSNAP_SCHEMA_ROW
};
inline constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

/// A word of the schema: a distinct key or a value, numbered from 1 (0 is no word). Ids
/// are small (they index the fast path's tables), so the schema holds at most 255. A plain
/// byte rather than an enum: switch statements take `case "alloc"_w:` labels.
using Word = uint8_t;
inline constexpr Word kNoWord = 0;

namespace detail {
constexpr size_t kMaxWords = kFieldCount + std::size(kValues) + 1;
// Words as (source, index) pairs into kFields and kValues: a table of string_views built at
// compile time and read by another constant's constructor trips GCC 12 ("modification of
// ... is not a constant expression").
struct WordList {
  uint16_t from[kMaxWords] = {};  // kFieldCount + i: kValues[i]; else kFields[from].key
  size_t size = 1;                // entry 0 is "" (Word::none)
  constexpr std::string_view operator[](size_t i) const {
    if (i == 0) return {};
    return from[i] >= kFieldCount ? kValues[from[i] - kFieldCount] : kFields[from[i]].key;
  }
  constexpr void add(uint16_t source) {
    std::string_view s = source >= kFieldCount ? kValues[source - kFieldCount] : kFields[source].key;
    for (size_t i = 1; i < size; ++i)
      if ((*this)[i] == s) return;
    from[size++] = source;
  }
};
constexpr WordList make_words() {
  WordList w;
  for (size_t i = 0; i < kFieldCount + std::size(kValues); ++i) w.add(uint16_t(i));
  return w;
}
}  // namespace detail

/// Every word, by id: the keys in the table's order (each once), then kValues.
inline constexpr detail::WordList kWords = detail::make_words();
static_assert(kWords.size <= 256, "word ids are one byte");
inline constexpr size_t kWordCount = kWords.size;

// clang 14 calls a consteval literal operator used in a template at run time, and finds no
// definition (the libFuzzer build): there the two are constexpr, checked by GCC's builds.
#if defined(__clang__) && __clang_major__ < 15
#define MEMSNAP_CONSTEVAL constexpr
#else
#define MEMSNAP_CONSTEVAL consteval
#endif
/// The id of a word; a word the schema does not hold does not compile.
MEMSNAP_CONSTEVAL Word word(std::string_view s) {
  for (size_t i = 1; i < kWords.size; ++i)
    if (kWords[i] == s) return Word(i);
  throw "not a word of the snapshot schema (schema.hpp)";
}
/// `"alloc"_w` for word("alloc").
MEMSNAP_CONSTEVAL Word operator""_w(const char* s, size_t n) {
  return word(std::string_view(s, n));
}
constexpr std::string_view text(Word w) {
  return kWords[size_t(w)];
}

/// The number of fields a role reads, and a field's slot within its role (the row's
/// position among the role's rows), or -1 when the role has no such key.
constexpr int field_count(Role r) {
  int n = 0;
  for (const Field& f : kFields) n += f.role == r;
  return n;
}
constexpr int field(Role r, std::string_view key) {
  int n = 0;
  for (const Field& f : kFields) {
    if (f.role != r) continue;
    if (f.key == key) return n;
    ++n;
  }
  return -1;
}
/// field() that must exist: a key the role does not have does not compile.
consteval int slot(Role r, std::string_view key) {
  int i = field(r, key);
  if (i < 0) throw "the role has no such key (schema.hpp)";
  return i;
}
/// The row of a role's slot.
constexpr const Field& row(Role r, int slot) {
  int n = 0;
  for (const Field& f : kFields) {
    if (f.role != r) continue;
    if (n++ == slot) return f;
  }
  return kFields[0];  // not reached for a slot < field_count(r)
}
static_assert(field_count(Role::segment) <= 32 && field_count(Role::block) <= 32 && field_count(Role::event) <= 32 &&
                  field_count(Role::settings) <= 32,
              "a dict's fields are a 32-bit mask");

/// The model struct a dict role's plain fields fill (void: none).
template <Role R>
struct ObjectOf {
  using type = void;
};
template <>
struct ObjectOf<Role::segment> {
  using type = Segment;
};
template <>
struct ObjectOf<Role::block> {
  using type = Block;
};
template <>
struct ObjectOf<Role::settings> {
  using type = AllocatorSettings;
};

namespace detail {
template <class Obj, class M>
struct IsMemberOf : std::false_type {};
template <class Obj, class T>
struct IsMemberOf<Obj, T Obj::*> : std::true_type {};
}  // namespace detail

/// Calls f(word, type, member) for each row of role R, in table order; member is the row's
/// member pointer into ObjectOf<R>, or nullptr.
template <Role R, class F>
void for_each_row(F&& f) {
#define MEMSNAP_SCHEMA_VISIT(role, key, type, member) \
  if constexpr (Role::role == R) f(word(key), Type::type, member);
  MEMSNAP_SCHEMA(MEMSNAP_SCHEMA_VISIT)
#undef MEMSNAP_SCHEMA_VISIT
}

/// Calls f(slot, type, key, member) for each plain row of role R, in table order, with the
/// row's slot in R and its member pointer into ObjectOf<R>.
template <Role R, class F>
void for_each_plain(F&& f) {
  using Obj = typename ObjectOf<R>::type;
  int slot = 0;
  for_each_row<R>([&](Word key, Type type, auto member) {
    if constexpr (detail::IsMemberOf<Obj, decltype(member)>::value) f(slot, type, text(key), member);
    ++slot;
  });
}

/// The word an event's action or a block's state is written as (schema.cpp).
Word word_of(Action a);
Word word_of(BlockState s);

/// The value types a plain member may have, and what a plain field's reader converts to.
template <class T>
struct Plain {
  using value = T;
};
template <class T>
struct Plain<std::optional<T>> {
  using value = T;
};

}  // namespace memsnap::snapshot::schema
