// The fragmentation, fits, findings and allocator-settings sections of `memsnap
// analyze` (text and JSON), shared with `memsnap segments` (private to src/report).
#pragma once

#include <ostream>
#include <vector>

#include "json_util.hpp"
#include "memsnap/analysis/findings.hpp"
#include "memsnap/analysis/fits.hpp"
#include "memsnap/analysis/fragmentation.hpp"
#include "memsnap/report/analyze.hpp"

namespace memsnap::report::detail {

/// "allocator settings: ..." lines (nothing when the file has no allocator_settings).
void write_settings_text(std::ostream& out, const snapshot::AllocatorSettings& s, const TextStyle& style);
void write_fragmentation_text(std::ostream& out, const analysis::Fragmentation& f, const TextStyle& style);
void write_fits_text(std::ostream& out, const analysis::FitsAnswer& a, const TextStyle& style);
/// The fragmentation and fits sections of the i-th analysed device (each when computed).
void write_device_sections_text(std::ostream& out, const AnalyzeView& view, size_t i, const TextStyle& style);

/// null when the file has no allocator_settings.
Json settings_json(const snapshot::AllocatorSettings& s);
Json fragmentation_json(const analysis::Fragmentation& f);
Json fits_json(const analysis::FitsAnswer& a);
/// Adds `fragmentation` and `fits` of the i-th analysed device to its JSON object (each when computed).
void add_device_sections_json(Json& d, const AnalyzeView& view, size_t i);
/// "small", "large", or "large (1,0)" for a private pool.
std::string pool_label(snapshot::Pool pool, const int64_t pool_id[2]);

}  // namespace memsnap::report::detail
