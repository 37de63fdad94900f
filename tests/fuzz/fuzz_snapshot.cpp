// Fuzz target: any bytes through the whole CLI path: detect, decode, build, every
// analysis (analyze with --at, --fits, --oom-size, --oom-message and a timeline; events; diff) and
// every reporter (text, JSON, SVG, CSV) into a discarding sink. The same bytes then go
// through the windows a large input takes (compressed, through the decoding window; as a
// file, read ahead): the model, or the error, must be the one the bytes in memory give; and
// the fast path's model must be the general path's.
// Built as a libFuzzer binary with -DMEMSNAP_FUZZ=ON (clang); the same entry point
// replays a corpus as an ordinary ctest (fuzz_replay.cpp).
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "../../src/snapshot/fast_build.hpp"
#include "../support/compress.hpp"
#include "memsnap/analysis/analyze.hpp"
#include "memsnap/analysis/callgraph.hpp"
#include "memsnap/analysis/check.hpp"
#include "memsnap/analysis/diff.hpp"
#include "memsnap/analysis/events.hpp"
#include "memsnap/analysis/oom_message.hpp"
#include "memsnap/analysis/slice.hpp"
#include "memsnap/analysis/stacks.hpp"
#include "memsnap/io/byte_source.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/report/callgraph.hpp"
#include "memsnap/report/check.hpp"
#include "memsnap/report/diff.hpp"
#include "memsnap/report/events.hpp"
#include "memsnap/report/export.hpp"
#include "memsnap/report/flame.hpp"
#include "memsnap/report/fleet.hpp"
#include "memsnap/report/html.hpp"
#include "memsnap/report/segments.hpp"
#include "memsnap/report/timeline.hpp"
#include "memsnap/snapshot/builder.hpp"
#include "memsnap/snapshot/load.hpp"
#include "memsnap/util/error.hpp"
#include "memsnap/util/utf8.hpp"
#include "wellformed.hpp"

namespace {

// Counts what it is given and keeps nothing.
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return c; }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

}  // namespace

namespace {

// memsnap export, whole and cut: its output must always read back. Reading it back failing
// is a bug in the writer, not bad input, so it aborts.
void check_export(const memsnap::snapshot::Snapshot& s) {
  using namespace memsnap;
  auto read_back = [](const std::string& bytes, const char* what) {
    try {
      (void)snapshot::load_snapshot_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), what);
    } catch (const InputError& e) {
      std::fprintf(stderr, "memsnap export wrote a %s memsnap cannot read: %s\n", what, e.what());
      std::abort();
    }
  };
  std::ostringstream pickle, json;
  report::write_snapshot_pickle(pickle, s);
  report::write_snapshot_json(json, s);
  read_back(pickle.str(), "pickle");
  read_back(json.str(), "JSON document");
  analysis::SliceOptions window;
  window.last = 7;
  try {
    std::ostringstream cut;
    report::write_snapshot_pickle(cut, analysis::slice(s, window));
    read_back(cut.str(), "cut pickle");
  } catch (const UsageError&) {
  }
}

}  // namespace

// The same bytes as a zstd frame or a gzip member (chosen by the input's length), for the
// decoding window (tests/support/compress.hpp, at the fastest level). Compressing bytes in
// memory does not fail; if it did, the exception would stop the run: the harness's fault.
std::vector<uint8_t> compressed(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  return size % 2 == 0 ? memsnap::test::zstd_of(in, true, 1) : memsnap::test::gzip_of(in, 1);
}

// What loading gives: the model as memsnap's JSON export, or the error's message.
template <class Load>
std::string outcome(Load load) {
  using namespace memsnap;
  try {
    snapshot::Loaded loaded = load();
    std::ostringstream json;
    report::write_snapshot_json(json, loaded.snapshot);
    return "model " + json.str();
  } catch (const InputError& e) {
    std::string what = e.what();  // a compressed input's offsets are "decoded offset N"
    if (what.rfind("decoded ", 0) == 0) what.erase(0, 8);
    return "error " + what;
  }
}

void same_outcome(const std::string& plain, const std::string& other, const char* how) {
  if (plain == other) return;
  std::fprintf(stderr, "%s read other than the bytes in memory:\n  plain:  %.300s\n  window: %.300s\n", how,
               plain.c_str(), other.c_str());
  std::abort();
}

// The bytes in memory give one outcome; the same bytes must give it through the windows a
// large file takes, with 8 KiB chunks so that strings and frame lists straddle their
// boundaries: compressed, through the decoding window (the parse keeps copies of what it
// reads again), and as a plain file read ahead on the second core (a memfd). A difference is
// a bug in a window, so it aborts.
void check_windows(const uint8_t* data, size_t size, const memsnap::snapshot::LoadOptions& opt) {
  using namespace memsnap;
  std::string plain =
      outcome([&] { return snapshot::load_snapshot_bytes(std::vector<uint8_t>(data, data + size), "fuzz", opt); });
  snapshot::LoadOptions windowed = opt;
  windowed.read.stream = true;
  windowed.read.read_ahead_chunk = 8192;
  if (io::detect_compression({data, size}) == io::Compression::None)  // decoded once only
    same_outcome(plain,
                 outcome([&] { return snapshot::load_snapshot_bytes(compressed(data, size), "fuzz", windowed); }),
                 "the decoding window");
  int fd = memfd_create("memsnap-fuzz", MFD_CLOEXEC);
  if (fd < 0) return;
  bool written = true;
  for (size_t at = 0; at < size && written;) {
    ssize_t n = write(fd, data + at, size - at);
    written = n > 0;
    at += written ? size_t(n) : 0;
  }
  if (written) {
    windowed.read.read_ahead_from = 0;  // read ahead whatever its size
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    same_outcome(plain, outcome([&] { return snapshot::load_snapshot(path, windowed); }), "the read-ahead window");
  }
  close(fd);
}

// The schema-directed fast path against the general unpickler and schema walk on the same
// plain pickle bytes: where the fast path takes an input, the general path must take it too
// and build the same model (the JSON export of each); where it refuses, the general path
// decides alone. A difference is a bug in the fast path, so it aborts. The fast path runs
// twice: in one pass, and in two halves on two threads (SplitOptions, forced, from a place
// the input picks), whose joined result must be the same.
void check_fast_path(const uint8_t* data, size_t size) {
  using namespace memsnap;
  std::span<const uint8_t> bytes(data, size);
  if (io::detect_compression(bytes) != io::Compression::None || size == 0 || data[0] != 0x80) return;
  std::optional<std::string> general;  // the general path's model, once asked for
  auto check = [&](const snapshot::detail::SplitOptions& split, const char* how) {
    std::optional<snapshot::detail::FastResult> fast;
    try {
      fast = snapshot::detail::fast_build(bytes, nullptr, nullptr, split);
    } catch (const InputError&) {
      return;  // a memory or work bound: the general path has its own
    }
    if (!fast) return;
    if (!general) {
      try {
        pickle::ValueGraph g = pickle::unpickle(bytes);
        snapshot::BuildOptions bo;
        bo.input_bytes = size;
        std::ostringstream json;
        report::write_snapshot_json(json, snapshot::build_snapshot(g, bo));
        general = json.str();
      } catch (const InputError& e) {
        std::fprintf(stderr, "the fast path (%s) took an input the general path refuses: %s\n", how, e.what());
        std::abort();
      }
    }
    std::ostringstream json;
    report::write_snapshot_json(json, fast->snapshot);
    if (json.str() != *general) {
      std::fprintf(stderr, "the fast path (%s) built another model:\n  fast:    %.300s\n  general: %.300s\n", how,
                   json.str().c_str(), general->c_str());
      std::abort();
    }
  };
  check(snapshot::detail::SplitOptions::none(), "one pass");
  check(snapshot::detail::SplitOptions{0, 64, 0.2 + 0.6 * double(data[size / 2]) / 255, true}, "two halves");
}

// flame (folded, SVG), callgraph (text, DOT, JSON): every reporter of the stack profiles.
using memsnap::fuzz::check_csv;
using memsnap::fuzz::check_dot;
using memsnap::fuzz::check_html;
using memsnap::fuzz::check_json;
using memsnap::fuzz::check_text;
using memsnap::fuzz::check_xml;
using memsnap::fuzz::malformed;

void check_stack_reports(const memsnap::snapshot::Loaded& loaded) {
  using namespace memsnap;
  const auto& snap = loaded.snapshot;
  analysis::StackProfileBuilder b(snap, analysis::StackOptions{});
  for (const auto& d : snap.devices) b.add(d, snap.devices.size() > 1);
  analysis::StackProfile profile = b.take();
  std::ostringstream folded, svg, text, dot, json;
  report::write_folded(folded, profile);
  check_text("flame folded", folded.str());
  for (const std::string& line : [&] {
         std::vector<std::string> lines;
         std::istringstream in(folded.str());
         for (std::string l; std::getline(in, l);) lines.push_back(l);
         return lines;
       }()) {
    size_t space = line.rfind(' ');
    if (space == std::string::npos || space + 1 == line.size() ||
        line.find_first_not_of("0123456789", space + 1) != std::string::npos)
      malformed("flame folded", "a line without a count: " + line.substr(0, 200), folded.str());
  }
  report::FlameSvgOptions so;
  so.script = true;
  (void)report::write_flame_svg(svg, analysis::flame_tree(profile), so);
  check_xml("flame SVG", svg.str());
  analysis::CallGraph graph = analysis::build_call_graph(profile);
  report::ProfileSource source;
  source.path = "fuzz\xf8\x88\x80";
  report::CallgraphView view{&graph, &source, 0.0};
  report::write_callgraph_text(text, view, 80);
  check_text("callgraph text", text.str());
  report::write_callgraph_dot(dot, view);
  check_dot("callgraph DOT", dot.str());
  report::write_callgraph_json(json, view);
  check_json("callgraph JSON", json.str());
}

// A file name with every character the writers must escape, and a byte no UTF-8 has.
const char* const kHostileName = "fuzz<&\"'\x1b]0;\xf8\x88\x80.pickle";

// check (text, JSON, JSON Lines, JUnit XML) with every limit set; the limits' sizes come from
// the input so that both verdicts are reached.
void check_check_reports(const memsnap::snapshot::Loaded& loaded, const memsnap::analysis::AnalyzeResult& result,
                         const uint8_t* data, size_t size) {
  using namespace memsnap;
  analysis::Limits limits;
  uint64_t scale = size ? data[size - 1] % 40 : 20;
  limits.max_reserved = uint64_t{1} << scale;
  limits.max_allocated = uint64_t{3} << scale;
  limits.max_peak = uint64_t{5} << scale;
  limits.max_stranded = uint64_t{7} << scale;
  limits.max_fragmentation = double(scale) / 40;
  limits.no_leaks = limits.no_oom = true;
  auto lines = analysis::evaluate_limits(result, loaded.snapshot.settings, limits, kHostileName);
  analysis::CheckLine error;
  error.file = kHostileName;
  error.status = analysis::CheckStatus::Error;
  error.message = std::string("offset 7: ") + kHostileName;
  lines.push_back(error);
  std::ostringstream text, json, jsonl, junit;
  report::write_check_text(text, lines, report::TextStyle{});
  check_text("check text", text.str());
  report::write_check_json(json, lines, limits);
  check_json("check JSON", json.str());
  report::write_check_jsonl_file(jsonl, lines);
  report::write_check_jsonl_summary(jsonl, analysis::check_totals(lines));
  std::istringstream in(jsonl.str());
  for (std::string line; std::getline(in, line);) check_json("check JSON Lines", line);
  report::write_check_junit(junit, lines);
  check_xml("check JUnit XML", junit.str());
}

// merge: the analyze document of this file must read back as a fleet row, alone and as the
// fleet document merge writes; that document parses, and its text is terminal-safe.
void check_merge(const memsnap::report::Source& src, const memsnap::analysis::AnalyzeResult& result) {
  using namespace memsnap;
  report::Fleet fleet;
  try {
    report::FleetFile file = report::fleet_file(src, result, kHostileName);
    check_json("analyze JSON", file.json);
    (void)report::fleet_row_from_json(file.json, kHostileName);
    report::add_fleet_input(fleet, file.json, report::FleetReadOptions{});
    report::finish_fleet(fleet);
    std::ostringstream json;
    report::write_fleet_json(json, fleet);
    check_json("merge JSON", json.str());
    report::Fleet again;
    report::add_fleet_input(again, json.str(), report::FleetReadOptions{});
  } catch (const report::FleetFormatError& e) {
    std::fprintf(stderr, "merge refuses the analyze JSON memsnap wrote: %s\n", e.what());
    std::abort();
  }
  std::ostringstream text;
  report::write_fleet_text(text, fleet, report::TextStyle{});
  check_text("merge text", text.str());
}

// report: the HTML page of one file, and of the file against itself (a diff).
void check_html_report(const memsnap::snapshot::Loaded& loaded, const memsnap::analysis::Context& ctx) {
  using namespace memsnap;
  analysis::AnalyzeOptions o;
  analysis::TimelineOptions t;
  t.max_points = 64;
  o.timeline = t;
  analysis::PageOptions page;
  page.timeline_points = 64;
  page.even_states = 4;
  o.page = page;
  auto result = analysis::analyze(ctx, o);
  snapshot::InputInfo input = loaded.input;
  input.path = kHostileName;
  report::HtmlView view;
  view.files.push_back({report::Source{input, ctx}, &result});
  std::ostringstream one, two;
  report::write_report_html(one, view);
  check_html("report HTML", one.str());
  auto diff = analysis::diff_snapshots(ctx, ctx);
  view.files.push_back(view.files.front());
  view.diff = &diff;
  report::write_report_html(two, view);
  check_html("report HTML (diff)", two.str());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace memsnap;
  NullBuffer buffer;
  std::ostream sink(&buffer);
  snapshot::LoadOptions opt;
  opt.read.max_buffer_bytes = uint64_t{64} << 20;  // keep decompression bombs cheap
  // The bytes as the text of --oom-message.
  (void)analysis::parse_oom_message({reinterpret_cast<const char*>(data), size});
  check_windows(data, size, opt);
  check_fast_path(data, size);
  try {
    auto loaded = snapshot::load_snapshot_bytes(std::vector<uint8_t>(data, data + size), "fuzz", opt);
    analysis::Context ctx(loaded.snapshot);
    report::Source src{loaded.input, ctx};
    report::TextStyle style;

    analysis::AnalyzeOptions o;
    o.oom.assumed_request = 1 << 20;
    o.oom.capacity = uint64_t{80} << 30;
    o.oom.message = analysis::parse_oom_message(
        "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 80.00 GiB of which 1.00 GiB is free. Including "
        "non-PyTorch memory, this process has 3.00 GiB memory in use. Of the allocated memory 1.00 GiB is allocated "
        "by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.");
    o.fits = analysis::FitsQuery{3 << 20, 0};
    analysis::TimelineOptions t;
    t.by_site = true;
    t.max_points = 64;
    o.timeline = t;
    auto result = analysis::analyze(ctx, o);
    report::write_analyze_text(sink, src, result, style);
    report::write_analyze_json(sink, src, result);
    report::write_segments_text(sink, src, result, 0, style);
    report::write_segments_json(sink, src, result, 0);
    std::vector<analysis::Timeline> timelines;
    for (auto& d : result.devices)
      if (d.timeline) timelines.push_back(*d.timeline);
    if (!timelines.empty()) {
      report::TimelineView view{&loaded.input, &timelines, result.time_origin_us};
      report::write_timeline_svg(sink, view, report::SvgOptions{});
      std::ostringstream csv, tsvg;
      report::write_timeline_csv(csv, view);
      check_csv("timeline CSV", csv.str());
      report::write_timeline_svg(tsvg, view, report::SvgOptions{});
      check_xml("timeline SVG", tsvg.str());
    }
    // --at the middle of every trace
    for (const auto& d : loaded.snapshot.devices) {
      if (d.trace.empty()) continue;
      analysis::AnalyzeOptions at;
      at.device = d.index;
      at.at = d.trace.size() / 2;
      report::write_analyze_text(sink, src, analysis::analyze(ctx, at), style);
    }
    std::vector<analysis::DeviceEvents> events;
    for (const auto& d : loaded.snapshot.devices)
      events.push_back(analysis::list_events(ctx, d, analysis::EventsOptions{"peak", 16, true}));
    report::write_events_text(sink, src, events, result.time_origin_us, style);
    report::write_events_json(sink, src, events, result.time_origin_us);
    auto diff = analysis::diff_snapshots(ctx, ctx);
    report::DiffView dv{src, src, diff, 20};
    report::write_diff_text(sink, dv, style);
    report::write_diff_json(sink, dv);
    check_export(loaded.snapshot);
    check_stack_reports(loaded);
    check_check_reports(loaded, result, data, size);
    check_merge(src, result);
    check_html_report(loaded, ctx);
  } catch (const InputError&) {
    // malformed input is expected; anything else (or a crash) is a bug
  } catch (const UsageError&) {
    // an option that names nothing in this input (not reachable with the options above)
  }
  return 0;
}
