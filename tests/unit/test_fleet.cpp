// The fleet summary: rows read from analyze JSON, merging as a union (associative, order-independent),
// the outlier rule, and one-line errors for malformed documents.
#include <doctest/doctest.h>

#include <array>
#include <nlohmann/json.hpp>
#include <sstream>

#include "memsnap/analysis/fleet.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using FleetJson = nlohmann::ordered_json;

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

void add(report::Fleet& f, const FleetJson& doc) {
  report::add_fleet_input(f, doc.dump(2), {});
}

FleetJson merged(const std::vector<FleetJson>& docs) {
  report::Fleet f;
  for (const auto& d : docs) add(f, d);
  report::finish_fleet(f);
  std::ostringstream out;
  report::write_fleet_json(out, f);
  return FleetJson::parse(out.str());
}

}  // namespace

TEST_CASE("fleet row: sums over devices, the highest peak, OOM events and leaks") {
  auto row = report::fleet_row_from_json(analyze_doc("a", {{100, 40, 70, 1, 0}, {50, 10, 90, 0, 2}}).dump(), "a");
  CHECK(row.devices == 2);
  CHECK(row.reserved_bytes == 150);
  CHECK(row.allocated_bytes == 50);
  CHECK(row.peak_allocated_bytes == 90);
  CHECK(row.oom_events == 1);
  CHECK(row.leaks == 2);
  auto no_trace = report::fleet_row_from_json(analyze_doc("b", {{100, 40, -1, 0, 0}}).dump(), "b");
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
    add(f, analyze_doc(name, {{100, 1, peak, 0, 0}}));
  report::finish_fleet(f);
  std::vector<std::string> outliers;
  for (const auto& r : f.rows)
    if (r.outlier) outliers.push_back(r.file);
  CHECK(outliers == std::vector<std::string>{"d"});
  REQUIRE(analysis::worst_row(f.rows));
  CHECK(f.rows[*analysis::worst_row(f.rows)].file == "d");
}

TEST_CASE("fleet: malformed documents are one line naming what was wrong") {
  report::Fleet f;
  auto message = [&](FleetJson doc) {
    try {
      add(f, doc);
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

TEST_CASE("fleet: the median and the outlier rule in integers, at the top of u64") {
  std::vector<analysis::FleetRow> rows(2);
  rows[0].file = "a", rows[0].peak_allocated_bytes = UINT64_MAX;
  rows[1].file = "b", rows[1].peak_allocated_bytes = UINT64_MAX - 1;
  auto m = analysis::median_peak(rows);
  CHECK(m.floor() == UINT64_MAX - 1);  // (2^64 - 1 + 2^64 - 2) / 2 = 2^64 - 1.5
  CHECK(m.twice % 2 == 1);
  std::vector<analysis::FleetError> none;
  analysis::finish_rows(rows, none);
  CHECK(!rows[0].outlier);
  CHECK(!rows[1].outlier);
  auto t = analysis::fleet_totals(rows);
  CHECK(t.peak_sum == UINT64_MAX);  // saturated, never wrapped
  CHECK(t.peak_max == UINT64_MAX);
}

namespace {

/// The row analyze builds in memory, the row merge reads from the analyze JSON, and the row
/// of the document analyze of many files keeps: one and the same.
void rows_agree(const std::filesystem::path& path) {
  auto loaded = snapshot::load_snapshot(path.string());
  analysis::Context ctx(loaded.snapshot);
  auto result = analysis::analyze(ctx, {});
  std::ostringstream json;
  report::write_analyze_json(json, report::Source{loaded.input, ctx}, result);
  auto in_process = analysis::fleet_row(result, "f");
  auto from_json = report::fleet_row_from_json(json.str(), "f");
  CHECK(in_process == from_json);
  // and what analyze of many files keeps as the file's document reads back to the same row
  report::Fleet fleet;
  report::add_fleet_input(fleet, report::fleet_file(report::Source{loaded.input, ctx}, result, "f").json, {});
  REQUIRE(fleet.rows.size() == 1);
  CHECK(fleet.rows[0] == in_process);
}

}  // namespace

TEST_CASE("fleet: the row from the analysis equals merge's row from the analyze JSON, on every fixture") {
  CHECK(test::each_snapgen_pickle(rows_agree, true) >= 20);
}

TEST_CASE("fleet: ... and on every real file (traces whose ring buffer dropped events among them)" *
          doctest::test_suite("realdata")) {
  test::each_realdata(rows_agree);
}

TEST_CASE("fleet: nesting past the depth limit is one line, not a crash") {
  report::Fleet f;
  std::string deep = std::string(2'000'000, '[');
  std::string message;
  try {
    report::add_fleet_input(f, deep, {});
  } catch (const report::FleetFormatError& e) {
    message = e.what();
  }
  CHECK(message == "nested deeper than 512 levels");
}
