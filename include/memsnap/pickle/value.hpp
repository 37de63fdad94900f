// Value graph: the plain data a pickle (or a JSON rendering) describes, as 16-byte nodes in one arena.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/util/hash.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::pickle {

enum class Kind : uint8_t { None, Bool, Int, BigInt, Float, Str, Bytes, ByteArray, List, Tuple, Dict, Set, FrozenSet };

/// Python-style type name for messages ("int", "str", "dict", ...).
const char* kind_name(Kind k);

/// Index of a node in a ValueGraph. Shared objects (memo references) are the same id.
struct ValueId {
  uint32_t v;  // no initializer: keeps the type trivial, so item arrays copy with memmove
  friend bool operator==(ValueId a, ValueId b) { return a.v == b.v; }
};

/// One node. Containers keep their items as a range of the graph's item array
/// (dicts as key, value, key, value, ...); strings and bytes are views into
/// the input or into the graph's side buffer.
struct Value {
  Kind kind = Kind::None;
  uint8_t flags = 0;
  uint16_t spare = 0;
  uint32_t n = 0;  // items in a container, bytes in a string, bytes of a BigInt
  uint64_t x = 0;  // Int/Bool: value bits; Float: double bits; Str/Bytes/BigInt: offset;
                   // containers: start (low 32 bits) | capacity (high 32 bits)

  static constexpr uint8_t kUnsigned = 1;  // Int holds a uint64 >= 2^63
  static constexpr uint8_t kSide = 2;      // bytes live in the side buffer, not the input
  static constexpr uint8_t kFrozen = 4;    // item range is shared or final: copy before growing
};
static_assert(sizeof(Value) == 16);

/// The arena. Built by the unpickler or the JSON reader; read by the snapshot builder.
class ValueGraph {
 public:
  explicit ValueGraph(std::span<const uint8_t> input = {});

  // ---- reading ------------------------------------------------------------
  ValueId root() const { return root_; }
  const Value& at(ValueId id) const { return nodes_[id.v]; }
  Kind kind(ValueId id) const { return nodes_[id.v].kind; }
  size_t size() const { return nodes_.size(); }

  bool as_bool(ValueId id) const { return nodes_[id.v].x != 0; }
  /// Int value as int64 (a uint64 above INT64_MAX wraps; check is_unsigned).
  int64_t as_int(ValueId id) const { return static_cast<int64_t>(nodes_[id.v].x); }
  uint64_t as_uint(ValueId id) const { return nodes_[id.v].x; }
  bool is_unsigned(ValueId id) const { return nodes_[id.v].flags & Value::kUnsigned; }
  double as_float(ValueId id) const;
  /// Str / Bytes / ByteArray contents; BigInt two's-complement little-endian bytes.
  std::string_view bytes(ValueId id) const;
  std::span<const ValueId> items(ValueId id) const;
  /// Sign of a BigInt (true when negative).
  bool big_negative(ValueId id) const;

  // ---- building -------------------------------------------------------------
  ValueId make_none() const { return ValueId{0}; }
  ValueId make_bool(bool b) const { return ValueId{b ? 2u : 1u}; }
  ValueId make_int(int64_t v) {
    if (v >= 0 && v < kSmallInts) return ValueId{kFirstSmallInt + static_cast<uint32_t>(v)};
    return push(Value{Kind::Int, 0, 0, 0, static_cast<uint64_t>(v)});
  }
  ValueId make_uint(uint64_t v);
  /// Two's-complement little-endian integer of any length at input offset `off`
  /// (or in the side buffer when `side`); normalised to Int when it fits 64 bits.
  ValueId make_int_bytes(const uint8_t* p, size_t len, uint64_t off, bool side);
  ValueId make_float(double d);
  ValueId make_view(Kind k, uint64_t offset, uint64_t len);        // into the input
  ValueId make_side(Kind k, std::string_view bytes);               // copied to the side buffer
  ValueId make_container(Kind k);                                  // empty, growable
  ValueId make_container(Kind k, std::span<const ValueId> items);  // final
  /// Appends items to a List/Dict/Set in amortised O(1) per item.
  void append(ValueId container, std::span<const ValueId> items);
  /// Called when a list has received a batch: if its items end the item array and
  /// the same item sequence was seen before, the list shares that range and the
  /// space is given back. Real snapshots repeat each traceback thousands of times.
  /// Invariant: every range the table remembers is frozen (never written or
  /// truncated again), so a list that shares it always reads what the pickle said.
  void share_if_seen(ValueId list);
  /// Identity of a container's item range: equal for lists that share_if_seen merged.
  uint64_t range_key(ValueId id) const { return (nodes_[id.v].x & 0xFFFFFFFFu) | (uint64_t(nodes_[id.v].n) << 32); }
  void set_root(ValueId id) { root_ = id; }
  /// Bytes of memory the graph holds (for diagnostics and benchmarks).
  size_t memory_bytes() const;
  /// Counts the graph (plus *extra, the builder's own tables) as util::Account::Parse
  /// every time an array grows; growth past the bound throws InputError.
  void set_budget(util::MemoryBudget* budget, const uint64_t* extra = nullptr) {
    budget_ = budget;
    extra_ = extra;
  }
  /// Re-checks the bound now (after a caller's own tables grew).
  void account(uint64_t growing = 0) const;

 private:
  static constexpr uint32_t kFirstSmallInt = 3;  // after None, False, True
  static constexpr int64_t kSmallInts = 256;
  ValueId push(const Value& v) {
    if (nodes_.size() == nodes_.capacity()) [[unlikely]] {
      if (nodes_.size() >= kMaxNodes) too_many();
      account(std::max<size_t>(64, nodes_.capacity()) * sizeof(Value));
    }
    nodes_.push_back(v);
    return ValueId{static_cast<uint32_t>(nodes_.size() - 1)};
  }
  [[noreturn, gnu::cold]] static void too_many();
  static constexpr size_t kMaxNodes = 0xFFFFFFF0u;

  struct SeenRange {
    uint64_t hash;
    uint32_t start, n;
  };
  std::vector<SeenRange> seen_;  // open addressing, power-of-two size, frozen ranges only
  size_t seen_used_ = 0;
  uint64_t seed_;

  std::span<const uint8_t> input_;
  util::PodBuffer<Value> nodes_;
  util::PodBuffer<ValueId> items_;
  std::string side_;
  ValueId root_{0};
  util::MemoryBudget* budget_ = nullptr;
  const uint64_t* extra_ = nullptr;
};

/// One-line canonical rendering used by tests (see testdata/pickle/*.expected):
/// None, True, 12, 0x1f (ints outside int64/uint64), %.17g floats, "escaped" strings,
/// b"..." bytes, [..], (..), {k: v}, set{sorted}, frozenset{sorted}.
std::string dump(const ValueGraph& g, ValueId id);

}  // namespace memsnap::pickle
