// The one UTF-8 validator: every escaper (terminal, XML/SVG, HTML, JSON, CSV, DOT, the
// pickler's strings) asks it whether bytes are text, so that no two of them can disagree.
//
// Well-formed UTF-8 is exactly the byte sequences of the Unicode Standard's table 3-7:
//   00..7F
//   C2..DF 80..BF
//   E0     A0..BF 80..BF          (E0 80..9F would be overlong)
//   E1..EC 80..BF 80..BF
//   ED     80..9F 80..BF          (ED A0..BF are the surrogates U+D800..U+DFFF)
//   EE..EF 80..BF 80..BF
//   F0     90..BF 80..BF 80..BF   (F0 80..8F would be overlong)
//   F1..F3 80..BF 80..BF 80..BF
//   F4     80..8F 80..BF 80..BF   (F4 90.. and F5..FF lie above U+10FFFF)
// Anything else, C0, C1 and F5..FF lead bytes, a stray continuation byte, or a sequence
// cut short by the end of the text, starts no character: an escaper shows that one byte
// (as "\xNN" or U+FFFD) and goes on with the next.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace memsnap::utf8 {

/// U+FFFD REPLACEMENT CHARACTER, what invalid bytes become where "\xNN" cannot be shown.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

/// Whether ED A0..BF xx (a UTF-16 surrogate, as Python's "surrogatepass" writes one) counts as
/// a character: only for text going back to Python as it came; never for display.
enum class Surrogates : uint8_t { Invalid, Allowed };

/// Bytes (1 to 4) of the well-formed sequence that starts at s[i], or 0 when none starts there
/// (see the table above). `i` must be below s.size().
size_t sequence(std::string_view s, size_t i, Surrogates surrogates = Surrogates::Invalid) noexcept;

/// The code point of the well-formed sequence of `len` bytes (from sequence()) at s[i].
char32_t decode(std::string_view s, size_t i, size_t len) noexcept;

/// Whether all of `s` is well-formed UTF-8.
bool valid(std::string_view s, Surrogates surrogates = Surrogates::Invalid) noexcept;

/// `s` with every byte that starts no character replaced by U+FFFD; `s` itself (no copy,
/// `scratch` untouched) when it is all well-formed. The view is valid while `s` and `scratch` are.
std::string_view sanitize(std::string_view s, std::string& scratch, Surrogates surrogates = Surrogates::Invalid);

/// The same, as a string.
std::string sanitized(std::string_view s);

/// C0 controls, DEL and the C1 controls U+0080..U+009F: what a terminal acts on.
constexpr bool is_control(char32_t cp) noexcept {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

/// The longest prefix of `s` of at most `n` bytes that does not end inside a well-formed
/// sequence (so cutting there never splits a character).
std::string_view prefix(std::string_view s, size_t n) noexcept;

}  // namespace memsnap::utf8
