// The schema-directed fast path builds exactly the model the generic path builds (ids,
// tables and order included) on every fixture and real file, and gives way to the
// generic path on every form it does not handle.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../src/snapshot/fast_build.hpp"
#include "memsnap/io/byte_source.hpp"
#include "memsnap/io/read_ahead.hpp"
#include "memsnap/pickle/pickler.hpp"
#include "memsnap/pickle/scanner.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/snapshot/builder.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "support/compress.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::snapshot;

namespace {

// The whole model, every table, device and field (Snapshot's defaulted operator==), so a
// field one path fills and the other drops fails here; the message names the first one.
void check_same(const Snapshot& a, const Snapshot& b) {
  std::string diff = first_difference(a, b);
  CHECK_MESSAGE(a == b, "the fast and general paths differ at " << diff);
  CHECK(diff.empty());
}

// Returns whether the fast path took the file. With `split`, the parse runs in two halves
// where it can; `halves` counts the parses that did.
bool compare_paths(const std::vector<uint8_t>& raw, const detail::SplitOptions& split = detail::SplitOptions::none(),
                   size_t* halves = nullptr) {
  io::ByteSource src = io::ByteSource::from_bytes(raw);
  if (src.encoding() != io::Encoding::Pickle) return false;
  auto fast = detail::fast_build(src.data(), nullptr, nullptr, split);
  if (fast && halves) *halves += fast->split;
  if (fast && fast->split) {  // the join counted the second half's memo entries as one pass does
    auto whole = detail::fast_build(src.data());
    REQUIRE(whole);
    CHECK(fast->memo_count == whole->memo_count);
  }
  Snapshot generic;
  pickle::PickleInfo info;
  try {
    pickle::ValueGraph g = pickle::unpickle(src.data(), &info);
    BuildOptions bo;
    bo.input_bytes = src.data().size();
    generic = build_snapshot(g, bo);
  } catch (const InputError&) {
    CHECK_MESSAGE(!fast, "the fast path accepted an input the generic path refuses");
    return false;
  }
  if (!fast) return false;
  CHECK(fast->protocol == info.protocol);
  check_same(fast->snapshot, generic);
  return true;
}

// 300 copies of `base`, each with `flips` bytes past the PROTO header set from a xorshift
// sequence that starts at `seed`, handed to each(copy, round).
template <class F>
void each_mutation(const std::vector<uint8_t>& base, uint64_t seed, int flips, F each) {
  uint64_t x = seed;
  for (int round = 0; round < 300; ++round) {
    auto m = base;
    for (int k = 0; k < flips; ++k) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      size_t at = 2 + size_t(x % (m.size() - 2));
      m[at] = uint8_t(x >> 40);
    }
    CAPTURE(round);
    each(m, round);
  }
}

using test::gzip_of;
using test::zstd_of;

// Progress calls: phases (a new total) each moving forward, never two calls at once.
struct ProgressCheck {
  std::atomic<int> calls_in_flight{0};
  bool overlapped = false, backwards = false;
  uint64_t last = 0, last_total = 0, first_total = 0;
  ProgressFn fn() {
    return [this](uint64_t done, uint64_t total) {
      overlapped |= calls_in_flight.fetch_add(1) != 0;
      if (first_total == 0) first_total = total;
      if (total != last_total) last = 0;
      backwards |= done < last || done > total;
      last = done, last_total = total;
      calls_in_flight.fetch_sub(1);
    };
  }
};

// Parses `plain` compressed, while a decoder thread publishes `chunk` bytes at a time; in
// lockstep the decoder publishes only once the parse waits, so the parse meets every chunk
// boundary (an opcode, a FRAME, the middle of an event dict or a frames list). The model
// must be the one parsing the whole buffer gives.
void check_streamed(const std::vector<uint8_t>& plain, size_t chunk, bool lockstep) {
  CAPTURE(chunk);
  auto whole = detail::fast_build(plain);
  io::ReadOptions o;
  o.stream = true;
  o.stream_chunk = chunk;
  o.stream_lockstep = lockstep;
  o.decode_window = false;  // the decoder into one buffer (check_decode_window: the window)
  // Progress: the decoder's phase (stored bytes), then the parse's (decoded bytes), each
  // moving forward, never both at once, ending at the decoded size.
  ProgressCheck check;
  ProgressFn progress = check.fn();
  o.progress = progress;
  io::ByteSource src = io::ByteSource::from_bytes(zstd_of(plain), o);
  REQUIRE(src.streaming());
  CHECK(src.read_ahead() == nullptr);
  auto streamed = detail::fast_build(src, nullptr, &progress);
  if (streamed) CHECK_FALSE(streamed->decoded_bytes.has_value());
  CHECK_FALSE(check.overlapped);
  CHECK_FALSE(check.backwards);
  if (streamed) CHECK((check.last == plain.size() && check.last_total == plain.size()));
  REQUIRE(streamed.has_value() == whole.has_value());
  if (!whole) return;
  CHECK(streamed->protocol == whole->protocol);
  check_same(streamed->snapshot, whole->snapshot);
}

// Parses the plain file at `path` through a read-ahead window of `chunk`-byte chunks: the
// reader moves each chunk's pages ahead once the parse has released it, and the parse
// reads memo strings and spans again from the mapping. The model must be the one parsing
// the whole buffer gives. Returns whether the window served the parse.
bool check_read_ahead(const std::filesystem::path& path, size_t chunk) {
  CAPTURE(chunk);
  auto whole = detail::fast_build(test::read_bytes(path));
  io::ReadOptions o;
  o.read_ahead_from = 0;
  o.read_ahead_chunk = chunk;
  io::ByteSource src = io::ByteSource::open(path.string(), o);
  bool windowed = src.read_ahead() != nullptr;
  CHECK(windowed);  // ReadOptions::threads is 2 unless the caller says 1: a second thread decodes
  auto read = detail::fast_build(src, nullptr, nullptr);
  REQUIRE(read.has_value() == whole.has_value());
  if (whole) {
    CHECK(read->protocol == whole->protocol);
    check_same(read->snapshot, whole->snapshot);
  }
  // Under a memory bound with room for it, the window is counted as input while the parse
  // reads it and given back after: what the bound holds then is what it holds without a
  // window. (With 2 MiB chunks the parse releases the window exactly where it accounts, every
  // MiB; smaller chunks add checkpoints that move where the tables' sizes are taken.)
  util::MemoryBudget budget(uint64_t{1} << 40);
  auto bounded = detail::fast_build(src, &budget, nullptr);
  REQUIRE(bounded.has_value() == whole.has_value());
  if (whole) {
    check_same(bounded->snapshot, whole->snapshot);
    util::MemoryBudget plain(uint64_t{1} << 40);
    (void)detail::fast_build(std::span<const uint8_t>(src.data()), &plain, nullptr);
    if (chunk == io::ReadAhead::kChunk) CHECK(budget.used() == plain.used());
  }
  return windowed;
}

// Parses `stored` (zstd of `plain`, or not quite) through a window of `chunk`-byte chunks
// that the second core decodes into, reusing its pages: the parse copies the bytes of
// strings and spans it must read again. The model must be the one parsing `plain` whole
// gives, the decoded size must be plain's, and nothing may be decoded into one buffer.
void check_decode_window(const std::vector<uint8_t>& plain, const std::vector<uint8_t>& stored, size_t chunk) {
  CAPTURE(chunk);
  auto whole = detail::fast_build(plain);
  io::ReadOptions o;
  o.stream = true;
  o.read_ahead_chunk = chunk;
  ProgressCheck check;
  ProgressFn progress = check.fn();
  o.progress = progress;
  io::ByteSource src = io::ByteSource::from_bytes(stored, o);
  REQUIRE(src.streaming());
  util::MemoryBudget budget(uint64_t{1} << 40);
  auto read = detail::fast_build(src, &budget, &progress);
  CHECK_FALSE(check.overlapped);
  CHECK_FALSE(check.backwards);
  CHECK(budget.used() > 0);  // the parse was counted; the window no longer is:
  budget.set(util::Account::Parse, 0);
  budget.set(util::Account::Model, 0);
  CHECK(budget.used() == 0);
  if (!read) return;  // the caller says whether it should have taken
  REQUIRE(whole.has_value());
  CHECK(read->protocol == whole->protocol);
  CHECK(read->decoded_bytes == std::optional<uint64_t>(plain.size()));
  CHECK((check.last == plain.size() && check.last_total == plain.size()));
  // Before the end, the parse's progress in decoded bytes against the declared size (zstd_of
  // records it in the frame, gzip_of's trailer has it): the real size here.
  CHECK(check.first_total == plain.size());
  check_same(read->snapshot, whole->snapshot);
  CHECK_FALSE(src.decoded_size().has_value());  // the decoder into one buffer never ran
}

}  // namespace

TEST_CASE("fast path: a plain file read ahead into a window of moving pages gives the same model") {
  // 8 KiB chunks: a fixture of a few hundred KiB moves its pages dozens of times, and
  // events, frames lists and FRAME ops straddle every chunk boundary.
  size_t page = size_t(sysconf(_SC_PAGESIZE)), windowed = 0;
  size_t files = test::each_snapgen_pickle([&](const std::filesystem::path& p) {
    windowed += check_read_ahead(p, 2 * page);
    windowed += check_read_ahead(p, io::ReadAhead::kChunk);
  });
  CHECK(files >= 20);
  CHECK(windowed == 2 * files);
}

TEST_CASE("fast path: a real file read ahead into a window of moving pages gives the same model" *
          doctest::test_suite("realdata")) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  test::each_realdata([&](const std::filesystem::path& p) {
    check_read_ahead(p, 2 * page);
    check_read_ahead(p, 64 * page);
  });
}

TEST_CASE("read-ahead: every byte in order, a request the window cannot hold answered at once") {
  // A file of 40 chunks with a pattern that tells each byte's offset.
  size_t page = size_t(sysconf(_SC_PAGESIZE)), chunk = 2 * page;
  std::vector<uint8_t> bytes(40 * chunk + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + i / 251);
  auto path = std::filesystem::temp_directory_path() / "memsnap_read_ahead_test.bin";
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    REQUIRE(f);
    REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
    REQUIRE(std::fclose(f) == 0);
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  {
    auto r = io::ReadAhead::start(fd, 5, bytes.size() - 5, chunk);  // from an offset, as stdin
    REQUIRE(r);
    // Nothing released: the window holds kChunks chunks, and a wait past them returns short
    // at once instead of waiting for a release that cannot come.
    size_t cap = io::ReadAhead::kChunks * chunk;
    CHECK(r->wait_for(cap) == cap);
    CHECK(r->wait_for(cap + 1) == cap);
    size_t mismatches = 0;
    for (size_t i = 0; i < r->size(); ++i) {
      if (i % (chunk / 2) == 0) r->release_before(i);
      if (r->wait_for(i + 1) <= i) break;
      mismatches += r->base()[i] != bytes[i + 5];
    }
    CHECK(mismatches == 0);
    CHECK(r->wait_for(SIZE_MAX) == bytes.size() - 5);
  }
  ::close(fd);
  std::filesystem::remove(path);
}

TEST_CASE("fast path: a compressed input parsed while it is decoded gives the same model") {
  size_t files = test::each_snapgen_pickle([&](const std::filesystem::path& p) {
    auto plain = test::read_bytes(p);
    check_streamed(plain, size_t{1} << 20, false);
    check_streamed(plain, 61, true);
    check_streamed(plain, 1, true);
  });
  CHECK(files >= 20);
}

TEST_CASE("fast path: a compressed real file parsed while it is decoded gives the same model" *
          doctest::test_suite("realdata")) {
  // Real files span many 64 KiB pickle frames: events and frames lists cross them.
  test::each_realdata([&](const std::filesystem::path& p) { check_streamed(test::read_bytes(p), 4099, true); });
}

TEST_CASE("fast path: a compressed real file decoded into a window of moving pages gives the same model" *
          doctest::test_suite("realdata")) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    test::each_realdata([&](const std::filesystem::path& p) {
      auto plain = test::read_bytes(p);
      if (detail::fast_build(plain)) check_decode_window(plain, gz ? gzip_of(plain) : zstd_of(plain), 4 * page);
    });
  }
}

TEST_CASE("fast path: a compressed input decoded into a window of moving pages gives the same model") {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  for (bool gz : {false, true}) {
    auto compress = [gz](const std::vector<uint8_t>& v) { return gz ? gzip_of(v) : zstd_of(v); };
    CAPTURE(gz);
    // One subcase per codec: doctest tells subcases apart by their names.
    auto named = [&](const char* what) { return std::string(gz ? "gzip: " : "zstd: ") + what; };
    SUBCASE(named("every fixture").c_str()) {
      size_t files = 0;
      test::each_snapgen_pickle([&](const std::filesystem::path& p) {
        auto plain = test::read_bytes(p);
        if (!detail::fast_build(plain)) return;  // the generic path's forms
        // 8 KiB chunks: events, frames lists and FRAME ops straddle every chunk boundary.
        check_decode_window(plain, compress(plain), 2 * page);
        check_decode_window(plain, compress(plain), io::ReadAhead::kChunk);
        ++files;
      });
      CHECK(files >= 18);
    }
    auto plain = test::read_bytes(test::testdata("snapgen/train.pickle"));
    auto stored = compress(plain);
    auto took = [&](const std::vector<uint8_t>& bytes, uint64_t limit) {
      io::ReadOptions o;
      o.stream = true;
      o.read_ahead_chunk = 2 * page;
      o.max_buffer_bytes = limit;
      io::ByteSource src = io::ByteSource::from_bytes(bytes, o);
      return detail::fast_build(src).has_value();
    };
    SUBCASE(named("frames or members one after another").c_str()) {
      size_t half = plain.size() / 2;
      auto two = compress(std::vector<uint8_t>(plain.begin(), plain.begin() + ptrdiff_t(half)));
      auto rest = compress(std::vector<uint8_t>(plain.begin() + ptrdiff_t(half), plain.end()));
      two.insert(two.end(), rest.begin(), rest.end());
      check_decode_window(plain, two, 2 * page);
      CHECK(took(two, uint64_t{16} << 30));
    }
    SUBCASE(named("a decoded size at the limit takes the window; one byte over gives way").c_str()) {
      CHECK(took(stored, plain.size()));
      CHECK_FALSE(took(stored, plain.size() - 1));
    }
    SUBCASE(named("a memory bound below the decoded size: the window does not hold it").c_str()) {
      util::MemoryBudget bound(plain.size() / 2);
      io::ReadOptions o;
      o.stream = true;
      o.budget = &bound;
      io::ByteSource src = io::ByteSource::from_bytes(stored, o);
      CHECK(detail::fast_build(src).has_value());
      o.decode_window = false;  // the decoder into one buffer needs the whole decoded size
      io::ByteSource whole = io::ByteSource::from_bytes(stored, o);
      CHECK_FALSE(detail::fast_build(whole).has_value());
    }
    SUBCASE(named("an input that is cut short or goes on after its end gives way").c_str()) {
      // The whole input's decoder then reports the error (see test_byte_source.cpp).
      CHECK_FALSE(took(std::vector<uint8_t>(stored.begin(), stored.end() - 3), uint64_t{16} << 30));
      auto more = stored;
      more.insert(more.end(), {0x28, 0xB5, 0x2F, 0xFD, 0xFF, 0xFF});
      CHECK_FALSE(took(more, uint64_t{16} << 30));
    }
    SUBCASE(named("a FRAME longer than the rest of the input gives way, as on the plain bytes").c_str()) {
      // PROTO 4, FRAME of `n` bytes, EMPTY_LIST, STOP: the pickle stops inside its frame
      // (found by the fuzz target: the window took it, the plain bytes' parse does not).
      auto framed = [](uint64_t n) {
        std::vector<uint8_t> b = {0x80, 4, 0x95};
        for (int k = 0; k < 8; ++k) b.push_back(uint8_t(n >> (8 * k)));
        b.insert(b.end(), {']', '.'});
        return b;
      };
      CHECK(detail::fast_build(framed(2)).has_value());
      CHECK(took(compress(framed(2)), uint64_t{16} << 30));
      CHECK_FALSE(detail::fast_build(framed(3)).has_value());
      CHECK_FALSE(took(compress(framed(3)), uint64_t{16} << 30));
      CHECK_FALSE(took(compress(framed(263)), uint64_t{16} << 30));
    }
    SUBCASE(named("through the loader: the same figures, the decoded size, the exact errors").c_str()) {
      LoadOptions lo;
      auto cut = std::filesystem::temp_directory_path() / "memsnap_decode_window_cut.pickle.z";
      auto write = [](const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
        FILE* f = std::fopen(path.c_str(), "wb");
        REQUIRE(f);
        REQUIRE(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
        REQUIRE(std::fclose(f) == 0);
      };
      write(cut, stored);
      Loaded a = load_snapshot(cut.string(), lo);
      CHECK(a.input.decoded_bytes == plain.size());
      CHECK(a.input.bytes == stored.size());
      write(cut, std::vector<uint8_t>(stored.begin(), stored.end() - 3));
      std::string message;
      try {
        (void)load_snapshot(cut.string(), lo);
      } catch (const InputError& e) {
        message = e.message();
      }
      CHECK_MESSAGE(message.find(gz ? "truncated gzip stream" : "truncated zstd stream") != std::string::npos, message);
      std::filesystem::remove(cut);
    }
  }
}

TEST_CASE("decoding read-ahead: every byte in order, the decoded size at the end") {
  size_t page = size_t(sysconf(_SC_PAGESIZE)), chunk = 2 * page;
  std::vector<uint8_t> bytes(40 * chunk + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + i / 251);
  for (auto codec : {io::ReadAhead::Codec::Zstd, io::ReadAhead::Codec::Gzip}) {
    bool gz = codec == io::ReadAhead::Codec::Gzip;
    CAPTURE(gz);
    auto stored = gz ? gzip_of(bytes) : zstd_of(bytes);
    auto r = io::ReadAhead::start_decoding(codec, stored, uint64_t{1} << 40, chunk);
    REQUIRE(r);
    CHECK(r->size_hint() == bytes.size());  // what a zstd frame declares (zstd_of records it), or gzip's trailer
    size_t cap = io::ReadAhead::kChunks * chunk;
    CHECK(r->wait_for(cap) == cap);
    CHECK(r->wait_for(cap + 1) == cap);  // nothing released: the window is full, answered at once
    size_t mismatches = 0, seen = 0;
    for (size_t i = 0;; ++i) {
      if (i % (chunk / 2) == 0) r->release_before(i);
      if (r->wait_for(i + 1) <= i) break;
      mismatches += i >= bytes.size() || r->base()[i] != bytes[i];
      seen = i + 1;
    }
    CHECK(mismatches == 0);
    CHECK(seen == bytes.size());
    CHECK(r->finish() == std::optional<uint64_t>(bytes.size()));
    CHECK(r->consumed() == stored.size());
    // Released early: the decoder goes through the rest on its own.
    auto early = io::ReadAhead::start_decoding(codec, stored, uint64_t{1} << 40, chunk);
    REQUIRE(early);
    CHECK(early->finish() == std::optional<uint64_t>(bytes.size()));
    // A limit of exactly the decoded size, of a whole number of chunks and not, and one byte less.
    for (uint64_t limit : {uint64_t(bytes.size()), uint64_t(40 * chunk)}) {
      CAPTURE(limit);
      std::vector<uint8_t> head(bytes.begin(), bytes.begin() + ptrdiff_t(limit));
      auto packed = gz ? gzip_of(head) : zstd_of(head);  // read by the decoder's thread: outlives it
      auto exact = io::ReadAhead::start_decoding(codec, packed, limit, chunk);
      REQUIRE(exact);
      CHECK(exact->finish() == std::optional<uint64_t>(limit));
      auto over = io::ReadAhead::start_decoding(codec, packed, limit - 1, chunk);
      REQUIRE(over);
      CHECK_FALSE(over->finish().has_value());
    }
  }
}

TEST_CASE("fast path: the same model as the generic path on every snapgen fixture") {
  size_t fast = 0;
  size_t files = test::each_snapgen_pickle(
      [&](const std::filesystem::path& p) {
        std::string name = p.filename().string();
        bool took = compare_paths(test::read_bytes(p));
        fast += took;
        // Everything but protocol 0 (text opcodes) and the 1.13/2.0 history form takes the fast path.
        if (name.find("proto0") == std::string::npos && name.find("legacy") == std::string::npos) CHECK(took);
      },
      true);
  CHECK(files >= 20);
  CHECK(fast >= files - 2);
}

// The split parse starts its second half at a trace event found by walking the opcodes from a
// FRAME; the first half takes its work only where everything matches. Forced on small files
// (a try every 256 bytes), from several places: wherever it starts, the model is the
// generic path's, and it does start in files with event lists long enough.
TEST_CASE("fast path: a parse in two halves gives the same model as the generic path") {
  size_t files = 0, halves = 0, fast = 0;
  for (double at : {0.3, 0.5, 0.7}) {
    CAPTURE(at);
    detail::SplitOptions split{0, 256, at, true};
    files += test::each_snapgen_pickle(
        [&](const std::filesystem::path& p) {
          CAPTURE(p.filename().string());
          fast += compare_paths(test::read_bytes(p), split, &halves);
        },
        true);
  }
  MESSAGE(halves << " of " << fast << " fast parses ran in two halves");
  CHECK(fast >= files * 3 / 4);
  // The fixture made for it splits from every place: its two event lists are long enough,
  // and its second half meets nothing it must give up on (see the next test for the reverse).
  // From 0.2 its second half starts at the second device's event list (taken whole), from
  // the others inside one (appended to the first half's part of it).
  size_t fixture = 0;
  for (double at : {0.2, 0.3, 0.5, 0.7})
    compare_paths(test::read_bytes(test::testdata("snapgen/split.pickle")), detail::SplitOptions{0, 256, at, true},
                  &fixture);
  CHECK(fixture == 4);
  CHECK(halves >= 3);
}

TEST_CASE("fast path: a parse of a real file in two halves gives the same model as the generic path" *
          doctest::test_suite("realdata")) {
  size_t files = 0, halves = 0, fast = 0;
  for (double at : {0.3, 0.5, 0.7}) {
    CAPTURE(at);
    detail::SplitOptions split{0, 256, at, true};
    files += test::each_realdata(
        [&](const std::filesystem::path& p) { fast += compare_paths(test::read_bytes(p), split, &halves); });
  }
  MESSAGE(halves << " of " << fast << " fast parses ran in two halves");
  if (files) CHECK(fast >= files * 3 / 4);  // legacy history files take the generic path
}

TEST_CASE("fast path: a parse in two halves of mutated fixtures gives the generic path's model or gives way") {
  size_t halves = 0;
  each_mutation(test::read_bytes(test::testdata("snapgen/split.pickle")), 0x2545F4914F6CDD1Dull, 2,
                [&](const std::vector<uint8_t>& m, int round) {
                  compare_paths(m, detail::SplitOptions{0, 256, 0.3 + 0.4 * double(round % 5) / 4, true}, &halves);
                });
  MESSAGE(halves << " of 300 mutated inputs parsed in two halves");
  CHECK(halves >= 30);
}

TEST_CASE("fast path: the same model as the generic path on every real file" * doctest::test_suite("realdata")) {
  size_t fast = 0;
  size_t files =
      test::each_realdata([&](const std::filesystem::path& p) { fast += compare_paths(test::read_bytes(p)); });
  if (files) CHECK(fast * 10 >= files * 8);  // legacy history files take the generic path
}

TEST_CASE("fast path: the end of a run of memo GETs, against an op-by-op scan") {
  // The reference: one op at a time, stopping at the first byte that does not begin a
  // whole GET before the end.
  auto reference = [](const uint8_t* q, const uint8_t* end) {
    for (;;) {
      if (end - q >= 2 && *q == 'h')
        q += 2;
      else if (end - q >= 5 && *q == 'j')
        q += 5;
      else
        return q;
    }
  };
  uint64_t x = 0x13198A2E03707344ull;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  size_t checked = 0;
  for (int round = 0; round < 20000; ++round) {
    // Runs of 'h' only, 'j' only, alternating, random; argument bytes that are themselves
    // 'h' or 'j' half the time (an argument must never be read as an opcode); then a stop
    // byte, or the end of the input, at every offset.
    std::vector<uint8_t> buf;
    int mix = int(next() % 4);
    bool tricky_args = next() % 2;
    size_t ops = next() % 40;
    for (size_t i = 0; i < ops; ++i) {
      bool h = mix == 0 ? true : mix == 1 ? false : mix == 2 ? (i % 2 == 0) : (next() % 2 == 0);
      buf.push_back(h ? 'h' : 'j');
      for (int k = 0; k < (h ? 1 : 4); ++k) buf.push_back(tricky_args ? uint8_t("hj"[next() % 2]) : uint8_t(next()));
    }
    size_t tail = next() % 50;  // more bytes after the run, or none
    for (size_t i = 0; i < tail; ++i) buf.push_back(uint8_t("hje("[next() % 4]));
    size_t cut = buf.size() - size_t(next() % (buf.size() + 1) % 8);  // the input may end early
    const uint8_t* b = buf.data();
    CAPTURE(round);
    REQUIRE(pickle::Scanner::skip_memo_gets(b, b + cut) == reference(b, b + cut));
    ++checked;
  }
  CHECK(checked == 20000);
}

// A traceback is a run of memo GETs: BINGET ('h' and one byte) for frame dicts memoized
// below 256, LONG_BINGET ('j' and four) above. The fast path finds the run's end 32 bytes
// at a time from bit masks, with a scalar scan for the last bytes; a wrong end would give
// another stack or another event. Runs of one kind, alternating and random mixes, of every
// length up to 80, repeated (the span cache) and not, near the end of the input and cut
// by a streaming decoder's chunks: the model must be the generic path's.
TEST_CASE("fast path: tracebacks of BINGET and LONG_BINGET of every mix and length") {
  uint64_t x = 0x243F6A8885A308D3ull;
  auto next = [&] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  for (int round = 0; round < 24; ++round) {
    CAPTURE(round);
    std::ostringstream os;
    pickle::Pickler p(os);
    auto event_head = [&](uint64_t addr) {
      p.begin_dict();
      p.str("action");
      p.str("alloc");
      p.str("addr");
      p.uinteger(addr);
      p.str("size");
      p.integer(512);
      p.str("stream");
      p.integer(0);
      p.str("frames");
    };
    p.begin_dict();
    p.str("segments");
    p.begin_list();
    p.end_list();
    p.str("device_traces");
    p.begin_list();
    p.begin_list();
    event_head(1 << 20);  // the first event writes 600 frame dicts, memo 0 to 599
    p.begin_list();
    std::vector<uint32_t> memo;
    for (int i = 0; i < 600; ++i) {
      p.begin_dict();
      p.str("filename");
      p.str("model.py");
      p.str("name");
      p.str("f" + std::to_string(i));
      p.str("line");
      p.integer(i);
      p.end_dict();
      memo.push_back(p.memoize());
    }
    p.end_list();
    p.end_dict();
    REQUIRE(memo.back() == 599);
    std::vector<std::vector<uint32_t>> pool;
    for (int e = 0; e < 300; ++e) {
      std::vector<uint32_t> frames;
      if (!pool.empty() && next() % 3 == 0) {
        frames = pool[next() % pool.size()];  // the same bytes again: the span cache
      } else {
        size_t n = next() % 81;
        int mix = int(next() % 4);
        for (size_t i = 0; i < n; ++i) {
          bool low = mix == 0 ? true : mix == 1 ? false : mix == 2 ? (i % 2 == 0) : (next() % 2 == 0);
          frames.push_back(memo[low ? next() % 256 : 256 + next() % 344]);
        }
        pool.push_back(frames);
      }
      event_head((uint64_t(e) + 2) << 20);
      p.begin_list();
      for (uint32_t f : frames) p.get(f);
      p.end_list();
      p.end_dict();
    }
    p.end_list();
    p.end_list();
    p.end_dict();
    p.finish();
    std::string bytes = os.str();
    std::vector<uint8_t> raw(bytes.begin(), bytes.end());
    CHECK(compare_paths(raw));
    check_streamed(raw, 61, true);
  }
}

// A remembered traceback's bytes decode to its stack only while the memo entries they name
// are unchanged: a BINPUT that replaces a frame dict makes the same bytes another stack.
// The events before it repeat one traceback (remembered, then guessed from the one before);
// the events after it repeat the same bytes, which must now give the new frame.
TEST_CASE("fast path: a frame dict replaced in the memo changes what the same bytes mean") {
  std::vector<uint8_t> b;
  auto op = [&](std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); };
  auto str = [&](std::string_view t) {
    op({0x8c, uint8_t(t.size())});
    b.insert(b.end(), t.begin(), t.end());
  };
  auto frame = [&](const char* name, uint8_t line, uint8_t memo) {
    op({'}', '('});
    str("filename");
    str("model.py");
    str("name");
    str(name);
    str("line");
    op({'K', line, 'u', 'q', memo});  // BINPUT: memo[memo] = this frame dict
  };
  int next_addr = 1;
  auto event = [&](auto&& frames) {
    op({'}', '('});
    str("action");
    str("alloc");
    str("addr");
    op({'J', 0, 0, uint8_t(next_addr++), 0});  // 64 KiB apart
    str("size");
    op({'M', 0, 2});
    str("stream");
    op({'K', 0});
    str("frames");
    op({']', '('});
    frames();
    op({'e', 'u'});
  };
  auto gets = [&] { op({'h', 0, 'h', 1}); };
  op({0x80, 4, '}', '('});
  str("segments");
  op({']'});
  str("device_traces");
  op({']', '(', ']', '('});
  event([&] {
    frame("first", 1, 0);
    frame("second", 2, 1);
  });
  for (int i = 0; i < 6; ++i) event(gets);
  event([&] { frame("replacement", 3, 0); });  // memo 0 is another frame dict now
  for (int i = 0; i < 6; ++i) event(gets);
  op({'e', 'e', 'u', '.'});
  CHECK(compare_paths(b));
  auto fast = detail::fast_build(b);
  REQUIRE(fast);
  const Snapshot& m = fast->snapshot;
  REQUIRE(m.devices.size() == 1);
  const auto& trace = m.devices[0].trace;
  REQUIRE(trace.size() == 14);
  auto first_frame_name = [&](size_t i) { return std::string(m.strings[m.frames[m.stacks[trace[i].stack][0]].name]); };
  for (size_t i = 1; i <= 6; ++i) CHECK(first_frame_name(i) == "first");
  for (size_t i = 8; i <= 13; ++i) CHECK(first_frame_name(i) == "replacement");
}

TEST_CASE("fast path: mutated fixtures give the generic path's model or give way") {
  // Byte mutations of a real-shaped file: whatever the fast path accepts must match.
  each_mutation(test::read_bytes(test::testdata("snapgen/leak.pickle")), 0x9E3779B97F4A7C15ull, 3,
                [&](const std::vector<uint8_t>& m, int) { compare_paths(m); });
}

// try_event remembers the bytes of each key's GET by its place in the event (key_op_), and
// the events after one in a MARK batch are decoded straight from their EMPTY_DICT. Keys
// that move, a GET that names another key once the memo entry is replaced (BINPUT), and an
// event the decoder leaves to the general path in the middle of a batch must all give the
// generic path's model, every event in its place.
TEST_CASE("fast path: events whose keys move, replaced memo keys, one event decoded the general way") {
  for (bool put : {false, true}) {
    CAPTURE(put);
    std::vector<uint8_t> b;
    auto op = [&](std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); };
    auto str = [&](std::string_view t) {
      op({0x8c, uint8_t(t.size())});
      b.insert(b.end(), t.begin(), t.end());
    };
    uint8_t next = 0;
    auto memo = [&] {  // memoizes the top of the stack; returns its index
      if (put)
        op({'q', next});
      else
        op({0x94});
      return next++;
    };
    auto key = [&](std::string_view t) {
      str(t);
      return memo();
    };
    auto get = [&](uint8_t i) { op({'h', i}); };
    auto addr = [&](uint8_t a) { op({'J', 0, 0, a, 0}); };  // 64 KiB apart
    op({0x80, uint8_t(put ? 2 : 4), '}', '('});
    str("segments");
    op({']'});
    str("device_traces");
    op({']', '(', ']', '('});
    // 1: every key and value inline, memoized.
    op({'}', '('});
    uint8_t action = key("action"), alloc = key("alloc"), a = key("addr");
    addr(1);
    uint8_t size = key("size");
    op({'M', 0, 2});
    uint8_t stream = key("stream");
    op({'K', 0, 'u'});
    // 2, 3: the same keys by GET, in the same order.
    for (uint8_t i = 2; i <= 3; ++i) {
      op({'}', '('});
      get(action), get(alloc), get(a), addr(i), get(size), op({'M', 0, 2}), get(stream), op({'K', 0, 'u'});
    }
    // 4, 5: another order: every place now holds another key.
    for (uint8_t i = 4; i <= 5; ++i) {
      op({'}', '('});
      get(stream), op({'K', 1}), get(size), op({'M', 0, 4}), get(a), addr(i), get(action), get(alloc), op({'u'});
    }
    // 6: a frames list of a new frame dict, which the event decoder leaves to the general path.
    op({'}', '('});
    get(stream), op({'K', 1}), get(size), op({'M', 0, 4}), get(a), addr(6), get(action), get(alloc);
    str("frames");
    op({']', '(', '}', '('});
    str("filename"), str("model.py"), str("name"), str("forward"), str("line"), op({'K', 7, 'u', 'e', 'u'});
    // 7: after it, in the same batch, the decoder again.
    op({'}', '('});
    get(stream), op({'K', 1}), get(size), op({'M', 0, 4}), get(a), addr(7), get(action), get(alloc), op({'u'});
    // 8, 9: the memo entry of "size" now holds "stream" and that of "stream" "size" (BINPUT
    // can replace an entry; MEMOIZE only adds one, so these are new entries without put).
    // Event 9's first GET has the bytes event 7's first key had, and names the other key.
    op({'}', '('});
    uint8_t size2 = put ? size : next, stream2 = put ? stream : uint8_t(next + 1);
    auto memo_as = [&](uint8_t i) { put ? op({'q', i}) : (void)memo(); };
    str("stream");
    memo_as(size2);
    op({'K', 2});
    str("size");
    memo_as(stream2);
    op({'M', 0, 8});
    get(action), get(alloc), get(a), addr(8), op({'u'});
    op({'}', '('});
    get(stream2), op({'M', 0, 8}), get(size2), op({'K', 2}), get(action), get(alloc), get(a), addr(9), op({'u'});
    op({'e', 'e'});
    str("padding");  // the decoder wants 16 bytes ahead of each key: the last event has them
    str(std::string(64, '.'));
    op({'u', '.'});
    CHECK(compare_paths(b));
    auto fast = detail::fast_build(b);
    REQUIRE(fast);
    REQUIRE(fast->snapshot.devices.size() == 1);
    const Trace& t = fast->snapshot.devices[0].trace;
    REQUIRE(t.size() == 9);
    for (size_t i = 0; i < 9; ++i) {
      CAPTURE(i);
      CHECK(t[i].action == Action::Alloc);
      CHECK(t[i].addr == (uint64_t(i + 1) << 16));
      CHECK(t[i].size == (i < 3 ? 512u : i < 7 ? 1024u : 2048u));
      CHECK(t[i].stream == (i < 3 ? 0u : i < 7 ? 1u : 2u));
    }
    CHECK(t[5].stack.v != 0);
    CHECK(t[6].stack.v == 0);
  }
}

// The event decoder reads addr, size, stream and time_us in BININT1, BININT2, BININT and
// LONG1 of up to 8 bytes itself (int_op). Every form and LONG1 length, with values that fill
// the length, negative where the field allows it (addr, stream and time_us are any int64;
// a size must not be negative): the model must be the generic path's. A negative size in
// LONG1 of each length: both paths must refuse the file.
TEST_CASE("fast path: event integers in every opcode and LONG1 length") {
  auto build = [](auto&& value) {  // value(key, event, out) appends that field's opcode
    std::vector<uint8_t> b;
    auto op = [&](std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); };
    auto str = [&](std::string_view t) {
      op({0x8c, uint8_t(t.size())});
      b.insert(b.end(), t.begin(), t.end());
      op({0x94});
    };
    op({0x80, 4, '}', 0x94, '('});
    str("segments");
    op({']', 0x94});
    str("device_traces");
    op({']', 0x94, '(', ']', 0x94, '('});
    for (int i = 0; i < 40; ++i) {
      op({'}', 0x94, '('});
      str("action");
      str("alloc");
      for (const char* k : {"addr", "size", "stream", "time_us"}) {
        str(k);
        value(std::string_view(k), i, b);
      }
      op({'u'});
    }
    op({'e', 'e'});
    str("padding");  // the decoder wants 16 bytes ahead of each key: the last event has them
    str(std::string(64, '.'));
    op({'u', '.'});
    return b;
  };
  // LONG1 of n bytes, little-endian two's complement (from 9 bytes on, sign bytes).
  auto long1 = [](std::vector<uint8_t>& b, int64_t x, int n) {
    b.push_back(0x8a);
    b.push_back(uint8_t(n));
    for (int k = 0; k < n; ++k) b.push_back(k < 8 ? uint8_t(uint64_t(x) >> (8 * k)) : (x < 0 ? 0xFF : 0x00));
  };
  // The shortest form pickle writes.
  auto shortest = [&](std::vector<uint8_t>& b, int64_t x) {
    if (x >= 0 && x < 256)
      b.insert(b.end(), {'K', uint8_t(x)});
    else if (x >= 0 && x < 65536)
      b.insert(b.end(), {'M', uint8_t(x), uint8_t(x >> 8)});
    else if (x >= INT32_MIN && x <= INT32_MAX)
      b.insert(b.end(), {'J', uint8_t(x), uint8_t(x >> 8), uint8_t(x >> 16), uint8_t(x >> 24)});
    else
      long1(b, x, 8);
  };
  // A value that needs all n bytes of LONG1 (its top byte's high bit clear, next-to-top set).
  auto filling = [](int n, int i, bool negative) {
    int64_t x = n >= 8 ? (int64_t{0x40} << 56) + i : (int64_t{0x40} << (8 * n - 8)) + i;
    return negative ? -x : x;
  };
  for (int n = 1; n <= 9; ++n)
    for (bool negative : {false, true}) {
      CAPTURE(n);
      CAPTURE(negative);
      auto b = build([&](std::string_view k, int i, std::vector<uint8_t>& out) {
        bool neg = negative && k != "size" && i % 2 == 1;
        int64_t x = filling(n, i, neg);
        if (i % 3 == 2)
          shortest(out, x);
        else
          long1(out, x, n == 9 ? 9 : n);
      });
      CHECK(compare_paths(b));
    }
  for (int n = 1; n <= 8; ++n) {
    CAPTURE(n);
    auto b = build([&](std::string_view k, int i, std::vector<uint8_t>& out) {
      long1(out, filling(n, i, k == "size" && i == 17), n);
    });
    CHECK_FALSE(compare_paths(b));
    CHECK_FALSE(detail::fast_build(b).has_value());
  }
}
