// The test pickle assembler (see pickle_asm.hpp).
#include "support/pickle_asm.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

namespace memsnap::test {

namespace {

// How an opcode's argument is encoded.
enum class Arg { None, U8, U16, I32, U32, U64, Long1, Long4, Float8, Str1, Str4, StrI4, Str8, Line, TwoLines, Raw };

struct OpInfo {
  const char* name;
  uint8_t code;
  Arg arg;
};

constexpr OpInfo kOps[] = {
    {"MARK", '(', Arg::None},
    {"STOP", '.', Arg::None},
    {"POP", '0', Arg::None},
    {"POP_MARK", '1', Arg::None},
    {"DUP", '2', Arg::None},
    {"FLOAT", 'F', Arg::Line},
    {"INT", 'I', Arg::Line},
    {"BININT", 'J', Arg::I32},
    {"BININT1", 'K', Arg::U8},
    {"LONG", 'L', Arg::Line},
    {"BININT2", 'M', Arg::U16},
    {"NONE", 'N', Arg::None},
    {"PERSID", 'P', Arg::Line},
    {"BINPERSID", 'Q', Arg::None},
    {"REDUCE", 'R', Arg::None},
    {"STRING", 'S', Arg::Line},
    {"BINSTRING", 'T', Arg::StrI4},
    {"SHORT_BINSTRING", 'U', Arg::Str1},
    {"UNICODE", 'V', Arg::Line},
    {"BINUNICODE", 'X', Arg::Str4},
    {"APPEND", 'a', Arg::None},
    {"BUILD", 'b', Arg::None},
    {"GLOBAL", 'c', Arg::TwoLines},
    {"DICT", 'd', Arg::None},
    {"EMPTY_DICT", '}', Arg::None},
    {"APPENDS", 'e', Arg::None},
    {"GET", 'g', Arg::Line},
    {"BINGET", 'h', Arg::U8},
    {"INST", 'i', Arg::TwoLines},
    {"LONG_BINGET", 'j', Arg::U32},
    {"LIST", 'l', Arg::None},
    {"EMPTY_LIST", ']', Arg::None},
    {"OBJ", 'o', Arg::None},
    {"PUT", 'p', Arg::Line},
    {"BINPUT", 'q', Arg::U8},
    {"LONG_BINPUT", 'r', Arg::U32},
    {"SETITEM", 's', Arg::None},
    {"TUPLE", 't', Arg::None},
    {"EMPTY_TUPLE", ')', Arg::None},
    {"SETITEMS", 'u', Arg::None},
    {"BINFLOAT", 'G', Arg::Float8},
    {"BINBYTES", 'B', Arg::Str4},
    {"SHORT_BINBYTES", 'C', Arg::Str1},
    {"PROTO", 0x80, Arg::U8},
    {"NEWOBJ", 0x81, Arg::None},
    {"EXT1", 0x82, Arg::U8},
    {"EXT2", 0x83, Arg::U16},
    {"EXT4", 0x84, Arg::I32},
    {"TUPLE1", 0x85, Arg::None},
    {"TUPLE2", 0x86, Arg::None},
    {"TUPLE3", 0x87, Arg::None},
    {"NEWTRUE", 0x88, Arg::None},
    {"NEWFALSE", 0x89, Arg::None},
    {"LONG1", 0x8a, Arg::Long1},
    {"LONG4", 0x8b, Arg::Long4},
    {"SHORT_BINUNICODE", 0x8c, Arg::Str1},
    {"BINUNICODE8", 0x8d, Arg::Str8},
    {"BINBYTES8", 0x8e, Arg::Str8},
    {"EMPTY_SET", 0x8f, Arg::None},
    {"ADDITEMS", 0x90, Arg::None},
    {"FROZENSET", 0x91, Arg::None},
    {"NEWOBJ_EX", 0x92, Arg::None},
    {"STACK_GLOBAL", 0x93, Arg::None},
    {"MEMOIZE", 0x94, Arg::None},
    {"FRAME", 0x95, Arg::U64},
    {"BYTEARRAY8", 0x96, Arg::Str8},
    {"NEXT_BUFFER", 0x97, Arg::None},
    {"READONLY_BUFFER", 0x98, Arg::None},
};

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("pickle_asm: " + what);
}

struct Operand {
  enum Type { Absent, Int, Text, Bytes } type = Absent;
  std::string text;  // Int: the token as written; Text/Bytes: the contents
  bool neg = false;  // Int: sign and magnitude
  uint64_t mag = 0;
};

bool is_sep(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '|';
}

Operand read_operand(std::string_view s, size_t& i) {
  Operand a;
  if (i >= s.size()) return a;
  if (s[i] == '\'') {
    a.type = Operand::Text;
    for (++i;; ++i) {
      if (i >= s.size()) bad("unterminated string");
      if (s[i] == '\'') break;
      if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\'' || s[i + 1] == '\\')) ++i;  // \' and \\ only
      a.text.push_back(s[i]);
    }
    ++i;
    return a;
  }
  size_t j = i;
  while (j < s.size() && !is_sep(s[j])) ++j;
  std::string_view tok = s.substr(i, j - i);
  if (tok.starts_with("x:")) {
    a.type = Operand::Bytes;
    if (tok.size() % 2) bad("odd number of hex digits in " + std::string(tok));
    for (size_t k = 2; k < tok.size(); k += 2) {
      unsigned v = 0;
      auto r = std::from_chars(tok.data() + k, tok.data() + k + 2, v, 16);
      if (r.ec != std::errc() || r.ptr != tok.data() + k + 2) bad("bad hex in " + std::string(tok));
      a.text.push_back(char(v));
    }
  } else if (!tok.empty() && (std::isdigit(static_cast<unsigned char>(tok[0])) || tok[0] == '-' || tok[0] == '+')) {
    a.type = Operand::Int;
    a.text = std::string(tok);
    std::string_view d = tok;
    if (d[0] == '-' || d[0] == '+') {
      a.neg = d[0] == '-';
      d.remove_prefix(1);
    }
    int base = d.starts_with("0x") || d.starts_with("0X") ? 16 : 10;
    if (base == 16) d.remove_prefix(2);
    auto r = std::from_chars(d.data(), d.data() + d.size(), a.mag, base);
    // Not an integer (e.g. "1e100", "-0.0"): still fine for FLOAT, BINFLOAT and text opcodes.
    if (r.ec != std::errc() || r.ptr != d.data() + d.size()) a = Operand{Operand::Text, std::string(tok)};
  } else {
    return a;  // the next opcode
  }
  i = j;
  return a;
}

void put_le(std::vector<uint8_t>& out, uint64_t v, int n) {
  for (int k = 0; k < n; ++k) out.push_back(uint8_t(v >> (8 * k)));
}

uint64_t int_arg(const Operand& a, const char* op, bool allow_neg, uint64_t max_mag) {
  if (a.type != Operand::Int) bad(std::string(op) + " needs an integer argument");
  if ((a.neg && !allow_neg) || a.mag > max_mag) bad(std::string(op) + ": argument out of range: " + a.text);
  return a.neg ? 0 - a.mag : a.mag;
}

// pickle.encode_long: minimal two's complement, little-endian; 0 is no bytes at all.
std::string encode_long(const Operand& a) {
  std::string out;
  if (a.mag == 0) return out;
  // -m == ~(m - 1): encode the non-negative m - 1, then invert every byte.
  uint64_t v = a.neg ? a.mag - 1 : a.mag;
  do {
    out.push_back(char(v & 0xFF));
    v >>= 8;
  } while (v != 0);
  if (uint8_t(out.back()) & 0x80) out.push_back(0);  // keep the sign bit clear
  if (a.neg)
    for (char& c : out) c = char(~c);
  return out;
}

std::string_view payload(const Operand& a, const char* op) {
  if (a.type != Operand::Text && a.type != Operand::Bytes) bad(std::string(op) + " needs a 'string' or x:HEX argument");
  return a.text;
}

void emit(std::vector<uint8_t>& out, const OpInfo& o, const Operand& a) {
  auto bytes = [&](std::string_view b) { out.insert(out.end(), b.begin(), b.end()); };
  if (o.arg != Arg::Raw) out.push_back(o.code);
  if (o.arg == Arg::None) {
    if (a.type != Operand::Absent) bad(std::string(o.name) + " takes no argument");
    return;
  }
  if (a.type == Operand::Absent) bad(std::string(o.name) + " needs an argument");
  switch (o.arg) {
    case Arg::U8: put_le(out, int_arg(a, o.name, false, 0xFF), 1); break;
    case Arg::U16: put_le(out, int_arg(a, o.name, false, 0xFFFF), 2); break;
    case Arg::U32: put_le(out, int_arg(a, o.name, false, 0xFFFFFFFFu), 4); break;
    case Arg::U64: put_le(out, int_arg(a, o.name, false, ~uint64_t{0}), 8); break;
    case Arg::I32: put_le(out, int_arg(a, o.name, true, a.neg ? 0x80000000u : 0x7FFFFFFFu), 4); break;
    case Arg::Long1:
    case Arg::Long4: {
      std::string b = a.type == Operand::Int ? encode_long(a) : std::string(payload(a, o.name));
      put_le(out, b.size(), o.arg == Arg::Long1 ? 1 : 4);
      bytes(b);
      break;
    }
    case Arg::Float8: {
      double d = std::strtod(a.text.c_str(), nullptr);
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      for (int k = 7; k >= 0; --k) out.push_back(uint8_t(bits >> (8 * k)));  // big-endian
      break;
    }
    case Arg::Str1:
      put_le(out, payload(a, o.name).size(), 1);
      bytes(a.text);
      break;
    case Arg::Str4:
    case Arg::StrI4:
      put_le(out, payload(a, o.name).size(), 4);
      bytes(a.text);
      break;
    case Arg::Str8:
      put_le(out, payload(a, o.name).size(), 8);
      bytes(a.text);
      break;
    case Arg::Line:
      bytes(a.text);
      out.push_back('\n');
      break;
    case Arg::TwoLines: {
      size_t sp = payload(a, o.name).find(' ');
      if (sp == std::string::npos) bad(std::string(o.name) + " needs 'module name'");
      bytes(a.text.substr(0, sp) + "\n" + a.text.substr(sp + 1) + "\n");
      break;
    }
    case Arg::Raw: bytes(payload(a, o.name)); break;
    case Arg::None: break;
  }
}

}  // namespace

std::vector<uint8_t> assemble(std::string_view program) {
  static constexpr OpInfo kRaw{"RAW", 0, Arg::Raw};
  std::vector<uint8_t> out;
  size_t i = 0;
  for (;;) {
    while (i < program.size() && is_sep(program[i])) ++i;
    if (i >= program.size()) return out;
    size_t j = i;
    while (j < program.size() && !is_sep(program[j])) ++j;
    std::string_view name = program.substr(i, j - i);
    const OpInfo* found = name == "RAW" ? &kRaw : nullptr;
    for (const OpInfo& o : kOps)
      if (name == o.name) found = &o;
    if (found == nullptr) bad("unknown opcode '" + std::string(name) + "'");
    i = j;
    while (i < program.size() && is_sep(program[i])) ++i;
    emit(out, *found, read_operand(program, i));
  }
}

}  // namespace memsnap::test
