// A tiny pickle assembler for tests: opcodes by their pickletools names, so a test reads as text.
//
//   assemble("PROTO 2 | EMPTY_LIST MARK BININT1 7 SHORT_BINUNICODE 'x' APPENDS STOP")
//
// Opcodes are separated by whitespace or '|'. Each may take ONE argument:
//   an integer (decimal or 0x hex, may be negative; a float for BINFLOAT),
//   a single-quoted string 'text' (\' and \\ are escapes, any other backslash is literal), or raw bytes x:HEXHEX.
// The argument is encoded the way the opcode needs it (length prefixes, little-endian
// integers, big-endian BINFLOAT, minimal two's complement for LONG1/LONG4, "text\n" for
// the protocol-0 opcodes, "module\nname\n" for GLOBAL/INST given 'module name').
// `RAW x:HEX` emits bytes verbatim (truncated and garbage inputs).
// Throws std::invalid_argument on a malformed program.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace memsnap::test {

std::vector<uint8_t> assemble(std::string_view program);

}  // namespace memsnap::test
