// `analyze --fits SIZE [--stream S]`: the values parsed and checked.
#include <charconv>

#include "memsnap/app/analyze_command.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::app {

std::optional<uint64_t> parse_stream(const std::string& text) {
  std::string_view t = text;
  int base = 10;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
    t.remove_prefix(2);
    base = 16;
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v, base);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

uint64_t fits_bytes(const std::string& text) {
  auto v = parse_size(text);
  if (!v || *v == 0) throw Failure("--fits: not a size: '" + text + "' (e.g. 1.5GiB, 512MiB, 4096)", kBadInput);
  return *v;
}

uint64_t stream_value(const std::string& text) {
  auto v = parse_stream(text);
  if (!v) throw Failure("--stream: not a stream: '" + text + "' (decimal, or hex with 0x)", kBadInput);
  return *v;
}

std::optional<analysis::FitsQuery> parse_fits(const FitsOptions& o) {
  if (o.size.empty()) return std::nullopt;
  return analysis::FitsQuery{fits_bytes(o.size), o.stream.empty() ? 0 : stream_value(o.stream)};
}

}  // namespace memsnap::app
