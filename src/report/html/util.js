// memsnap report: the page's script, hand-written, no framework, no network (embedded; see
// html.hpp). It reads the JSON in #memsnap-data and builds the page; every string from the
// snapshot enters the document as text (textContent) or is drawn on a canvas, never as markup.
//
// The script is the modules beside this file, concatenated in the order CMakeLists.txt lists
// them (MEMSNAP_HTML_JS) inside one function (embed.cmake): they share its scope, this module's
// helpers and data first, page.js, which draws the page, last.

var DATA = null;
var app = document.getElementById('app');
var KIND_NAMES = { u: 'your code', t: 'torch', p: 'Python', n: 'C++', s: '' };
var MAP_CLASSES = ['allocated', 'pinning', 'pending', 'free', 'stranded', 'private_free'];
var MAP_NAMES = ['allocated', 'allocated, pins stranded memory', 'pending free', 'free (cached)',
  'free, stranded by live blocks', 'free, private pool'];
var MAP_COLORS = ['#3b78d8', '#7b3fb8', '#f0a030', '#e4e8ee', '#e0584f', '#9fd3a6'];

// ---- small helpers ----------------------------------------------------------------

function el(tag, cls, children) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (children !== undefined) append(e, children);
  return e;
}
function append(e, children) {
  if (!Array.isArray(children)) children = [children];
  children.forEach(function (c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { append(e, c); return; }
    e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  });
  return e;
}
function text(tag, cls, s) { return el(tag, cls, String(s)); }
// Redraws `what` whenever its canvas changes size (first when it is laid out).
function redrawOnResize(canvas, what) {
  var last = -1;
  if (window.ResizeObserver) {
    new ResizeObserver(function () {
      if (canvas.clientWidth !== last) { last = canvas.clientWidth; what.draw(); }
    }).observe(canvas);
  } else {
    window.addEventListener('resize', function () { what.draw(); });
  }
}

// As memsnap's human_bytes: two decimals of binary units, ties to even (as printf).
function humanBytes(n) {
  if (n === null || n === undefined) return 'n/a';
  if (n < 1024) return String(n) + ' B';
  var units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  var big = BigInt(Math.round(n)), div = 1024n, u = 0;
  while (big >= div * 1024n && u < 5) { div *= 1024n; u++; }
  var scaled = big * 100n, q = scaled / div, r = scaled % div;
  if (2n * r > div || (2n * r === div && q % 2n === 1n)) q += 1n;
  var whole = q / 100n, frac = q % 100n;
  return whole.toString() + '.' + (frac < 10n ? '0' : '') + frac.toString() + ' ' + units[u];
}
function commas(n) {
  var s = String(n), neg = s.charAt(0) === '-';
  if (neg) s = s.slice(1);
  var out = '';
  while (s.length > 3) { out = ',' + s.slice(-3) + out; s = s.slice(0, -3); }
  return (neg ? '-' : '') + s + out;
}
function signedBytes(n) { return (n > 0 ? '+' : n < 0 ? '-' : '') + humanBytes(Math.abs(n)); }
// As memsnap's duration(): "850 us", "12.3 ms", "4.56 s", "3 min 12 s".
function duration(us) {
  if (us < 0) return '-' + duration(-us);
  if (us < 1000) return Math.round(us) + ' us';
  if (us < 1e6) return (us / 1e3).toFixed(1) + ' ms';
  if (us < 6e7) return (us / 1e6).toFixed(2) + ' s';
  if (us < 3.6e9) return Math.floor(us / 6e7) + ' min ' + Math.floor(us / 1e6) % 60 + ' s';
  return Math.floor(us / 3.6e9) + ' h ' + Math.floor(us / 6e7) % 60 + ' min';
}
function plusTime(t) { return t === null || t === undefined ? '' : '+' + duration(t); }

// A figure from the analysis: the exact value in data-value, its JSON path in data-json.
function num(value, path, kind) {
  var s = el('span', 'num');
  if (value === null || value === undefined) { s.textContent = 'n/a'; return s; }
  if (kind === 'count') s.textContent = commas(value);
  else { s.textContent = humanBytes(value); s.title = commas(value) + ' bytes'; }
  s.dataset.value = String(value);
  if (path) s.dataset.json = path;
  return s;
}
function figure(label, valueNode, sub) {
  return el('div', 'figure', [text('div', 'k', label), el('div', 'v', valueNode), sub ? el('div', 'sub', sub) : null]);
}
function tooltipAt(tip, container, x, y) {
  tip.style.display = 'block';
  var w = tip.offsetWidth, h = tip.offsetHeight, cw = container.clientWidth;
  var left = x + 16 + w > cw ? Math.max(0, x - 16 - w) : x + 16;
  tip.style.left = left + 'px';
  tip.style.top = Math.max(0, y - h - 8 < 0 ? y + 16 : y - h - 8) + 'px';
}
function buttons(names, current, onPick) {
  var bar = el('span');
  var list = [];
  names.forEach(function (n) {
    var b = text('button', n.key === current ? 'on' : '', n.label);
    b.dataset.key = n.key;
    b.addEventListener('click', function () {
      list.forEach(function (x) { x.classList.toggle('on', x === b); });
      onPick(n.key);
    });
    list.push(b);
    bar.appendChild(b);
  });
  return bar;
}

// ---- stacks -----------------------------------------------------------------------

// Frames of stack `ref` of a file, innermost first: {text, kind}.
function stackFrames(file, ref) {
  var out = [];
  for (var guard = 0; ref !== null && ref !== undefined && ref >= 0 && guard < 10000; guard++) {
    var node = file.stacks[ref];
    var fr = file.frames[node[0]];
    out.push({ text: fr[0], kind: fr[1] });
    ref = node[1];
  }
  return out;
}
function siteOfFrames(frames) {
  for (var i = 0; i < frames.length; i++) if (frames[i].kind === 'u') return frames[i].text;
  return frames.length ? frames[0].text : '<no stack recorded>';
}
// The user's frames first (innermost first), then the others in stack order.
function stackList(frames, max) {
  var ul = el('ul', 'stack');
  if (!frames.length) { ul.appendChild(text('li', 'sep', 'no stack recorded')); return ul; }
  var user = frames.filter(function (f) { return f.kind === 'u'; });
  var rest = frames.filter(function (f) { return f.kind !== 'u'; });
  var shown = 0, limit = max || 1e9;
  user.forEach(function (f) { if (shown++ < limit) ul.appendChild(text('li', 'u', f.text)); });
  if (rest.length && shown < limit) {
    ul.appendChild(text('li', 'sep', user.length ? 'other frames (torch, Python, C++), innermost first:'
      : 'frames, innermost first:'));
    rest.forEach(function (f) { if (shown++ < limit) ul.appendChild(text('li', f.kind, f.text)); });
  }
  if (shown > limit) ul.appendChild(text('li', 'sep', '... ' + (shown - limit) + ' more frames'));
  return ul;
}
function stringStack(strings) {
  return stackList(strings.map(function (s) { return { text: s, kind: 'u' }; }));
}

// A section of the page, as the navigation links to it.
function section(id, title) {
  var sec = el('section', 'part');
  sec.id = id;
  sec.appendChild(text('h2', '', title));
  return sec;
}

// ---- the page's data: files, devices, recorded states ----------------------------

function fileLabel(fi) {
  if (DATA.files.length === 1) return '';
  return (fi === 0 ? 'before: ' : 'after: ') + DATA.files[fi].path;
}
function devicesOf(file) {
  return file.analysis.devices.map(function (d, k) { return { json: d, page: file.devices[k], index: k }; });
}
function moments(d) { return d.page && d.page.states ? d.page.states : []; }
function stateByMoment(d, m) {
  var st = moments(d), found = null;
  st.forEach(function (s) { if (s.moment === m) found = s; });  // the last: the last OOM
  return found;
}
