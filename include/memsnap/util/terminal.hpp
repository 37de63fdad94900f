// Text from a snapshot made safe to print on a terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace memsnap {

/// C0 and C1 control characters, DEL and invalid UTF-8 shown escaped ("\x1b", "\n",
/// "\t"), so that no string from a file can move the cursor, clear the screen, set
/// the window title or start a forged line; at most `cap` bytes kept (then "...").
std::string terminal_safe(std::string_view s, size_t cap = 4096);

}  // namespace memsnap
