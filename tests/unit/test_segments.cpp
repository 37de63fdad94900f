// The segment map (`memsnap segments`): order, bars to scale, --top accounting, JSON, on hand-built models.
#include <doctest/doctest.h>

#include <cctype>
#include <sstream>

#include "memsnap/analysis/analyze.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/report/segments.hpp"
#include "support/device_builder.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::test;
using snapshot::Pool;

namespace {

struct Rendered {
  std::string text;
  nlohmann::json json;
};

Rendered render(const snapshot::Snapshot& snap, size_t top, int width, bool color = false) {
  snapshot::InputInfo in;
  in.path = "model.pickle";
  analysis::Context ctx(snap);
  analysis::AnalyzeOptions o;
  o.trace = false;
  auto result = analysis::analyze(ctx, o);
  report::Source src{in, ctx};
  report::TextStyle style;
  style.width = width;
  style.color = color;
  std::ostringstream text, json;
  report::write_segments_text(text, src, result, top, style);
  report::write_segments_json(json, src, result, top);
  return {text.str(), nlohmann::json::parse(json.str())};
}

/// The bar of the line that starts with `address` (between the two '|').
std::string bar_of(const std::string& text, const std::string& address) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(address, 0) == 0) {
      size_t a = line.find('|'), b = line.rfind('|');
      return a != std::string::npos && b > a ? line.substr(a + 1, b - a - 1) : "";
    }
  return "";
}

snapshot::Snapshot model() {
  snapshot::Snapshot snap;
  add_device(snap, {
                       {0x1000000, Pool::Large, {free_(20 * MiB)}},                                   // releasable
                       {0x3000000, Pool::Large, {alloc(512, "t.py:9:tiny"), free_(20 * MiB - 512)}},  // pinned
                       {0x5000000, Pool::Large, {alloc(10 * MiB), pending(2 * MiB), free_(8 * MiB)}},
                       {0x7000000, Pool::Small, {alloc(2 * MiB)}},
                   });
  return snap;
}

}  // namespace

TEST_CASE("segments text: worst first, bars to scale, tiny live blocks visible, 80 columns") {
  auto snap = model();
  auto r = render(snap, 0, 80);
  std::istringstream in(r.text);
  std::string line;
  std::vector<std::string> order;
  size_t widest = 0;
  while (std::getline(in, line)) {
    widest = std::max(widest, line.size());
    if (line.rfind("0x", 0) == 0) order.push_back(line.substr(0, line.find(' ')));
  }
  CHECK(widest <= 80);
  CHECK(order == std::vector<std::string>{"0x3000000", "0x5000000", "0x1000000", "0x7000000"});

  std::string pinned = bar_of(r.text, "0x3000000");
  REQUIRE(pinned.size() >= 12);
  CHECK(pinned[0] == '#');  // 512 B of 20 MiB: far less than a cell, still shown
  CHECK(std::count(pinned.begin(), pinned.end(), '#') == 1);
  CHECK(std::count(pinned.begin(), pinned.end(), '.') == long(pinned.size()) - 1);
  CHECK(bar_of(r.text, "0x1000000") == std::string(pinned.size(), '.'));
  CHECK(bar_of(r.text, "0x7000000") == std::string(pinned.size(), '#'));
  // 10 MiB allocated, 2 MiB pending, 8 MiB free: half, a tenth, two fifths of the bar.
  std::string mixed = bar_of(r.text, "0x5000000");
  size_t n = mixed.size();
  auto count = [&](char c) { return size_t(std::count(mixed.begin(), mixed.end(), c)); };
  CHECK(count('#') + count('+') + count('.') == n);
  CHECK(count('#') >= n / 2 - 1);
  CHECK(count('#') <= n / 2 + 1);
  CHECK(count('+') >= 1);
  CHECK(count('.') >= n * 2 / 5 - 1);
  CHECK(mixed.find('+') > mixed.rfind('#'));
  CHECK(mixed.find('.') > mixed.rfind('+'));
  CHECK(r.text.find("\033[") == std::string::npos);  // no colour unless asked

  // Wider terminals get wider bars.
  auto wide = render(snap, 0, 160);
  CHECK(bar_of(wide.text, "0x3000000").size() == pinned.size() + 80);
  // Colour marks the glyphs but keeps them.
  auto colored = render(snap, 0, 80, true);
  CHECK(colored.text.find("\033[31m#") != std::string::npos);
}

TEST_CASE("segments --top: the rest is counted, never silently dropped") {
  auto snap = model();
  auto r = render(snap, 2, 80);
  CHECK(r.text.find("2 more segments not shown (20.00 MiB free, 0 B stranded)") != std::string::npos);
  const auto& dev = r.json["devices"][0];
  CHECK(dev["segments_total"] == 4);
  CHECK(dev["segments_shown"] == 2);
  REQUIRE(dev["segments"].size() == 2);
  CHECK(dev["segments"][0]["address"] == 0x3000000);
  CHECK(render(snap, 0, 80).json["devices"][0]["segments"].size() == 4);
}

TEST_CASE("segments JSON: blocks tile each segment; accounting per segment; sites of live blocks") {
  auto snap = model();
  auto r = render(snap, 0, 80);
  for (const auto& s : r.json["devices"][0]["segments"]) {
    uint64_t sum = 0, addr = s["address"];
    for (const auto& b : s["blocks"]) {
      CHECK(b["address"] == addr);
      addr += b["size_bytes"].get<uint64_t>();
      sum += b["size_bytes"].get<uint64_t>();
      CHECK(b.contains("site") == (b["state"] != "inactive"));
    }
    CHECK(sum == s["size_bytes"]);
    CHECK(s["requested_bytes"].get<uint64_t>() + s["internal_free_bytes"].get<uint64_t>() +
              s["pending_free_bytes"].get<uint64_t>() + s["free_bytes"].get<uint64_t>() ==
          s["size_bytes"]);
    CHECK(s["releasable_bytes"].get<uint64_t>() + s["stranded_bytes"].get<uint64_t>() +
              s["private_held_bytes"].get<uint64_t>() ==
          s["free_bytes"]);
  }
  CHECK(r.json["devices"][0]["segments"][0]["blocks"][0]["site"] == "t.py:9:tiny");
}

TEST_CASE("tables with the widest byte figures: columns never touch, 80 columns") {
  // "1020.00 MiB" and "1021.00 MiB" are the widest figures human_bytes writes: in
  // 11-wide columns they ran together ("1020.00 MiB1021.00 MiB").
  snapshot::Snapshot snap;
  add_device(snap, {{0x100000000, Pool::Large, {alloc(1020 * MiB, "t.py:9:big"), free_(1021 * MiB)}},
                    {0x200000000, Pool::Large, {free_(1022 * MiB)}}});
  auto r = render(snap, 0, 80);
  snapshot::InputInfo in;
  in.path = "model.pickle";
  analysis::Context ctx(snap);
  auto result = analysis::analyze(ctx, {});
  report::TextStyle style;
  style.width = 80;
  std::ostringstream analyzed;
  report::write_analyze_text(analyzed, report::Source{in, ctx}, result, style);
  for (const std::string& text : {r.text, analyzed.str()}) {
    REQUIRE(text.find("1021.00 MiB") != std::string::npos);
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      CAPTURE(line);
      CHECK(line.size() <= 80);
      for (size_t i = 1; i < line.size(); ++i) CHECK_FALSE((line[i - 1] == 'B' && std::isdigit(line[i])));
    }
  }
}
