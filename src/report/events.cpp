// `memsnap events`: one line per trace event (index, time, action, size, address,
// stream, site, totals after it), the named event marked; or the same as JSON.
#include "memsnap/report/events.hpp"

#include <algorithm>
#include <ostream>

#include "memsnap/util/units.hpp"
#include "memsnap/util/version.hpp"
#include "sections.hpp"
#include "text_util.hpp"

namespace memsnap::report {

using detail::pad_left;
using detail::pad_right;

void write_events_text(std::ostream& out, const Source& src, const std::vector<analysis::DeviceEvents>& devices,
                       const std::optional<int64_t>& origin, const TextStyle& style) {
  const size_t width = size_t(std::max(72, std::min(style.width, 200)));
  out << detail::title_line(std::string("memsnap ") + kVersion, src.input.path, width);
  if (origin) out << "times (+) count from the first trace event in the file, " << detail::utc_time(*origin) << '\n';
  for (const auto& d : devices) {
    out << '\n' << (style.color ? "\033[1m" : "") << "device " << d.device << (style.color ? "\033[0m" : "") << ": ";
    if (d.entries == 0) {
      out << "no trace entries\n";
      continue;
    }
    if (d.rows.empty()) {
      out << with_commas(d.entries) << " trace entries, no " << (d.center_what.empty() ? "events" : "OOM event")
          << " to list\n";
      continue;
    }
    out << "events " << with_commas(d.rows.front().index) << " to " << with_commas(d.rows.back().index) << " of "
        << with_commas(d.entries);
    if (d.center)
      out << ", around " << (d.center_what == "index" ? "event" : d.center_what.c_str()) << " "
          << with_commas(*d.center);
    out << '\n';
    // index, time, action, size, address, [stream,] allocated after, then the site: on the
    // same line when the terminal is wide enough, else on the next line, indented.
    bool streams = false;
    size_t index_w = 5;
    for (const auto& r : d.rows) {
      streams = streams || r.stream != 0;
      index_w = std::max(index_w, with_commas(r.index).size());
    }
    index_w += 2;
    const size_t fixed = 2 + index_w + 10 + 15 + 11 + 2 + 16 + (streams ? 8 : 0) + 12 + 2;
    const bool same_line = width >= fixed + 24;
    out << "  " << pad_right("event", index_w) << pad_right("time", 10) << pad_right("action", 15)
        << pad_left("size", 11) << "  " << pad_right("address", 16) << (streams ? pad_right("stream", 8) : "")
        << pad_left("allocated", 12) << (same_line ? "  site" : "") << '\n';
    const size_t indent = same_line ? fixed : 4 + index_w;
    for (const auto& r : d.rows) {
      bool mark = d.center && r.index == *d.center;
      std::string where = r.address ? detail::hex(*r.address) : "free " + human_bytes(*r.device_free);
      std::string stream = detail::stream_name(r.stream);
      if (stream.size() > 7) stream = stream.substr(0, 6) + "~";
      std::string time = detail::at_time(r.time_us, origin);
      if (time.size() > 9) time = time.substr(0, 9);
      out << (mark ? "> " : "  ") << pad_right(with_commas(r.index), index_w) << pad_right(time, 10)
          << pad_right(detail::term(r.action_name, 14), 15) << pad_left(human_bytes(r.size), 11) << "  "
          << pad_right(where, 16) << (streams ? pad_right(stream, 8) : "")
          << pad_left(human_bytes(r.allocated_after), 12);  // "1023.99 MiB" and a space
      std::string site = detail::term(r.site.empty() ? "-" : r.site, 512);
      size_t room = width > indent + 8 ? width - indent : 8;
      if (detail::display_width(site) > room) site = detail::shorten_left(site, room);
      if (detail::display_width(site) > room) site = site.substr(0, room - 3) + "...";  // a C++ name: cut
      if (same_line)
        out << "  " << site << '\n';
      else
        out << '\n' << std::string(indent, ' ') << site << '\n';
      for (const auto& f : r.stack) out << detail::wrap_block(detail::term(f, 512), width, indent + 2);
    }
  }
}

void write_events_json(std::ostream& out, const Source& src, const std::vector<analysis::DeviceEvents>& devices,
                       const std::optional<int64_t>& origin) {
  using detail::Json;
  Json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["tool"] = {{"name", "memsnap"}, {"version", kVersion}};
  doc["input"] = detail::input_json(src.input, src.context.snap);
  doc["time_origin_us"] = detail::opt(origin);
  Json devs = Json::array();
  for (const auto& d : devices) {
    Json rows = Json::array();
    for (const auto& r : d.rows) {
      Json j = {{"index", r.index},
                {"time_us", detail::opt(r.time_us)},
                {"action", r.action_name},
                {"size_bytes", r.size},
                {"address", detail::opt(r.address)},
                {"device_free_bytes", detail::opt(r.device_free)},
                {"stream", r.stream},
                {"site", r.site},
                {"allocated_after_bytes", r.allocated_after},
                {"reserved_after_bytes", r.reserved_after}};
      if (!r.stack.empty()) j["stack"] = r.stack;
      rows.push_back(std::move(j));
    }
    devs.push_back({{"device", d.device},
                    {"entries", d.entries},
                    {"around", d.center_what.empty() ? Json(nullptr) : Json(d.center_what)},
                    {"center_event", detail::opt(d.center)},
                    {"events", std::move(rows)}});
  }
  doc["devices"] = std::move(devs);
  detail::add_site_context(doc, src.context.sites);
  detail::write_json(out, doc);
}

}  // namespace memsnap::report
