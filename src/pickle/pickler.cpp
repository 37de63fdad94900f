// The streaming pickler: one opcode per value, containers batched as CPython batches them.
#include "memsnap/pickle/pickler.hpp"

#include <bit>
#include <cstring>
#include <ios>
#include <stdexcept>

#include "memsnap/pickle/opcodes.hpp"
#include "memsnap/util/utf8.hpp"

namespace memsnap::pickle {

std::string_view sanitize_utf8(std::string_view s, std::string& scratch, bool surrogates_ok) {
  return utf8::sanitize(s, scratch, surrogates_ok ? utf8::Surrogates::Allowed : utf8::Surrogates::Invalid);
}

Pickler::Pickler(std::ostream& out) : out_(out) {
  buf_.reserve(kChunk + 256);
  put(op::PROTO);
  put(4);
}

void Pickler::flush() {
  if (buf_.empty()) return;
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  written_ += buf_.size();
  buf_.clear();
  if (!out_) throw std::ios_base::failure("pickle output: write failed");
}

// Before a value goes into the innermost open container: close a full batch, open a MARK.
void Pickler::before_value() {
  tuple_just_opened_ = false;
  if (open_.empty()) return;
  Open& o = open_.back();
  if (o.kind == Kind::Tuple) return;
  uint32_t limit = o.kind == Kind::Dict ? 2 * kBatch : kBatch;  // dicts: key and value are two pushes
  if (o.mark && o.items >= limit) {
    put(o.kind == Kind::Dict ? op::SETITEMS : op::APPENDS);
    o.mark = false;
    o.items = 0;
  }
  if (!o.mark) {
    put(op::MARK);
    o.mark = true;
  }
}

void Pickler::none() {
  before_value();
  put(op::NONE);
  after_value();
  maybe_flush();
}

void Pickler::boolean(bool v) {
  before_value();
  put(v ? op::NEWTRUE : op::NEWFALSE);
  after_value();
  maybe_flush();
}

void Pickler::integer(int64_t v) {
  before_value();
  if (v >= 0 && v < 256) {
    put(op::BININT1);
    put(static_cast<uint8_t>(v));
  } else if (v >= 0 && v < 65536) {
    put(op::BININT2);
    put_le(static_cast<uint16_t>(v));
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    put(op::BININT);
    put_le(static_cast<uint32_t>(static_cast<int32_t>(v)));
  } else {
    // LONG1: little-endian two's complement, as few bytes as keep the sign.
    uint8_t n = 8;
    while (n > 1) {
      int64_t shifted = v >> (8 * (n - 1) - 1);  // the bits the top byte would hold, and one more
      if (shifted != 0 && shifted != -1) break;
      --n;
    }
    put(op::LONG1);
    put(n);
    for (uint8_t i = 0; i < n; ++i) put(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
  }
  after_value();
  maybe_flush();
}

void Pickler::uinteger(uint64_t v) {
  if (v <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(v));
  before_value();
  put(op::LONG1);
  put(9);  // eight bytes and a zero sign byte: a positive number
  put_le(v);
  put(0);
  after_value();
  maybe_flush();
}

void Pickler::real(double v) {
  before_value();
  put(op::BINFLOAT);
  uint64_t bits = std::bit_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i) put(static_cast<uint8_t>(bits >> (8 * i)));  // big-endian
  after_value();
  maybe_flush();
}

void Pickler::str(std::string_view utf8) {
  std::string scratch;
  std::string_view s = sanitize_utf8(utf8, scratch, true);
  before_value();
  if (s.size() < 256) {
    put(op::SHORT_BINUNICODE);
    put(static_cast<uint8_t>(s.size()));
  } else if (s.size() <= UINT32_MAX) {
    put(op::BINUNICODE);
    put_le(static_cast<uint32_t>(s.size()));
  } else {
    put(op::BINUNICODE8);
    put_le(static_cast<uint64_t>(s.size()));
  }
  if (s.size() > kChunk) {
    flush();
    out_.write(s.data(), static_cast<std::streamsize>(s.size()));
    written_ += s.size();
    if (!out_) throw std::ios_base::failure("pickle output: write failed");
  } else {
    put_bytes(s.data(), s.size());
  }
  after_value();
  maybe_flush();
}

void Pickler::begin_dict() {
  before_value();
  put(op::EMPTY_DICT);
  open_.push_back({Kind::Dict});
}

void Pickler::begin_list() {
  before_value();
  put(op::EMPTY_LIST);
  open_.push_back({Kind::List});
}

void Pickler::begin_tuple() {
  before_value();
  put(op::MARK);
  open_.push_back({Kind::Tuple, true});
  tuple_just_opened_ = true;
}

void Pickler::end_dict() {
  if (open_.empty() || open_.back().kind != Kind::Dict) throw std::logic_error("Pickler: end_dict without begin_dict");
  if (open_.back().items % 2 != 0) throw std::logic_error("Pickler: a dict key without a value");
  if (open_.back().mark) put(op::SETITEMS);
  open_.pop_back();
  tuple_just_opened_ = false;
  after_value();
  maybe_flush();
}

void Pickler::end_list() {
  if (open_.empty() || open_.back().kind != Kind::List) throw std::logic_error("Pickler: end_list without begin_list");
  if (open_.back().mark) put(op::APPENDS);
  open_.pop_back();
  tuple_just_opened_ = false;
  after_value();
  maybe_flush();
}

void Pickler::end_tuple() {
  if (open_.empty() || open_.back().kind != Kind::Tuple)
    throw std::logic_error("Pickler: end_tuple without begin_tuple");
  put(op::TUPLE);
  open_.pop_back();
  tuple_just_opened_ = false;
  after_value();
  maybe_flush();
}

uint32_t Pickler::memoize() {
  if (tuple_just_opened_) throw std::logic_error("Pickler: nothing to memoize above a MARK");
  if (memo_next_ > UINT32_MAX) throw std::length_error("Pickler: more than 2^32 memoized objects");
  put(op::MEMOIZE);
  return static_cast<uint32_t>(memo_next_++);
}

void Pickler::get(uint32_t index) {
  if (index >= memo_next_) throw std::logic_error("Pickler: get of a memo index never stored");
  before_value();
  if (index < 256) {
    put(op::BINGET);
    put(static_cast<uint8_t>(index));
  } else {
    put(op::LONG_BINGET);
    put_le(index);
  }
  after_value();
  maybe_flush();
}

void Pickler::finish() {
  if (!open_.empty()) throw std::logic_error("Pickler: finish with open containers");
  if (top_values_ != 1) throw std::logic_error("Pickler: a pickle holds exactly one value");
  put(op::STOP);
  flush();
  out_.flush();
  if (!out_) throw std::ios_base::failure("pickle output: write failed");
}

}  // namespace memsnap::pickle
