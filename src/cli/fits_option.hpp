// `analyze --fits SIZE [--stream S]`: the option pair and its parsing.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/fits.hpp"

namespace memsnap::cli {

struct FitsOptions {
  std::string size;    // --fits, e.g. "1.5GiB"
  std::string stream;  // --stream, decimal or 0x hex
};

void add_fits_options(CLI::App& cmd, FitsOptions& options);

/// The --fits request, when given. Bad --fits / --stream values throw Failure (exit 2).
std::optional<analysis::FitsQuery> parse_fits(const FitsOptions& options);

/// Parses a stream handle: decimal or 0x hex; nullopt when malformed.
std::optional<uint64_t> parse_stream(const std::string& text);

}  // namespace memsnap::cli
