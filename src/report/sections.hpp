// Sections shared by the reporters of analyze and segments (private to src/report).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "json_util.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/report/diff.hpp"
#include "words.hpp"

namespace memsnap::report::detail {

/// The column layout of the byte rows: label, bytes, human.
inline constexpr size_t kLabel = 36, kBytes = 17, kHuman = 13;
/// Text width to lay out in: the terminal's, within 60..160 columns for prose.
size_t prose_width(const TextStyle& style);
/// One line for the cache's free memory when analyze leaves its breakdown to -v.
void write_free_summary_text(std::ostream& out, const analysis::Accounting& a, const TextStyle& style);

/// "memsnap 0.1.0  PATH" and the input line.
void write_header_text(std::ostream& out, const Source& src, const std::optional<int64_t>& origin,
                       const TextStyle& style);
/// "allocator settings: ..." lines (nothing when the file has no allocator_settings).
void write_settings_text(std::ostream& out, const snapshot::AllocatorSettings& s, const TextStyle& style);
/// Free memory by cause, per pool and stream, the histogram and the pinning sites.
void write_accounting_text(std::ostream& out, const analysis::Accounting& a, const TextStyle& style);
void write_fits_text(std::ostream& out, const analysis::FitsAnswer& a, const TextStyle& style);
/// The trace part of a device: span, replay, peak, iterations (or structure), leaks.
/// With `sites`, a site row names the library call it went through ("via ...").
void write_trace_text(std::ostream& out, const analysis::DeviceAnalysis& d, const snapshot::AllocatorSettings& settings,
                      const std::optional<int64_t>& origin, const TextStyle& style,
                      const analysis::Sites* sites = nullptr);
/// The OOM headline at the top of a device, and the OOM section in full.
void write_oom_headline_text(std::ostream& out, const analysis::DeviceAnalysis& d, const TextStyle& style);
void write_oom_text(std::ostream& out, const analysis::DeviceAnalysis& d, const std::optional<int64_t>& origin,
                    const TextStyle& style);
/// `state_notes`: the information-only findings about the cache's state (stranded, fragmented,
/// releasable, pending) are printed; else they are counted on one line (analyze -v shows them).
void write_findings_text(std::ostream& out, const analysis::DeviceAnalysis& d, const snapshot::AllocatorSettings& s,
                         const TextStyle& style, bool state_notes = true);
/// Role name -> bytes, every role (the built-in ones, then the user's), as analyze's JSON.
nlohmann::ordered_json by_role_json(const analysis::RoleState& s, const std::vector<std::string>& names);
/// The state's phase name ("forward"), or null; with `ranges_are_phases` (--phases annotations)
/// its record_function range's ("torch.compile autotuning" for torch.compile's; null outside).
nlohmann::ordered_json phase_json(const analysis::RoleState& s, bool ranges_are_phases = false);
/// "activations 6.80 GiB, weights 3.72 GiB, ...": the roles with bytes, largest first.
/// With `where`, a role it lists says where it is ("in private pool (0, 2) from FRAME").
std::string roles_words(const analysis::RoleState& s, const std::vector<std::string>& names,
                        const std::vector<analysis::RoleWhere>* where = nullptr);
/// "peak 21.68 GiB in the forward: activations ...". `ranges_are_phases` (--phases annotations):
/// the state's record_function range is its phase ("in 'train_step'").
std::string roles_line(const std::string& what, uint64_t allocated, const analysis::RoleState& s,
                       const std::vector<std::string>& names, bool ranges_are_phases = false);
/// Where a state ran by its record_function range: "in 'NAME'", "in torch.compile autotuning
/// (NAME)", "outside the annotated ranges" (ranges_are_phases), else ", inside torch.compile
/// autotuning (NAME)" after its phase, or nothing.
std::string range_words(const analysis::RoleState& s, bool ranges_are_phases);
/// "by role at the dump: ..." (or at --at's event), for every file.
void write_dump_roles_text(std::ostream& out, const analysis::DeviceAnalysis& d, const TextStyle& style);
/// "+1.23 s" from the origin, or "" without times.
std::string at_time(const std::optional<int64_t>& t, const std::optional<int64_t>& origin);
/// "small", "large", or "large (1,0)" for a private pool.
std::string pool_label(snapshot::Pool pool, const int64_t pool_id[2]);

/// null when the file has no allocator_settings.
Json settings_json(const snapshot::AllocatorSettings& s);
Json accounting_json(const analysis::Accounting& a);
Json fits_json(const analysis::FitsAnswer& a);
Json site_bytes_json(const analysis::SiteBytes& s);
Json pinning_site_json(const analysis::PinningSite& s);
void add_trace_json(Json& device, const analysis::DeviceAnalysis& d);
void add_oom_json(Json& device, const analysis::DeviceAnalysis& d);
Json findings_json(const analysis::DeviceAnalysis& d, const snapshot::AllocatorSettings& s);
Json at_json(const analysis::AtPoint& a);
/// The most urgent finding of a device (highest severity, first raised), or null.
const analysis::Finding* headline_finding(const analysis::DeviceAnalysis& d);
/// One device in a line's facts: OOM, peak, the finding that matters.
Json verdict_json(const analysis::DeviceAnalysis& d);
Json churn_json(const analysis::Churn& c);
Json big_layer_json(const analysis::BigLayer& b);
Json model_per_step_json(const analysis::ModelPerStep& m);
/// The whole `diff --format json` document.
Json diff_json(const DiffView& view);

}  // namespace memsnap::report::detail
