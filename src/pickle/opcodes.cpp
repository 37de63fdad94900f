// The opcodes' names, for error messages and the differential test's dumps (declared in
// unpickler.hpp, which every reader of a pickle includes).
#include "memsnap/pickle/opcodes.hpp"

#include "memsnap/pickle/unpickler.hpp"

namespace memsnap::pickle {

const char* opcode_name(uint8_t c) {
  switch (c) {
    case op::MARK: return "MARK";
    case op::STOP: return "STOP";
    case op::POP: return "POP";
    case op::POP_MARK: return "POP_MARK";
    case op::DUP: return "DUP";
    case op::FLOAT: return "FLOAT";
    case op::INT: return "INT";
    case op::BININT: return "BININT";
    case op::BININT1: return "BININT1";
    case op::LONG: return "LONG";
    case op::BININT2: return "BININT2";
    case op::NONE: return "NONE";
    case op::PERSID: return "PERSID";
    case op::BINPERSID: return "BINPERSID";
    case op::REDUCE: return "REDUCE";
    case op::STRING: return "STRING";
    case op::BINSTRING: return "BINSTRING";
    case op::SHORT_BINSTRING: return "SHORT_BINSTRING";
    case op::UNICODE: return "UNICODE";
    case op::BINUNICODE: return "BINUNICODE";
    case op::APPEND: return "APPEND";
    case op::BUILD: return "BUILD";
    case op::GLOBAL: return "GLOBAL";
    case op::DICT: return "DICT";
    case op::EMPTY_DICT: return "EMPTY_DICT";
    case op::APPENDS: return "APPENDS";
    case op::GET: return "GET";
    case op::BINGET: return "BINGET";
    case op::INST: return "INST";
    case op::LONG_BINGET: return "LONG_BINGET";
    case op::LIST: return "LIST";
    case op::EMPTY_LIST: return "EMPTY_LIST";
    case op::OBJ: return "OBJ";
    case op::PUT: return "PUT";
    case op::BINPUT: return "BINPUT";
    case op::LONG_BINPUT: return "LONG_BINPUT";
    case op::SETITEM: return "SETITEM";
    case op::TUPLE: return "TUPLE";
    case op::EMPTY_TUPLE: return "EMPTY_TUPLE";
    case op::SETITEMS: return "SETITEMS";
    case op::BINFLOAT: return "BINFLOAT";
    case op::BINBYTES: return "BINBYTES";
    case op::SHORT_BINBYTES: return "SHORT_BINBYTES";
    case op::PROTO: return "PROTO";
    case op::NEWOBJ: return "NEWOBJ";
    case op::EXT1: return "EXT1";
    case op::EXT2: return "EXT2";
    case op::EXT4: return "EXT4";
    case op::TUPLE1: return "TUPLE1";
    case op::TUPLE2: return "TUPLE2";
    case op::TUPLE3: return "TUPLE3";
    case op::NEWTRUE: return "NEWTRUE";
    case op::NEWFALSE: return "NEWFALSE";
    case op::LONG1: return "LONG1";
    case op::LONG4: return "LONG4";
    case op::SHORT_BINUNICODE: return "SHORT_BINUNICODE";
    case op::BINUNICODE8: return "BINUNICODE8";
    case op::BINBYTES8: return "BINBYTES8";
    case op::EMPTY_SET: return "EMPTY_SET";
    case op::ADDITEMS: return "ADDITEMS";
    case op::FROZENSET: return "FROZENSET";
    case op::NEWOBJ_EX: return "NEWOBJ_EX";
    case op::STACK_GLOBAL: return "STACK_GLOBAL";
    case op::MEMOIZE: return "MEMOIZE";
    case op::FRAME: return "FRAME";
    case op::BYTEARRAY8: return "BYTEARRAY8";
    case op::NEXT_BUFFER: return "NEXT_BUFFER";
    case op::READONLY_BUFFER: return "READONLY_BUFFER";
    default: return nullptr;
  }
}

}  // namespace memsnap::pickle
