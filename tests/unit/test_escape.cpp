// The one UTF-8 validator against an independent oracle (every code point's canonical encoding),
// and each escaper built on it: terminal, XML, HTML, JSON in a script, JSON strings, CSV, DOT.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "memsnap/report/escape.hpp"
#include "memsnap/util/terminal.hpp"
#include "memsnap/util/utf8.hpp"

using namespace memsnap;

namespace {

// The oracle: the canonical (shortest) encoding of a code point, from the definition of UTF-8.
std::string encode(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += char(cp);
  } else if (cp < 0x800) {
    s += char(0xC0 | (cp >> 6));
    s += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += char(0xE0 | (cp >> 12));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  } else {
    s += char(0xF0 | (cp >> 18));
    s += char(0x80 | ((cp >> 12) & 0x3F));
    s += char(0x80 | ((cp >> 6) & 0x3F));
    s += char(0x80 | (cp & 0x3F));
  }
  return s;
}

bool is_surrogate(char32_t cp) {
  return cp >= 0xD800 && cp <= 0xDFFF;
}

const std::string kF8 = "\xf8\x88\x80";  // the issue's bytes: an F8 lead is no character at all
const std::string kFFFD = "\xEF\xBF\xBD";

}  // namespace

TEST_CASE("utf8::sequence accepts exactly the canonical encodings of the code points") {
  // Every code point round-trips with its own length; a surrogate only when allowed.
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    std::string s = encode(cp);
    size_t want = is_surrogate(cp) ? 0 : s.size();
    REQUIRE(utf8::sequence(s, 0) == want);
    if (want) REQUIRE(utf8::decode(s, 0, want) == cp);
    if (is_surrogate(cp)) REQUIRE(utf8::sequence(s, 0, utf8::Surrogates::Allowed) == 3);
    // Every proper prefix of a multi-byte sequence is cut short: no character.
    for (size_t n = 1; n < s.size(); ++n) REQUIRE(utf8::sequence(std::string_view(s).substr(0, n), 0) == 0);
  }
  // Every 2- and 3-byte string is accepted as one sequence exactly when it is such an encoding.
  std::set<std::string> canonical;
  for (char32_t cp = 0x80; cp < 0x10000; ++cp)
    if (!is_surrogate(cp)) canonical.insert(encode(cp));
  for (int a = 0x80; a < 0x100; ++a)
    for (int b = 0; b < 0x100; ++b) {
      std::string two{char(a), char(b)};
      REQUIRE((utf8::sequence(two, 0) == 2) == (canonical.count(two) == 1));
      for (int c = 0x70; c < 0xC8 && a >= 0xE0 && a < 0xF0; ++c) {  // 3-byte leads, around the continuation range
        std::string three{char(a), char(b), char(c)};
        size_t n = utf8::sequence(three, 0);
        REQUIRE((n == 3) == (canonical.count(three) == 1));
      }
    }
  // Lead bytes C0, C1 and F5..FF start nothing whatever follows (the issue's F8 among them).
  for (int lead : {0xC0, 0xC1, 0xF5, 0xF8, 0xFB, 0xFC, 0xFE, 0xFF})
    for (int b = 0x80; b < 0xC0; b += 7) {
      std::string s{char(lead), char(b), '\x80', '\x80'};
      CHECK(utf8::sequence(s, 0) == 0);
    }
  CHECK(utf8::sequence("\xf4\x90\x80\x80", 0) == 0);  // above U+10FFFF
  CHECK(utf8::sequence("\xf0\x8f\xbf\xbf", 0) == 0);  // overlong
  CHECK(utf8::sequence("\xe0\x9f\xbf", 0) == 0);      // overlong
  CHECK(!utf8::valid(kF8));
  CHECK(utf8::sanitized("a" + kF8 + "b") == "a" + kFFFD + kFFFD + kFFFD + "b");
  CHECK(utf8::prefix("a\xC3\xA9", 2) == "a");
  CHECK(utf8::prefix("a\xC3\xA9", 3) == "a\xC3\xA9");
}

TEST_CASE("terminal_safe: F5..FF leads, overlongs, surrogates and cut sequences are shown as bytes") {
  CHECK(terminal_safe(kF8) == "\\xf8\\x88\\x80");
  CHECK(terminal_safe("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");  // overlong '/'
  CHECK(terminal_safe("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // surrogate
  CHECK(terminal_safe("x\xe2\x82") == "x\\xe2\\x82");         // cut short
  CHECK(terminal_safe("\xc2\x9b") == "\\xc2\\x9b");           // C1 CSI
  CHECK(terminal_safe("\x1b[2J\x07\x7f") == "\\x1b[2J\\x07\\x7f");
  CHECK(terminal_safe("d\xC3\xA9j\xC3\xA0 \xF0\x9F\x98\x80") == "d\xC3\xA9j\xC3\xA0 \xF0\x9F\x98\x80");
}

TEST_CASE("xml_escape and html_escape: markup, controls and invalid UTF-8; never an invalid XML character") {
  CHECK(report::xml_escape("f" + kF8) == "f" + kFFFD + kFFFD + kFFFD);
  CHECK(report::xml_escape("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&apos;");
  CHECK(report::xml_escape("\xEF\xBF\xBE\xEF\xBF\xBF") == kFFFD + kFFFD);  // U+FFFE, U+FFFF
  CHECK(report::xml_escape("\xed\xa0\x80") == kFFFD + kFFFD + kFFFD);
  CHECK(report::xml_escape("tab\there\nx") == "tab here x");
  CHECK(report::html_escape("<script>alert('x')</script>") == "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  CHECK(report::html_escape("\xc2\x85" + kF8) == kFFFD + kFFFD + kFFFD + kFFFD);  // C1 NEL, then F8 88 80
  // Whatever the bytes, the output is valid UTF-8 with no control character but newline-free text.
  std::string all;
  for (int c = 0; c < 256; ++c) all += char(c);
  for (const std::string& out : {report::xml_escape(all), report::html_escape(all)}) {
    CHECK(utf8::valid(out));
    for (unsigned char c : out) CHECK((c >= 0x20 && c != 0x7F));
    CHECK(out.find('<') == std::string::npos);
  }
}

TEST_CASE("script_safe_json: nothing can end the script element; the JSON means the same") {
  std::string j = R"({"a":"</script><!-- & \u2028","b":1})";
  std::string s = report::script_safe_json(j + "\xe2\x80\xa8");
  CHECK(s.find('<') == std::string::npos);
  CHECK(s.find('>') == std::string::npos);
  CHECK(s.find('&') == std::string::npos);
  CHECK(s.find("\xe2\x80\xa8") == std::string::npos);
  CHECK(s == R"({"a":"\u003c/script\u003e\u003c!-- \u0026 \u2028","b":1})"
             "\\u2028");
  CHECK(report::script_safe_json("\"" + kF8 + "\"") == "\"" + kFFFD + kFFFD + kFFFD + "\"");
}

TEST_CASE("json_quote: quotes, backslashes, controls and invalid UTF-8") {
  CHECK(report::json_quote("a\"b\\c\n\x1b\x7f") == R"("a\"b\\c\n\u001b\u007f")");
  CHECK(report::json_quote(kF8) == "\"" + kFFFD + kFFFD + kFFFD + "\"");
}

TEST_CASE("csv_cell: control characters escaped, formulas neutralised (OWASP), quoted when needed") {
  CHECK(report::csv_cell("train.py:12:step") == "train.py:12:step");
  CHECK(report::csv_cell("=2+5*7:540:x") == "\"'=2+5*7:540:x\"");
  CHECK(report::csv_cell("-2+3") == "\"'-2+3\"");
  CHECK(report::csv_cell("+1") == "\"'+1\"");
  CHECK(report::csv_cell("@SUM(1,2)") == "\"'@SUM(1,2)\"");
  CHECK(report::csv_cell("\t=1") == "\"'\\t=1\"");
  CHECK(report::csv_cell("\r=1") == "\"'\\r=1\"");
  CHECK(report::csv_cell("a,b") == "\"a,b\"");
  CHECK(report::csv_cell("a;=1") == "\"a;=1\"");
  CHECK(report::csv_cell("say \"hi\"") == "\"say \"\"hi\"\"\"");
}

TEST_CASE("csv_cell: no byte a terminal or a spreadsheet acts on survives") {
  std::string hostile(
      "\x1b]0;title\x07\r\n\0\x7f\xc2\x9b"
      "31m",
      19);
  std::string cell = report::csv_cell(hostile);
  CHECK(utf8::valid(cell));
  for (unsigned char c : cell) CHECK((c >= 0x20 && c != 0x7F));
  CHECK(cell.find("\xc2\x9b") == std::string::npos);
  CHECK(cell == "\"\\x1b]0;title\\x07\\r\\n\\x00\\x7f\\xc2\\x9b31m\"");
}

TEST_CASE("dot_escape: quotes and backslashes; raw controls and invalid UTF-8 shown as bytes") {
  CHECK(report::dot_escape("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(report::dot_escape("x" + kF8) == "x\\\\xf8\\\\x88\\\\x80");
}
