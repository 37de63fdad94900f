// memsnap export: JSON and pickle written from the model read back to the same model, on every
// fixture and real snapshot (device by device: totals, segments, blocks, stacks, trace events).
#include <doctest/doctest.h>

#include <sstream>

#include "memsnap/report/export.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/model_compare.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

namespace {

std::string exported(const snapshot::Snapshot& s, bool json) {
  std::ostringstream out;
  if (json)
    report::write_snapshot_json(out, s);
  else
    report::write_snapshot_pickle(out, s);
  return out.str();
}

snapshot::Loaded reread(const std::string& bytes, bool json) {
  return snapshot::load_snapshot_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()),
                                       json ? "export.json" : "export.pickle");
}

// JSON repeats every frame of every stack in full (100 MB for a 3 MB pickle); reading such a
// file back is the JSON reader's benchmark, not this test's business.
// Real files above a megabyte are round-tripped as pickles only.
constexpr uint64_t kJsonInputLimit = uint64_t{1} << 20;

void check_round_trip(const std::filesystem::path& path) {
  auto orig = snapshot::load_snapshot(path.string());
  for (bool json : {false, true}) {
    CAPTURE(json);
    if (json && orig.input.decoded_bytes > kJsonInputLimit) continue;
    std::string bytes = exported(orig.snapshot, json);
    auto back = reread(bytes, json);
    CHECK(back.input.encoding == (json ? io::Encoding::Json : io::Encoding::Pickle));
    if (!json) CHECK(back.input.pickle_protocol == 4);
    CHECK(back.snapshot.form == snapshot::Form::Dict);
    CHECK(!back.snapshot.legacy_history);
    test::check_same_snapshot(orig.snapshot, back.snapshot);
  }
}

}  // namespace

TEST_CASE("export then re-read: the same model for every snapgen fixture, as JSON and as pickle") {
  for (const auto& row : test::snapgen_manifest()) {
    CAPTURE(row.file);
    check_round_trip(test::testdata("snapgen/" + row.file));
  }
  CAPTURE("json/train.json");
  check_round_trip(test::testdata("json/train.json"));
}

TEST_CASE("export then re-read: the same model for every real snapshot" * doctest::test_suite("realdata")) {
  test::each_realdata([](const std::filesystem::path& p) { check_round_trip(p); });
}

TEST_CASE("the pickle shares each frame, stack and string once: smaller than the JSON, and re-exports identically") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string());
  std::ostringstream p1, j1;
  report::write_snapshot_pickle(p1, l.snapshot);
  report::write_snapshot_json(j1, l.snapshot);
  CHECK(p1.str().size() * 5 < j1.str().size());
  auto back = reread(exported(l.snapshot, false), false);
  std::ostringstream p2;
  report::write_snapshot_pickle(p2, back.snapshot);
  CHECK(p1.str() == p2.str());  // a fixed point: exporting an export changes nothing
}
