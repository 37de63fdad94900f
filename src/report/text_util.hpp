// Small helpers shared by the text reporters (private to src/report).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "memsnap/util/units.hpp"

namespace memsnap::report::detail {

/// Pads or truncates to exactly `w` columns (UTF-8 aware for display width of ASCII + multibyte).
std::string pad_right(const std::string& s, size_t w);
std::string pad_left(const std::string& s, size_t w);
/// A stream handle as people read it: "0" for the default stream, else hex.
std::string stream_name(uint64_t stream);
/// Epoch microseconds as "2024-11-20 12:00:01 UTC".
std::string utc_time(int64_t time_us);
/// Word-wraps `text` to `width` columns; every line starts with `indent` spaces
/// except the first, which starts with `first` (already printed by the caller).
/// Units stay on the line of their number; a word wider than a line is cut.
std::string wrap(const std::string& text, size_t first, size_t indent, size_t width);
/// The same as a block: every line indented, newline-terminated ("" for empty text).
std::string wrap_block(const std::string& text, size_t width, size_t indent);
/// Shortens to `w` columns keeping the start (file) and the end (line:function): "train.p~:forward".
std::string shorten(const std::string& s, size_t w);
/// "17%": part of whole, rounded to a whole percent ("0%" when whole is 0).
std::string percent_of(uint64_t part, uint64_t whole);
using ::memsnap::hex;  // "0x7f3a00000000" (util/units.hpp)
/// A duration in microseconds as "850 us", "12.3 ms", "4.56 s", "3 min 12 s"; any int64.
std::string duration(int64_t us);
/// b - a, saturated to the int64 range (time spans of hostile files cannot overflow).
int64_t span_us(int64_t a, int64_t b);
/// A string from the snapshot made safe for a terminal: C0 and C1 control characters,
/// DEL and invalid UTF-8 shown escaped ("\x1b", "\n"), at most `cap` bytes kept
/// (then "..."). Every snapshot string a text report prints goes through it.
std::string term(std::string_view s, size_t cap = 4096);
/// Shortens a site ("file.py:LINE:function") to `w` columns from the middle: the line
/// stays whole, the file name keeps its start and its extension ("cache…_V2.py:225:
/// update_new"), and a function too long for what is left keeps its start and end
/// too; the result is at most `w` columns once `w` is 16 or more.
std::string shorten_left(const std::string& s, size_t w);
/// "TITLE  PATH" within `width` columns: the path (escaped) on its own line when both do
/// not fit, and cut from the left ("...") when it alone does not. Newline-terminated.
std::string title_line(const std::string& title, const std::string& path, size_t width);
/// "LABEL PATH" on one line of `width` columns, the path cut from the left when needed.
std::string label_path(const std::string& label, const std::string& path, size_t width);
/// A path (escaped) within `width` columns, cut from the left ("...") when it does not fit.
std::string display_path(const std::string& path, size_t width);
/// Display columns of a UTF-8 string (one per code point).
size_t display_width(std::string_view s);

}  // namespace memsnap::report::detail
