// Text from a snapshot made safe for each output medium. Every escaper stands on the one
// UTF-8 validator (util/utf8.hpp): bytes that start no character never reach an output raw.
//
//   medium           escaper            invalid UTF-8   control characters
//   terminal         terminal_safe()    "\xNN"          "\xNN", "\n", "\t" (util/terminal.hpp)
//   XML, SVG         xml_escape()       U+FFFD          U+FFFD (tab, newline: a space)
//   HTML             html_escape()      U+FFFD          U+FFFD (tab, newline: a space)
//   JSON in <script> script_safe_json()  (its input is JSON text: see below)
//   JSON string      json_quote()       U+FFFD          "\n", "\u001b", ...
//   CSV cell         csv_cell()         "\xNN"          "\xNN", "\r", "\n"; formulas neutralised
//   DOT string       dot_escape()       "\xNN"          "\xNN" (through detail::printable)
// A reporter caps the length of what it shows before escaping (an escape never splits one).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memsnap::report {

/// XML 1.0 character data or attribute value: & < > " ' as entities; C0 controls (but tab and
/// newline, which become a space), DEL, U+FFFE, U+FFFF and invalid UTF-8 as U+FFFD, which XML
/// 1.0 cannot hold at all.
std::string xml_escape(std::string_view text);

/// HTML text, or an attribute value in double or single quotes: & < > " ' as &amp; &lt; &gt;
/// &quot; &#39;; C0 controls (tab and newline: a space), DEL, C1 controls, U+FFFE, U+FFFF and
/// invalid UTF-8 as U+FFFD. Not for a <script> or <style> element's content (see below), nor an
/// unquoted attribute, a URL or an event handler.
std::string html_escape(std::string_view text);

/// A JSON document made safe as the content of an HTML <script> element (e.g. type
/// "application/json"): '<', '>' and '&' written as \u003c \u003e \u0026 and U+2028, U+2029 as
/// \u2028 \u2029, so that neither "</script>" nor "<!--" can end or change the element. Valid
/// only for JSON text (it touches characters inside strings, where \u escapes mean the same
/// characters); invalid UTF-8 becomes U+FFFD.
std::string script_safe_json(std::string_view json);

/// A JSON string literal, quotes included: " and \ escaped, control characters (C0, DEL) as
/// \n \r \t \b \f or \u00XX, invalid UTF-8 as U+FFFD.
std::string json_quote(std::string_view text);

/// One CSV cell (RFC 4180), safe to open in a spreadsheet and to `cat` to a terminal: control
/// characters (C0 with CR and LF, DEL, C1) and invalid UTF-8 shown as "\xNN" ("\r", "\n", "\t");
/// a cell that starts with = + - @, a tab or a carriage return (a formula to Excel, LibreOffice
/// and Google Sheets) gets a leading ' (OWASP's CSV injection advice); then the whole cell in
/// double quotes, quotes doubled, whenever it holds a comma, a semicolon, a quote or that '.
/// At most `cap` bytes of the escaped text are kept (then "...").
std::string csv_cell(std::string_view text, size_t cap = 1024);

/// The content of a DOT double-quoted string: `printable` text (see detail::printable) with
/// backslashes and double quotes escaped.
std::string dot_escape(std::string_view printable);

}  // namespace memsnap::report
