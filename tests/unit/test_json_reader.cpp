// The JSON reader: the same ValueGraph as the unpickler, iterative, with byte offsets in errors.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/pickle/json_reader.hpp"
#include "memsnap/util/error.hpp"
#include "support/testdata.hpp"

using memsnap::InputError;
using namespace memsnap::pickle;

namespace {

std::vector<uint8_t> bytes_of(std::string_view s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// The InputError that reading `text` throws (any other exception escapes and fails the test).
InputError json_error(std::string_view text) {
  auto bytes = bytes_of(text);
  try {
    read_json(bytes);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("no InputError was thrown for: " << std::string(text));
  return InputError("", "");
}

}  // namespace

TEST_CASE("read_json: a snapshot-shaped document") {
  auto text = bytes_of(R"({"segments": [{"device": 0, "address": 139716164220928, "total_size": 2097152,
      "segment_type": "large", "blocks": [{"size": 1024, "state": "active_allocated",
      "frames": [{"filename": "a.py", "line": 3, "name": "f"}]}]}],
    "device_traces": [[], [{"action": "alloc", "addr": -5, "size": 0.5}]],
    "flag": true, "off": false, "none": null, "text": "q\"\u00e9\n"})");
  ValueGraph g = read_json(text);
  CHECK(dump(g, g.root()) ==
        "{\"segments\": [{\"device\": 0, \"address\": 139716164220928, \"total_size\": 2097152, "
        "\"segment_type\": \"large\", \"blocks\": [{\"size\": 1024, \"state\": \"active_allocated\", "
        "\"frames\": [{\"filename\": \"a.py\", \"line\": 3, \"name\": \"f\"}]}]}], "
        "\"device_traces\": [[], [{\"action\": \"alloc\", \"addr\": -5, \"size\": 0.5}]], "
        "\"flag\": True, \"off\": False, \"none\": None, \"text\": \"q\\x22\\xc3\\xa9\\x0a\"}");
  CHECK(g.kind(g.root()) == Kind::Dict);

  SUBCASE("top-level scalars and arrays") {
    auto one = bytes_of(" 42 ");
    ValueGraph g1 = read_json(one);
    CHECK(dump(g1, g1.root()) == "42");
    auto list = bytes_of("[1, [2, []], {}]");
    ValueGraph g2 = read_json(list);
    CHECK(dump(g2, g2.root()) == "[1, [2, []], {}]");
  }
}

TEST_CASE("read_json: integers beyond int64") {
  auto text = bytes_of("[18446744073709551615, 9223372036854775807, -9223372036854775808]");
  ValueGraph g = read_json(text);
  auto items = g.items(g.root());
  REQUIRE(items.size() == 3);
  CHECK(g.kind(items[0]) == Kind::Int);
  CHECK(g.is_unsigned(items[0]));
  CHECK(g.as_uint(items[0]) == std::numeric_limits<uint64_t>::max());
  CHECK_FALSE(g.is_unsigned(items[1]));
  CHECK(g.as_int(items[1]) == std::numeric_limits<int64_t>::max());
  CHECK(g.as_int(items[2]) == std::numeric_limits<int64_t>::min());
  CHECK(dump(g, g.root()) == "[18446744073709551615, 9223372036854775807, -9223372036854775808]");
}

TEST_CASE("read_json: kMaxJsonDepth nested arrays are a value graph that deep") {
  std::string text = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  auto bytes = bytes_of(text);
  ValueGraph g = read_json(bytes);
  size_t depth = 1;
  for (ValueId v = g.root(); !g.items(v).empty(); v = g.items(v)[0]) ++depth;
  CHECK(depth == kMaxJsonDepth);
}

TEST_CASE("read_json: invalid JSON is an InputError at a byte offset") {
  for (std::string_view bad :
       {"", "{", "[1, 2", "{\"a\": }", "[1 2]", "tru", "[1] x", "{\"a\" 1}", "\"\xff\"", "1e400"}) {
    CAPTURE(std::string(bad));
    InputError e = json_error(bad);
    CHECK(e.location().starts_with("offset "));
    CHECK(e.message().starts_with("invalid JSON: "));
  }
  SUBCASE("the offset is that of the offending byte") {
    auto bytes = memsnap::test::read_bytes(memsnap::test::testdata("bad/invalid.json"));
    InputError e = json_error(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    CHECK(e.location() == "offset 19");  // the second ',' of {"segments": [1, 2,, 3]}
    CHECK(e.message().find("unexpected ','") != std::string::npos);
    CHECK(json_error("[1, 2,, 3]").location() == "offset 6");
  }
}

TEST_CASE("read_json: nesting deeper than kMaxJsonDepth is one error at the bracket that goes too deep") {
  // As deep as allowed: read (a snapshot nests fewer than 10 levels).
  std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  auto ok_bytes = bytes_of(ok);
  CHECK_NOTHROW(read_json(ok_bytes));
  // 2 MB of '[' (the issue's shape), objects and arrays mixed, and brackets inside strings that
  // do not count: each refused at the first bracket past the limit, without reading the rest.
  for (const std::string& prefix : {std::string(), std::string(R"({"a[[[[{{": )"), std::string(R"(["\"[", )")}) {
    std::string deep = prefix;
    for (size_t i = 0; deep.size() < (size_t{2} << 20); ++i) deep += i % 3 == 2 ? R"({"k":)" : "[";
    InputError e = json_error(deep);
    CHECK(std::string(e.what()).find("nested deeper than " + std::to_string(kMaxJsonDepth)) != std::string::npos);
    // The offset names the bracket that opens level kMaxJsonDepth + 1: count them in the text.
    size_t at = std::stoul(e.location().substr(std::string("offset ").size()));
    REQUIRE(at < deep.size());
    CHECK((deep[at] == '[' || deep[at] == '{'));
    size_t opened = 0;
    bool in_string = false;
    for (size_t i = 0; i <= at; ++i) {
      if (in_string) {
        if (deep[i] == '\\')
          ++i;
        else if (deep[i] == '"')
          in_string = false;
      } else if (deep[i] == '"') {
        in_string = true;
      } else if (deep[i] == '[' || deep[i] == '{') {
        ++opened;
      }
    }
    CHECK(opened == kMaxJsonDepth + 1);
  }
}
