// The fleet summary: rows read from analyze JSON, merging as a union (associative, order-independent),
// the outlier rule, and one-line errors for malformed documents.
#include <doctest/doctest.h>

#include <array>
#include <sstream>

#include "memsnap/report/fleet.hpp"

using namespace memsnap;
using report::FleetJson;

namespace {

/// A minimal analyze document: one entry per device with (reserved, allocated, peak or -1, ooms, leaks).
FleetJson analyze_doc(const std::string& path, std::vector<std::array<int64_t, 5>> devices) {
  FleetJson doc = {{"schema_version", 1}, {"input", {{"path", path}}}};
  FleetJson ds = FleetJson::array();
  for (auto [reserved, allocated, peak, ooms, leaks] : devices) {
    FleetJson d = {{"totals", {{"reserved_bytes", reserved}, {"allocated_bytes", allocated}}},
                   {"peak", peak < 0 ? FleetJson(nullptr) : FleetJson{{"allocated_bytes", peak}}},
                   {"oom_events", ooms},
                   {"leaks", FleetJson::array()}};
    for (int64_t i = 0; i < leaks; ++i) d["leaks"].push_back({{"site", "x.py:1:f"}});
    ds.push_back(d);
  }
  doc["devices"] = ds;
  return doc;
}

FleetJson merged(const std::vector<FleetJson>& docs) {
  report::Fleet f;
  for (const auto& d : docs) report::add_fleet_document(f, d);
  report::finish_fleet(f);
  std::ostringstream out;
  report::write_fleet_json(out, f);
  return FleetJson::parse(out.str());
}

}  // namespace

TEST_CASE("fleet row: sums over devices, the highest peak, OOM events and leaks") {
  auto row = report::fleet_row(analyze_doc("a", {{100, 40, 70, 1, 0}, {50, 10, 90, 0, 2}}), "a");
  CHECK(row.devices == 2);
  CHECK(row.reserved_bytes == 150);
  CHECK(row.allocated_bytes == 50);
  CHECK(row.peak_allocated_bytes == 90);
  CHECK(row.oom_events == 1);
  CHECK(row.leaks == 2);
  auto no_trace = report::fleet_row(analyze_doc("b", {{100, 40, -1, 0, 0}}), "b");
  CHECK(!no_trace.peak_allocated_bytes);
  CHECK(no_trace.peak_or_allocated() == 40);
}

TEST_CASE("fleet: merging is associative and independent of order") {
  auto a = analyze_doc("a.pickle", {{100, 40, 70, 0, 0}});
  auto b = analyze_doc("b.pickle", {{100, 40, 75, 0, 1}});
  auto c = analyze_doc("c.pickle", {{300, 40, 400, 2, 0}});
  auto d = analyze_doc("d.pickle", {{100, 40, -1, 0, 0}});
  auto left = merged({merged({a, b}), c, d});
  auto right = merged({a, merged({b, merged({c, d})})});
  auto reversed = merged({d, c, b, a});
  CHECK(left["fleet"] == right["fleet"]);
  CHECK(left["fleet"] == reversed["fleet"]);
  CHECK(left["files"] == reversed["files"]);
  CHECK(left["fleet"]["files"] == 4);
  CHECK(left["fleet"]["totals"]["reserved_bytes"] == 600);
  CHECK(left["fleet"]["totals"]["files_with_oom"] == 1);
  CHECK(left["fleet"]["totals"]["files_with_leaks"] == 1);
  // median of 70, 75, 400, 40 (no trace: allocated) = 72.5; only c is above 1.5x it
  CHECK(left["fleet"]["median_peak_allocated_bytes"] == 72.5);
  for (const auto& r : left["fleet"]["rows"]) CHECK(r["outlier"] == (r["file"] == "c.pickle"));
  CHECK(left["files"][0]["file"] == "a.pickle");
}

TEST_CASE("fleet: the outlier rule is strictly above 1.5x the median") {
  report::Fleet f;
  for (auto [name, peak] :
       std::vector<std::pair<std::string, int64_t>>{{"a", 10}, {"b", 10}, {"c", 15}, {"d", 16}, {"e", 10}})
    report::add_fleet_document(f, analyze_doc(name, {{100, 1, peak, 0, 0}}));
  report::finish_fleet(f);
  std::vector<std::string> outliers;
  for (const auto& r : f.rows)
    if (r.outlier) outliers.push_back(r.file);
  CHECK(outliers == std::vector<std::string>{"d"});
  REQUIRE(report::worst_row(f));
  CHECK(f.rows[*report::worst_row(f)].file == "d");
}

TEST_CASE("fleet: malformed documents are one line naming what was wrong") {
  report::Fleet f;
  auto message = [&](FleetJson doc) {
    try {
      report::add_fleet_document(f, std::move(doc));
    } catch (const report::FleetFormatError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(message(FleetJson::array()) == "not a JSON object");
  CHECK(message(FleetJson::object()) == "no \"schema_version\": not a memsnap analyze JSON document");
  CHECK(message({{"schema_version", 2}, {"devices", FleetJson::array()}}) == "schema_version 2, this memsnap reads 1");
  CHECK(message({{"schema_version", 1}}) ==
        "neither \"devices\" (analyze) nor \"fleet\" (analyze of many files, merge)");
  CHECK(message({{"schema_version", 1}, {"fleet", {{"rows", {{{"file", "a"}}}}}}}) == "fleet.rows[0]: no \"devices\"");
  auto bad = analyze_doc("a", {{100, 40, 70, 0, 0}});
  bad["devices"][0]["totals"]["reserved_bytes"] = -5;
  CHECK(message(bad) == "devices[0].totals.reserved_bytes: not a non-negative integer");
  CHECK(f.rows.empty());  // nothing half-added
}
