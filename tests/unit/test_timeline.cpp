// The timeline series: ends at the dump, keeps the peak through downsampling, sites sum to allocated, OOMs marked.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/analysis/analyze.hpp"
#include "memsnap/analysis/timeline.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/report/timeline.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

struct Built {
  snapshot::Loaded loaded;
  std::vector<analysis::Timeline> timelines;     // one per device
  std::vector<analysis::DeviceAnalysis> traces;  // analyze() of the same device
};

uint64_t dumped_allocated(const snapshot::Snapshot& s, const snapshot::Device& d) {
  analysis::Context ctx(s);
  return analysis::account(ctx, d).allocated_bytes;
}

Built build(const std::filesystem::path& p, analysis::TimelineOptions opt = {}) {
  Built b{snapshot::load_snapshot(p.string()), {}, {}};
  analysis::Context ctx(b.loaded.snapshot);
  analysis::AnalyzeOptions o;
  o.timeline = opt;
  auto result = analysis::analyze(ctx, o);
  for (auto& d : result.devices) {
    b.timelines.push_back(d.timeline ? *d.timeline : analysis::Timeline{});
    b.traces.push_back(std::move(d));
  }
  return b;
}

analysis::TimelineOptions opts(size_t max_points, bool by_site = false, size_t top = 8) {
  analysis::TimelineOptions o;
  o.max_points = max_points;
  o.by_site = by_site;
  o.top_sites = top;
  return o;
}

const char* kFixtures[] = {"leak", "frag", "devices2", "expandable", "streams2", "ring", "cpp", "train"};

// RFC 4180 records (quoted fields with doubled quotes; LF or CRLF line ends).
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      row.push_back(field), field.clear();
    } else if (c == '\r') {
    } else if (c == '\n') {
      row.push_back(field), field.clear();
      rows.push_back(row), row.clear();
    } else {
      field += c;
    }
  }
  (void)any;
  if (!field.empty() || !row.empty()) row.push_back(field), rows.push_back(row);
  return rows;
}

}  // namespace

TEST_CASE("timeline: the series ends at the dumped totals and is in event order") {
  for (const char* name : kFixtures) {
    CAPTURE(name);
    auto b = build(test::testdata(std::string("snapgen/") + name + ".pickle"), opts(200));
    for (size_t k = 0; k < b.timelines.size(); ++k) {
      const auto& t = b.timelines[k];
      const auto& d = b.loaded.snapshot.devices[k];
      CAPTURE(d.index);
      REQUIRE_FALSE(t.points.empty());
      CHECK(t.points.size() <= 200);
      CHECK(t.timed);
      analysis::Context ctx(b.loaded.snapshot);
      auto want = analysis::account(ctx, d);
      const auto& last = t.points.back();
      CHECK(last.event_index == d.trace.size() - 1);
      CHECK(last.allocated == want.allocated_bytes);
      CHECK(last.active == want.active_bytes);
      CHECK(last.reserved == want.reserved_bytes);
      CHECK(t.points.front().event_index == 0);
      for (size_t i = 1; i < t.points.size(); ++i) CHECK(t.points[i - 1].event_index < t.points[i].event_index);
      for (const auto& p : t.points) {
        CHECK(p.allocated <= p.active);
        CHECK(p.active <= p.reserved);
      }
    }
  }
}

TEST_CASE("timeline: downsampling keeps the peak and every series' extremes") {
  for (const char* name : {"frag", "leak", "expandable"}) {
    CAPTURE(name);
    auto full = build(test::testdata(std::string("snapgen/") + name + ".pickle"), opts(1000000));
    auto few = build(test::testdata(std::string("snapgen/") + name + ".pickle"), opts(64));
    const auto& f = full.timelines[0];
    const auto& s = few.timelines[0];
    REQUIRE(f.points.size() == f.events);  // nothing dropped when it fits
    REQUIRE(f.events > 64);
    CHECK(s.points.size() <= 64);
    REQUIRE(full.traces[0].peaks.allocated);
    const auto& peak = *full.traces[0].peaks.allocated;
    REQUIRE(s.peak);
    CHECK(s.peak->allocated_bytes == peak.allocated_bytes);
    CHECK(s.peak->event_index == peak.event_index);
    auto has_peak = std::any_of(s.points.begin(), s.points.end(), [&](const auto& p) {
      return p.event_index == peak.event_index && p.allocated == peak.allocated_bytes;
    });
    CHECK(has_peak);
    for (auto field :
         {&analysis::TimelinePoint::allocated, &analysis::TimelinePoint::active, &analysis::TimelinePoint::reserved}) {
      auto by = [&](const auto& a, const auto& b) { return a.*field < b.*field; };
      CHECK((*std::max_element(s.points.begin(), s.points.end(), by)).*field ==
            (*std::max_element(f.points.begin(), f.points.end(), by)).*field);
      CHECK((*std::min_element(s.points.begin(), s.points.end(), by)).*field ==
            (*std::min_element(f.points.begin(), f.points.end(), by)).*field);
    }
    CHECK((*std::max_element(s.points.begin(), s.points.end(), [](const auto& a, const auto& b) {
            return a.allocated < b.allocated;
          })).allocated == peak.allocated_bytes);
    // Every kept point is the real state at its event.
    for (const auto& p : s.points) {
      const auto& q = f.points[p.event_index];
      CHECK(q.event_index == p.event_index);
      CHECK(q.allocated == p.allocated);
      CHECK(q.reserved == p.reserved);
    }
  }
}

TEST_CASE("select_points: a one-event spike survives, forced events are kept, the budget holds") {
  std::vector<std::array<uint64_t, 3>> series(10000, {100, 100, 200});
  series[4321] = {900, 900, 900};
  series[777] = {5, 5, 200};
  auto keep = analysis::select_points(series, 50, {0, 9999, 1234});
  CHECK(keep.size() <= 50);
  CHECK(std::is_sorted(keep.begin(), keep.end()));
  for (uint32_t e : {0u, 9999u, 1234u, 4321u, 777u}) CHECK(std::binary_search(keep.begin(), keep.end(), e));
  auto all = analysis::select_points(series, 20000, {});
  CHECK(all.size() == 10000);
}

namespace {
void check_by_site_sums(const std::filesystem::path& p, size_t top) {
  CAPTURE(p.string());
  auto b = build(p, opts(300, true, top));
  for (const auto& t : b.timelines) {
    if (t.points.empty()) continue;
    REQUIRE(t.by_site);
    REQUIRE(t.site_columns() == t.sites.size() + 1);
    REQUIRE(t.site_bytes.size() == t.points.size() * t.site_columns());
    CHECK(t.sites.size() <= top);
    for (size_t i = 0; i < t.points.size(); ++i) {
      uint64_t sum = 0;
      for (size_t c = 0; c < t.site_columns(); ++c) sum += t.site_value(i, c);
      CHECK(sum == t.points[i].allocated);
      for (size_t c = 0; c < t.sites.size(); ++c) CHECK(t.site_value(i, c) <= t.sites[c].peak_live_bytes);
    }
    for (size_t c = 1; c < t.sites.size(); ++c) CHECK(t.sites[c - 1].peak_live_bytes >= t.sites[c].peak_live_bytes);
  }
}
}  // namespace

TEST_CASE("timeline --by-site: the sites and other sum to allocated at every point") {
  for (const char* name : kFixtures) check_by_site_sums(test::testdata(std::string("snapgen/") + name + ".pickle"), 8);
  check_by_site_sums(test::testdata("snapgen/frag.pickle"), 2);
}

TEST_CASE("timeline --by-site: the sites and other sum to allocated at every point (real files)" *
          doctest::test_suite("realdata")) {
  for (const char* name :
       {"bcrafton__assignment2-systems__memory_snapshot.pickle", "cranberrii__ftcourse__memory_snapshot.pickle",
        "Nesta-gitU__discrete_diffusion__memory_snapshot.json"})
    if (auto p = test::realdata_file(name)) check_by_site_sums(*p, 8);
}

TEST_CASE("timeline --by-site: a site's peak is what its column reaches in the full series") {
  auto b = build(test::testdata("snapgen/leak.pickle"), opts(1000000, true, 64));
  const auto& t = b.timelines[0];
  auto truth = test::read_json_file(test::testdata("snapgen/leak.truth.json"));
  bool leak_site = false;
  for (size_t c = 0; c < t.sites.size(); ++c) {
    uint64_t mx = 0;
    for (size_t i = 0; i < t.points.size(); ++i) mx = std::max(mx, t.site_value(i, c));
    CHECK(mx == t.sites[c].peak_live_bytes);
    if (t.sites[c].site == truth["leak"]["site"].get<std::string>()) {
      leak_site = true;
      CHECK(t.site_value(t.points.size() - 1, c) > 0);  // what it leaked is still live at the dump
    }
    CHECK_FALSE(t.sites[c].stack.empty());
  }
  CHECK(leak_site);
}

TEST_CASE("timeline: the OOM of frag.pickle is marked with the truth's request; iterations as analyze finds them") {
  auto b = build(test::testdata("snapgen/frag.pickle"), opts(100));
  auto truth = test::read_json_file(test::testdata("snapgen/frag.truth.json"));
  const auto& t = b.timelines[0];
  REQUIRE(t.ooms.size() == 1);
  CHECK(t.ooms[0].requested_bytes == truth["oom"]["requested_rounded"].get<uint64_t>());
  CHECK(t.ooms[0].device_free_bytes == truth["oom"]["device_free"].get<uint64_t>());
  CHECK(t.ooms[0].time_us.has_value());
  CHECK(std::any_of(t.points.begin(), t.points.end(),
                    [&](const auto& p) { return p.event_index == t.ooms[0].event_index; }));
  const auto& it = b.traces[0].iterations;
  REQUIRE(it.found());
  REQUIRE(t.iteration_starts.size() == it.boundaries.size());
  for (size_t k = 0; k < it.boundaries.size(); ++k) CHECK(t.iteration_starts[k].event_index == it.boundaries[k]);

  auto leak = build(test::testdata("snapgen/leak.pickle"));
  CHECK(leak.timelines[0].ooms.empty());
}

TEST_CASE("timeline: a device without trace entries has no points") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  l.snapshot.devices[0].trace.clear();
  analysis::Context ctx(l.snapshot);
  analysis::AnalyzeOptions o;
  o.timeline.emplace();
  auto result = analysis::analyze(ctx, o);
  CHECK_FALSE(result.devices.at(0).timeline.has_value());  // nothing to plot: the CLI says so
}

TEST_CASE("timeline CSV: header, one row per point, sites sum to allocated") {
  auto b = build(test::testdata("snapgen/devices2.pickle"), opts(100, true, 3));
  report::TimelineView view{&b.loaded.input, &b.timelines, std::nullopt};
  std::ostringstream out;
  report::write_timeline_csv(out, view);
  auto rows = parse_csv(out.str());
  REQUIRE(rows.size() >= 2);
  const auto& head = rows[0];
  REQUIRE(head.size() >= 7);
  CHECK(std::vector<std::string>(head.begin(), head.begin() + 6) ==
        std::vector<std::string>{"device", "event_index", "time_us", "allocated_bytes", "active_bytes",
                                 "reserved_bytes"});
  CHECK(head.back() == "other");
  size_t points = 0;
  for (const auto& t : b.timelines) points += t.points.size();
  CHECK(rows.size() == points + 1);
  std::set<std::string> devices;
  for (size_t r = 1; r < rows.size(); ++r) {
    REQUIRE(rows[r].size() == head.size());
    devices.insert(rows[r][0]);
    uint64_t sum = 0;
    for (size_t c = 6; c < head.size(); ++c)
      if (!rows[r][c].empty()) sum += std::stoull(rows[r][c]);
    CHECK(sum == std::stoull(rows[r][3]));
    CHECK_FALSE(rows[r][2].empty());  // timed
  }
  CHECK(devices == std::set<std::string>{"0", "1"});
  // The last row of each device is the dump.
  CHECK(std::stoull(rows.back()[3]) == dumped_allocated(b.loaded.snapshot, b.loaded.snapshot.devices[1]));

  // Without --by-site: exactly the six columns.
  auto plain = build(test::testdata("snapgen/leak.pickle"));
  report::TimelineView pv{&plain.loaded.input, &plain.timelines, std::nullopt};
  std::ostringstream po;
  report::write_timeline_csv(po, pv);
  auto prow = parse_csv(po.str());
  CHECK(prow[0].size() == 6);
  CHECK(prow.size() == plain.timelines[0].points.size() + 1);
}

TEST_CASE("timeline CSV and SVG: site names with commas, quotes and markup are quoted and escaped") {
  const std::string nasty = "at::native::copy_<float, 2>(Tensor&, \"x\") & more";
  analysis::Timeline t;
  t.device = 0;
  t.events = 2;
  t.timed = true;
  t.first_time_us = 1000;
  t.last_time_us = 3000;
  t.points = {{0, 1000, 512, 512, 2097152}, {1, 3000, 1024, 1024, 2097152}};
  t.by_site = true;
  t.sites = {{nasty, {nasty}, 1024}};
  t.site_bytes = {512, 0, 1024, 0};
  t.peak = analysis::Peak{};
  t.peak->event_index = 1;
  t.peak->time_us = 3000;
  t.peak->allocated_bytes = 1024;
  t.ooms = {{1, 3000, 4096, 0, 1024, 2097152}};
  std::vector<analysis::Timeline> tls = {t};
  snapshot::InputInfo in;
  in.path = "dir/a<b>&c.pickle";
  report::TimelineView view{&in, &tls, int64_t{1000}};

  std::ostringstream csv;
  report::write_timeline_csv(csv, view);
  auto rows = parse_csv(csv.str());
  REQUIRE(rows.size() == 3);
  REQUIRE(rows[0].size() == 8);
  CHECK(rows[0][6] == nasty);
  CHECK(rows[2][6] == "1024");

  std::ostringstream svg;
  report::write_timeline_svg(svg, view, {});
  std::string s = svg.str();
  CHECK(s.find("<script") == std::string::npos);
  CHECK(s.find("copy_<float") == std::string::npos);
  CHECK(s.find("a<b>") == std::string::npos);
  CHECK(s.find("copy_&lt;float, 2&gt;(Tensor&amp;, &quot;x&quot;)") != std::string::npos);
  CHECK(s.find("a&lt;b&gt;&amp;c.pickle") != std::string::npos);
  CHECK(s.find("href") == std::string::npos);  // no external references
  // Every '&' starts an entity.
  for (size_t i = s.find('&'); i != std::string::npos; i = s.find('&', i + 1)) {
    auto semi = s.find(';', i);
    REQUIRE(semi != std::string::npos);
    std::string ent = s.substr(i, semi - i + 1);
    CHECK((ent == "&amp;" || ent == "&lt;" || ent == "&gt;" || ent == "&quot;" || ent == "&apos;"));
  }
}

TEST_CASE("xml_escape: control characters and broken UTF-8 become U+FFFD, valid UTF-8 stays") {
  CHECK(report::xml_escape("a\x01z") == "a\xEF\xBF\xBDz");
  CHECK(report::xml_escape("\xC3\xA9t\xC3\xA9") == "\xC3\xA9t\xC3\xA9");
  CHECK(report::xml_escape("x\xFFy") == "x\xEF\xBF\xBDy");
  CHECK(report::xml_escape("\xE2\x82") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(report::xml_escape("<&>") == "&lt;&amp;&gt;");
}
