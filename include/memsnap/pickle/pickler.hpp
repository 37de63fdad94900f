// A small streaming pickler: plain values out as protocol 4, containers written as they are walked.
//
// What it writes is what CPython's pickle.load and PyTorch's MemoryViz.js unpickler both read:
// PROTO 4 (no FRAME opcodes: framing is optional), EMPTY_DICT/EMPTY_LIST then MARK ... SETITEMS
// / APPENDS in batches of 1000 items as CPython does, MARK ... TUPLE, SHORT_BINUNICODE /
// BINUNICODE, BININT1 / BININT2 / BININT, LONG1 with the minimal two's-complement length for
// everything else (9 bytes for unsigned values with bit 63 set), BINFLOAT, NEWTRUE / NEWFALSE,
// NONE, MEMOIZE and BINGET / LONG_BINGET, STOP. Memory is the output buffer and the stack of
// open containers: nothing of the document is held.
//
// Sharing: memoize() stores the value on top of the unpickler's stack (the value just written,
// or the container just opened, before or after its items) under the next memo index, as
// protocol 4's MEMOIZE does; get(index) pushes that same object again. Python then sees one
// object referenced many times, exactly like the frame dicts and frame lists PyTorch shares.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace memsnap::pickle {

class Pickler {
 public:
  /// Writes PROTO 4 at once. `out` receives the bytes in chunks of about 64 KiB; a write
  /// that fails makes the next flush throw std::ios_base::failure.
  explicit Pickler(std::ostream& out);
  Pickler(const Pickler&) = delete;
  Pickler& operator=(const Pickler&) = delete;

  void none();
  void boolean(bool v);
  void integer(int64_t v);
  void uinteger(uint64_t v);
  void real(double v);
  /// A str. Bytes that are not UTF-8 (Python would refuse to load them) become U+FFFD;
  /// encoded surrogates pass, as CPython's 'surrogatepass' reads them.
  void str(std::string_view utf8);

  void begin_dict();  // then key, value, key, value, ...
  void end_dict();
  void begin_list();
  void end_list();
  void begin_tuple();
  void end_tuple();

  /// MEMOIZE: the value on top (the one just written or the container just opened) gets
  /// the next memo index, which is returned. Not valid right after begin_tuple().
  uint32_t memoize();
  /// BINGET / LONG_BINGET: the memoized object again, as one more value.
  void get(uint32_t index);

  /// STOP and a final flush; every container must be closed and exactly one value written.
  void finish();
  uint64_t bytes_written() const { return written_ + buf_.size(); }

 private:
  enum class Kind : uint8_t { Dict, List, Tuple };
  struct Open {
    Kind kind;
    bool mark = false;   // a MARK for the current batch is on the stack
    uint32_t items = 0;  // values pushed in the current batch (keys count for dicts)
  };
  void before_value();
  void after_value() {
    if (!open_.empty())
      ++open_.back().items;
    else
      ++top_values_;
  }
  void put(uint8_t op) { buf_.push_back(static_cast<char>(op)); }
  void put_bytes(const void* p, size_t n) { buf_.append(static_cast<const char*>(p), n); }
  template <class T>
  void put_le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i)
      buf_.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF));
  }
  void maybe_flush() {
    if (buf_.size() >= kChunk) flush();
  }
  void flush();

  static constexpr size_t kChunk = size_t{1} << 16;
  static constexpr uint32_t kBatch = 1000;  // items per SETITEMS / APPENDS, as CPython

  std::ostream& out_;
  std::string buf_;
  std::vector<Open> open_;
  uint64_t written_ = 0;
  uint64_t memo_next_ = 0;
  uint64_t top_values_ = 0;
  bool tuple_just_opened_ = false;
};

/// `s` with every byte sequence that is not UTF-8 replaced by U+FFFD (encoded surrogates
/// are kept when `surrogates_ok`). Returns `s` unchanged, without copying, when it is valid.
std::string_view sanitize_utf8(std::string_view s, std::string& scratch, bool surrogates_ok);

}  // namespace memsnap::pickle
