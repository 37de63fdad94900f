// `memsnap report`: the page's data as one JSON text and the HTML document around it (see html.hpp).
#include "memsnap/report/html.hpp"

#include <map>
#include <ostream>

#include "frame_label.hpp"
#include "html_assets.hpp"
#include "memsnap/report/escape.hpp"
#include "memsnap/util/flat_map.hpp"
#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"

namespace memsnap::report {

using detail::Json;

namespace {

constexpr size_t kMaxStackFrames = 256;  // innermost frames of one stack the page keeps

// A SHA-256 in hex (from the build) as the base64 a Content-Security-Policy source names.
std::string hex_to_base64(std::string_view hex) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  auto nibble = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  std::string bytes;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1]));
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += i + 1 < bytes.size() ? kAlphabet[v >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

const char* kind_letter(analysis::FrameKind k) {
  switch (k) {
    case analysis::FrameKind::User: return "u";
    case analysis::FrameKind::Torch: return "t";
    case analysis::FrameKind::PythonRuntime: return "p";
    case analysis::FrameKind::Native: return "n";
    case analysis::FrameKind::Library: return "l";
  }
  return "n";
}

const char* kind_letter(analysis::ProfileFrameKind k) {
  switch (k) {
    case analysis::ProfileFrameKind::User: return "u";
    case analysis::ProfileFrameKind::Torch: return "t";
    case analysis::ProfileFrameKind::PythonRuntime: return "p";
    case analysis::ProfileFrameKind::Native: return "n";
    case analysis::ProfileFrameKind::Synthetic: return "s";
    case analysis::ProfileFrameKind::Library: return "l";
  }
  return "s";
}

// The frame, stack and site tables of one file: a stack is one index into a table of
// (frame, parent) suffixes, outermost frame at the end of the chain, so stacks that
// share their callers share entries.
class Tables {
 public:
  explicit Tables(const analysis::Context& ctx) : ctx_(ctx) {}

  /// -1 for a stack with no frame left after the noise filter.
  int64_t stack(snapshot::StackId id) {
    if (const int64_t* known = stack_of_.find(id.v)) return *known;
    std::vector<uint32_t> frames;
    for (snapshot::FrameId f : ctx_.snap.stacks[id])
      if (!ctx_.sites.frame_info(f).noise) frames.push_back(frame(f));
    if (frames.size() > kMaxStackFrames) frames.resize(kMaxStackFrames);
    int64_t parent = -1;
    for (size_t k = frames.size(); k-- > 0;) {
      uint64_t key = uint64_t(parent + 1) << 32 | frames[k];
      auto [slot, inserted] = node_of_.try_emplace(key, int64_t(stacks_.size()));
      if (inserted) stacks_.push_back(Json::array({frames[k], parent}));
      parent = *slot;
    }
    stack_of_.try_emplace(id.v, parent);
    return parent;
  }
  size_t site(const std::string& name) {
    auto [it, inserted] = site_of_.try_emplace(name, sites_.size());
    if (inserted) sites_.push_back(name);
    return it->second;
  }
  size_t site(analysis::SiteId id) { return site(ctx_.sites.name(id)); }

  void add_to(Json& file) {
    file["frames"] = std::move(frames_);
    file["stacks"] = std::move(stacks_);
    file["sites"] = std::move(sites_);
  }

 private:
  uint32_t frame(snapshot::FrameId f) {
    auto [slot, inserted] = frame_of_.try_emplace(f.v, static_cast<uint32_t>(frames_.size()));
    if (inserted)
      frames_.push_back(Json::array({ctx_.sites.frame_string(f), kind_letter(ctx_.sites.frame_info(f).kind)}));
    return *slot;
  }

  const analysis::Context& ctx_;
  Json frames_ = Json::array(), stacks_ = Json::array(), sites_ = Json::array();
  FlatMap64<uint32_t> frame_of_;
  FlatMap64<int64_t> node_of_, stack_of_;
  std::map<std::string, size_t> site_of_;
};

Json time_json(const std::optional<int64_t>& t, const std::optional<int64_t>& origin) {
  if (!t) return nullptr;
  return origin ? *t - *origin : *t;
}

Json timeline_json(const analysis::Timeline& tl, const analysis::DevicePage& page, Tables& tables,
                   const std::optional<int64_t>& origin) {
  Json ev = Json::array(), t = Json::array(), a = Json::array(), c = Json::array(), r = Json::array();
  Json act = Json::array(), size = Json::array(), addr = Json::array(), stack = Json::array();
  for (size_t i = 0; i < tl.points.size(); ++i) {
    const auto& p = tl.points[i];
    ev.push_back(p.event_index);
    t.push_back(time_json(p.time_us, origin));
    a.push_back(p.allocated);
    c.push_back(p.active);
    r.push_back(p.reserved);
    if (i < page.point_events.size()) {
      const snapshot::TraceEvent& e = page.point_events[i];
      act.push_back(static_cast<int>(e.action));
      size.push_back(e.size);
      addr.push_back(hex(e.action == snapshot::Action::Oom ? 0 : e.addr));
      stack.push_back(tables.stack(e.stack));
    }
  }
  Json actions = Json::array();
  for (int k = 0; k <= static_cast<int>(snapshot::Action::Unknown); ++k)
    actions.push_back(snapshot::to_string(static_cast<snapshot::Action>(k)));
  Json iterations = Json::array(), ooms = Json::array();
  for (const auto& b : tl.iteration_starts) iterations.push_back(b.event_index);
  for (const auto& o : tl.ooms) ooms.push_back(o.event_index);
  return {{"timed", tl.timed},
          {"consistent", tl.consistent},
          {"first_time", time_json(tl.first_time_us, origin)},
          {"last_time", time_json(tl.last_time_us, origin)},
          {"ev", std::move(ev)},
          {"t", std::move(t)},
          {"allocated", std::move(a)},
          {"active", std::move(c)},
          {"reserved", std::move(r)},
          {"action", std::move(act)},
          {"size", std::move(size)},
          {"address", std::move(addr)},
          {"stack", std::move(stack)},
          {"actions", std::move(actions)},
          {"peak",
           tl.peak ? Json{{"event", tl.peak->event_index}, {"allocated", tl.peak->allocated_bytes}} : Json(nullptr)},
          {"ooms", std::move(ooms)},
          {"iterations", std::move(iterations)}};
}

Json state_json(const analysis::PageState& s, Tables& tables, const std::optional<int64_t>& origin) {
  Json segs = Json::array(), runs = Json::array(), blocks = Json::array(), sites = Json::array();
  for (const auto& g : s.map.segments)
    segs.push_back(Json::array({hex(g.address), g.size, snapshot::to_string(g.pool), hex(g.stream), g.expandable,
                                g.private_pool, g.allocated_bytes, g.stranded_bytes, g.first_run, g.runs}));
  for (const auto& run : s.map.runs) {
    runs.push_back(run.offset);
    runs.push_back(run.bytes);
    runs.push_back(static_cast<int>(run.cls));
    runs.push_back(run.blocks);
  }
  for (const auto& b : s.largest)
    blocks.push_back(
        Json::array({hex(b.address), b.size, b.requested, b.state == snapshot::BlockState::ActivePendingFree ? 1 : 0,
                     tables.stack(b.stack), b.stranded_share}));
  for (const auto& p : s.sites)
    sites.push_back(Json::array({tables.site(p.site), p.bytes, p.blocks, tables.stack(p.stack)}));
  Json pins = Json::array();
  for (const auto& p : s.pinning_sites) {
    Json stack = Json::array();
    for (size_t k = 0; k < p.stack.size() && k < kMaxStackFrames; ++k) stack.push_back(p.stack[k]);
    pins.push_back({{"site", tables.site(p.site)},
                    {"live_bytes", p.live_bytes},
                    {"stranded_bytes", p.stranded_bytes},
                    {"blocks", p.blocks},
                    {"segments", p.segments},
                    {"example_address", hex(p.example_address)},
                    {"example_size", p.example_size},
                    {"stack", std::move(stack)}});
  }
  return {{"moment", analysis::to_string(s.moment)},
          {"event", s.event ? Json(*s.event) : Json(nullptr)},
          {"t", time_json(s.time_us, origin)},
          {"iteration", s.iteration},
          {"reserved_bytes", s.reserved_bytes},
          {"allocated_bytes", s.allocated_bytes},
          {"active_bytes", s.active_bytes},
          {"requested_bytes", s.requested_bytes},
          {"segments", s.segments},
          {"blocks", s.blocks},
          {"stranded_bytes", s.stranded_bytes},
          {"largest_free_block_bytes", s.largest_free_block_bytes},
          {"estimated_blocks", s.estimated_blocks},
          {"size_uncertainty", s.size_uncertainty},
          {"map",
           {{"segments", std::move(segs)},
            {"runs", std::move(runs)},
            {"merge_below", s.map.merge_below},
            {"segments_left_out", s.map.segments_left_out},
            {"bytes_left_out", s.map.bytes_left_out}}},
          {"largest", std::move(blocks)},
          {"live_blocks", s.live_blocks},
          {"sites", std::move(sites)},
          {"pinning_sites", std::move(pins)}};
}

// `labels` are the file's: its flames (the dump, the peak, an OOM) share most frames.
Json flame_json(const analysis::PageFlame& f, detail::FrameLabels& labels) {
  Json frames = Json::array(), frame = Json::array(), depth = Json::array(), bytes = Json::array(),
       size = Json::array();
  for (const auto& pf : f.tree.frames) frames.push_back(Json::array({labels.of(pf), kind_letter(pf.kind)}));
  for (size_t i = 0; i < f.tree.nodes.size(); ++i) {
    const auto& n = f.tree.nodes[i];
    frame.push_back(i == 0 ? -1 : static_cast<int64_t>(n.frame));
    depth.push_back(n.depth);
    bytes.push_back(n.bytes);
    size.push_back(f.tree.subtree_size[i]);
  }
  return {{"moment", analysis::to_string(f.moment)},
          {"event", f.event ? Json(*f.event) : Json(nullptr)},
          {"nodes_left_out", f.nodes_left_out},
          {"frames", std::move(frames)},
          {"frame", std::move(frame)},
          {"depth", std::move(depth)},
          {"bytes", std::move(bytes)},
          {"subtree", std::move(size)}};
}

Json file_json(const HtmlFile& f) {
  const analysis::AnalyzeResult& result = *f.result;
  Tables tables(f.source.context);
  detail::FrameLabels labels(400);
  Json file;
  file["path"] = f.source.input.path == "-" ? std::string("<stdin>") : f.source.input.path;
  file["analysis"] = detail::analyze_json(f.source, result);
  Json devices = Json::array();
  for (const auto& d : result.devices) {
    Json j;
    j["device"] = d.device;
    j["unused"] = d.unused;
    if (d.page) {
      j["trace_events"] = d.page->trace_events;
      j["timeline"] = d.timeline ? timeline_json(*d.timeline, *d.page, tables, result.time_origin_us) : Json(nullptr);
      Json states = Json::array(), flames = Json::array();
      for (const auto& s : d.page->states) states.push_back(state_json(s, tables, result.time_origin_us));
      for (const auto& fl : d.page->flames) flames.push_back(flame_json(fl, labels));
      j["states"] = std::move(states);
      j["flames"] = std::move(flames);
    }
    devices.push_back(std::move(j));
  }
  file["devices"] = std::move(devices);
  tables.add_to(file);
  return file;
}

}  // namespace

void write_report_html(std::ostream& out, const HtmlView& view) {
  Json data;
  data["report_version"] = 1;
  data["generator"] = std::string("memsnap ") + kVersion;
  Json files = Json::array();
  std::string names;
  for (const auto& f : view.files) {
    files.push_back(file_json(f));
    names += (names.empty() ? "" : " vs ") + files.back()["path"].get<std::string>();
  }
  data["files"] = std::move(files);
  if (view.diff && view.files.size() == 2)
    data["diff"] = detail::diff_json(
        DiffView{view.files[0].source, view.files[1].source, *view.diff, 20,
                 analysis::match_processes(view.files[0].source.context.snap, view.files[1].source.context.snap)});
  else
    data["diff"] = nullptr;

  const std::string csp = "default-src 'none'; script-src 'sha256-" + hex_to_base64(detail::kReportJsSha256) +
                          "'; style-src 'sha256-" + hex_to_base64(detail::kReportCssSha256) +
                          "'; img-src data:; base-uri 'none'; form-action 'none'";
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta http-equiv=\"Content-Security-Policy\" content=\"" << csp << "\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<meta name=\"generator\" content=\"memsnap " << kVersion << "\">\n"
      << "<title>" << html_escape(detail::printable("memsnap report: " + names, 300)) << "</title>\n"
      << "<style>" << detail::kReportCss << "</style>\n</head>\n<body>\n"
      << "<noscript><p class=\"noscript\">This report draws its pages with the script inside this file: "
         "allow JavaScript for this file to see them. Its data is the JSON text of the element "
         "with id memsnap-data.</p></noscript>\n"
      << "<div id=\"app\"></div>\n"
      << "<script type=\"application/json\" id=\"memsnap-data\">"
      << script_safe_json(data.dump(-1, ' ', false, Json::error_handler_t::replace)) << "</script>\n"
      << "<script>" << detail::kReportJs << "</script>\n</body>\n</html>\n";
}

}  // namespace memsnap::report
