// Frame names for people, and snapshot strings made safe for terminals and text formats.
#include "frame_label.hpp"

#include <cstdio>
#include <vector>

#include "memsnap/util/utf8.hpp"

namespace memsnap::report::detail {

namespace {

// Characters a terminal acts on or that reorder the text around them ("Trojan Source").
bool hidden_control(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Top-level "::" separators of a C++ name (outside <...> and (...)).
std::vector<size_t> scope_separators(std::string_view s) {
  std::vector<size_t> out;
  int depth = 0;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    char c = s[i];
    if (c == '<' || c == '(')
      ++depth;
    else if ((c == '>' || c == ')') && depth > 0)
      --depth;
    else if (depth == 0 && c == ':' && s[i + 1] == ':') {
      out.push_back(i);
      ++i;
    }
  }
  return out;
}

}  // namespace

size_t text_width(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string printable(std::string_view s, size_t max) {
  std::string out;
  out.reserve(std::min(s.size(), max) + 8);
  size_t width = 0;
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    std::string_view piece;
    size_t step = 1;
    if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      piece = buf;
    } else if (c < 0x80) {
      piece = s.substr(i, 1);
    } else if (size_t len = utf8::sequence(s, i); len == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      piece = buf;
    } else {
      step = len;
      char32_t cp = utf8::decode(s, i, len);
      if (hidden_control(cp)) {
        std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
        piece = buf;
      } else {
        piece = s.substr(i, len);
      }
    }
    size_t w = text_width(piece);
    if (width + w > max || (width + w == max && i + step < s.size())) {
      out += "…";
      return out;
    }
    out += piece;
    width += w;
    i += step;
  }
  return out;
}

std::string_view display_path(std::string_view file) {
  for (std::string_view marker : {"site-packages/", "site-packages\\", "dist-packages/", "dist-packages\\"}) {
    size_t at = file.rfind(marker);
    if (at != std::string_view::npos && at + marker.size() < file.size()) return file.substr(at + marker.size());
  }
  // .../lib/python3.11/runpy.py -> runpy.py
  for (size_t at = file.find("lib/python"); at != std::string_view::npos; at = file.find("lib/python", at + 1)) {
    size_t j = at + 10;
    while (j < file.size() && ((file[j] >= '0' && file[j] <= '9') || file[j] == '.')) ++j;
    if (j > at + 10 && j < file.size() && file[j] == '/' && j + 1 < file.size()) return file.substr(j + 1);
  }
  return file;
}

std::string_view base_name(std::string_view file) {
  size_t slash = file.find_last_of("/\\");
  return slash == std::string_view::npos ? file : file.substr(slash + 1);
}

namespace {

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Without the compiler's clone marks: " [clone .isra.0]", ".constprop.0", ".llvm.1234", ".part.1", ".cold".
std::string_view strip_clones(std::string_view s) {
  for (bool again = true; again;) {
    again = false;
    s = trim(s);
    if (ends_with(s, "]")) {
      if (size_t at = s.rfind(" [clone "); at != std::string_view::npos) {
        s = s.substr(0, at);
        again = true;
        continue;
      }
    }
    size_t dot = s.rfind('.');
    if (dot == std::string_view::npos || dot == 0) break;
    std::string_view last = s.substr(dot + 1), word = last;
    size_t cut = dot;
    if (!last.empty() && last.find_first_not_of("0123456789") == std::string_view::npos) {
      size_t dot2 = s.rfind('.', dot - 1);
      if (dot2 == std::string_view::npos) break;
      word = s.substr(dot2 + 1, dot - dot2 - 1);
      cut = dot2;
    }
    for (std::string_view w : {"constprop", "isra", "part", "llvm", "lto_priv", "cold", "localalias"})
      if (word == w) {
        s = s.substr(0, cut);
        again = true;
        break;
      }
  }
  return s;
}

// Where the symbol of an operator's name ends; `i` is just after "operator".
size_t operator_end(std::string_view s, size_t i) {
  if (s.substr(i, 2) == "()" || s.substr(i, 2) == "[]") return i + 2;
  size_t j = i;
  while (j < s.size() && j < i + 3 && std::string_view("<>=!+-*/%^&|~,").find(s[j]) != std::string_view::npos) ++j;
  return j;
}

// The bracket that closes the one opening at s[i] ('<', '(' or '{'), or npos. A '>'
// that closes nothing open (a "->" or a comparison) is not a bracket.
size_t matching(std::string_view s, size_t i) {
  std::string stack;
  for (size_t j = i; j < s.size(); ++j) {
    char c = s[j];
    if (c == '<')
      stack += '>';
    else if (c == '(')
      stack += ')';
    else if (c == '{')
      stack += '}';
    else if (c == '>' || c == ')' || c == '}') {
      if (c == '>' && (stack.empty() || stack.back() != '>')) continue;
      while (c != '>' && !stack.empty() && stack.back() == '>') stack.pop_back();  // a '<' that was "less than"
      if (stack.empty() || stack.back() != c) return std::string_view::npos;
      stack.pop_back();
      if (stack.empty()) return j;
    }
  }
  return std::string_view::npos;
}

}  // namespace

std::string short_function(std::string_view name) {
  std::string_view s = strip_clones(trim(name));
  // Trailing qualifiers, then the argument list: the parentheses that close the name.
  for (bool again = true; again;) {
    again = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"})
      if (ends_with(s, q)) {
        s.remove_suffix(q.size());
        again = true;
      }
  }
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')')
        ++depth;
      else if (s[i] == '(' && --depth == 0) {
        if (i > 0 && !ends_with(s.substr(0, i), "operator")) s = s.substr(0, i);
        break;
      }
    }
  }
  // Long bracketed groups become <…> / (…) ("(anonymous namespace)" and {lambda…} stay);
  // the return type, before the last top-level space, goes.
  std::string out;
  size_t name_start = 0;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 8, "operator") == 0 && (i == 0 || !ident_char(s[i - 1])) &&
        (i + 8 == s.size() || !ident_char(s[i + 8]))) {
      size_t e = operator_end(s, i + 8);
      bool word = e == i + 8;  // "operator new", a conversion: the space that follows is the name's
      out.append(s.substr(i, e - i));
      i = e;
      if (word && i < s.size() && s[i] == ' ') out += s[i++];
      continue;
    }
    char c = s[i];
    if (c == '<' || c == '(' || c == '{') {
      size_t j = matching(s, i);
      if (j == std::string_view::npos) return std::string(s);  // unbalanced: leave it to the caller's cap
      std::string_view inner = s.substr(i + 1, j - i - 1);
      if (c == '{' || inner == "anonymous namespace" || text_width(inner) <= 16)
        out.append(s.substr(i, j - i + 1));
      else
        out += std::string(1, c) + "…" + s[j];
      i = j + 1;
      continue;
    }
    if (c == ' ') name_start = out.size() + 1;
    out += c;
    ++i;
  }
  out.erase(0, std::min(name_start, out.size()));
  return out.empty() ? std::string(s) : out;
}

std::string fit_function(const std::string& name, size_t width) {
  if (text_width(name) <= width) return name;
  std::vector<size_t> seps = scope_separators(name);
  for (size_t sep : seps) {
    std::string candidate = "…" + name.substr(sep + 2);
    if (text_width(candidate) <= width) return candidate;
  }
  return seps.empty() ? name : name.substr(seps.back() + 2);
}

// Labels are shown at most 1,000 columns wide: of a longer name they read the first 8 KiB, of
// a longer path the last 8 KiB (the file's own name), so that a label costs no more however
// long the strings of the snapshot (issue 38: thousands of frames of one 1 MiB file name).
constexpr size_t kLabelBytes = 8192;

namespace {

bool has_location(const analysis::ProfileFrame& f) {
  return f.kind != analysis::ProfileFrameKind::Synthetic && !f.file.empty() && f.file != "??";
}

// The file as a location shows it (the last kLabelBytes of a longer one, after "…").
std::string shown_file(std::string_view file) {
  std::string loc;
  if (file.size() > kLabelBytes) {
    file.remove_prefix(file.size() - kLabelBytes);
    while (!file.empty() && (static_cast<unsigned char>(file.front()) & 0xC0) == 0x80) file.remove_prefix(1);
    loc = "…";
  }
  loc += display_path(file);
  return loc;
}

std::string with_line(std::string loc, const analysis::ProfileFrame& f) {
  if (f.line && *f.line != 0) loc += ":" + std::to_string(*f.line);
  return loc;
}

std::string label_of(const analysis::ProfileFrame& f, const std::string& loc) {
  std::string fn(f.function.empty() ? std::string_view("??") : f.function.substr(0, kLabelBytes));
  return loc.empty() ? fn : fn + " (" + loc + ")";
}

}  // namespace

std::string frame_location(const analysis::ProfileFrame& f) {
  return has_location(f) ? with_line(shown_file(f.file), f) : "";
}

std::string frame_label(const analysis::ProfileFrame& f) {
  if (f.kind == analysis::ProfileFrameKind::Synthetic) return std::string(f.function);
  return label_of(f, frame_location(f));
}

const std::string& FrameLabels::of(const analysis::ProfileFrame& f) {
  Key k{f.function.data(), f.function.size(), f.file.data(), f.file.size(), f.line, f.kind};
  auto [it, inserted] = labels_.try_emplace(k);
  if (!inserted) return it->second;
  std::string label;
  if (f.kind == analysis::ProfileFrameKind::Synthetic) {
    label = f.function;
  } else if (!has_location(f)) {
    label = label_of(f, "");
  } else {
    auto [file, new_file] = files_.try_emplace(std::pair(f.file.data(), f.file.size()));
    if (new_file) file->second = shown_file(f.file);
    label = label_of(f, with_line(file->second, f));
  }
  it->second = printable(label, width_);
  return it->second;
}

std::string middle_cut(const std::string& s, size_t width) {
  size_t w = text_width(s);
  if (w <= width || width < 5) return s;
  // Code point boundaries of the kept start and end.
  size_t tail = width * 3 / 5, head = width - 1 - tail;
  auto prefix_bytes = [&](size_t points) {
    size_t i = 0;
    for (size_t n = 0; i < s.size() && n < points; ++n) do
        ++i;
      while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
    return i;
  };
  return s.substr(0, prefix_bytes(head)) + "…" + s.substr(prefix_bytes(w - tail));
}

FitText fit_text(const analysis::ProfileFrame& f) {
  FitText t;
  t.name = printable(
      f.kind == analysis::ProfileFrameKind::Native ? short_function(f.function) : std::string_view(f.function), 200);
  if (t.name.empty()) t.name = "??";
  t.loc = printable(frame_location(f), 200);
  t.line = f.line.has_value();
  return t;
}

std::string fit_frame(const analysis::ProfileFrame& f, size_t width, bool keep_file) {
  return fit_frame(fit_text(f), width, keep_file);
}

std::string fit_frame(const FitText& t, size_t width, bool keep_file) {
  std::string name = t.name, loc = t.loc;
  size_t nw = text_width(name);
  if (keep_file && !loc.empty() && text_width(loc) + nw + 3 > width) {
    // The file name and line always: "forward (model.py:93)", however deep the line sits.
    std::string base(base_name(loc));
    if (nw + text_width(base) + 3 > width) name = fit_function(name, std::max<size_t>(width / 2, 8));
    // The file name gets what the function leaves, at least 10 columns; the function the rest, at least 6.
    size_t base_room = std::max<size_t>(10, width > text_width(name) + 3 ? width - text_width(name) - 3 : 0);
    base = middle_cut(base, base_room);
    size_t name_room = std::max<size_t>(6, width > text_width(base) + 3 ? width - text_width(base) - 3 : 0);
    return middle_cut(name, name_room) + " (" + base + ")";
  }
  if (loc.empty() || nw + 4 > width) return fit_function(name, width);
  size_t room = width - nw - 3;  // " (" and ")"
  if (text_width(loc) > room) {
    // Directories go first ("…/modules/linear.py:114"), then the start of the file name.
    std::string shorter;
    for (size_t slash = loc.find_first_of("/\\"); slash != std::string::npos;
         slash = loc.find_first_of("/\\", slash + 1)) {
      std::string candidate = "…" + loc.substr(slash);
      if (text_width(candidate) <= room) {
        shorter = candidate;
        break;
      }
    }
    // Then the file name alone; a file name is never cut: without room for it the location goes.
    std::string base(base_name(loc));
    if (shorter.empty() && text_width(base) <= room) shorter = base;
    // Last, the line alone ("…:118"): two calls from one function stay apart.
    size_t colon = loc.rfind(':');
    if (shorter.empty() && colon != std::string::npos && t.line && text_width(loc) - colon + 1 <= room)
      shorter = "…" + loc.substr(colon);
    if (shorter.empty()) return name;
    loc = shorter;
  }
  return name + " (" + loc + ")";
}

}  // namespace memsnap::report::detail
