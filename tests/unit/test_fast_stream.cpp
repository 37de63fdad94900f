// The fast path reading its input as it arrives: a compressed input parsed while a second
// thread decodes it (into one buffer, or into a window of moving pages), and a plain file
// read ahead into such a window, give the model that parsing the whole buffer gives, on
// every fixture and real file, at every chunk boundary.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "../../src/snapshot/fast_build.hpp"
#include "memsnap/io/byte_source.hpp"
#include "memsnap/io/read_ahead.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "support/compress.hpp"
#include "support/model_compare.hpp"
#include "support/streamed.hpp"
#include "support/testdata.hpp"

using namespace memsnap;
using namespace memsnap::snapshot;

namespace {

using test::check_same_model;
using test::check_streamed;
using test::gzip_of;
using test::ProgressCheck;
using test::zstd_of;

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
    check_same_model(read->snapshot, whole->snapshot);
  }
  // Under a memory bound with room for it, the window is counted as input while the parse
  // reads it and given back after: what the bound holds then is what it holds without a
  // window. (With 2 MiB chunks the parse releases the window exactly where it accounts, every
  // MiB; smaller chunks add checkpoints that move where the tables' sizes are taken.)
  util::MemoryBudget budget(uint64_t{1} << 40);
  auto bounded = detail::fast_build(src, &budget, nullptr);
  REQUIRE(bounded.has_value() == whole.has_value());
  if (whole) {
    check_same_model(bounded->snapshot, whole->snapshot);
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
  check_same_model(read->snapshot, whole->snapshot);
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
