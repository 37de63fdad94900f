// `memsnap timeline -o mem.csv`: the plotted points as RFC 4180 CSV, one row per point; the site
// names in the header are the only text, each through csv_cell() (escape.hpp).
#include <algorithm>
#include <map>
#include <ostream>
#include <string>

#include "memsnap/report/escape.hpp"
#include "memsnap/report/timeline.hpp"

namespace memsnap::report {

void write_timeline_csv(std::ostream& out, const TimelineView& view) {
  const auto& tls = *view.timelines;
  bool by_site = std::any_of(tls.begin(), tls.end(), [](const auto& t) { return t.by_site; });
  // Site columns: the union of every device's top sites, in order of first appearance.
  std::vector<std::string> columns;
  std::map<std::string, size_t> index;
  for (const auto& t : tls)
    for (const auto& s : t.sites)
      if (index.emplace(s.site, columns.size()).second) columns.push_back(s.site);

  // Role columns: every device names the same roles (the built-in ones, then the user's).
  bool by_role = std::any_of(tls.begin(), tls.end(), [](const auto& t) { return t.by_role; });
  std::vector<std::string> roles;
  for (const auto& t : tls)
    if (t.role_names.size() > roles.size()) roles = t.role_names;

  out << "device,event_index,time_us,allocated_bytes,active_bytes,reserved_bytes";
  if (by_site) {
    for (const auto& c : columns) out << ',' << csv_cell(c);
    out << ",other";
  }
  if (by_role) {
    for (const auto& r : roles) out << ',' << csv_cell(r);
    out << ",phase";
  }
  out << "\n";
  std::string line;
  for (const auto& t : tls) {
    std::vector<size_t> col_of(t.sites.size());
    for (size_t c = 0; c < t.sites.size(); ++c) col_of[c] = index.at(t.sites[c].site);
    std::vector<std::string> cells(columns.size() + 1);
    for (size_t p = 0; p < t.points.size(); ++p) {
      const auto& pt = t.points[p];
      line = std::to_string(t.device) + ',' + std::to_string(pt.event_index) + ',' +
             (pt.time_us ? std::to_string(*pt.time_us) : std::string()) + ',' + std::to_string(pt.allocated) + ',' +
             std::to_string(pt.active) + ',' + std::to_string(pt.reserved);
      if (by_site) {
        std::fill(cells.begin(), cells.end(), std::string());
        if (t.by_site) {
          for (size_t c = 0; c < t.sites.size(); ++c) cells[col_of[c]] = std::to_string(t.site_value(p, c));
          cells.back() = std::to_string(t.site_value(p, t.sites.size()));
        }
        for (const auto& c : cells) line += ',' + c;
      }
      if (by_role) {
        for (size_t r = 0; r < roles.size(); ++r)
          line += ',' + (t.by_role && r < t.role_names.size() ? std::to_string(t.role_value(p, r)) : std::string());
        // The phase of the span holding the point's event (empty where none is known).
        auto span = std::upper_bound(t.phases.begin(), t.phases.end(), pt.event_index,
                                     [](uint32_t e, const analysis::TimelinePhase& s) { return e < s.first_event; });
        line += ',' + (span == t.phases.begin() ? std::string() : std::string(analysis::to_string((span - 1)->phase)));
      }
      out << line << "\n";
    }
  }
}

}  // namespace memsnap::report
