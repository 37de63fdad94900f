// Every committed snapgen fixture: memsnap's totals equal the simulator's truth exactly.
#include <doctest/doctest.h>

#include <set>

#include "memsnap/analysis/accounting.hpp"
#include "memsnap/snapshot/load.hpp"
#include "support/testdata.hpp"

using namespace memsnap;

TEST_CASE("totals equal snapgen truth for every fixture, form and compression") {
  auto rows = test::snapgen_manifest();
  REQUIRE(rows.size() >= 20);
  for (const auto& row : rows) {
    CAPTURE(row.file);
    auto loaded = snapshot::load_snapshot(test::testdata("snapgen/" + row.file).string());
    auto truth = test::read_json_file(test::testdata("snapgen/" + row.truth));
    analysis::Context ctx(loaded.snapshot);
    const auto& per_device = truth["per_device"];
    REQUIRE(loaded.snapshot.devices.size() == per_device.size());
    for (size_t i = 0; i < per_device.size(); ++i) {
      const auto& d = loaded.snapshot.devices[i];
      auto t = analysis::account(ctx, d);
      const auto& want = per_device[i];
      CAPTURE(t.device);
      CHECK(t.device == int(i));
      CHECK(t.reserved_bytes == want["reserved"].get<uint64_t>());
      CHECK(t.allocated_bytes == want["allocated"].get<uint64_t>());
      CHECK(t.active_bytes == want["active"].get<uint64_t>());
      CHECK(t.requested_bytes == want["requested"].get<uint64_t>());
      CHECK(t.external_free_bytes == want["inactive"].get<uint64_t>());
      CHECK(t.segment_count == want["segments"].get<uint64_t>());
      CHECK(t.largest_free_block_bytes == want["largest_free_block"].get<uint64_t>());
      // The accounting identity holds exactly.
      CHECK(t.requested_bytes + t.internal_free_bytes + t.pending_free_bytes + t.external_free_bytes ==
            t.reserved_bytes);
      CHECK(t.active_bytes - t.allocated_bytes == t.pending_free_bytes);
      if (loaded.snapshot.form == snapshot::Form::Dict && want.contains("trace_entries"))
        CHECK(d.trace.size() == want["trace_entries"].get<uint64_t>());
    }
    CHECK(loaded.snapshot.warnings.empty());
  }
}

TEST_CASE("input description: compression, protocol, form") {
  struct Case {
    const char* file;
    io::Compression compression;
    int protocol;
    snapshot::Form form;
    bool legacy;
  } cases[] = {
      {"train.pickle", io::Compression::None, 4, snapshot::Form::Dict, false},
      {"train_gz.pickle.gz", io::Compression::Gzip, 4, snapshot::Form::Dict, false},
      {"train_zst.pickle.zst", io::Compression::Zstd, 4, snapshot::Form::Dict, false},
      {"proto0.pickle", io::Compression::None, 0, snapshot::Form::Dict, false},
      {"proto2.pickle", io::Compression::None, 2, snapshot::Form::Dict, false},
      {"proto5.pickle", io::Compression::None, 5, snapshot::Form::Dict, false},
      {"list.pickle", io::Compression::None, 4, snapshot::Form::List, false},
      {"legacy.pickle", io::Compression::None, 4, snapshot::Form::Dict, true},
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    auto l = snapshot::load_snapshot(test::testdata(std::string("snapgen/") + c.file).string());
    CHECK(l.input.compression == c.compression);
    CHECK(l.input.pickle_protocol == c.protocol);
    CHECK(l.snapshot.form == c.form);
    CHECK(l.snapshot.legacy_history == c.legacy);
    CHECK(l.input.bytes == std::filesystem::file_size(test::testdata(std::string("snapgen/") + c.file)));
  }
}

TEST_CASE("stacks are interned: blocks and events share stack ids, frames resolve to the script") {
  auto l = snapshot::load_snapshot(test::testdata("snapgen/leak.pickle").string());
  auto truth = test::read_json_file(test::testdata("snapgen/leak.truth.json"));
  const auto& s = l.snapshot;
  REQUIRE(s.devices.size() == 1);
  // Each distinct (file, line, function) appears once in the frame table.
  std::set<std::string> seen;
  for (uint32_t i = 0; i < s.frames.size(); ++i) {
    const auto& f = s.frames[snapshot::FrameId{i}];
    CHECK(seen.insert(std::string(s.strings[f.filename]) + ":" + std::to_string(f.line) + ":" +
                      std::string(s.strings[f.name]))
              .second);
  }
  // Stacks are far fewer than the events that refer to them (memo identity makes this cheap).
  CHECK(s.stacks.size() < s.devices[0].trace.size() / 10);
  // The leak site's frame is present, innermost in the stacks of the leaked blocks.
  std::string site = truth["leak"]["site"];
  size_t leaked = 0;
  for (const auto& b : s.devices[0].blocks) {
    if (b.state != snapshot::BlockState::ActiveAllocated || b.stack.v == 0) continue;
    auto frames = s.stacks[b.stack];
    if (s.frame_text(frames[0]) == site) ++leaked;
  }
  CHECK(leaked == truth["steps"].get<size_t>());
}

TEST_CASE("a JSON rendering of a snapshot reads like the pickle it came from") {
  auto json = snapshot::load_snapshot(test::testdata("json/train.json").string());
  auto pickle = snapshot::load_snapshot(test::testdata("snapgen/train.pickle").string());
  auto truth = test::read_json_file(test::testdata("snapgen/train.truth.json"))["per_device"][0];
  CHECK(json.input.encoding == io::Encoding::Json);
  CHECK(json.input.pickle_protocol == -1);
  analysis::Context cj(json.snapshot);
  REQUIRE(json.snapshot.devices.size() == 1);
  auto a = analysis::account(cj, json.snapshot.devices[0]);
  CHECK(a.reserved_bytes == truth["reserved"].get<uint64_t>());
  CHECK(a.allocated_bytes == truth["allocated"].get<uint64_t>());
  CHECK(a.requested_bytes == truth["requested"].get<uint64_t>());
  CHECK(a.largest_free_block_bytes == truth["largest_free_block"].get<uint64_t>());
  CHECK(json.snapshot.devices[0].trace.size() == pickle.snapshot.devices[0].trace.size());
  // frames are interned by content when nothing is shared: the same stacks as the pickle's
  CHECK(json.snapshot.stacks.size() == pickle.snapshot.stacks.size());
  CHECK(json.snapshot.frames.size() == pickle.snapshot.frames.size());
}

TEST_CASE("a copied snapshot keeps its strings after the original is gone") {
  auto loaded =
      std::make_unique<snapshot::Loaded>(snapshot::load_snapshot(test::testdata("snapgen/frag.pickle").string()));
  std::vector<std::string> want;
  for (size_t i = 0; i < loaded->snapshot.strings.size(); ++i)
    want.emplace_back(loaded->snapshot.strings[snapshot::StrId{uint32_t(i)}]);
  REQUIRE(want.size() > 10);
  snapshot::Snapshot copy = loaded->snapshot;
  snapshot::Snapshot assigned;
  assigned = loaded->snapshot;
  CHECK(copy == loaded->snapshot);
  loaded.reset();  // the source's storage freed: a shallow copy's views would now dangle
  for (snapshot::Snapshot* s : {&copy, &assigned}) {
    REQUIRE(s->strings.size() == want.size());
    size_t same = 0;
    for (size_t i = 0; i < want.size(); ++i) same += s->strings[snapshot::StrId{uint32_t(i)}] == want[i];
    CHECK(same == want.size());
    CHECK(s->strings.intern(want.back()).v == want.size() - 1);  // the index is the copy's own
  }
}
