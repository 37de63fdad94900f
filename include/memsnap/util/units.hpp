// Byte sizes for people: "1.50 GiB" out, "1.5GiB" / "512MiB" / "2e9" in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsnap {

/// "512 B", "1.50 KiB", "20.00 MiB", "1.25 GiB" (binary units, two decimals).
std::string human_bytes(uint64_t n);
/// As PyTorch's format_size in OOM messages: "N bytes" below 1 KiB, else two decimals.
std::string torch_format_size(uint64_t n);
/// 1234567 -> "1,234,567".
std::string with_commas(uint64_t n);
/// An address as "0x7f3a00000000" (lower case, no padding; 0 is "0x0").
std::string hex(uint64_t v);
/// Parses "1.5GiB", "512MiB", "20MB" (decimal), "4096", "2k"; nullopt when malformed.
std::optional<uint64_t> parse_size(std::string_view text);

}  // namespace memsnap
