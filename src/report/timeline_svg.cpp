// `memsnap timeline -o mem.svg`: one self-contained SVG, a panel per device.
//
// Plain SVG 1.1 text: no script, no external reference, no web font (generic
// families only), a white background so dark viewers show it as printed.
// Every series is drawn as steps (a state holds until the next event). Lines
// are told apart by colour and by dash, so the picture survives grayscale
// printing; site areas are pale and drawn first, so the lines stay on top.
// Labels are placed by a small greedy placer that tries a few positions around
// their anchor and keeps the first one that overlaps nothing placed before.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "memsnap/report/timeline.hpp"
#include "memsnap/util/units.hpp"
#include "text_util.hpp"

namespace memsnap::report {

std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\t':
        case '\n': out += ' '; break;
        default:
          if (c < 0x20 || c == 0x7F)
            out += kReplacement;  // not allowed in XML 1.0
          else
            out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence is copied; anything else becomes U+FFFD.
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len == 3) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
      if (ok && c == 0xEF && c1 == 0xBF) {
        unsigned char c2 = static_cast<unsigned char>(s[i + 2]);
        ok = c2 != 0xBE && c2 != 0xBF;  // U+FFFE, U+FFFF are not XML characters
      }
    }
    if (ok && len == 4) {
      unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out += kReplacement;
      ++i;
    }
  }
  return out;
}

namespace {

using analysis::Timeline;

// ---- small formatting helpers ---------------------------------------------------------

std::string num(double v) {  // coordinates: one decimal, no trailing ".0"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

// `v` with as few decimals as `step` needs (at most 3).
std::string tick_number(double v, double step) {
  int d = 0;
  while (d < 3 && std::fabs(step * std::pow(10, d) - std::round(step * std::pow(10, d))) > 1e-6) ++d;
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", d, v);
  return buf;
}

// Code points of a UTF-8 string (continuation bytes do not count).
size_t text_length(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The first `n` code points.
std::string_view utf8_prefix(std::string_view s, size_t n) {
  size_t i = 0;
  for (size_t k = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && k++ == n) break;
  return s.substr(0, i);
}
// The last `n` code points.
std::string_view utf8_suffix(std::string_view s, size_t n) {
  size_t len = text_length(s);
  if (n >= len) return s;
  return s.substr(utf8_prefix(s, len - n).size());
}

// A site name in at most `w` characters. "dir/file.py:LINE:function" keeps its
// ":LINE:" whole (two sites of one file must stay apart): directories go first,
// then the end of the function name, then the start of the file name. Anything
// else loses its middle.
std::string shorten_site(const std::string& site, size_t w) {
  if (text_length(site) <= w) return site;
  size_t c2 = site.rfind(':');
  size_t c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : site.rfind(':', c2 - 1);
  bool parsed =
      c1 != std::string::npos && c2 > c1 + 1 &&
      std::all_of(site.begin() + long(c1) + 1, site.begin() + long(c2), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (parsed) {
    std::string file = site.substr(0, c1), line = site.substr(c1, c2 - c1 + 1), fn = site.substr(c2 + 1);
    if (size_t slash = file.rfind('/'); slash != std::string::npos) file = "…/" + file.substr(slash + 1);
    size_t lw = text_length(line);
    if (text_length(file) + lw + text_length(fn) <= w) return file + line + fn;
    if (lw + 12 <= w) {
      size_t fn_room = std::max<size_t>(8, w - lw - std::min<size_t>(text_length(file), w - lw - 8));
      if (text_length(fn) > fn_room) fn = std::string(utf8_prefix(fn, fn_room - 1)) + "…";
      size_t file_room = w - lw - text_length(fn);
      if (text_length(file) > file_room) file = "…" + std::string(utf8_suffix(file, file_room - 1));
      return file + line + fn;
    }
  }
  if (w < 3) return std::string(utf8_prefix(site, w));
  size_t keep = w - 1;
  return std::string(utf8_prefix(site, keep / 2)) + "…" + std::string(utf8_suffix(site, keep - keep / 2));
}

// Approximate text width in pixels (no font metrics at hand: generic families).
// Sized for DejaVu Sans, the widest of the usual fallbacks, so boxes never clip.
double text_width(std::string_view s, double size, bool bold = false) {
  return double(text_length(s)) * size * (bold ? 0.65 : 0.6);
}

// ---- scales and ticks -------------------------------------------------------------------

struct ByteUnit {
  double scale;
  const char* name;
};

ByteUnit byte_unit(double max) {
  if (max >= double(1ull << 40)) return {double(1ull << 40), "TiB"};
  if (max >= double(1ull << 30)) return {double(1ull << 30), "GiB"};
  if (max >= double(1ull << 20)) return {double(1ull << 20), "MiB"};
  if (max >= 1024) return {1024, "KiB"};
  return {1, "B"};
}

// A step of 1, 2, 2.5 or 5 x 10^k giving about `target` intervals over `range`.
double nice_step(double range, double target) {
  double raw = range / std::max(1.0, target);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw * 0.999) return m * mag;
  return 10 * mag;
}

struct Axis {
  double max = 1;  // domain is [0, max]
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

Axis bytes_axis(uint64_t max_bytes, double target) {
  double m = std::max<double>(double(max_bytes) * 1.12, 1024);
  ByteUnit u = byte_unit(m);
  double step = nice_step(m / u.scale, target);
  Axis a;
  a.max = std::ceil(m / u.scale / step - 1e-9) * step * u.scale;
  for (double v = 0; v <= a.max / u.scale + 1e-9; v += step) {
    a.ticks.push_back(v * u.scale);
    a.labels.push_back(v == 0 ? "0" : tick_number(v, step) + " " + u.name);
  }
  return a;
}

// Relative time in microseconds, labelled in the unit the span calls for.
Axis time_axis(double span_us, double target) {
  Axis a;
  a.max = std::max(span_us, 1.0) * 1.015;  // room for a marker on the last event
  struct U {
    double us;
    const char* name;
  };
  U u = a.max < 1e3          ? U{1, "us"}
        : a.max < 1e6        ? U{1e3, "ms"}
        : a.max < 180e6      ? U{1e6, "s"}
        : a.max < 3 * 3600e6 ? U{60e6, "min"}
                             : U{3600e6, "h"};
  double step = nice_step(a.max / u.us, target);
  for (double v = 0; v <= a.max / u.us + 1e-9; v += step) {
    a.ticks.push_back(v * u.us);
    a.labels.push_back(v == 0 ? "0" : tick_number(v, step) + " " + u.name);
  }
  return a;
}

Axis index_axis(double max_index, double target) {
  Axis a;
  a.max = std::max(max_index, 1.0) * 1.015;
  double step = std::max(1.0, nice_step(a.max, target));
  step = std::round(step);
  for (double v = 0; v <= a.max + 1e-9; v += step) {
    a.ticks.push_back(v);
    a.labels.push_back(with_commas(static_cast<uint64_t>(v)));
  }
  return a;
}

// ---- label placement ----------------------------------------------------------------------

struct Rect {
  double x0, y0, x1, y1;
  bool overlaps(const Rect& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
};

class Placer {
 public:
  explicit Placer(Rect bounds) : bounds_(bounds) {}
  // Something a label must not cover.
  void block(const Rect& r) { placed_.push_back(r); }
  // A stretch of a plotted line: a label may cover it, but one that covers fewer wins.
  void line(double x0, double y0, double x1, double y1) {
    lines_.push_back({std::min(x0, x1), std::min(y0, y1), std::max(x0, x1), std::max(y0, y1)});
  }
  // The candidate inside the bounds, clear of every placed label, that covers the
  // fewest line stretches (a crossing costs as much as ten places down the list,
  // so a label moves a little away from its anchor rather than hide a line).
  Rect place(const std::vector<Rect>& candidates) {
    const Rect* best = nullptr;
    size_t best_cost = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Rect& c = candidates[i];
      if (c.x0 < bounds_.x0 || c.x1 > bounds_.x1 || c.y0 < bounds_.y0 || c.y1 > bounds_.y1) continue;
      if (std::any_of(placed_.begin(), placed_.end(), [&](const Rect& p) { return p.overlaps(c); })) continue;
      size_t crossings = 0;
      const double m = 3;  // a line grazing the box counts: strokes have width
      for (const auto& l : lines_)
        crossings += c.x0 - m <= l.x1 && l.x0 <= c.x1 + m && c.y0 - m <= l.y1 && l.y0 <= c.y1 + m;
      size_t cost = crossings * 10 + i;
      if (!best || cost < best_cost) best = &c, best_cost = cost;
    }
    Rect r = best ? *best : candidates.front();
    if (!best) {  // nothing fits: keep the first, inside horizontally at least
      double w = r.x1 - r.x0;
      if (r.x1 > bounds_.x1) r.x0 = bounds_.x1 - w, r.x1 = bounds_.x1;
      if (r.x0 < bounds_.x0) r.x0 = bounds_.x0, r.x1 = bounds_.x0 + w;
    }
    placed_.push_back(r);
    return r;
  }

 private:
  Rect bounds_;
  std::vector<Rect> placed_;
  std::vector<Rect> lines_;
};

// A label on a white, slightly transparent box so it reads over lines and areas.
void boxed_label(std::string& svg, const Rect& r, const std::string& text, const char* color, double size,
                 bool bold = false) {
  svg += "<rect x=\"" + num(r.x0) + "\" y=\"" + num(r.y0) + "\" width=\"" + num(r.x1 - r.x0) + "\" height=\"" +
         num(r.y1 - r.y0) + "\" fill=\"#ffffff\" fill-opacity=\"0.85\" stroke=\"" + color +
         "\" stroke-width=\"0.6\" rx=\"2\"/>\n";
  svg += "<text x=\"" + num(r.x0 + 4) + "\" y=\"" + num(r.y1 - (r.y1 - r.y0 - size) / 2 - size * 0.18) +
         "\" font-size=\"" + num(size) + "\" fill=\"" + color + "\"" + (bold ? " font-weight=\"bold\"" : "") + ">" +
         xml_escape(text) + "</text>\n";
}

// ---- styles -------------------------------------------------------------------------------------

struct LineStyle {
  const char* name;
  const char* color;
  const char* dash;  // empty: solid
  double width;
};
constexpr LineStyle kReserved{"reserved", "#3d3d3d", "7 4", 1.5};
constexpr LineStyle kActive{"active", "#d95f02", "2 2.5", 1.6};
constexpr LineStyle kAllocated{"allocated", "#1a4f9c", "", 1.8};
constexpr const char* kOom = "#d62728";
constexpr const char* kIteration = "#1b7f5b";
constexpr const char* kGrid = "#e4e4e4";
constexpr const char* kText = "#222222";
constexpr const char* kMuted = "#666666";
// Pale fills for site areas (the lines drawn over them stay readable), "other" last.
constexpr const char* kSiteFill[] = {"#a6c8ec", "#fdc48a", "#a8dba0", "#f4a6a6", "#cdb8e0",
                                     "#d2b4a8", "#f5bfdc", "#dede9a", "#a3e0e8", "#c2c2f0"};
constexpr const char* kOtherFill = "#dcdcdc";

std::string dash_attr(const LineStyle& s) {
  return *s.dash ? std::string(" stroke-dasharray=\"") + s.dash + "\"" : std::string();
}

// ---- one device -----------------------------------------------------------------------------

struct Frame {
  double left, right, top, bottom;  // plot area
  double xmax, ymax;
  double x(double v) const { return left + (right - left) * std::clamp(v / xmax, 0.0, 1.0); }
  double y(double v) const { return bottom - (bottom - top) * std::clamp(v / ymax, 0.0, 1.0); }
};

struct Shared {
  std::optional<int64_t> origin_us;  // time of the first event over all devices
  double time_span_us = 0;
  double max_index = 0;
};

double x_value(const Timeline& t, uint32_t event, const std::optional<int64_t>& time, const Shared& sh) {
  if (t.timed && time && sh.origin_us) return double(detail::span_us(*sh.origin_us, *time));
  return double(event);
}

std::string when(const Timeline& t, uint32_t event, const std::optional<int64_t>& time, const Shared& sh) {
  if (t.timed && time && sh.origin_us) return "+" + detail::duration(detail::span_us(*sh.origin_us, *time));
  return "event " + with_commas(event);
}

// A step path through (x[i], v[i]): each value holds until the next point, the
// last one until x_end.
std::string step_path(const std::vector<double>& xs, const std::vector<double>& ys, double x_end) {
  std::string d;
  d.reserve(xs.size() * 16);
  std::string x, y;  // the pen, as written
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string nx = num(xs[i]), ny = num(ys[i]);
    if (i == 0)
      d += "M" + nx + " " + ny;
    else {
      if (nx != x) d += "H" + nx;
      if (ny != y) d += "V" + ny;
    }
    x = std::move(nx);
    y = std::move(ny);
  }
  if (!xs.empty() && num(x_end) != x) d += "H" + num(x_end);
  return d;
}

void write_panel(std::string& svg, const Timeline& t, const Shared& sh, double top, const SvgOptions& o) {
  const double W = o.width, H = o.panel_height;
  const bool sites = t.by_site;
  const double legend_w = sites ? std::clamp(W * 0.3, 240.0, 380.0) : 170.0;
  Frame f;
  f.left = 74;
  f.right = W - legend_w - 20;
  f.top = top + 34;
  f.bottom = top + H - 46;

  uint64_t ymax_bytes = 0;
  for (const auto& p : t.points) ymax_bytes = std::max({ymax_bytes, p.reserved, p.active, p.allocated});
  double plot_h = f.bottom - f.top, plot_w = f.right - f.left;
  Axis ya = bytes_axis(ymax_bytes, std::max(2.0, plot_h / 55));
  Axis xa = t.timed ? time_axis(sh.time_span_us, std::max(2.0, plot_w / 110))
                    : index_axis(sh.max_index, std::max(2.0, plot_w / 110));
  f.ymax = ya.max;
  f.xmax = xa.max;

  // ---- header line -------------------------------------------------------------------
  std::string head = with_commas(t.events) + (t.events == 1 ? " trace event" : " trace events");
  if (t.timed && t.first_time_us && t.last_time_us && *t.last_time_us > *t.first_time_us)
    head += " over " + detail::duration(detail::span_us(*t.first_time_us, *t.last_time_us));
  else if (!t.timed)
    head += " (no timestamps: x is the event index)";
  if (t.peak) head += "  ·  peak " + human_bytes(t.peak->allocated_bytes) + " allocated";
  if (!t.iteration_starts.empty()) head += "  ·  " + with_commas(t.iteration_starts.size()) + " iterations";
  if (!t.ooms.empty()) head += "  ·  " + with_commas(t.ooms.size()) + (t.ooms.size() == 1 ? " OOM" : " OOMs");
  svg += "<g class=\"panel\" id=\"device-" + std::to_string(t.device) + "\">\n";
  svg += "<text x=\"" + num(f.left - 60) + "\" y=\"" + num(top + 20) + "\" font-size=\"13\" fill=\"" + kText +
         "\"><tspan font-weight=\"bold\">device " + std::to_string(t.device) + "</tspan><tspan dx=\"10\" fill=\"" +
         kMuted + "\" font-size=\"11.5\">" + xml_escape(head) + "</tspan></text>\n";
  if (!t.consistent)
    svg += "<text x=\"" + num(f.right) + "\" y=\"" + num(top + 20) + "\" font-size=\"11\" text-anchor=\"end\" fill=\"" +
           kActive.color + "\">replay inconsistent: values are approximate (see memsnap analyze)</text>\n";

  // ---- grid and y ticks ----------------------------------------------------------------------
  for (size_t i = 0; i < ya.ticks.size(); ++i) {
    double y = f.y(ya.ticks[i]);
    if (i > 0)
      svg += "<line x1=\"" + num(f.left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(f.right) + "\" y2=\"" + num(y) +
             "\" stroke=\"" + kGrid + "\" stroke-width=\"1\"/>\n";
    svg += "<text x=\"" + num(f.left - 7) + "\" y=\"" + num(y + 4) + "\" font-size=\"11\" text-anchor=\"end\" fill=\"" +
           kText + "\">" + xml_escape(ya.labels[i]) + "</text>\n";
  }
  for (size_t i = 0; i < xa.ticks.size(); ++i) {
    double x = f.x(xa.ticks[i]);
    if (i > 0)
      svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.bottom) +
             "\" stroke=\"" + kGrid + "\" stroke-width=\"1\"/>\n";
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.bottom) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.bottom + 4) +
           "\" stroke=\"" + kText + "\" stroke-width=\"1\"/>\n";
    const char* anchor = i == 0 ? "start" : "middle";
    svg += "<text x=\"" + num(x) + "\" y=\"" + num(f.bottom + 17) + "\" font-size=\"11\" text-anchor=\"" + anchor +
           "\" fill=\"" + kText + "\">" + xml_escape(xa.labels[i]) + "</text>\n";
  }
  svg += "<text x=\"" + num((f.left + f.right) / 2) + "\" y=\"" + num(f.bottom + 35) +
         "\" font-size=\"11\" text-anchor=\"middle\" fill=\"" + kMuted + "\">" +
         (t.timed ? "time since the first event" : "trace event index") + "</text>\n";

  // ---- series ----------------------------------------------------------------------------------
  std::vector<double> xs;
  xs.reserve(t.points.size());
  for (const auto& p : t.points) xs.push_back(f.x(x_value(t, p.event_index, p.time_us, sh)));
  std::vector<double> ys(t.points.size());
  // The state after a device's last event lasts until the dump, which came after
  // the last event of every device: the series run to the end of the shared axis.
  const double x_end = std::max(xs.empty() ? f.left : xs.back(), f.x(t.timed ? sh.time_span_us : sh.max_index));
  svg += "<clipPath id=\"plot" + std::to_string(t.device) + "\"><rect x=\"" + num(f.left) + "\" y=\"" + num(f.top - 2) +
         "\" width=\"" + num(plot_w + 2) + "\" height=\"" + num(plot_h + 3) + "\"/></clipPath>\n";
  svg += "<g clip-path=\"url(#plot" + std::to_string(t.device) + ")\">\n";
  const bool show_peak = t.peak && t.peak->allocated_bytes > 0;
  // The legend lists every area: sites it has no room for are drawn as part of "other".
  const double row = 17;
  size_t legend_lines = 3 + (show_peak ? 1 : 0) + (t.ooms.empty() ? 0 : 1) + (t.iteration_starts.empty() ? 0 : 1);
  const double sites_top = f.top + 4 + double(legend_lines) * row + 8 + row;
  const size_t site_rows = static_cast<size_t>(std::max(0.0, (f.bottom + 30 - sites_top) / row + 1));
  const size_t shown = sites ? std::min(t.sites.size(), site_rows > 1 ? site_rows - 1 : 0) : 0;
  // Column k < shown is site k; column `shown` is everything else.
  auto area_value = [&](size_t i, size_t k) {
    if (k < shown) return t.site_value(i, k);
    uint64_t v = 0;
    for (size_t c = shown; c < t.site_columns(); ++c) v += t.site_value(i, c);
    return v;
  };
  if (sites && !t.points.empty()) {
    std::vector<double> lower(t.points.size(), 0), upper(t.points.size(), 0);
    for (size_t k = 0; k <= shown; ++k) {
      for (size_t i = 0; i < t.points.size(); ++i) upper[i] = lower[i] + double(area_value(i, k));
      std::vector<double> yu(upper.size()), yl(lower.size());
      for (size_t i = 0; i < upper.size(); ++i) yu[i] = f.y(upper[i]), yl[i] = f.y(lower[i]);
      // Upper edge forwards, lower edge backwards.
      std::string d = step_path(xs, yu, x_end);
      std::string pen_x = num(x_end);
      for (size_t i = xs.size(); i-- > 0;) {
        d += "V" + num(yl[i]);
        if (std::string nx = num(xs[i]); nx != pen_x) d += "H" + nx, pen_x = nx;
      }
      d += "Z";
      const char* fill = k == shown ? kOtherFill : kSiteFill[k % std::size(kSiteFill)];
      std::string name = k == shown ? std::string("other sites") : t.sites[k].site;
      svg += "<path d=\"" + d + "\" fill=\"" + fill + "\" stroke=\"none\"><title>" + xml_escape(name) +
             "</title></path>\n";
      lower = upper;
    }
  }
  Placer placer({f.left + 2, f.top + 2, f.right - 2, f.bottom - 10});
  auto series = [&](const LineStyle& s, uint64_t analysis::TimelinePoint::*field) {
    for (size_t i = 0; i < t.points.size(); ++i) {
      ys[i] = f.y(double(t.points[i].*field));
      if (i > 0) placer.line(xs[i - 1], ys[i - 1], xs[i], ys[i - 1]), placer.line(xs[i], ys[i - 1], xs[i], ys[i]);
    }
    placer.line(xs.back(), ys.back(), x_end, ys.back());
    svg += "<path d=\"" + step_path(xs, ys, x_end) + "\" fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"" +
           num(s.width) + "\"" + dash_attr(s) + " stroke-linejoin=\"round\"><title>" + s.name + "</title></path>\n";
    if (num(xs.front()) == num(x_end))  // a single instant: a path of no length shows nothing
      svg += "<circle cx=\"" + num(x_end) + "\" cy=\"" + num(ys.back()) + "\" r=\"3\" fill=\"" + s.color + "\"/>\n";
  };
  if (!t.points.empty()) {
    series(kReserved, &analysis::TimelinePoint::reserved);
    series(kActive, &analysis::TimelinePoint::active);
    series(kAllocated, &analysis::TimelinePoint::allocated);
  }
  svg += "</g>\n";

  // ---- axes ---------------------------------------------------------------------------------
  svg += "<path d=\"M" + num(f.left) + " " + num(f.top) + "V" + num(f.bottom) + "H" + num(f.right) +
         "\" fill=\"none\" stroke=\"" + kText + "\" stroke-width=\"1\"/>\n";

  // ---- markers ------------------------------------------------------------------------------
  for (const auto& b : t.iteration_starts) {
    double x = f.x(x_value(t, b.event_index, b.time_us, sh));
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.bottom - 4) + "\" x2=\"" + num(x) + "\" y2=\"" +
           num(f.bottom + 6) + "\" stroke=\"" + kIteration + "\" stroke-width=\"1.5\"/>\n";
  }
  const double label_size = 11.5, label_h = 17;
  // The peak: a dot on the allocated line, and its label next to it.
  std::string peak_text;
  double px = 0, py = 0;
  if (show_peak) {
    const auto& p = *t.peak;
    px = f.x(x_value(t, p.event_index, p.time_us, sh));
    py = f.y(double(p.allocated_bytes));
    placer.block({px - 5, py - 5, px + 5, py + 5});
    peak_text = "peak " + human_bytes(p.allocated_bytes) + " at " + when(t, p.event_index, p.time_us, sh);
  }
  // OOMs: a red line across the plot; the first few get a label at the top.
  size_t labelled = 0;
  for (const auto& oom : t.ooms) {
    double x = f.x(x_value(t, oom.event_index, oom.time_us, sh));
    svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(f.top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(f.bottom) +
           "\" stroke=\"" + kOom + "\" stroke-width=\"1.5\"><title>OOM at " +
           xml_escape(when(t, oom.event_index, oom.time_us, sh)) + "</title></line>\n";
    placer.line(x, f.top, x, f.bottom);
  }
  for (const auto& oom : t.ooms) {
    if (labelled++ == 3) break;
    double x = f.x(x_value(t, oom.event_index, oom.time_us, sh));
    std::string text = "OOM: " + human_bytes(oom.requested_bytes) + " requested";
    if (oom.device_free_bytes) text += ", " + human_bytes(oom.device_free_bytes) + " free on device";
    text += " (" + when(t, oom.event_index, oom.time_us, sh) + ")";
    double w = text_width(text, label_size) + 8;
    std::vector<Rect> cand;
    for (double dy : {0.0, label_h + 3, 2 * (label_h + 3), 3 * (label_h + 3)}) {
      cand.push_back({x - w - 4, f.top + 4 + dy, x - 4, f.top + 4 + dy + label_h});
      cand.push_back({x + 4, f.top + 4 + dy, x + 4 + w, f.top + 4 + dy + label_h});
    }
    boxed_label(svg, placer.place(cand), text, kOom, label_size);
  }
  if (show_peak) {
    double w = text_width(peak_text, label_size, true) + 8;
    // Beside the dot first, then further above or below it (with a leader line).
    std::vector<Rect> cand;
    for (double dy : {6.0, 28.0, 50.0, 75.0, 100.0, 130.0}) {
      cand.push_back({px + 8, py - dy - label_h, px + 8 + w, py - dy});  // above right
      cand.push_back({px - 8 - w, py - dy - label_h, px - 8, py - dy});  // above left
      cand.push_back({px + 8, py + dy, px + 8 + w, py + dy + label_h});  // below right
      cand.push_back({px - 8 - w, py + dy, px - 8, py + dy + label_h});  // below left
    }
    Rect r = placer.place(cand);
    // A leader line when the label had to move away from the dot.
    double lx = std::clamp(px, r.x0, r.x1), ly = std::clamp(py, r.y0, r.y1);
    if (std::hypot(lx - px, ly - py) > 12)
      svg += "<line x1=\"" + num(px) + "\" y1=\"" + num(py) + "\" x2=\"" + num(lx) + "\" y2=\"" + num(ly) +
             "\" stroke=\"" + kAllocated.color + "\" stroke-width=\"0.8\"/>\n";
    boxed_label(svg, r, peak_text, kAllocated.color, label_size, true);
    svg += "<circle cx=\"" + num(px) + "\" cy=\"" + num(py) + "\" r=\"4\" fill=\"" + kAllocated.color +
           "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n";
  }

  // ---- legend -------------------------------------------------------------------------------
  double lx = W - legend_w - 4, ly = f.top + 4;
  auto line_entry = [&](const LineStyle& s, const std::string& label) {
    svg += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 26) + "\" y2=\"" + num(ly) +
           "\" stroke=\"" + s.color + "\" stroke-width=\"" + num(s.width + 0.4) + "\"" + dash_attr(s) + "/>\n";
    svg += "<text x=\"" + num(lx + 33) + "\" y=\"" + num(ly + 4) + "\" font-size=\"11.5\" fill=\"" + kText + "\">" +
           xml_escape(label) + "</text>\n";
    ly += row;
  };
  line_entry(kReserved, "reserved");
  line_entry(kActive, "active");
  line_entry(kAllocated, "allocated");
  if (show_peak) {
    svg += "<circle cx=\"" + num(lx + 13) + "\" cy=\"" + num(ly) + "\" r=\"4\" fill=\"" + kAllocated.color +
           "\" stroke=\"#ffffff\" stroke-width=\"1.5\"/>\n";
    svg += "<text x=\"" + num(lx + 33) + "\" y=\"" + num(ly + 4) + "\" font-size=\"11.5\" fill=\"" + kText +
           "\">peak allocated</text>\n";
    ly += row;
  }
  if (!t.ooms.empty()) {
    svg += "<line x1=\"" + num(lx + 13) + "\" y1=\"" + num(ly - 7) + "\" x2=\"" + num(lx + 13) + "\" y2=\"" +
           num(ly + 7) + "\" stroke=\"" + kOom + "\" stroke-width=\"1.5\"/>\n";
    svg += "<text x=\"" + num(lx + 33) + "\" y=\"" + num(ly + 4) + "\" font-size=\"11.5\" fill=\"" + kText +
           "\">out of memory</text>\n";
    ly += row;
  }
  if (!t.iteration_starts.empty()) {
    svg += "<line x1=\"" + num(lx + 13) + "\" y1=\"" + num(ly - 5) + "\" x2=\"" + num(lx + 13) + "\" y2=\"" +
           num(ly + 5) + "\" stroke=\"" + kIteration + "\" stroke-width=\"1.5\"/>\n";
    svg += "<text x=\"" + num(lx + 33) + "\" y=\"" + num(ly + 4) + "\" font-size=\"11.5\" fill=\"" + kText +
           "\">iteration start</text>\n";
    ly += row;
  }
  if (sites) {
    ly += 8;
    svg += "<text x=\"" + num(lx) + "\" y=\"" + num(ly + 4) + "\" font-size=\"11.5\" font-weight=\"bold\" fill=\"" +
           kText + "\">live bytes by site (own peak)</text>\n";
    ly += row;
    const double mono = 10.5;
    const double bytes_w = 62;
    size_t chars = static_cast<size_t>(std::max(8.0, (legend_w - 22 - bytes_w - 6) / (mono * 0.6)));
    // Top of the stack first, so the legend reads in the order of the areas.
    for (size_t j = 0; j <= shown; ++j) {
      size_t k = shown - j;
      bool other = k == shown;
      const char* fill = other ? kOtherFill : kSiteFill[k % std::size(kSiteFill)];
      std::string name =
          other ? (shown < t.sites.size() ? "other sites (" + std::to_string(t.sites.size() - shown) + " of the top " +
                                                std::to_string(t.sites.size()) + " among them)"
                                          : std::string("other sites"))
                : t.sites[k].site;
      svg += "<g><title>" + xml_escape(name) +
             (other ? std::string() : " (peak " + human_bytes(t.sites[k].peak_live_bytes) + " live)") + "</title>";
      svg += "<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 6) + "\" width=\"12\" height=\"12\" fill=\"" + fill +
             "\" stroke=\"#999999\" stroke-width=\"0.5\"/>";
      svg += "<text x=\"" + num(lx + 18) + "\" y=\"" + num(ly + 4) + "\" font-size=\"" + num(mono) +
             "\" font-family=\"monospace\" fill=\"" + kText + "\">" +
             xml_escape(other ? std::string("other sites") : shorten_site(name, chars)) + "</text>";
      if (!other)
        svg += "<text x=\"" + num(W - 8) + "\" y=\"" + num(ly + 4) +
               "\" font-size=\"10.5\" text-anchor=\"end\" fill=\"" + kMuted + "\">" +
               xml_escape(human_bytes(t.sites[k].peak_live_bytes)) + "</text>";
      else if (shown < t.sites.size())
        svg += "<text x=\"" + num(W - 8) + "\" y=\"" + num(ly + 4) +
               "\" font-size=\"10.5\" text-anchor=\"end\" fill=\"" + kMuted + "\">+" +
               std::to_string(t.sites.size() - shown) + " listed in the CSV</text>";
      svg += "</g>\n";
      ly += row;
    }
  }
  svg += "</g>\n";
}

}  // namespace

void write_timeline_svg(std::ostream& out, const TimelineView& view, const SvgOptions& o) {
  const auto& tls = *view.timelines;
  Shared sh;
  sh.origin_us = view.origin_us;
  for (const auto& t : tls)
    if (t.events) sh.max_index = std::max(sh.max_index, double(t.events - 1));
  for (const auto& t : tls)
    if (t.timed && t.last_time_us && sh.origin_us)
      sh.time_span_us = std::max(sh.time_span_us, double(detail::span_us(*sh.origin_us, *t.last_time_us)));

  const double title_h = 50;
  const double total_h = title_h + double(tls.size()) * o.panel_height + 6;
  std::string name = view.input ? view.input->path : std::string();
  if (name == "-") name = "<stdin>";
  std::string base = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);

  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" + std::to_string(o.width) +
         "\" height=\"" + num(total_h) + "\" viewBox=\"0 0 " + std::to_string(o.width) + " " + num(total_h) +
         "\" font-family=\"Helvetica, Arial, 'DejaVu Sans', sans-serif\">\n";
  svg += "<title>memsnap timeline: " + xml_escape(base) + "</title>\n";
  svg += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg += "<text x=\"14\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"" + std::string(kText) + "\">" +
         xml_escape(base) + "</text>\n";
  std::string sub = "GPU memory over time, " + std::to_string(tls.size()) + (tls.size() == 1 ? " device" : " devices") +
                    "  ·  memsnap timeline";
  svg +=
      "<text x=\"14\" y=\"41\" font-size=\"11\" fill=\"" + std::string(kMuted) + "\">" + xml_escape(sub) + "</text>\n";
  for (size_t k = 0; k < tls.size(); ++k) write_panel(svg, tls[k], sh, title_h + double(k) * o.panel_height, o);
  svg += "</svg>\n";
  out << svg;
}

}  // namespace memsnap::report
