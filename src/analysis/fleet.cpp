// The fleet summary's rules: a file's row from its analysis, the median, outliers, the worst file.
#include "memsnap/analysis/fleet.hpp"

#include <algorithm>
#include <tuple>

#include "memsnap/analysis/leaks.hpp"

namespace memsnap::analysis {

namespace {

uint64_t sat_add(uint64_t a, uint64_t b) {
  return a + b < a ? UINT64_MAX : a + b;
}

}  // namespace

FleetRow fleet_row(const AnalyzeResult& result, std::string file) {
  FleetRow row;
  row.file = std::move(file);
  uint64_t traced = 0, judged = 0, dropped = 0;
  for (const auto& d : result.devices) {
    ++row.devices;
    row.reserved_bytes = sat_add(row.reserved_bytes, d.accounting.reserved_bytes);
    row.allocated_bytes = sat_add(row.allocated_bytes, d.accounting.allocated_bytes);
    if (d.peaks.allocated)
      row.peak_allocated_bytes = std::max(row.peak_allocated_bytes.value_or(0), d.peaks.allocated->allocated_bytes);
    row.oom_events = sat_add(row.oom_events, d.ooms.total);
    row.leaks = sat_add(row.leaks, d.leaks.size());
    if (d.trace.entries > 0) {
      ++traced;
      judged += leaks_judged(d.iterations);
      dropped += d.trace.dropped != DroppedEvents::NotShown;
    }
  }
  row.leaks_judged = row.leaks > 0 || (traced > 0 && judged == traced);
  row.oom_judged = row.oom_events > 0 || (traced > 0 && dropped == 0);
  return row;
}

Median median_peak(const std::vector<FleetRow>& rows) {
  Median m;
  if (rows.empty()) return m;
  std::vector<uint64_t> v;
  v.reserve(rows.size());
  for (const auto& r : rows) v.push_back(r.peak_or_allocated());
  size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  uint64_t hi = v[n / 2];
  if (n % 2) {
    m.twice = U128(hi) * 2;
  } else {
    uint64_t lo = *std::max_element(v.begin(), v.begin() + n / 2);
    m.twice = U128(lo) + hi;
  }
  return m;
}

void finish_rows(std::vector<FleetRow>& rows, std::vector<FleetError>& errors) {
  auto key = [](const FleetRow& r) {
    return std::tie(r.file, r.devices, r.reserved_bytes, r.allocated_bytes, r.peak_allocated_bytes, r.oom_events,
                    r.leaks, r.leaks_judged, r.oom_judged);
  };
  std::sort(rows.begin(), rows.end(), [&](const FleetRow& a, const FleetRow& b) { return key(a) < key(b); });
  std::sort(errors.begin(), errors.end(), [](const FleetError& a, const FleetError& b) {
    return std::tie(a.file, a.message) < std::tie(b.file, b.message);
  });
  // peak > 1.5 x median  <=>  2 x 2 x peak > 3 x twice_median, in 128 bits: exact, no overflow
  Median m = median_peak(rows);
  for (auto& r : rows) r.outlier = U128(r.peak_or_allocated()) * kOutlierDen * 2 > m.twice * kOutlierNum;
}

bool worse(const FleetRow& a, const FleetRow& b) {
  return std::pair(a.oom_events > 0, a.peak_or_allocated()) > std::pair(b.oom_events > 0, b.peak_or_allocated());
}

std::optional<size_t> worst_row(const std::vector<FleetRow>& rows) {
  std::optional<size_t> w;
  for (size_t i = 0; i < rows.size(); ++i)
    if (!w || worse(rows[i], rows[*w])) w = i;
  return w;
}

FleetTotals fleet_totals(const std::vector<FleetRow>& rows) {
  FleetTotals t;
  for (const auto& r : rows) {
    t.leaks_unjudged += !r.leaks_judged;
    t.oom_unjudged += !r.oom_judged;
    t.devices = sat_add(t.devices, r.devices);
    t.reserved = sat_add(t.reserved, r.reserved_bytes);
    t.allocated = sat_add(t.allocated, r.allocated_bytes);
    t.peak_sum = sat_add(t.peak_sum, r.peak_or_allocated());
    t.peak_max = std::max(t.peak_max, r.peak_or_allocated());
    t.ooms = sat_add(t.ooms, r.oom_events);
    t.leaks = sat_add(t.leaks, r.leaks);
    t.oom_files += r.oom_events > 0;
    t.leak_files += r.leaks > 0;
    t.outliers += r.outlier;
  }
  return t;
}

std::vector<std::string> doubled_files(const std::vector<FleetRow>& rows) {
  std::vector<const std::string*> names;
  names.reserve(rows.size());
  for (const auto& r : rows) names.push_back(&r.file);
  std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  std::vector<std::string> out;
  for (size_t i = 1; i < names.size(); ++i)
    if (*names[i] == *names[i - 1] && (out.empty() || out.back() != *names[i])) out.push_back(*names[i]);
  return out;
}

}  // namespace memsnap::analysis
