// ValueGraph storage and the canonical dump used by tests.
#include "memsnap/pickle/value.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "memsnap/pickle/scanner.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/hash.hpp"

namespace memsnap::pickle {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::BigInt: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::ByteArray: return "bytearray";
    case Kind::List: return "list";
    case Kind::Tuple: return "tuple";
    case Kind::Dict: return "dict";
    case Kind::Set: return "set";
    case Kind::FrozenSet: return "frozenset";
  }
  return "?";
}

namespace {
constexpr uint64_t kMaxItems = std::numeric_limits<uint32_t>::max();
uint32_t start_of(const Value& v) {
  return static_cast<uint32_t>(v.x);
}
uint32_t cap_of(const Value& v) {
  return static_cast<uint32_t>(v.x >> 32);
}
void set_range(Value& v, uint64_t start, uint64_t cap) {
  v.x = start | (cap << 32);
}
}  // namespace

ValueGraph::ValueGraph(std::span<const uint8_t> input) : seed_(util::hash_seed()), input_(input) {
  // Never presized from the input's size: arrays grow with what is parsed (realloc, no copy).
  nodes_.reserve(1024);
  items_.reserve(1024);
  nodes_.push_back(Value{Kind::None});
  nodes_.push_back(Value{Kind::Bool, 0, 0, 0, 0});
  nodes_.push_back(Value{Kind::Bool, 0, 0, 0, 1});
  for (int64_t i = 0; i < kSmallInts; ++i) nodes_.push_back(Value{Kind::Int, 0, 0, 0, static_cast<uint64_t>(i)});
}

void ValueGraph::account(uint64_t growing) const {
  if (budget_) budget_->set(util::Account::Parse, memory_bytes() + growing + (extra_ ? *extra_ : 0));
}

void ValueGraph::too_many() {
  throw InputError("", "input describes more than 2^32 objects");
}

ValueId ValueGraph::make_uint(uint64_t v) {
  uint8_t f = v > uint64_t(std::numeric_limits<int64_t>::max()) ? Value::kUnsigned : 0;
  return push(Value{Kind::Int, f, 0, 0, v});
}

ValueId ValueGraph::make_int_bytes(const uint8_t* p, size_t len, uint64_t off, bool side) {
  DecodedLong d = decode_long(p, len);
  switch (d.kind) {
    case DecodedLong::Signed: return make_int(static_cast<int64_t>(d.bits));
    case DecodedLong::Unsigned: return make_uint(d.bits);
    case DecodedLong::Big: break;
  }
  if (d.bytes > kMaxItems) throw InputError("", "integer too large");
  return push(
      Value{Kind::BigInt, static_cast<uint8_t>(side ? Value::kSide : 0), 0, static_cast<uint32_t>(d.bytes), off});
}

ValueId ValueGraph::make_float(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  return push(Value{Kind::Float, 0, 0, 0, bits});
}

double ValueGraph::as_float(ValueId id) const {
  double d;
  std::memcpy(&d, &nodes_[id.v].x, 8);
  return d;
}

ValueId ValueGraph::make_view(Kind k, uint64_t offset, uint64_t len) {
  if (len > kMaxItems) throw InputError("", "string longer than 4 GiB");
  return push(Value{k, 0, 0, static_cast<uint32_t>(len), offset});
}

ValueId ValueGraph::make_side(Kind k, std::string_view b) {
  if (b.size() > kMaxItems) throw InputError("", "string longer than 4 GiB");
  uint64_t off = side_.size();
  if (side_.size() + b.size() > side_.capacity()) account(side_.size() + b.size());
  side_.append(b);
  return push(Value{k, Value::kSide, 0, static_cast<uint32_t>(b.size()), off});
}

std::string_view ValueGraph::bytes(ValueId id) const {
  const Value& v = nodes_[id.v];
  if (v.flags & Value::kSide) return std::string_view(side_.data() + v.x, v.n);
  return std::string_view(reinterpret_cast<const char*>(input_.data()) + v.x, v.n);
}

bool ValueGraph::big_negative(ValueId id) const {
  std::string_view b = bytes(id);
  return !b.empty() && (static_cast<uint8_t>(b.back()) & 0x80);
}

std::span<const ValueId> ValueGraph::items(ValueId id) const {
  const Value& v = nodes_[id.v];
  return std::span<const ValueId>(items_.data() + start_of(v), v.n);
}

ValueId ValueGraph::make_container(Kind k) {
  Value v{k, 0, 0, 0, 0};
  set_range(v, items_.size(), 0);
  return push(v);
}

ValueId ValueGraph::make_container(Kind k, std::span<const ValueId> items) {
  if (items_.size() + items.size() > kMaxItems) throw InputError("", "input describes more than 2^32 items");
  Value v{k, Value::kFrozen, 0, static_cast<uint32_t>(items.size()), 0};
  size_t start = items_.size();
  set_range(v, start, items.size());
  if (start + items.size() > items_.capacity()) account((start + items.size()) * sizeof(ValueId));
  items_.resize_uninitialized(start + items.size());
  if (!items.empty()) std::memcpy(items_.data() + start, items.data(), items.size() * sizeof(ValueId));
  return push(v);
}

void ValueGraph::append(ValueId c, std::span<const ValueId> add) {
  if (add.empty()) return;
  Value& v = nodes_[c.v];
  uint64_t start = start_of(v), cap = cap_of(v), n = v.n, k = add.size();
  if (n + k > kMaxItems || items_.size() + 2 * (n + k) > kMaxItems)
    throw InputError("", "input describes more than 2^32 items");
  bool frozen = v.flags & Value::kFrozen;
  if (!frozen && start + cap == items_.size()) {
    // The range ends the array: grow it in place.
    if (start + n + k > items_.capacity()) account((start + n + k) * sizeof(ValueId));
    items_.resize_uninitialized(start + n + k);
    std::memcpy(items_.data() + start + n, add.data(), k * sizeof(ValueId));
    set_range(v, start, n + k);
  } else if (!frozen && n + k <= cap) {
    std::memcpy(items_.data() + start + n, add.data(), k * sizeof(ValueId));
  } else {
    // Move to the end with room to double, so a container that keeps receiving
    // batches between other objects is copied O(log n) times.
    uint64_t ncap = std::max<uint64_t>(8, 2 * (n + k));
    uint64_t nstart = items_.size();
    if (nstart + ncap > items_.capacity()) account((nstart + ncap) * sizeof(ValueId));
    items_.resize_uninitialized(nstart + ncap);
    std::memcpy(items_.data() + nstart, items_.data() + start, n * sizeof(ValueId));
    std::memcpy(items_.data() + nstart + n, add.data(), k * sizeof(ValueId));
    set_range(v, nstart, ncap);
    v.flags &= static_cast<uint8_t>(~Value::kFrozen);
  }
  v.n = static_cast<uint32_t>(n + k);
}

void ValueGraph::share_if_seen(ValueId c) {
  Value& v = nodes_[c.v];
  constexpr uint32_t kMaxShared = 4096;
  if (v.n == 0 || v.n > kMaxShared || (v.flags & Value::kFrozen)) return;
  uint64_t start = start_of(v);
  if (start + v.n != items_.size()) return;
  const ValueId* p = items_.data() + start;
  uint64_t h = util::hash_bytes(p, v.n * sizeof(ValueId), seed_);  // seeded: crafted lists cannot collide
  if (h == 0) h = 1;                                               // 0 marks an empty slot
  if (seen_used_ * 2 >= seen_.size()) {                            // grow and rehash
    std::vector<SeenRange> old(std::max<size_t>(1024, seen_.size() * 2), SeenRange{0, 0, 0});
    old.swap(seen_);
    for (const SeenRange& r : old) {
      if (r.hash == 0) continue;
      size_t i = r.hash & (seen_.size() - 1);
      while (seen_[i].hash != 0) i = (i + 1) & (seen_.size() - 1);
      seen_[i] = r;
    }
  }
  size_t mask = seen_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    SeenRange& r = seen_[i];
    if (r.hash == 0) {
      // A registered range must never change again: freeze it, so that a later
      // batch for this list moves the list instead of writing after these items,
      // and the items can never be truncated away (they no longer end a growable range).
      r = SeenRange{h, static_cast<uint32_t>(start), v.n};
      v.flags |= Value::kFrozen;
      ++seen_used_;
      return;
    }
    // Only a range wholly below this one can be shared: this one is given back.
    if (r.hash == h && r.n == v.n && r.start + r.n <= start &&
        std::memcmp(p, items_.data() + r.start, v.n * sizeof(ValueId)) == 0) {
      set_range(v, r.start, v.n);
      v.flags |= Value::kFrozen;
      items_.truncate(start);
      return;
    }
  }
}

size_t ValueGraph::memory_bytes() const {
  return nodes_.capacity() * sizeof(Value) + items_.capacity() * sizeof(ValueId) + side_.capacity() +
         seen_.capacity() * sizeof(SeenRange);
}

// ---- dump -------------------------------------------------------------------

namespace {

void escape_bytes(std::string& out, std::string_view b) {
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : b) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
}

// Python's hex(v) of a two's-complement little-endian integer.
std::string big_hex(std::string_view le) {
  std::vector<uint8_t> mag(le.begin(), le.end());
  bool neg = !mag.empty() && (mag.back() & 0x80);
  if (neg) {  // negate: invert and add one
    unsigned carry = 1;
    for (auto& b : mag) {
      unsigned s = static_cast<uint8_t>(~b) + carry;
      b = static_cast<uint8_t>(s);
      carry = s >> 8;
    }
  }
  std::string out = neg ? "-0x" : "0x";
  static const char* hex = "0123456789abcdef";
  bool started = false;
  for (size_t i = mag.size(); i-- > 0;) {
    for (int half : {4, 0}) {
      int d = (mag[i] >> half) & 15;
      if (d == 0 && !started) continue;
      started = true;
      out.push_back(hex[d]);
    }
  }
  if (!started) out.push_back('0');
  return out;
}

void dump_into(const ValueGraph& g, ValueId id, std::string& out, int depth) {
  if (depth > 200 || out.size() > (size_t{1} << 24)) {
    out += "...";
    return;
  }
  switch (g.kind(id)) {
    case Kind::None: out += "None"; return;
    case Kind::Bool: out += g.as_bool(id) ? "True" : "False"; return;
    case Kind::Int: out += g.is_unsigned(id) ? std::to_string(g.as_uint(id)) : std::to_string(g.as_int(id)); return;
    case Kind::BigInt: out += big_hex(g.bytes(id)); return;
    case Kind::Float: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", g.as_float(id));
      out += buf;
      return;
    }
    case Kind::Str:
      out += '"';
      escape_bytes(out, g.bytes(id));
      out += '"';
      return;
    case Kind::Bytes:
    case Kind::ByteArray:
      out += "b\"";
      escape_bytes(out, g.bytes(id));
      out += '"';
      return;
    case Kind::List:
    case Kind::Tuple: {
      bool list = g.kind(id) == Kind::List;
      out += list ? '[' : '(';
      bool first = true;
      for (ValueId c : g.items(id)) {
        if (!first) out += ", ";
        first = false;
        dump_into(g, c, out, depth + 1);
      }
      out += list ? ']' : ')';
      return;
    }
    case Kind::Dict: {
      out += '{';
      auto it = g.items(id);
      for (size_t i = 0; i + 1 < it.size(); i += 2) {
        if (i) out += ", ";
        dump_into(g, it[i], out, depth + 1);
        out += ": ";
        dump_into(g, it[i + 1], out, depth + 1);
      }
      out += '}';
      return;
    }
    case Kind::Set:
    case Kind::FrozenSet: {
      std::vector<std::string> parts;
      for (ValueId c : g.items(id)) {
        std::string s;
        dump_into(g, c, s, depth + 1);
        parts.push_back(std::move(s));
      }
      std::sort(parts.begin(), parts.end());
      parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
      out += g.kind(id) == Kind::Set ? "set{" : "frozenset{";
      for (size_t i = 0; i < parts.size(); ++i) {
        if (i) out += ", ";
        out += parts[i];
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string dump(const ValueGraph& g, ValueId id) {
  std::string out;
  dump_into(g, id, out, 0);
  return out;
}

}  // namespace memsnap::pickle
