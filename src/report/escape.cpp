// Escapers for every output medium, on the one UTF-8 validator (util/utf8.hpp).
#include "memsnap/report/escape.hpp"

#include <cstdint>
#include <cstdio>

#include "memsnap/util/terminal.hpp"
#include "memsnap/util/utf8.hpp"

namespace memsnap::report {

namespace {

// XML 1.0's Char production excludes U+FFFE and U+FFFF (and surrogates, which the validator
// never passes).
bool xml_noncharacter(char32_t cp) {
  return cp == 0xFFFE || cp == 0xFFFF;
}

// The markup escaping shared by XML and HTML; `html` also replaces C1 controls, which HTML
// parsers report as errors, and spells the apostrophe as HTML 4 knows it.
std::string markup_escape(std::string_view s, bool html) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8::sequence(s, i);
    if (len == 0) {
      out += utf8::kReplacement;
      ++i;
      continue;
    }
    char32_t cp = utf8::decode(s, i, len);
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += html ? "&#39;" : "&apos;"; break;
      case '\t':
      case '\n': out += ' '; break;
      default:
        if (cp < 0x20 || cp == 0x7F || (html && cp >= 0x80 && cp <= 0x9F) || xml_noncharacter(cp))
          out += utf8::kReplacement;
        else
          out.append(s.substr(i, len));
    }
    i += len;
  }
  return out;
}

void hex_escape(std::string& out, const char* format, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof buf, format, value);
  out += buf;
}

}  // namespace

std::string xml_escape(std::string_view s) {
  return markup_escape(s, false);
}

std::string html_escape(std::string_view s) {
  return markup_escape(s, true);
}

std::string script_safe_json(std::string_view json) {
  std::string scratch;
  std::string_view s = utf8::sanitize(json, scratch);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '>' || c == '&') {
      hex_escape(out, "\\u%04x", static_cast<unsigned char>(c));
    } else if (c == '\xE2' && i + 2 < s.size() && s[i + 1] == '\x80' && (s[i + 2] == '\xA8' || s[i + 2] == '\xA9')) {
      out += s[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";  // line separators end a JavaScript line
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string json_quote(std::string_view text) {
  std::string scratch;
  std::string_view s = utf8::sanitize(text, scratch);
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7F)  // control characters never reach a terminal raw
          hex_escape(out, "\\u%04x", c);
        else
          out += ch;
    }
  }
  out += '"';
  return out;
}

std::string csv_cell(std::string_view text, size_t cap) {
  // Shown as on a terminal: no control character or invalid byte survives, not even CR or LF,
  // which RFC 4180 would allow quoted but which break line-based tools and move the cursor.
  std::string cell = terminal_safe(text, cap);
  char first = text.empty() ? '\0' : text.front();
  bool formula = first == '=' || first == '+' || first == '-' || first == '@' || first == '\t' || first == '\r';
  if (formula) cell.insert(cell.begin(), '\'');
  if (!formula && cell.find_first_of(",;\"") == std::string::npos) return cell;
  std::string out = "\"";
  for (char c : cell) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string dot_escape(std::string_view text) {
  std::string safe = terminal_safe(text, SIZE_MAX);  // printable text passes unchanged
  std::string out;
  out.reserve(safe.size() + 8);
  for (char c : safe) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace memsnap::report
