// Small helpers shared by the text reporters (private to src/report).
#pragma once

#include <cstdint>
#include <string>

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
/// "0x7f3a00000000".
std::string hex(uint64_t v);
/// A duration in microseconds as "850 us", "12.3 ms", "4.56 s", "3 min 12 s".
std::string duration(int64_t us);

}  // namespace memsnap::report::detail
