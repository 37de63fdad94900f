// The fuzz targets' checks of what memsnap writes: text, XML/SVG, JSON, CSV and the HTML page.
// A failure is a bug in a writer, not bad input, so each aborts with the output's start.
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/util/utf8.hpp"

namespace memsnap::fuzz {

[[noreturn]] inline void malformed(const char* what, const std::string& why, std::string_view out) {
  std::fprintf(stderr, "%s is not well-formed: %s\n  %.400s\n", what, why.c_str(), std::string(out).c_str());
  std::abort();
}

/// Valid UTF-8 without control characters other than newline (and tab where `tab`): safe on a terminal.
inline void check_text(const char* what, std::string_view out, bool tab = false) {
  if (!memsnap::utf8::valid(out)) malformed(what, "invalid UTF-8", out);
  for (unsigned char c : out)
    if ((c < 0x20 && c != '\n' && !(tab && c == '\t')) || c == 0x7f)
      malformed(what, "control character " + std::to_string(c), out);
}

inline void check_json(const char* what, std::string_view out) {
  if (!memsnap::utf8::valid(out)) malformed(what, "invalid UTF-8", out);
  if (!nlohmann::json::accept(out)) malformed(what, "does not parse", out);
}

/// One XML element's tag at `i` (out[i] == '<'): its name, whether it closes or is empty, and
/// the index after its '>'. Attributes are quoted and hold no '<'.
struct XmlTag {
  std::string name;
  bool closing = false, empty = false;
  size_t end = 0;
};

inline XmlTag xml_tag(const char* what, std::string_view out, size_t i) {
  XmlTag t;
  t.closing = i + 1 < out.size() && out[i + 1] == '/';
  size_t j = i + (t.closing ? 2 : 1), name_end = j;
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '-' || c == '_' || c == '.';
  };
  while (name_end < out.size() && name_char(out[name_end])) ++name_end;
  t.name = std::string(out.substr(j, name_end - j));
  if (t.name.empty() || !std::isalpha(static_cast<unsigned char>(t.name[0])))
    malformed(what, "a '<' without a tag name at " + std::to_string(i), out);
  size_t k = name_end;
  char quote = 0;
  for (; k < out.size() && (quote || out[k] != '>'); ++k) {
    if (quote) {
      if (out[k] == quote) quote = 0;
      if (out[k] == '<') malformed(what, "'<' in an attribute at " + std::to_string(k), out);
    } else if (out[k] == '"' || out[k] == '\'') {
      quote = out[k];
    } else if (out[k] == '<' || out[k] == '&') {
      malformed(what, "a stray character in the tag <" + t.name, out);
    }
  }
  if (k >= out.size()) malformed(what, "an unclosed tag <" + t.name, out);
  t.empty = out[k - 1] == '/';
  t.end = k + 1;
  return t;
}

/// An entity at `i` (out[i] == '&'): one of XML's five or a numeric character reference.
inline size_t xml_entity(const char* what, std::string_view out, size_t i) {
  size_t semi = out.find(';', i);
  if (semi == std::string::npos || semi - i > 10) malformed(what, "a bare '&' at " + std::to_string(i), out);
  std::string_view name = out.substr(i + 1, semi - i - 1);
  bool ok = name == "amp" || name == "lt" || name == "gt" || name == "quot" || name == "apos";
  if (!ok && name.size() > 1 && name[0] == '#') {
    bool hex = name[1] == 'x';
    std::string_view digits = name.substr(hex ? 2 : 1);
    ok = !digits.empty();
    for (char c : digits) ok = ok && (hex ? std::isxdigit(static_cast<unsigned char>(c)) : std::isdigit(c));
  }
  if (!ok) malformed(what, "an unknown entity at " + std::to_string(i), out);
  return semi + 1;
}

/// XML as memsnap writes it (SVG, JUnit): one root element, every tag closed in order, quoted
/// attributes, known entities, no '<' in text, no control characters.
inline void check_xml(const char* what, std::string_view out) {
  check_text(what, out, true);
  std::vector<std::string> open;
  size_t i = 0, roots = 0;
  if (out.rfind("<?xml", 0) == 0) {
    size_t end = out.find("?>");
    if (end == std::string::npos) malformed(what, "an unclosed XML declaration", out);
    i = end + 2;
  }
  while (i < out.size()) {
    if (out[i] == '&') {
      i = xml_entity(what, out, i);
    } else if (out.compare(i, 9, "<![CDATA[") == 0) {
      size_t end = out.find("]]>", i);
      if (end == std::string::npos || open.empty()) malformed(what, "a CDATA section outside an element", out);
      i = end + 3;
    } else if (out.compare(i, 4, "<!--") == 0) {
      size_t end = out.find("-->", i + 4);
      if (end == std::string::npos) malformed(what, "an unclosed comment", out);
      i = end + 3;
    } else if (out[i] == '<') {
      XmlTag t = xml_tag(what, out, i);
      if (t.closing) {
        if (open.empty() || open.back() != t.name) malformed(what, "</" + t.name + "> closes nothing open", out);
        open.pop_back();
      } else {
        if (open.empty() && ++roots > 1) malformed(what, "a second root element <" + t.name, out);
        if (!t.empty) open.push_back(t.name);
      }
      i = t.end;
    } else {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(out[i])))
        malformed(what, "text outside the root element at " + std::to_string(i), out);
      ++i;
    }
  }
  if (!open.empty()) malformed(what, "<" + open.back() + "> never closed", out);
  if (roots != 1) malformed(what, "no root element", out);
}

/// Graphviz DOT as memsnap writes it: one digraph, braces balanced outside strings, every
/// string closed on its line, an HTML-like label (<...>) never used.
inline void check_dot(const char* what, std::string_view out) {
  check_text(what, out, true);
  if (out.rfind("digraph", 0) != 0) malformed(what, "no digraph", out);
  int depth = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (c == '"') {
      for (++i; i < out.size() && out[i] != '"'; ++i) {
        if (out[i] == '\\') ++i;
        if (i < out.size() && out[i] == '\n') malformed(what, "a string across lines", out);
      }
      if (i >= out.size()) malformed(what, "an unclosed string", out);
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth < 0) malformed(what, "a '}' closing nothing", out);
    } else if (c == '<') {
      malformed(what, "an HTML-like label at " + std::to_string(i), out);
    }
  }
  if (depth != 0) malformed(what, "unbalanced braces", out);
}

/// RFC 4180 CSV: rows of one width, no control character but the row's newline (none inside
/// quotes either), and no cell a spreadsheet takes for a formula (a leading = + - @ tab or CR,
/// other than a plain negative integer).
inline void check_csv(const char* what, std::string_view out) {
  check_text(what, out);
  size_t width = 0, row = 0;
  std::vector<std::string> cells(1);
  auto end_cell = [&] {
    const std::string& c = cells.back();
    bool number = c.size() > 1 && c[0] == '-' && c.find_first_not_of("0123456789", 1) == std::string::npos;
    if (!c.empty() && std::string_view("=+-@\t\r").find(c[0]) != std::string_view::npos && !number)
      malformed(what, "a formula cell in row " + std::to_string(row) + ": " + c.substr(0, 80), out);
  };
  for (size_t i = 0; i < out.size();) {
    if (out[i] == '"' && cells.back().empty()) {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= out.size()) malformed(what, "an unclosed quote", out);
        if (out[j] != '"') {
          cells.back() += out[j];
        } else if (j + 1 < out.size() && out[j + 1] == '"') {
          cells.back() += '"';
          ++j;
        } else {
          break;
        }
      }
      i = j + 1;
      if (i < out.size() && out[i] != ',' && out[i] != '\n') malformed(what, "text after a closing quote", out);
    } else if (out[i] == ',') {
      end_cell();
      cells.emplace_back();
      ++i;
    } else if (out[i] == '\n') {
      end_cell();
      if (row++ == 0) width = cells.size();
      if (cells.size() != width)
        malformed(what, "row " + std::to_string(row) + " has " + std::to_string(cells.size()) + " cells", out);
      cells.assign(1, std::string());
      ++i;
    } else if (out[i] == '"') {
      malformed(what, "a quote inside an unquoted cell", out);
    } else {
      cells.back() += out[i++];
    }
  }
  if (!out.empty() && out.back() != '\n') malformed(what, "a last row without a newline", out);
}

/// The report page: the title escaped, the data element one JSON text with no '<', '>' or '&'
/// (nothing in it can end the element), then the page's own script.
inline void check_html(const char* what, std::string_view out) {
  if (!memsnap::utf8::valid(out)) malformed(what, "invalid UTF-8", out);
  if (out.rfind("<!DOCTYPE html>\n", 0) != 0) malformed(what, "no doctype", out);
  size_t title = out.find("<title>"), title_end = out.find("</title>");
  if (title == std::string::npos || title_end == std::string::npos || title_end < title)
    malformed(what, "no title", out);
  std::string_view title_text = out.substr(title + 7, title_end - title - 7);
  if (title_text.find('<') != std::string::npos) malformed(what, "'<' in the title", out);
  for (size_t i = title_text.find('&'); i != std::string::npos; i = title_text.find('&', i + 1))
    (void)xml_entity(what, title_text, i);
  const std::string_view open = "<script type=\"application/json\" id=\"memsnap-data\">";
  size_t data = out.find(open);
  if (data == std::string::npos) malformed(what, "no data element", out);
  data += open.size();
  size_t data_end = out.find("</script>", data);
  if (data_end == std::string::npos) malformed(what, "the data element never ends", out);
  std::string_view json = out.substr(data, data_end - data);
  if (json.find_first_of("<>&") != std::string::npos) malformed(what, "markup characters in the data", out);
  check_json(what, json);
  if (out.compare(data_end, 18, "</script>\n<script>") != 0) malformed(what, "text after the data element", out);
  if (out.find("<script", data_end + 18) != std::string::npos) malformed(what, "a third script", out);
}

}  // namespace memsnap::fuzz
