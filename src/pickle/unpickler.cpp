// The unpickler: one switch in one loop over the input span, no recursion, no code execution.
//
// Semantics follow CPython's Modules/_pickle.c for every opcode that builds plain
// data. Objects are nodes in a ValueGraph; a memo reference pushes the id of the
// node it names, so shared objects stay shared and a GET costs one push.
// Every read is preceded by a bounds check against the bytes actually left, so
// a length field can never make us allocate more than the input justifies.
#include "memsnap/pickle/unpickler.hpp"

#include <charconv>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "memsnap/pickle/opcodes.hpp"
#include "memsnap/pickle/scanner.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/hash.hpp"

namespace memsnap::pickle {

namespace {

constexpr uint32_t kUnset = 0xFFFFFFFFu;
constexpr size_t kMaxDecimalDigits = 4300;  // CPython's int() limit for decimal strings

// The value stack: hot operations inline to a compare and a store.
class ValueStack {
 public:
  explicit ValueStack(uint64_t limit) : limit_(limit) { buf_.reserve(std::min<uint64_t>(1024, limit)); }
  size_t size() const { return buf_.size(); }
  /// Returns false when the stack would exceed its limit.
  bool push_back(ValueId v) {
    if (buf_.size() == buf_.capacity()) [[unlikely]] {
      if (buf_.capacity() >= limit_) return false;
      buf_.reserve(std::min<uint64_t>(limit_, buf_.capacity() * 2));
    }
    buf_.push_back(v);
    return true;
  }
  void pop_back() { buf_.truncate(buf_.size() - 1); }
  ValueId& back() { return buf_[buf_.size() - 1]; }
  void resize(size_t m) { buf_.truncate(m); }  // only ever shrinks
  const ValueId* data() const { return buf_.data(); }
  const ValueId* end() const { return buf_.data() + buf_.size(); }
  ValueId operator[](size_t i) const { return buf_[i]; }

 private:
  util::PodBuffer<ValueId> buf_;
  uint64_t limit_;
};

class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> in, const Limits& limits)
      : begin_(in.data()),
        p_(in.data()),
        end_(in.data() + in.size()),
        limits_(limits),
        g_(in),
        stack_(limits.max_stack),
        ticker_(&limits_.progress, in.size()) {
    g_.set_budget(limits.budget, &extra_bytes_);
  }

  ValueGraph run(PickleInfo* info);

 private:
  // ---- errors -------------------------------------------------------------
  [[noreturn, gnu::cold, gnu::noinline]] void fail(const std::string& msg) const {
    throw_at_offset(uint64_t(op_at_ - begin_), msg);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void truncated(uint64_t need) const {
    fail(std::string("truncated ") + opcode_name(opcode_) + " (needs " + std::to_string(need) + " bytes, " +
         std::to_string(uint64_t(end_ - p_)) + " left)");
  }
  [[noreturn, gnu::cold, gnu::noinline]] void underflow() const {
    fail(std::string(opcode_name(opcode_)) + ": stack underflow (not enough values above the last MARK)");
  }

  // ---- reading ------------------------------------------------------------
  [[gnu::always_inline]] inline void need(uint64_t n) const {
    if (uint64_t(end_ - p_) < n) truncated(n);
  }
  template <class T>
  [[gnu::always_inline]] inline T read_le() {
    need(sizeof(T));
    T v = Scanner::le<T>(p_);
    p_ += sizeof(T);
    return v;
  }
  // A newline-terminated argument (protocol 0); returns it without the newline.
  std::string_view read_line() {
    const void* nl = std::memchr(p_, '\n', size_t(end_ - p_));
    if (nl == nullptr) fail(std::string("truncated ") + opcode_name(opcode_) + " (no end of line)");
    std::string_view s(reinterpret_cast<const char*>(p_), size_t(static_cast<const uint8_t*>(nl) - p_));
    p_ = static_cast<const uint8_t*>(nl) + 1;
    return s;
  }
  uint64_t offset(const uint8_t* p) const { return uint64_t(p - begin_); }

  // ---- stack --------------------------------------------------------------
  [[gnu::always_inline]] inline size_t fence() const { return fence_; }
  [[gnu::always_inline]] inline void push(ValueId v) {
    if (!stack_.push_back(v)) [[unlikely]]
      fail("value stack exceeds its limit");
  }
  void push_mark() {
    if (marks_.size() >= limits_.max_marks) fail("MARK nesting deeper than " + std::to_string(limits_.max_marks));
    marks_.push_back(stack_.size());
    fence_ = stack_.size();
  }
  [[gnu::always_inline]] inline ValueId pop() {
    if (stack_.size() <= fence()) underflow();
    ValueId v = stack_.back();
    stack_.pop_back();
    return v;
  }
  [[gnu::always_inline]] inline ValueId& top() {
    if (stack_.size() <= fence()) underflow();
    return stack_.back();
  }
  // Pops the topmost MARK; returns where the marked items start.
  size_t pop_mark() {
    if (marks_.empty()) fail(std::string(opcode_name(opcode_)) + " without a preceding MARK");
    size_t m = marks_.back();
    marks_.pop_back();
    fence_ = marks_.empty() ? 0 : marks_.back();
    return m;
  }
  std::span<const ValueId> above(size_t m) const { return {stack_.data() + m, stack_.size() - m}; }

  // ---- memo ---------------------------------------------------------------
  void memo_put(uint64_t idx, ValueId v) {
    if (idx < memo_.size()) {
      if (memo_[idx] == kUnset && !sparse_.erase(idx)) ++memo_count_;
      memo_[idx] = v.v;
      return;
    }
    // Dense up to what the bytes read so far could justify; a hostile index
    // far beyond that goes to a map instead of a huge array.
    if (idx <= offset(p_) + 65536) {
      uint64_t want = std::max<uint64_t>(idx + 1, std::min<uint64_t>(memo_.size() * 2, offset(p_) + 65536));
      extra_bytes_ = want * sizeof(uint32_t) + stack_.size() * sizeof(ValueId);
      g_.account();
      memo_.resize(want, kUnset);
      ++memo_count_;
      memo_[idx] = v.v;
      return;
    }
    if (sparse_.insert_or_assign(idx, v).second) ++memo_count_;
  }
  [[gnu::always_inline]] inline ValueId memo_get(uint64_t idx) const {
    if (idx < memo_.size() && memo_[idx] != kUnset) [[likely]]
      return ValueId{memo_[idx]};
    return memo_get_slow(idx);
  }
  [[gnu::noinline]] ValueId memo_get_slow(uint64_t idx) const {
    if (idx < memo_.size() && memo_[idx] != kUnset) return ValueId{memo_[idx]};
    if (auto it = sparse_.find(idx); it != sparse_.end()) return it->second;
    fail(std::string(opcode_name(opcode_)) + ": memo key " + std::to_string(idx) + " was never stored");
  }

  // ---- helpers for multi-opcode shapes --------------------------------------
  ValueId container_below(size_t m, Kind want, const char* what);
  void check_kind(ValueId target, Kind want, Kind alt, const char* what) const;
  ValueId decimal_int(std::string_view s);
  uint64_t decimal_index(std::string_view s);
  ValueId python_string_literal(std::string_view s);
  ValueId raw_unicode_escape(std::string_view s);
  [[noreturn]] void refuse();

  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
  const uint8_t* op_at_ = nullptr;
  uint8_t opcode_ = 0;
  Limits limits_;
  ValueGraph g_;
  ValueStack stack_;
  std::vector<size_t> marks_;
  size_t fence_ = 0;  // where the items above the last MARK start
  std::vector<uint32_t> memo_;
  uint64_t extra_bytes_ = 0;                                    // memo and stack, counted with the graph
  std::unordered_map<uint64_t, ValueId, util::Hasher> sparse_;  // seeded: crafted PUT indices cannot collide
  uint64_t memo_count_ = 0;
  int protocol_ = 0;
  ProgressTicker ticker_;
};

void Unpickler::check_kind(ValueId target, Kind want, Kind alt, const char* what) const {
  Kind k = g_.kind(target);
  if (k != want && k != alt)
    fail(std::string(opcode_name(opcode_)) + " target is a " + kind_name(k) + ", not a " + what);
}

ValueId Unpickler::container_below(size_t m, Kind want, const char* what) {
  if (m == 0 || m - 1 < fence()) underflow();
  ValueId target = stack_[m - 1];
  check_kind(target, want, want, what);
  return target;
}

uint64_t Unpickler::decimal_index(std::string_view s) {
  uint64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    fail(std::string(opcode_name(opcode_)) + ": bad memo index '" + std::string(s.substr(0, 40)) + "'");
  return v;
}

// Decimal integer of any size (INT, LONG), as int(s) would parse it.
ValueId Unpickler::decimal_int(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  bool neg = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  std::string digits;
  for (char c : s) {
    if (c == '_') continue;
    if (c < '0' || c > '9') fail(std::string(opcode_name(opcode_)) + ": invalid integer literal");
    digits.push_back(c);
  }
  if (digits.empty()) fail(std::string(opcode_name(opcode_)) + ": invalid integer literal");
  if (digits.size() > kMaxDecimalDigits)
    fail(std::string(opcode_name(opcode_)) + ": integer has more than 4300 digits");
  uint64_t v = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (r.ec == std::errc()) {
    if (!neg) return g_.make_uint(v);
    if (v <= uint64_t{1} << 63) return g_.make_int(static_cast<int64_t>(0 - v));
  }
  // Arbitrary precision: magnitude as little-endian base-256, then two's complement.
  std::vector<uint8_t> mag{0};
  for (char c : digits) {
    unsigned carry = unsigned(c - '0');
    for (auto& b : mag) {
      unsigned t = unsigned(b) * 10 + carry;
      b = uint8_t(t);
      carry = t >> 8;
    }
    if (carry) mag.push_back(uint8_t(carry));
  }
  mag.push_back(0);  // room for the sign bit
  if (neg) {
    unsigned carry = 1;
    for (auto& b : mag) {
      unsigned t = uint8_t(~b) + carry;
      b = uint8_t(t);
      carry = t >> 8;
    }
  }
  ValueId id = g_.make_side(Kind::Bytes, std::string_view(reinterpret_cast<const char*>(mag.data()), mag.size()));
  const Value& sv = g_.at(id);
  std::string_view stored = g_.bytes(id);
  return g_.make_int_bytes(reinterpret_cast<const uint8_t*>(stored.data()), stored.size(), sv.x, true);
}

// STRING's argument: a quoted Python bytes literal, decoded like codecs.escape_decode.
ValueId Unpickler::python_string_literal(std::string_view s) {
  if (s.size() < 2 || s.front() != s.back() || (s.front() != '\'' && s.front() != '"'))
    fail("STRING argument must be quoted");
  s = s.substr(1, s.size() - 2);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c != '\\' || i + 1 == s.size()) {
      if (c == '\\') fail("STRING: trailing backslash");
      out.push_back(c);
      continue;
    }
    char e = s[++i];
    switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'a': out.push_back('\a'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'v': out.push_back('\v'); break;
      case '\\': out.push_back('\\'); break;
      case '\'': out.push_back('\''); break;
      case '"': out.push_back('"'); break;
      case '\n': break;
      case 'x': {
        auto hexval = [](char h) {
          return h >= '0' && h <= '9'   ? h - '0'
                 : h >= 'a' && h <= 'f' ? h - 'a' + 10
                 : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                        : -1;
        };
        int hi = i + 1 < s.size() ? hexval(s[i + 1]) : -1;
        int lo = i + 2 < s.size() ? hexval(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) fail("STRING: invalid \\x escape");
        out.push_back(char(hi * 16 + lo));
        i += 2;
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          int v = e - '0';
          for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
            v = v * 8 + (s[++i] - '0');
          out.push_back(char(v & 0xFF));
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return g_.make_side(Kind::Str, out);
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

// UNICODE's argument: raw-unicode-escape (latin-1 bytes, \uXXXX and \UXXXXXXXX), stored as UTF-8.
ValueId Unpickler::raw_unicode_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s[i] != '\\') {
      append_utf8(out, uint8_t(s[i++]));
      continue;
    }
    size_t run = 0;
    while (i + run < s.size() && s[i + run] == '\\') ++run;
    size_t after = i + run;
    bool escape = (run & 1) && after < s.size() && (s[after] == 'u' || s[after] == 'U');
    size_t literal = escape ? run - 1 : run;
    out.append(literal, '\\');
    i += literal;
    if (!escape) continue;
    size_t digits = s[after] == 'u' ? 4 : 8;
    if (after + digits >= s.size()) fail("UNICODE: truncated \\u escape");
    uint32_t cp = 0;
    for (size_t k = 1; k <= digits; ++k) {
      char h = s[after + k];
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) fail("UNICODE: invalid \\u escape");
      cp = cp * 16 + uint32_t(d);
    }
    if (cp > 0x10FFFF) fail("UNICODE: \\U escape out of range");
    append_utf8(out, cp);
    i = after + digits + 1;
  }
  return g_.make_side(Kind::Str, out);
}

void Unpickler::refuse() {
  std::string what = opcode_name(opcode_);
  if (opcode_ == op::STACK_GLOBAL && stack_.size() >= fence() + 2 && g_.kind(stack_.end()[-1]) == Kind::Str &&
      g_.kind(stack_.end()[-2]) == Kind::Str) {
    what += " " + std::string(g_.bytes(stack_.end()[-2]).substr(0, 60)) + "." +
            std::string(g_.bytes(stack_.end()[-1]).substr(0, 60));
  } else if (opcode_ == op::GLOBAL || opcode_ == op::INST) {
    // Show what it would have imported: two newline-terminated names.
    std::string name;
    for (int k = 0; k < 2; ++k) {
      const void* nl = std::memchr(p_, '\n', size_t(end_ - p_));
      if (!nl) break;
      std::string part(reinterpret_cast<const char*>(p_), size_t(static_cast<const uint8_t*>(nl) - p_));
      if (part.size() > 60) part = part.substr(0, 60) + "...";
      name += (k ? "." : "") + part;
      p_ = static_cast<const uint8_t*>(nl) + 1;
    }
    if (!name.empty()) what += " " + name;
  }
  fail("refused opcode " + what +
       ": memsnap never imports or calls code from a pickle "
       "(a genuine snapshot holds only plain data)");
}

// The unpickler's opcode switch: it stays whole, one small case per opcode as in CPython's
// _pickle.c and PyTorch's unpickler, because every opcode's semantics sit side by side where
// they can be checked against the reference one by one, and the loop is the hot path of the
// general parser (a call per case measured no clearer and slower).
ValueGraph Unpickler::run(PickleInfo* info) {
  uint64_t ops = 0;
  for (;;) {
    op_at_ = p_;
    ticker_.at(uint64_t(p_ - begin_));
    if (p_ >= end_) {
      opcode_ = 0;
      fail("unexpected end of data: no STOP opcode (the pickle is truncated)");
    }
    opcode_ = *p_++;
    ++ops;
    switch (opcode_) {
      // ---- framing and stack shuffling ---------------------------------------
      case op::PROTO: {
        uint8_t v = read_le<uint8_t>();
        if (v > 5) fail("unsupported pickle protocol " + std::to_string(v));
        protocol_ = v;
        break;
      }
      case op::FRAME: {
        uint64_t n = read_le<uint64_t>();
        if (n > uint64_t(end_ - p_)) {
          fail("truncated FRAME (needs " + std::to_string(n) + " bytes, " + std::to_string(uint64_t(end_ - p_)) +
               " left)");
        }
        break;  // only a buffering hint
      }
      case op::STOP: {
        ValueId v = pop();
        g_.set_root(v);
        if (info) {
          info->protocol = protocol_;
          info->stop_offset = offset(op_at_);
          info->opcodes = ops;
          info->memo_entries = memo_count_;
        }
        return std::move(g_);
      }
      case op::MARK: push_mark(); break;
      case op::POP:
        // [..., x] -> [...]; with nothing above the fence, CPython drops the mark.
        if (stack_.size() > fence()) {
          stack_.pop_back();
        } else if (!marks_.empty()) {
          pop_mark();
        } else {
          underflow();
        }
        break;
      case op::POP_MARK: stack_.resize(pop_mark()); break;
      case op::DUP: push(top()); break;

      // ---- atoms ------------------------------------------------------------
      case op::NONE: push(g_.make_none()); break;
      case op::NEWTRUE: push(g_.make_bool(true)); break;
      case op::NEWFALSE: push(g_.make_bool(false)); break;
      case op::BININT1: push(g_.make_int(read_le<uint8_t>())); break;
      case op::BININT2: push(g_.make_int(read_le<uint16_t>())); break;
      case op::BININT: push(g_.make_int(read_le<int32_t>())); break;
      case op::LONG1: {
        uint64_t n = read_le<uint8_t>();
        need(n);
        push(g_.make_int_bytes(p_, n, offset(p_), false));
        p_ += n;
        break;
      }
      case op::LONG4: {
        int32_t n = read_le<int32_t>();
        if (n < 0) fail("LONG4 with negative length");
        need(uint64_t(n));
        push(g_.make_int_bytes(p_, size_t(n), offset(p_), false));
        p_ += n;
        break;
      }
      case op::INT: {
        std::string_view s = read_line();
        if (s == "00")
          push(g_.make_bool(false));
        else if (s == "01")
          push(g_.make_bool(true));
        else
          push(decimal_int(s));
        break;
      }
      case op::LONG: {
        std::string_view s = read_line();
        if (!s.empty() && s.back() == 'L') s.remove_suffix(1);
        push(decimal_int(s));
        break;
      }
      case op::BINFLOAT: {
        uint64_t be = read_le<uint64_t>();
        uint64_t bits = __builtin_bswap64(be);
        double d;
        std::memcpy(&d, &bits, 8);
        push(g_.make_float(d));
        break;
      }
      case op::FLOAT: {
        std::string_view s = read_line();
        while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
        while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
        if (s.size() > 1 && s.front() == '+' && s[1] != '-' && s[1] != '+') s.remove_prefix(1);  // float("+1.5")
        double d = 0;
        auto r = std::from_chars(s.data(), s.data() + s.size(), d);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) fail("FLOAT: invalid literal");
        push(g_.make_float(d));
        break;
      }

      // ---- strings and bytes -------------------------------------------------
      case op::SHORT_BINUNICODE: {
        uint64_t n = read_le<uint8_t>();
        need(n);
        push(g_.make_view(Kind::Str, offset(p_), n));
        p_ += n;
        break;
      }
      case op::BINUNICODE: {
        uint64_t n = read_le<uint32_t>();
        need(n);
        push(g_.make_view(Kind::Str, offset(p_), n));
        p_ += n;
        break;
      }
      case op::BINUNICODE8: {
        uint64_t n = read_le<uint64_t>();
        need(n);
        push(g_.make_view(Kind::Str, offset(p_), n));
        p_ += n;
        break;
      }
      case op::SHORT_BINSTRING: {  // Python 2 str: decoded as ASCII text by default
        uint64_t n = read_le<uint8_t>();
        need(n);
        push(g_.make_view(Kind::Str, offset(p_), n));
        p_ += n;
        break;
      }
      case op::BINSTRING: {
        int32_t n = read_le<int32_t>();
        if (n < 0) fail("BINSTRING with negative length");
        need(uint64_t(n));
        push(g_.make_view(Kind::Str, offset(p_), uint64_t(n)));
        p_ += n;
        break;
      }
      case op::STRING: push(python_string_literal(read_line())); break;
      case op::UNICODE: push(raw_unicode_escape(read_line())); break;
      case op::SHORT_BINBYTES: {
        uint64_t n = read_le<uint8_t>();
        need(n);
        push(g_.make_view(Kind::Bytes, offset(p_), n));
        p_ += n;
        break;
      }
      case op::BINBYTES: {
        uint64_t n = read_le<uint32_t>();
        need(n);
        push(g_.make_view(Kind::Bytes, offset(p_), n));
        p_ += n;
        break;
      }
      case op::BINBYTES8:
      case op::BYTEARRAY8: {
        uint64_t n = read_le<uint64_t>();
        need(n);
        push(g_.make_view(opcode_ == op::BYTEARRAY8 ? Kind::ByteArray : Kind::Bytes, offset(p_), n));
        p_ += n;
        break;
      }

      // ---- containers ---------------------------------------------------------
      case op::EMPTY_LIST: push(g_.make_container(Kind::List)); break;
      case op::EMPTY_DICT: push(g_.make_container(Kind::Dict)); break;
      case op::EMPTY_SET: push(g_.make_container(Kind::Set)); break;
      case op::EMPTY_TUPLE: push(g_.make_container(Kind::Tuple, {})); break;
      case op::TUPLE1:
      case op::TUPLE2:
      case op::TUPLE3: {
        size_t n = size_t(opcode_ - op::TUPLE1 + 1);
        if (stack_.size() < fence() + n) underflow();
        ValueId t = g_.make_container(Kind::Tuple, above(stack_.size() - n));
        stack_.resize(stack_.size() - n);
        push(t);
        break;
      }
      case op::TUPLE:
      case op::LIST:
      case op::FROZENSET: {
        // MARK items... -> container
        size_t m = pop_mark();
        Kind k = opcode_ == op::TUPLE ? Kind::Tuple : opcode_ == op::LIST ? Kind::List : Kind::FrozenSet;
        ValueId c = k == Kind::List ? g_.make_container(Kind::List) : g_.make_container(k, above(m));
        if (k == Kind::List) g_.append(c, above(m));
        stack_.resize(m);
        push(c);
        break;
      }
      case op::DICT: {
        // MARK k1 v1 ... -> dict
        size_t m = pop_mark();
        if ((stack_.size() - m) % 2) fail("DICT: odd number of items (a key without a value)");
        ValueId d = g_.make_container(Kind::Dict);
        g_.append(d, above(m));
        stack_.resize(m);
        push(d);
        break;
      }
      case op::APPEND: {
        // [list, x] -> [list]
        ValueId x = pop();
        ValueId target = top();
        check_kind(target, Kind::List, Kind::List, "list");
        g_.append(target, std::span<const ValueId>(&x, 1));
        break;
      }
      case op::APPENDS: {
        // [list, MARK, x1 .. xn] -> [list]
        size_t m = pop_mark();
        ValueId target = container_below(m, Kind::List, "list");
        g_.append(target, above(m));
        g_.share_if_seen(target);
        stack_.resize(m);
        break;
      }
      case op::SETITEM: {
        // [dict, k, v] -> [dict]
        ValueId pair[2];
        pair[1] = pop();
        pair[0] = pop();
        ValueId target = top();
        check_kind(target, Kind::Dict, Kind::Dict, "dict");
        g_.append(target, pair);
        break;
      }
      case op::SETITEMS: {
        // [dict, MARK, k1, v1, ..] -> [dict]
        size_t m = pop_mark();
        ValueId target = container_below(m, Kind::Dict, "dict");
        if ((stack_.size() - m) % 2) fail("SETITEMS: odd number of items (a key without a value)");
        g_.append(target, above(m));
        stack_.resize(m);
        break;
      }
      case op::ADDITEMS: {
        // [set, MARK, x1 .. xn] -> [set]
        size_t m = pop_mark();
        ValueId target = container_below(m, Kind::Set, "set");
        g_.append(target, above(m));
        stack_.resize(m);
        break;
      }

      // ---- memo ---------------------------------------------------------------
      case op::MEMOIZE: memo_put(memo_count_, top()); break;
      case op::BINPUT: {
        uint8_t i = read_le<uint8_t>();
        memo_put(i, top());
        break;
      }
      case op::LONG_BINPUT: {
        uint32_t i = read_le<uint32_t>();
        memo_put(i, top());
        break;
      }
      case op::PUT: {
        uint64_t i = decimal_index(read_line());
        memo_put(i, top());
        break;
      }
      case op::BINGET: push(memo_get(read_le<uint8_t>())); break;
      case op::LONG_BINGET: push(memo_get(read_le<uint32_t>())); break;
      case op::GET: push(memo_get(decimal_index(read_line()))); break;

      // ---- everything that imports, calls or reaches outside the data ----------
      case op::GLOBAL:
      case op::STACK_GLOBAL:
      case op::REDUCE:
      case op::BUILD:
      case op::INST:
      case op::OBJ:
      case op::NEWOBJ:
      case op::NEWOBJ_EX:
      case op::EXT1:
      case op::EXT2:
      case op::EXT4:
      case op::PERSID:
      case op::BINPERSID:
      case op::NEXT_BUFFER:
      case op::READONLY_BUFFER: refuse();

      default: {
        char buf[8];
        std::snprintf(buf, sizeof buf, "0x%02x", opcode_);
        fail(std::string("invalid pickle opcode ") + buf +
             (offset(op_at_) == 0 ? " (not a pickle: no PROTO header and not an opcode)" : ""));
      }
    }
  }
}

// Bytes a pickle can start with: PROTO, or an opcode that pushes a value (protocols 0 and 1);
// no other opcode is 0x80 or above. (0xEF, 0xFF, 0xFE: a byte-order mark, named elsewhere.)
// io::ByteSource's sniff_snapshot takes the same bytes.
bool plausible_start(uint8_t c) {
  static constexpr std::string_view kStarts = "(]})NILFSVJKMTUXGBCcP";
  return c == 0x80 || c == 0xEF || c == 0xFF || c == 0xFE || kStarts.find(char(c)) != std::string_view::npos;
}

std::string preview(std::span<const uint8_t> in) {
  std::string s;
  bool printable = true;
  for (size_t i = 0; i < in.size() && i < 16; ++i) {
    uint8_t c = in[i];
    if (c == '\n' || c == '\r') break;
    if (c < 0x20 || c >= 0x7f) printable = false;
    s.push_back(char(c));
  }
  if (printable) return "'" + s + "'";
  char buf[8];
  std::string hex;
  for (size_t i = 0; i < in.size() && i < 8; ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", in[i]);
    hex += buf;
  }
  return "bytes " + hex;
}

}  // namespace

ValueGraph unpickle(std::span<const uint8_t> input, PickleInfo* info, const Limits& limits) {
  if (!input.empty() && !plausible_start(input[0]))
    throw_at_offset(0,
                    "not a snapshot: the input is neither a pickle nor JSON (it starts with " + preview(input) + ")");
  Unpickler u(input, limits);
  return u.run(info);
}

}  // namespace memsnap::pickle
