// memsnap report: the page's one script (embedded; see html.hpp). Hand-written, no framework,
// no network. It reads the JSON in #memsnap-data and builds the page; every string from the
// snapshot enters the document as text (textContent) or is drawn on a canvas, never as markup.
(function () {
  'use strict';

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

  // ---- a zoomable plot of step series -------------------------------------------------

  // series: [{xs, ys, color, fill, width, dash, name}], all xs ascending.
  function Plot(container, opts) {
    var self = this;
    this.opts = opts;
    this.series = opts.series;
    this.marks = opts.marks || [];
    this.canvas = el('canvas');
    this.tip = el('div', 'tip');
    this.box = el('div', 'chart', [this.canvas, this.tip]);
    container.appendChild(this.box);
    this.height = opts.height || 250;
    this.m = { l: 74, r: 14, t: 14, b: 30 };
    var lo = Infinity, hi = -Infinity;
    this.series.forEach(function (s) {
      if (s.xs.length) { lo = Math.min(lo, s.xs[0]); hi = Math.max(hi, s.xs[s.xs.length - 1]); }
    });
    if (!isFinite(lo)) { lo = 0; hi = 1; }
    if (hi <= lo) hi = lo + 1;
    this.full = [lo, hi];
    this.view = [lo, hi];
    this.hoverX = null;
    this.selected = null;
    var drag = null;
    this.canvas.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var x = self.pxToX(self.localX(ev));
      self.zoom(x, ev.deltaY < 0 ? 1 / 1.3 : 1.3);
    }, { passive: false });
    this.canvas.addEventListener('mousedown', function (ev) {
      drag = { px: ev.clientX, view: self.view.slice(), moved: false };
    });
    window.addEventListener('mouseup', function (ev) {
      if (!drag) return;
      var d = drag;
      drag = null;
      if (!d.moved && ev.target === self.canvas && self.opts.onClick) self.opts.onClick(self.pxToX(self.localX(ev)));
    });
    this.canvas.addEventListener('mousemove', function (ev) {
      var lx = self.localX(ev), ly = ev.clientY - self.canvas.getBoundingClientRect().top;
      if (drag && Math.abs(ev.clientX - drag.px) > 3) {
        drag.moved = true;
        var span = drag.view[1] - drag.view[0];
        var dx = (ev.clientX - drag.px) / self.plotW() * span;
        self.setView(drag.view[0] - dx, drag.view[1] - dx);
        self.tip.style.display = 'none';
        return;
      }
      self.hoverX = self.pxToX(lx);
      self.draw();
      var content = self.opts.onHover ? self.opts.onHover(self.hoverX) : null;
      if (content) {
        self.tip.textContent = '';
        self.tip.appendChild(content);
        tooltipAt(self.tip, self.box, lx, ly);
      } else {
        self.tip.style.display = 'none';
      }
    });
    this.canvas.addEventListener('mouseleave', function () {
      self.hoverX = null;
      self.tip.style.display = 'none';
      self.draw();
    });
    this.canvas.addEventListener('dblclick', function () { self.reset(); });
    redrawOnResize(this.canvas, this);
    this.draw();
  }
  Plot.prototype.localX = function (ev) { return ev.clientX - this.canvas.getBoundingClientRect().left; };
  // The canvas width as of the last draw (reading clientWidth each time would lay the page out).
  Plot.prototype.plotW = function () { return Math.max(10, (this.W || this.canvas.clientWidth || 1200) - this.m.l - this.m.r); };
  Plot.prototype.xToPx = function (x) {
    return this.m.l + (x - this.view[0]) / (this.view[1] - this.view[0]) * this.plotW();
  };
  Plot.prototype.pxToX = function (px) {
    return this.view[0] + (px - this.m.l) / this.plotW() * (this.view[1] - this.view[0]);
  };
  // Client coordinates of x (for people who script the page, and its tests).
  Plot.prototype.clientPoint = function (x) {
    var r = this.canvas.getBoundingClientRect();
    return { x: r.left + this.xToPx(x), y: r.top + this.m.t + (this.height - this.m.t - this.m.b) / 2 };
  };
  Plot.prototype.setView = function (a, b) {
    var span = Math.min(b - a, this.full[1] - this.full[0]);
    span = Math.max(span, (this.full[1] - this.full[0]) * 1e-7, 1e-9);
    if (a < this.full[0]) a = this.full[0];
    if (a + span > this.full[1]) a = this.full[1] - span;
    this.view = [a, a + span];
    this.draw();
  };
  Plot.prototype.zoom = function (x, factor) {
    var a = this.view[0], b = this.view[1];
    this.setView(x - (x - a) * factor, x + (b - x) * factor);
  };
  Plot.prototype.reset = function () { this.setView(this.full[0], this.full[1]); };
  function lowerBound(xs, x) {
    var lo = 0, hi = xs.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (xs[mid] < x) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function niceStep(span, count) {
    var raw = span / Math.max(1, count), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
  }
  function niceBytesStep(max, count) {
    var raw = max / Math.max(1, count), p = 1;
    while (p * 1024 <= raw) p *= 1024;
    var f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 4 ? 4 : f <= 8 ? 8 : f <= 16 ? 16 : f <= 32 ? 32 : f <= 64 ? 64
      : f <= 128 ? 128 : f <= 256 ? 256 : f <= 512 ? 512 : 1024) * p;
  }
  Plot.prototype.draw = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1;
    var W = c.clientWidth || 1200, H = this.height;
    this.W = W;
    if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
      c.width = Math.round(W * dpr);
      c.height = Math.round(H * dpr);
      c.style.height = H + 'px';
    }
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    var self = this, m = this.m, plotH = H - m.t - m.b;
    // The y scale follows the highest value in view; the drawn maximum is recorded.
    var ymax = 0, drawn = {};
    this.series.forEach(function (s) {
      var i0 = Math.max(0, lowerBound(s.xs, self.view[0]) - 1), i1 = Math.min(s.xs.length, lowerBound(s.xs, self.view[1]) + 1);
      var mx = null;
      for (var i = i0; i < i1; i++) if (mx === null || s.ys[i] > mx) mx = s.ys[i];
      if (mx !== null) { ymax = Math.max(ymax, mx); drawn[s.name] = mx; }
    });
    this.drawnMax = drawn;
    if (ymax <= 0) ymax = 1;
    var ystep = niceBytesStep(ymax, 4), ytop = Math.ceil(ymax * 1.04 / ystep) * ystep;
    var yToPx = function (y) { return m.t + plotH - y / ytop * plotH; };
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = '#5b6474';
    g.strokeStyle = '#e6eaf0';
    g.lineWidth = 1;
    g.textAlign = 'right';
    g.textBaseline = 'middle';
    for (var y = 0; y <= ytop + 1e-9; y += ystep) {
      var py = Math.round(yToPx(y)) + 0.5;
      g.beginPath(); g.moveTo(m.l, py); g.lineTo(W - m.r, py); g.stroke();
      g.fillText(humanBytes(y), m.l - 6, py);
    }
    var span = this.view[1] - this.view[0], xstep = niceStep(span, 8);
    g.textAlign = 'center';
    g.textBaseline = 'top';
    for (var x = Math.ceil(this.view[0] / xstep) * xstep; x <= this.view[1]; x += xstep) {
      var px = Math.round(this.xToPx(x)) + 0.5;
      g.beginPath(); g.moveTo(px, m.t); g.lineTo(px, m.t + plotH); g.stroke();
      if (px < W - m.r - 24) g.fillText(this.opts.xLabel(x, xstep), px, m.t + plotH + 6);
    }
    g.save();
    g.beginPath();
    g.rect(m.l, m.t - 4, W - m.l - m.r, plotH + 4);
    g.clip();
    // Marks of one style are one path; marks denser than one per four pixels are drawn as
    // short ticks at the top (a trace of thousands of iterations).
    var groups = {};
    this.marks.forEach(function (mk) {
      if (mk.x < self.view[0] || mk.x > self.view[1]) return;
      var key = [mk.color, mk.width || 1, (mk.dash || []).join(','), mk.tick ? 1 : 0].join('|');
      (groups[key] = groups[key] || { mk: mk, xs: [] }).xs.push(Math.round(self.xToPx(mk.x)) + 0.5);
    });
    Object.keys(groups).forEach(function (key) {
      var grp = groups[key], mk = grp.mk, dense = grp.xs.length > self.plotW() / 4;
      g.strokeStyle = mk.color;
      g.lineWidth = mk.width || 1;
      g.setLineDash(dense ? [] : mk.dash || []);
      g.beginPath();
      grp.xs.forEach(function (px) {
        g.moveTo(px, mk.tick ? m.t + plotH - 8 : m.t);
        g.lineTo(px, mk.tick || !dense ? m.t + plotH : m.t + 6);
      });
      g.stroke();
      g.setLineDash([]);
    });
    // Each series by pixel column: the first, lowest, highest and last value of the points
    // in it (so every column's extremes are drawn exactly), a value holding until the next.
    this.series.forEach(function (s) {
      var i0 = Math.max(0, lowerBound(s.xs, self.view[0]) - 1), i1 = Math.min(s.xs.length, lowerBound(s.xs, self.view[1]) + 1);
      if (i1 <= i0) return;
      var cols = [], c = null;
      for (var i = i0; i < i1; i++) {
        var px = Math.round(self.xToPx(s.xs[i])), y = s.ys[i];
        if (!c || c.px !== px) { c = { px: px, first: y, lo: y, hi: y, last: y }; cols.push(c); continue; }
        if (y < c.lo) c.lo = y;
        if (y > c.hi) c.hi = y;
        c.last = y;
      }
      var end = s.stepEnd !== undefined ? Math.round(self.xToPx(Math.min(s.stepEnd, self.view[1]))) : cols[cols.length - 1].px;
      var base = yToPx(0);
      if (s.fill) {
        g.fillStyle = s.fill;
        cols.forEach(function (col, k) {
          var next = k + 1 < cols.length ? cols[k + 1].px : end;
          g.fillRect(col.px, yToPx(col.hi), 1, base - yToPx(col.hi));
          if (next > col.px + 1) g.fillRect(col.px + 1, yToPx(col.last), next - col.px - 1, base - yToPx(col.last));
        });
      }
      g.beginPath();
      cols.forEach(function (col, k) {
        var x = col.px + 0.5;
        if (k === 0) g.moveTo(x, yToPx(col.first));
        else { g.lineTo(x, yToPx(cols[k - 1].last)); g.lineTo(x, yToPx(col.first)); }
        if (col.hi !== col.lo) { g.lineTo(x, yToPx(col.hi)); g.lineTo(x, yToPx(col.lo)); }
        g.lineTo(x, yToPx(col.last));
      });
      if (end > cols[cols.length - 1].px) g.lineTo(end + 0.5, yToPx(cols[cols.length - 1].last));
      g.strokeStyle = s.color;
      g.lineWidth = s.width || 1.5;
      g.setLineDash(s.dash || []);
      g.stroke();
      g.setLineDash([]);
    });
    // Labelled points (the peak) and labels of marks.
    g.textAlign = 'left';
    g.textBaseline = 'bottom';
    g.font = '600 11px system-ui, sans-serif';
    (this.opts.points || []).forEach(function (p) {
      if (p.x < self.view[0] || p.x > self.view[1]) return;
      var px = self.xToPx(p.x), py = yToPx(p.y);
      g.fillStyle = p.color;
      g.beginPath(); g.arc(px, py, 4, 0, 2 * Math.PI); g.fill();
      var label = p.label, w = g.measureText(label).width;
      g.fillText(label, px + 6 + w > W - m.r ? px - 6 - w : px + 6, Math.max(m.t + 12, py - 4));
    });
    this.marks.forEach(function (mk) {
      if (!mk.label || mk.x < self.view[0] || mk.x > self.view[1]) return;
      var px = self.xToPx(mk.x), w = g.measureText(mk.label).width;
      g.fillStyle = mk.color;
      g.fillText(mk.label, px + 4 + w > W - m.r ? px - 4 - w : px + 4, m.t + 12 + (mk.row || 0) * 13);
    });
    if (this.selected !== null && this.selected >= this.view[0] && this.selected <= this.view[1]) {
      var sx = Math.round(this.xToPx(this.selected)) + 0.5;
      g.strokeStyle = '#1d2330';
      g.lineWidth = 2;
      g.beginPath(); g.moveTo(sx, m.t); g.lineTo(sx, m.t + plotH); g.stroke();
    }
    if (this.hoverX !== null) {
      var hx = Math.round(this.xToPx(this.hoverX)) + 0.5;
      g.strokeStyle = 'rgba(29,35,48,.45)';
      g.lineWidth = 1;
      g.beginPath(); g.moveTo(hx, m.t); g.lineTo(hx, m.t + plotH); g.stroke();
    }
    g.restore();
    g.strokeStyle = '#9aa6bb';
    g.strokeRect(m.l + 0.5, m.t + 0.5, W - m.l - m.r - 1, plotH - 1);
    c.dataset.viewFrom = String(this.view[0]);
    c.dataset.viewTo = String(this.view[1]);
    Object.keys(drawn).forEach(function (k) { c.dataset['drawnMax' + k.charAt(0).toUpperCase() + k.slice(1)] = String(drawn[k]); });
  };
  function legend(items) {
    var box = el('div', 'legend');
    items.forEach(function (it) {
      var sw = el('span', 'sw');
      sw.style.background = it.color;
      if (it.dash) sw.style.background = 'repeating-linear-gradient(90deg,' + it.color + ' 0 4px,#fff 4px 7px)';
      box.appendChild(el('span', '', [sw, it.label]));
    });
    return box;
  }

  // ---- the segment map ----------------------------------------------------------------

  // The state's segments in address order, wrapped over rows, every byte the same area.
  function SegmentMap(container, state, file) {
    var self = this;
    this.state = state;
    this.file = file;
    this.canvas = el('canvas');
    this.tip = el('div', 'tip');
    this.box = el('div', 'chart', [this.canvas, this.tip]);
    container.appendChild(this.box);
    var segs = state.map.segments;
    var total = 0;
    segs.forEach(function (s) { total += s[1]; });
    this.total = total;
    var rows = Math.max(3, Math.min(18, Math.round(Math.sqrt(segs.length)) + 2));
    this.rowH = 18;
    this.rowGap = 5;
    this.rows = rows;
    this.layoutFor = -1;
    this.canvas.dataset.segments = String(segs.length);
    this.canvas.dataset.reserved = String(total);
    this.canvas.addEventListener('mousemove', function (ev) {
      var r = self.canvas.getBoundingClientRect();
      var hit = self.hit(ev.clientX - r.left, ev.clientY - r.top);
      if (!hit) { self.tip.style.display = 'none'; return; }
      self.tip.textContent = '';
      self.tip.appendChild(self.describe(hit));
      tooltipAt(self.tip, self.box, ev.clientX - r.left, ev.clientY - r.top);
    });
    this.canvas.addEventListener('mouseleave', function () { self.tip.style.display = 'none'; });
    redrawOnResize(this.canvas, this);
    this.draw();
  }
  SegmentMap.prototype.layout = function (W) {
    var segs = this.state.map.segments, gap = 2;
    var capacity = W * this.rows - gap * segs.length;
    this.bpp = Math.max(1, this.total / Math.max(capacity * 0.98, 1));
    var pieces = [], row = 0, x = 0, self = this;
    segs.forEach(function (s, si) {
      var width = s[1] / self.bpp, start = 0;
      while (width - start > 1e-9) {
        if (x >= W - 0.5) { row++; x = 0; }
        var take = Math.min(width - start, W - x);
        pieces.push({ seg: si, row: row, x: x, w: take, from: start * self.bpp, to: (start + take) * self.bpp });
        x += take;
        start += take;
      }
      x += gap;
    });
    this.pieces = pieces;
    this.usedRows = row + 1;
  };
  SegmentMap.prototype.draw = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1, W = c.clientWidth || 1200;
    this.layout(W);
    var H = this.usedRows * (this.rowH + this.rowGap);
    if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
      c.width = Math.round(W * dpr);
      c.height = Math.round(H * dpr);
      c.style.height = H + 'px';
    }
    var g = c.getContext('2d'), self = this, segs = this.state.map.segments, runs = this.state.map.runs;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    this.pieces.forEach(function (p) {
      var s = segs[p.seg], y = p.row * (self.rowH + self.rowGap) + 2;
      g.fillStyle = MAP_COLORS[3];
      g.fillRect(p.x, y, p.w, self.rowH);
      for (var k = 0; k < s[9]; k++) {
        var r = (s[8] + k) * 4, off = runs[r], len = runs[r + 1], cls = runs[r + 2];
        var a = Math.max(off, p.from), b = Math.min(off + len, p.to);
        if (b <= a) continue;
        g.fillStyle = MAP_COLORS[cls];
        var x0 = p.x + (a - p.from) / self.bpp, x1 = p.x + (b - p.from) / self.bpp;
        g.fillRect(x0, y, Math.max(x1 - x0, 0.6), self.rowH);
      }
      g.strokeStyle = 'rgba(29,35,48,.55)';
      g.lineWidth = 1;
      g.strokeRect(Math.round(p.x) + 0.5, y + 0.5, Math.max(Math.round(p.w) - 1, 0), self.rowH - 1);
    });
  };
  SegmentMap.prototype.hit = function (x, y) {
    var row = Math.floor(y / (this.rowH + this.rowGap));
    for (var i = 0; i < this.pieces.length; i++) {
      var p = this.pieces[i];
      if (p.row === row && x >= p.x && x < p.x + Math.max(p.w, 1)) {
        var offset = p.from + (x - p.x) * this.bpp;
        return { seg: p.seg, offset: offset };
      }
    }
    return null;
  };
  SegmentMap.prototype.describe = function (hit) {
    var s = this.state.map.segments[hit.seg], runs = this.state.map.runs, box = el('div');
    box.appendChild(text('div', 't1', 'segment ' + s[0] + ': ' + humanBytes(s[1]) + ', ' + s[2] + ' pool, stream ' + s[3] +
      (s[4] ? ', expandable' : '') + (s[5] ? ', private pool' : '')));
    box.appendChild(text('div', '', 'allocated ' + humanBytes(s[6]) + (s[7] ? ', stranded free ' + humanBytes(s[7]) : '')));
    for (var k = 0; k < s[9]; k++) {
      var r = (s[8] + k) * 4;
      if (hit.offset >= runs[r] && hit.offset < runs[r] + runs[r + 1]) {
        box.appendChild(text('div', '', MAP_NAMES[runs[r + 2]] + ': ' + humanBytes(runs[r + 1]) + ' in ' +
          commas(runs[r + 3]) + (runs[r + 3] === 1 ? ' block' : ' blocks') + ' at +' + humanBytes(runs[r])));
        break;
      }
    }
    var addr = BigInt(s[0]) + BigInt(Math.floor(hit.offset));
    var blocks = this.state.largest;
    for (var i = 0; i < blocks.length; i++) {
      var b = blocks[i], a0 = BigInt(b[0]);
      if (addr >= a0 && addr < a0 + BigInt(b[1])) {
        box.appendChild(text('div', 't1', 'block ' + b[0] + ': ' + humanBytes(b[1]) + (b[3] ? ' (pending free)' : '') +
          ', requested ' + humanBytes(b[2])));
        box.appendChild(stackList(stackFrames(this.file, b[4]), 14));
        break;
      }
    }
    return box;
  };
  function mapLegend(state) {
    var items = [];
    MAP_CLASSES.forEach(function (c, i) { items.push({ color: MAP_COLORS[i], label: MAP_NAMES[i] }); });
    var box = el('div');
    box.appendChild(legend(items));
    var map = state.map, notes = [];
    var segs = map.segments, total = 0;
    segs.forEach(function (s) { total += s[1]; });
    notes.push(commas(segs.length) + (segs.length === 1 ? ' segment, ' : ' segments, ') + humanBytes(total) +
      ' reserved, drawn to scale in address order (every byte the same area; a segment wraps to the next row)');
    if (map.merge_below) notes.push('blocks smaller than ' + humanBytes(map.merge_below) + ' are drawn within their neighbours\' run');
    if (map.segments_left_out) notes.push(commas(map.segments_left_out) + ' smaller segments (' + humanBytes(map.bytes_left_out) + ') left out');
    box.appendChild(text('div', 'note', notes.join('; ') + '. Hover for a segment, its run and the block with its stack.'));
    return box;
  }

  // ---- sections -----------------------------------------------------------------------

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

  // The verdict: per device, the OOM, peak, leaks and findings as `analyze --format json` gives them.
  function verdictSection() {
    var sec = el('section', 'part');
    sec.id = 'verdict';
    sec.appendChild(text('h2', '', 'Verdict'));
    DATA.files.forEach(function (file, fi) {
      if (DATA.files.length > 1) sec.appendChild(text('div', 'filehead', fileLabel(fi)));
      var unused = [];
      devicesOf(file).forEach(function (d) {
        if (d.json.unused) { unused.push(d.json.device); return; }
        sec.appendChild(deviceVerdict(file, fi, d));
      });
      if (unused.length) sec.appendChild(text('div', 'note', 'devices without segments or trace: ' + unused.join(', ')));
      var warnings = file.analysis.warnings || [];
      if (warnings.length) {
        var w = el('details', 'card');
        w.appendChild(text('summary', '', warnings.length + (warnings.length === 1 ? ' warning' : ' warnings')));
        warnings.forEach(function (s) { w.appendChild(text('div', 'mono', s)); });
        sec.appendChild(w);
      }
    });
    return sec;
  }
  function deviceVerdict(file, fi, d) {
    var j = d.json, base = 'files.' + fi + '.devices.' + d.index + '.';
    var card = el('div', 'card');
    card.dataset.device = String(j.device);
    card.dataset.file = String(fi);
    var h = text('h3', '', 'GPU ' + j.device);
    if (j.oom) h.appendChild(text('span', 'chip oom', 'out of memory'));
    if (j.leaks && j.leaks.length) h.appendChild(text('span', 'chip warning', 'leak'));
    if (!j.oom && !(j.findings || []).length) h.appendChild(text('span', 'chip ok', 'no findings'));
    card.appendChild(h);
    if (j.oom) card.appendChild(oomBox(j.oom, base + 'oom.', j));
    // The figures: dump totals, peak, fragmentation.
    var t = j.totals, fr = j.fragmentation || {};
    var figs = el('div', 'figures');
    if (j.peak) {
      figs.appendChild(figure('peak allocated', num(j.peak.allocated_bytes, base + 'peak.allocated_bytes'),
        j.peak.at_window_start ? ['when the recorded window opened (older events were dropped)']
          : ['at event ', num(j.peak.event_index, base + 'peak.event_index', 'count'), ' ', plusTime(rel(file, j.peak.time_us))]));
    }
    if (j.peak_reserved) figs.appendChild(figure('peak reserved', num(j.peak_reserved.bytes, base + 'peak_reserved.bytes')));
    figs.appendChild(figure('reserved at the dump', num(t.reserved_bytes, base + 'totals.reserved_bytes'),
      [num(t.segments, base + 'totals.segments', 'count'), ' segments']));
    figs.appendChild(figure('allocated at the dump', num(t.allocated_bytes, base + 'totals.allocated_bytes'),
      ['requested ', num(t.requested_bytes, base + 'totals.requested_bytes')]));
    figs.appendChild(figure('active at the dump', num(t.active_bytes, base + 'totals.active_bytes'),
      ['pending free ', num(t.pending_free_bytes, base + 'totals.pending_free_bytes')]));
    figs.appendChild(figure('largest free block', num(t.largest_free_block_bytes, base + 'totals.largest_free_block_bytes')));
    if (fr.stranded_bytes !== undefined)
      figs.appendChild(figure('stranded free', num(fr.stranded_bytes, base + 'fragmentation.stranded_bytes'),
        ['releasable ', num(fr.releasable_bytes, base + 'fragmentation.releasable_bytes')]));
    card.appendChild(figs);
    if (j.iterations_evidence)
      card.appendChild(text('div', 'evidence', 'iterations: ' + (j.iterations && j.iterations.count ? commas(j.iterations.count) + ' found; ' : '') +
        j.iterations_evidence));
    if (j.structure && j.structure.description) card.appendChild(text('div', 'evidence', 'structure: ' + j.structure.description));
    if (j.leaks && j.leaks.length) card.appendChild(leakTable(j.leaks, base + 'leaks.'));
    var findings = j.findings || [];
    if (findings.length) {
      card.appendChild(text('h4', '', 'findings'));
      findings.forEach(function (f, k) {
        var box = el('div', 'finding');
        box.dataset.kind = f.kind;
        var head = el('div', '', [text('span', 'chip ' + f.severity, f.severity), text('span', 'kind', f.kind)]);
        if (f.bytes) head.appendChild(el('span', 'kind', num(f.bytes, base + 'findings.' + k + '.bytes')));
        box.appendChild(head);
        box.appendChild(text('div', 'msg', f.message));
        if (f.advice) box.appendChild(text('div', 'advice', 'fix: ' + f.advice));
        card.appendChild(box);
      });
    }
    return card;
  }
  function rel(file, t) {
    var o = file.analysis.time_origin_us;
    return t === null || t === undefined || o === null || o === undefined ? null : t - o;
  }
  function oomBox(o, base, j) {
    var box = el('div', 'oombox');
    box.appendChild(el('div', 'headline', ['Out of memory', o.event_index !== null ? [' at event ',
      num(o.event_index, base + 'event_index', 'count')] : ' (from the dumped state)', ': ',
      num(o.requested_bytes, base + 'requested_bytes'), ' requested',
      o.segment_request_bytes !== o.requested_bytes ? [' (the allocator needed ', num(o.segment_request_bytes, base + 'segment_request_bytes'), ')'] : '']));
    var cause = el('div', 'row', [text('span', 'label', 'cause'), text('span', 'cause', o.cause)]);
    cause.dataset.cause = o.cause;
    box.appendChild(cause);
    (o.causes || []).forEach(function (c) {
      if (c.evidence) box.appendChild(text('div', 'evidence', c.cause + ': ' + c.evidence));
    });
    box.appendChild(el('div', 'row', [text('span', 'label', 'site'), text('span', 'site', o.site || 'n/a')]));
    box.appendChild(el('div', 'row', [text('span', 'label', 'state'), 'allocated ', num(o.allocated_bytes, base + 'allocated_bytes'),
      ', reserved ', num(o.reserved_bytes, base + 'reserved_bytes'), ', free in the cache ', num(o.free_cached_bytes, base + 'free_cached_bytes'),
      ', largest free block ', num(o.largest_free_block_bytes, base + 'largest_free_block_bytes'),
      o.device_free_bytes !== null ? [', device free ', num(o.device_free_bytes, base + 'device_free_bytes')] : '']));
    if (o.advice && o.advice.length) {
      box.appendChild(text('div', 'label', 'fix'));
      var ul = el('ul', 'fix');
      o.advice.forEach(function (a) { ul.appendChild(text('li', '', a)); });
      box.appendChild(ul);
    }
    if (o.message) {
      var det = el('details');
      det.appendChild(text('summary', '', 'the message PyTorch printed'));
      det.appendChild(text('div', 'mono', o.message));
      box.appendChild(det);
    }
    if (j.ooms && j.ooms.length > 1) box.appendChild(text('div', 'evidence', j.oom_events + ' out-of-memory events; this is the last one'));
    return box;
  }
  function leakTable(leaks, base) {
    var wrap = el('div');
    wrap.appendChild(text('h4', '', 'leaks: sites that keep allocations from iteration after iteration'));
    var tb = el('table');
    tb.appendChild(el('tr', '', [text('th', '', 'site'), text('th', 'r', 'per iteration'), text('th', 'r', 'live now'),
      text('th', 'r', 'kept'), text('th', '', 'pattern')]));
    leaks.forEach(function (l, k) {
      tb.appendChild(el('tr', '', [text('td', 'site', l.site),
        el('td', 'r', num(l.growth_bytes_per_iteration, base + k + '.growth_bytes_per_iteration')),
        el('td', 'r', num(l.live_bytes, base + k + '.live_bytes')),
        text('td', 'r', l.iterations_retained + '/' + l.iterations_judged), text('td', '', l.pattern)]));
    });
    wrap.appendChild(tb);
    return wrap;
  }

  // The timeline of one device with its events, and the state at the recorded moments.
  var plots = [];
  function timelineSection() {
    var sec = el('section', 'part');
    sec.id = 'timeline';
    sec.appendChild(text('h2', '', 'Timeline'));
    var any = false;
    DATA.files.forEach(function (file, fi) {
      devicesOf(file).forEach(function (d) {
        if (!d.page || !d.page.timeline) return;
        any = true;
        sec.appendChild(deviceTimeline(file, fi, d));
      });
    });
    if (!any) sec.appendChild(text('div', 'note', 'No trace in the file (recorded with enabled=\'state\' or without history): no timeline.'));
    return sec;
  }
  function deviceTimeline(file, fi, d) {
    var tl = d.page.timeline, card = el('div', 'card');
    card.dataset.device = String(d.json.device);
    card.dataset.file = String(fi);
    var title = text('h3', '', (DATA.files.length > 1 ? fileLabel(fi) + ', ' : '') + 'GPU ' + d.json.device);
    card.appendChild(title);
    var timed = tl.timed;
    var xs = tl.ev.map(function (e, i) { return timed ? tl.t[i] : e; });
    var xOf = function (event) {  // x of an event: a kept point's, else interpolated by index
      var i = lowerBound(tl.ev, event);
      if (i < tl.ev.length && tl.ev[i] === event) return xs[i];
      if (!timed) return event;
      if (i === 0) return xs[0];
      if (i >= tl.ev.length) return xs[xs.length - 1];
      var f = (event - tl.ev[i - 1]) / (tl.ev[i] - tl.ev[i - 1]);
      return xs[i - 1] + f * (xs[i] - xs[i - 1]);
    };
    var note = commas(tl.ev.length) + ' of ' + commas(d.page.trace_events) + ' events drawn (each a real event; ' +
      'every bucket of events keeps its lowest and highest values, so the peak stays at its value)' +
      (timed ? '; x: time from the first event in the file' : '; x: event index (the trace has no times)') +
      (tl.consistent ? '' : '; the replay met a contradiction: figures after it are approximate');
    var marks = [], points = [];
    (tl.iterations || []).forEach(function (e, k) {
      marks.push({ x: xOf(e), color: '#9aa6bb', dash: [3, 3], label: tl.iterations.length <= 24 ? 'it ' + (k + 1) : null, row: 1 });
    });
    (tl.ooms || []).forEach(function (e) { marks.push({ x: xOf(e), color: '#c62828', width: 2, label: 'OOM' }); });
    if (tl.peak) points.push({ x: xOf(tl.peak.event), y: tl.peak.allocated, color: '#c62828', label: 'peak ' + humanBytes(tl.peak.allocated) });
    var states = moments(d);
    states.forEach(function (s) { if (s.event !== null) marks.push({ x: xOf(s.event), color: '#1d2330', width: 1.5, tick: true }); });
    var toolbar = el('div', 'toolbar');
    card.appendChild(toolbar);
    card.appendChild(legend([{ color: '#b9c3d3', label: 'reserved' }, { color: '#e68a00', label: 'active (allocated + pending free)', dash: true },
      { color: '#3b78d8', label: 'allocated' }, { color: '#c62828', label: 'OOM, peak' }, { color: '#9aa6bb', label: 'iteration starts', dash: true },
      { color: '#1d2330', label: 'recorded states (ticks)' }]));
    var panel = el('div', 'statepanel');
    var plot;
    // The point under the cursor: of the points within two pixels, the one with the most
    // allocated memory (a pixel column can hold many events; its top is what is drawn).
    var nearestPoint = function (x) {
      var px = plot.xToPx(x), lo = lowerBound(xs, plot.pxToX(px - 2)), hi = lowerBound(xs, plot.pxToX(px + 2) + 1e-9);
      var best = -1;
      for (var k = lo; k < hi && k < xs.length; k++) if (best < 0 || tl.allocated[k] > tl.allocated[best]) best = k;
      if (best >= 0) return best;
      var i = lowerBound(xs, x);
      if (i >= xs.length) i = xs.length - 1;
      if (i > 0 && Math.abs(xs[i - 1] - x) <= Math.abs(xs[i] - x)) i--;
      return i;
    };
    var showState = function (event, asked) {
      var best = null;
      states.forEach(function (s) {
        if (s.event === null) return;
        if (best === null || Math.abs(s.event - event) < Math.abs(best.event - event)) best = s;
      });
      if (!best) best = stateByMoment(d, 'dump');
      plot.selected = best.event === null ? null : xOf(best.event);
      plot.draw();
      renderState(panel, file, d, best, asked, xOf);
    };
    plot = new Plot(card, {
      height: 260,
      series: [
        { name: 'reserved', xs: xs, ys: tl.reserved, color: '#8d9ab0', fill: 'rgba(185,195,211,.35)', width: 1.2 },
        { name: 'active', xs: xs, ys: tl.active, color: '#e68a00', width: 1.3, dash: [5, 3] },
        { name: 'allocated', xs: xs, ys: tl.allocated, color: '#3b78d8', fill: 'rgba(59,120,216,.22)', width: 1.6 }],
      marks: marks,
      points: points,
      xLabel: function (x) { return timed ? '+' + duration(x) : Math.abs(x - Math.round(x)) > 1e-6 ? '' : commas(Math.round(x)); },
      onHover: function (x) { return pointTip(file, tl, nearestPoint(x)); },
      onClick: function (x) { var i = nearestPoint(x); showState(tl.ev[i], tl.ev[i]); }
    });
    plot.device = d.json.device;
    plot.file = fi;
    plot.xOf = xOf;
    plot.showState = showState;
    plots.push(plot);
    plot.canvas.dataset.device = String(d.json.device);
    plot.canvas.dataset.file = String(fi);
    plot.canvas.classList.add('timeline');
    var jump = function (label, pick) {
      var b = text('button', '', label);
      b.addEventListener('click', pick);
      return b;
    };
    append(toolbar, [jump('reset zoom', function () { plot.reset(); }),
      jump('zoom in', function () { plot.zoom((plot.view[0] + plot.view[1]) / 2, 1 / 1.6); }),
      jump('zoom out', function () { plot.zoom((plot.view[0] + plot.view[1]) / 2, 1.6); }),
      tl.peak ? jump('state at the peak', function () { showState(tl.peak.event, tl.peak.event); }) : null,
      tl.ooms && tl.ooms.length ? jump('state at the OOM', function () { showState(tl.ooms[tl.ooms.length - 1], tl.ooms[tl.ooms.length - 1]); }) : null,
      jump('state at the dump', function () { plot.selected = null; plot.draw(); renderState(panel, file, d, stateByMoment(d, 'dump'), null, xOf); }),
      text('span', 'hint', 'wheel: zoom; drag: pan; double-click: reset; hover: the event and its stack; click: the allocator state there')]);
    card.appendChild(text('div', 'note', note));
    card.appendChild(panel);
    return card;
  }
  function pointTip(file, tl, i) {
    var box = el('div');
    var act = tl.actions[tl.action[i]] || 'event';
    var head = 'event ' + commas(tl.ev[i]) + ': ' + act + ' ' + humanBytes(tl.size[i]) +
      (act === 'oom' ? '' : ' at ' + tl.address[i]) + (tl.t[i] !== null ? ' (' + plusTime(tl.t[i]) + ')' : '');
    box.appendChild(text('div', 't1', head));
    box.appendChild(text('div', '', 'after it: allocated ' + humanBytes(tl.allocated[i]) + ', active ' + humanBytes(tl.active[i]) +
      ', reserved ' + humanBytes(tl.reserved[i])));
    box.appendChild(stackList(stackFrames(file, tl.stack[i]), 16));
    box.dataset.event = String(tl.ev[i]);
    return box;
  }
  function momentWords(s) {
    switch (s.moment) {
      case 'peak': return 'the allocated peak';
      case 'oom': return 'an out-of-memory event';
      case 'iteration': return 'the start of iteration ' + s.iteration;
      case 'dump': return 'the dump';
      default: return 'an evenly spaced point of the trace';
    }
  }
  function renderState(panel, file, d, s, asked, xOf) {
    panel.textContent = '';
    var states = moments(d);
    var title = s.event === null ? 'The state as dumped' : 'The state right after event ' + commas(s.event) +
      ' (' + momentWords(s) + (s.t !== null ? ', ' + plusTime(s.t) : '') + ')';
    var h = text('h3', '', title);
    panel.dataset.event = s.event === null ? 'dump' : String(s.event);
    panel.appendChild(h);
    var recorded = states.length - 1;
    if (asked !== null && asked !== undefined && asked !== s.event)
      panel.appendChild(text('div', 'note', 'You picked event ' + commas(asked) + '. This is the state at the nearest recorded point: ' +
        'the page holds the allocator state at ' + recorded + ' events (the peak, the OOMs, iteration starts and evenly spaced events) ' +
        'and at the dump; memsnap analyze --at ' + asked + ' gives any other.'));
    else if (s.event !== null)
      panel.appendChild(text('div', 'note', 'One of the ' + recorded + ' recorded points of this page (the peak, the OOMs, iteration starts and evenly spaced events).'));
    var figs = el('div', 'figures');
    var f = function (label, v, field, kind) { var n = num(v, null, kind); n.dataset.state = field; return figure(label, n); };
    append(figs, [f('reserved', s.reserved_bytes, 'reserved_bytes'), f('allocated', s.allocated_bytes, 'allocated_bytes'),
      f('active', s.active_bytes, 'active_bytes'), f('segments', s.segments, 'segments', 'count'),
      f('stranded free', s.stranded_bytes, 'stranded_bytes'), f('largest free block', s.largest_free_block_bytes, 'largest_free_block_bytes')]);
    panel.appendChild(figs);
    if (s.estimated_blocks)
      panel.appendChild(text('div', 'note', commas(s.estimated_blocks) + ' live blocks have sizes the replay inferred from their request (' +
        (s.size_uncertainty ? 'at most ' + humanBytes(s.size_uncertainty) + ' more in all' : 'exactly: the rounding of those requests is certain') + ').'));
    panel.appendChild(text('h4', '', 'segment map'));
    new SegmentMap(panel, s, file);
    panel.appendChild(mapLegend(s));
    var cols = el('div', 'cols');
    var left = el('div'), right = el('div');
    left.appendChild(text('h4', '', 'sites live then'));
    left.appendChild(sitesTable(file, s.sites));
    right.appendChild(text('h4', '', 'largest live blocks then'));
    right.appendChild(blocksTable(file, s.largest.slice(0, 8), null));
    append(cols, [left, right]);
    panel.appendChild(cols);
  }
  function sitesTable(file, sites) {
    var tb = el('table');
    tb.appendChild(el('tr', '', [text('th', '', 'site'), text('th', 'r', 'live'), text('th', 'r', 'blocks')]));
    sites.forEach(function (p) {
      var row = el('tr', 'click', [text('td', 'site', file.sites[p[0]]), el('td', 'r', num(p[1])), text('td', 'r', commas(p[2]))]);
      tb.appendChild(row);
      expandable(tb, row, function () { return stackList(stackFrames(file, p[3])); }, 3);
    });
    if (!sites.length) tb.appendChild(el('tr', '', text('td', 'note', 'nothing allocated')));
    return tb;
  }
  function expandable(table, row, make, span) {
    var open = null;
    row.addEventListener('click', function () {
      if (open) { open.remove(); open = null; return; }
      var td = el('td', '', make());
      td.colSpan = span;
      open = el('tr', 'stackrow', td);
      row.after(open);
    });
  }
  function blocksTable(file, blocks, query) {
    var tb = el('table');
    tb.appendChild(el('tr', '', [text('th', 'r', '#'), text('th', 'r', 'size'), text('th', 'r', 'requested'), text('th', '', 'state'),
      text('th', '', 'site (click for the stack)'), text('th', 'r', 'pins stranded')]));
    var shown = 0;
    blocks.forEach(function (b, k) {
      var frames = stackFrames(file, b[4]);
      if (query) {
        var q = query.toLowerCase();
        if (!frames.some(function (fr) { return fr.text.toLowerCase().indexOf(q) >= 0; })) return;
      }
      shown++;
      var row = el('tr', 'click', [text('td', 'r', k + 1), el('td', 'r', num(b[1])), el('td', 'r', num(b[2])),
        text('td', '', b[3] ? 'pending free' : 'allocated'), text('td', 'site', siteOfFrames(frames)),
        el('td', 'r', b[5] ? num(b[5]) : '')]);
      row.dataset.address = b[0];
      tb.appendChild(row);
      expandable(tb, row, function () {
        return el('div', '', [text('div', 'mono', 'address ' + b[0]), stackList(frames)]);
      }, 6);
    });
    if (!shown) tb.appendChild(el('tr', '', text('td', 'note', query ? 'no block matches' : 'no live block')));
    return tb;
  }

  // One device picker for the sections that show one device at a time.
  function devicePicker(onPick) {
    var list = [];
    DATA.files.forEach(function (file, fi) {
      devicesOf(file).forEach(function (d) {
        if (d.json.unused || !d.page) return;
        list.push({ key: fi + ':' + d.index, label: (DATA.files.length > 1 ? (fi === 0 ? 'before ' : 'after ') : '') + 'GPU ' + d.json.device, file: file, fi: fi, d: d });
      });
    });
    return list;
  }

  function allocationsSection() {
    var sec = el('section', 'part');
    sec.id = 'allocations';
    sec.appendChild(text('h2', '', 'Largest live blocks'));
    var list = devicePicker();
    if (!list.length) return sec;
    var cur = { dev: list[0], moment: null, query: '' };
    var bar = el('div', 'toolbar'), momentBar = el('span'), body = el('div');
    var search = el('input');
    search.type = 'search';
    search.placeholder = 'filter by file or function';
    search.id = 'block-search';
    var draw = function () {
      body.textContent = '';
      var s = stateByMoment(cur.dev.d, cur.moment);
      if (!s) return;
      body.appendChild(text('div', 'note', 'At ' + momentWords(s) + (s.event !== null ? ' (event ' + commas(s.event) + ')' : '') + ': the ' +
        Math.min(s.largest.length, s.live_blocks) + ' largest of ' + commas(s.live_blocks) + ' live blocks; the user\'s frames first in each stack.'));
      body.appendChild(blocksTable(cur.dev.file, s.largest, cur.query));
    };
    var setDevice = function (key) {
      list.forEach(function (x) { if (x.key === key) cur.dev = x; });
      momentBar.textContent = '';
      var opts = [];
      if (stateByMoment(cur.dev.d, 'peak')) opts.push({ key: 'peak', label: 'at the peak' });
      if (stateByMoment(cur.dev.d, 'oom')) opts.push({ key: 'oom', label: 'at the OOM' });
      opts.push({ key: 'dump', label: 'at the dump' });
      if (!opts.some(function (o) { return o.key === cur.moment; })) cur.moment = opts[0].key;
      momentBar.appendChild(buttons(opts, cur.moment, function (k) { cur.moment = k; draw(); }));
      draw();
    };
    search.addEventListener('input', function () { cur.query = search.value; draw(); });
    if (list.length > 1) bar.appendChild(buttons(list, list[0].key, setDevice));
    append(bar, [momentBar, search]);
    sec.appendChild(bar);
    sec.appendChild(body);
    setDevice(list[0].key);
    return sec;
  }

  // ---- flame graphs ---------------------------------------------------------------------

  var FLAME_COLORS = { u: '#f2a65a', l: '#f0c9a0', t: '#e66b5b', p: '#e8cf5a', n: '#9bb3d6', s: '#c9ced8' };
  function Flame(container, flame) {
    var self = this;
    this.f = flame;
    var n = flame.bytes.length;
    this.x = new Array(n);
    this.parent = new Array(n);
    var cursor = new Array(n), stack = [];
    for (var i = 0; i < n; i++) {
      var depth = flame.depth[i];
      stack.length = depth;
      var p = depth ? stack[depth - 1] : -1;
      this.parent[i] = p;
      this.x[i] = p < 0 ? 0 : cursor[p];
      if (p >= 0) cursor[p] += flame.bytes[i];
      cursor[i] = this.x[i];
      stack[depth] = i;
    }
    this.focus = 0;
    this.rowH = 17;
    this.depth = 0;
    for (var k = 0; k < n; k++) this.depth = Math.max(this.depth, flame.depth[k]);
    this.canvas = el('canvas');
    this.tip = el('div', 'tip');
    this.box = el('div', 'chart', [this.canvas, this.tip]);
    container.appendChild(this.box);
    this.canvas.addEventListener('mousemove', function (ev) {
      var r = self.canvas.getBoundingClientRect(), i = self.hit(ev.clientX - r.left, ev.clientY - r.top);
      if (i < 0) { self.tip.style.display = 'none'; return; }
      self.tip.textContent = '';
      self.tip.appendChild(self.describe(i));
      tooltipAt(self.tip, self.box, ev.clientX - r.left, ev.clientY - r.top);
    });
    this.canvas.addEventListener('mouseleave', function () { self.tip.style.display = 'none'; });
    this.canvas.addEventListener('click', function (ev) {
      var r = self.canvas.getBoundingClientRect(), i = self.hit(ev.clientX - r.left, ev.clientY - r.top);
      if (i >= 0) { self.focus = i; self.draw(); }
    });
    redrawOnResize(this.canvas, this);
    this.draw();
  }
  Flame.prototype.label = function (i) {
    return i === 0 ? 'all ' + humanBytes(this.f.bytes[0]) + ' at ' + (this.f.moment === 'dump' ? 'the dump' : 'the ' + this.f.moment) : this.f.frames[this.f.frame[i]][0];
  };
  Flame.prototype.visible = function (i) {
    var fx = this.x[this.focus], fw = this.f.bytes[this.focus];
    if (this.f.depth[i] < this.f.depth[this.focus]) {  // an ancestor of the focus is drawn whole
      for (var a = this.focus; a >= 0; a = this.parent[a]) if (a === i) return true;
      return false;
    }
    return this.x[i] >= fx && this.x[i] + this.f.bytes[i] <= fx + fw && this.f.bytes[i] > 0;
  };
  Flame.prototype.rect = function (i, W) {
    var fx = this.x[this.focus], fw = Math.max(this.f.bytes[this.focus], 1);
    var H = (this.depth + 1) * this.rowH, y = H - (this.f.depth[i] + 1) * this.rowH;
    if (this.f.depth[i] < this.f.depth[this.focus]) return { x: 0, y: y, w: W };
    return { x: (this.x[i] - fx) / fw * W, y: y, w: this.f.bytes[i] / fw * W };
  };
  Flame.prototype.draw = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1, W = c.clientWidth || 1200, H = (this.depth + 1) * this.rowH;
    if (c.width !== Math.round(W * dpr) || c.height !== Math.round(H * dpr)) {
      c.width = Math.round(W * dpr); c.height = Math.round(H * dpr); c.style.height = H + 'px';
    }
    var g = c.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    for (var i = 0; i < this.f.bytes.length; i++) {
      if (!this.visible(i)) continue;
      var r = this.rect(i, W);
      if (r.w < 0.3) continue;
      var kind = i === 0 ? 's' : this.f.frames[this.f.frame[i]][1];
      g.fillStyle = this.f.depth[i] < this.f.depth[this.focus] ? '#dfe3ea' : FLAME_COLORS[kind] || '#ccc';
      g.fillRect(r.x, r.y, Math.max(r.w - 0.5, 0.3), this.rowH - 1);
      if (r.w > 30) {
        g.save();
        g.beginPath(); g.rect(r.x, r.y, r.w - 2, this.rowH); g.clip();
        g.fillStyle = '#1d2330';
        g.fillText(this.label(i), r.x + 3, r.y + this.rowH / 2);
        g.restore();
      }
    }
    c.dataset.focus = String(this.focus);
  };
  Flame.prototype.hit = function (x, y) {
    var W = this.canvas.clientWidth || 1200;
    var best = -1;
    for (var i = 0; i < this.f.bytes.length; i++) {
      if (!this.visible(i)) continue;
      var r = this.rect(i, W);
      if (x >= r.x && x < r.x + r.w && y >= r.y && y < r.y + this.rowH) best = i;
    }
    return best;
  };
  Flame.prototype.describe = function (i) {
    var box = el('div'), total = this.f.bytes[0];
    box.appendChild(text('div', 't1', this.label(i)));
    var share = total ? (100 * this.f.bytes[i] / total).toFixed(1) + '% of all' : '';
    box.appendChild(text('div', '', humanBytes(this.f.bytes[i]) + ' (' + commas(this.f.bytes[i]) + ' bytes), ' + share));
    if (i > 0) box.appendChild(text('div', 'note', KIND_NAMES[this.f.frames[this.f.frame[i]][1]] || ''));
    box.appendChild(text('div', 'note', 'click to zoom' + (this.focus ? '; click the bottom bar to zoom out' : '')));
    return box;
  };
  function flameSection() {
    var sec = el('section', 'part');
    sec.id = 'flame';
    sec.appendChild(text('h2', '', 'Flame graph of live memory'));
    var list = devicePicker();
    if (!list.length) return sec;
    var cur = { dev: list[0], moment: 'dump' };
    var bar = el('div', 'toolbar'), momentBar = el('span'), body = el('div');
    var draw = function () {
      body.textContent = '';
      var fl = null;
      (cur.dev.d.page.flames || []).forEach(function (f) { if (f.moment === cur.moment) fl = f; });
      if (!fl) return;
      body.appendChild(text('div', 'note', 'Allocated memory by full call stack at ' + (fl.moment === 'dump' ? 'the dump' : 'the ' +
        (fl.moment === 'oom' ? 'last OOM' : 'allocated peak') + ' (event ' + commas(fl.event) + ')') + ', as memsnap flame computes it: ' +
        'each bar is as wide as its bytes, the callers below their callees; colours: your code, torch, Python, C++.' +
        (fl.nodes_left_out ? ' ' + commas(fl.nodes_left_out) + ' narrow frames are folded into their callers.' : '')));
      var f = new Flame(body, fl);
      f.canvas.dataset.moment = fl.moment;
      var reset = text('button', '', 'zoom out');
      reset.addEventListener('click', function () { f.focus = 0; f.draw(); });
      body.insertBefore(el('div', 'toolbar', [reset, legend([{ color: FLAME_COLORS.u, label: 'your code' }, { color: FLAME_COLORS.l, label: 'libraries' }, { color: FLAME_COLORS.t, label: 'torch' },
        { color: FLAME_COLORS.p, label: 'Python' }, { color: FLAME_COLORS.n, label: 'C++' }, { color: FLAME_COLORS.s, label: 'other' }])]), body.firstChild);
    };
    var setDevice = function (key) {
      list.forEach(function (x) { if (x.key === key) cur.dev = x; });
      momentBar.textContent = '';
      var opts = (cur.dev.d.page.flames || []).map(function (f) {
        return { key: f.moment, label: f.moment === 'dump' ? 'at the dump' : f.moment === 'peak' ? 'at the peak' : 'at the OOM' };
      });
      if (!opts.some(function (o) { return o.key === cur.moment; })) cur.moment = opts.length ? opts[0].key : 'dump';
      momentBar.appendChild(buttons(opts, cur.moment, function (k) { cur.moment = k; draw(); }));
      draw();
    };
    if (list.length > 1) bar.appendChild(buttons(list, list[0].key, setDevice));
    bar.appendChild(momentBar);
    sec.appendChild(bar);
    sec.appendChild(body);
    setDevice(list[0].key);
    return sec;
  }

  // ---- fragmentation ----------------------------------------------------------------------

  function fragmentationSection() {
    var sec = el('section', 'part');
    sec.id = 'fragmentation';
    sec.appendChild(text('h2', '', 'Fragmentation'));
    DATA.files.forEach(function (file, fi) {
      devicesOf(file).forEach(function (d) {
        if (d.json.unused || !d.page) return;
        var card = el('div', 'card'), fr = d.json.fragmentation || {}, base = 'files.' + fi + '.devices.' + d.index + '.fragmentation.';
        card.dataset.device = String(d.json.device);
        card.appendChild(text('h3', '', (DATA.files.length > 1 ? fileLabel(fi) + ', ' : '') + 'GPU ' + d.json.device));
        var figs = el('div', 'figures');
        append(figs, [figure('stranded free', num(fr.stranded_bytes, base + 'stranded_bytes'), 'cached free bytes in segments that hold live blocks'),
          figure('releasable', num(fr.releasable_bytes, base + 'releasable_bytes'), 'what empty_cache() returns'),
          figure('largest free block', num(fr.largest_free_block_bytes, base + 'largest_free_block_bytes')),
          figure('pinning blocks', num(fr.pinning_blocks, base + 'pinning_blocks', 'count'), 'live blocks that keep stranded memory')]);
        card.appendChild(figs);
        var shown = [['dump', 'at the dump']];
        if (stateByMoment(d, 'oom')) shown.push(['oom', 'at the last OOM']);
        shown.forEach(function (m) {
          var s = stateByMoment(d, m[0]);
          if (!s) return;
          var part = el('div');
          part.dataset.moment = m[0];
          part.appendChild(text('h4', '', 'segment map ' + m[1] + (s.event !== null ? ' (event ' + commas(s.event) + ')' : '')));
          var map = new SegmentMap(part, s, file);
          map.canvas.dataset.moment = m[0];
          part.appendChild(mapLegend(s));
          part.appendChild(text('h4', '', 'pinning sites ' + m[1] + ': live blocks that keep free memory stranded'));
          part.appendChild(pinTable(file, s.pinning_sites));
          card.appendChild(part);
        });
        sec.appendChild(card);
      });
    });
    return sec;
  }
  function pinTable(file, pins) {
    var tb = el('table');
    tb.appendChild(el('tr', '', [text('th', '', 'site (click for the stack)'), text('th', 'r', 'stranded'), text('th', 'r', 'live'),
      text('th', 'r', 'blocks'), text('th', 'r', 'segments')]));
    pins.forEach(function (p) {
      var row = el('tr', 'click', [text('td', 'site', file.sites[p.site]), el('td', 'r', num(p.stranded_bytes)), el('td', 'r', num(p.live_bytes)),
        text('td', 'r', commas(p.blocks)), text('td', 'r', commas(p.segments))]);
      tb.appendChild(row);
      expandable(tb, row, function () {
        return el('div', '', [text('div', 'mono', 'largest share: block ' + p.example_address + ' of ' + humanBytes(p.example_size)), stringStack(p.stack)]);
      }, 5);
    });
    if (!pins.length) tb.appendChild(el('tr', '', text('td', 'note', 'no live block strands free memory')));
    return tb;
  }

  // ---- diff ---------------------------------------------------------------------------------

  function diffSection() {
    var sec = el('section', 'part');
    sec.id = 'diff';
    sec.appendChild(text('h2', '', 'Diff: ' + DATA.files[0].path + ' \u2192 ' + DATA.files[1].path));
    DATA.diff.devices.forEach(function (dd, k) {
      var card = el('div', 'card');
      card.dataset.device = String(dd.device);
      card.appendChild(text('h3', '', 'GPU ' + dd.device + (dd.in_before ? '' : ' (only after)') + (dd.in_after ? '' : ' (only before)')));
      var a = findDevice(DATA.files[0], dd.device), b = findDevice(DATA.files[1], dd.device);
      var tb = el('table');
      tb.appendChild(el('tr', '', [text('th', '', ''), text('th', 'r', 'before'), text('th', 'r', 'after'), text('th', 'r', 'change')]));
      [['reserved', 'reserved_bytes'], ['allocated', 'allocated_bytes'], ['active', 'active_bytes'], ['largest free block', 'largest_free_block_bytes']].forEach(function (r) {
        var x = a ? a.json.totals[r[1]] : 0, y = b ? b.json.totals[r[1]] : 0, delta = dd.totals_delta[r[1]];
        tb.appendChild(el('tr', '', [text('td', '', r[0]), el('td', 'r', num(x)), el('td', 'r', num(y)),
          text('td', 'r ' + (delta > 0 ? 'grow' : delta < 0 ? 'shrink' : ''), signedBytes(delta))]));
      });
      var pa = a && a.json.peak ? a.json.peak.allocated_bytes : null, pb = b && b.json.peak ? b.json.peak.allocated_bytes : null;
      if (pa !== null || pb !== null)
        tb.appendChild(el('tr', '', [text('td', '', 'peak allocated'), el('td', 'r', num(pa)), el('td', 'r', num(pb)),
          text('td', 'r ' + (pa !== null && pb !== null ? (pb > pa ? 'grow' : pb < pa ? 'shrink' : '') : ''),
            pa !== null && pb !== null ? signedBytes(pb - pa) : '')]));
      card.appendChild(tb);
      var la = a && a.page ? a.page.timeline : null, lb = b && b.page ? b.page.timeline : null;
      if (la || lb) card.appendChild(overlay(la, lb));
      card.appendChild(text('h4', '', 'live memory by site, largest change first'));
      var sites = dd.sites.filter(function (s) { return s.delta_bytes !== 0; });
      var st = el('table');
      st.appendChild(el('tr', '', [text('th', '', 'site'), text('th', 'r', 'before'), text('th', 'r', 'after'), text('th', 'r', 'change'), text('th', '', '')]));
      sites.slice(0, 40).forEach(function (s) {
        var row = el('tr', 'click', [text('td', 'site', s.site), el('td', 'r', num(s.before_bytes)), el('td', 'r', num(s.after_bytes)),
          text('td', 'r ' + (s.delta_bytes > 0 ? 'grow' : 'shrink'), signedBytes(s.delta_bytes)), text('td', '', s.status === 'both' ? '' : s.status)]);
        st.appendChild(row);
        expandable(st, row, function () { return stringStack(s.stack); }, 5);
      });
      if (sites.length > 40) st.appendChild(el('tr', '', text('td', 'note', (sites.length - 40) + ' more sites changed (memsnap diff lists them all)')));
      if (!sites.length) st.appendChild(el('tr', '', text('td', 'note', 'no site changed')));
      card.appendChild(st);
      sec.appendChild(card);
    });
    return sec;
  }
  function findDevice(file, device) {
    var found = null;
    devicesOf(file).forEach(function (d) { if (d.json.device === device) found = d; });
    return found;
  }
  // Both timelines on one axis: time since each file's first event (or the event index).
  function overlay(la, lb) {
    var box = el('div');
    var timed = (!la || la.timed) && (!lb || lb.timed);
    var xsOf = function (tl) {
      return tl.ev.map(function (e, i) { return timed ? tl.t[i] - tl.first_time : e; });
    };
    // After first, before on top: two dumps of one run share their first events.
    var series = [];
    if (lb) {
      var xb = xsOf(lb);
      series.push({ name: 'afterReserved', xs: xb, ys: lb.reserved, color: '#7fa7e6', width: 1.2, dash: [4, 3] });
      series.push({ name: 'afterAllocated', xs: xb, ys: lb.allocated, color: '#3b78d8', width: 2.2 });
    }
    if (la) {
      var xa = xsOf(la);
      series.push({ name: 'beforeReserved', xs: xa, ys: la.reserved, color: '#f0a030', width: 1, dash: [2, 3] });
      series.push({ name: 'beforeAllocated', xs: xa, ys: la.allocated, color: '#e0584f', width: 1.2 });
    }
    box.appendChild(legend([{ color: '#e0584f', label: 'before: allocated' }, { color: '#f0a030', label: 'before: reserved', dash: true },
      { color: '#3b78d8', label: 'after: allocated' }, { color: '#7fa7e6', label: 'after: reserved', dash: true }]));
    var p = new Plot(box, {
      height: 220, series: series,
      xLabel: function (x) { return timed ? '+' + duration(x) : Math.abs(x - Math.round(x)) > 1e-6 ? '' : commas(Math.round(x)); },
      onHover: function (x) {
        var t = el('div');
        t.appendChild(text('div', 't1', timed ? '+' + duration(x) + ' from each file\'s first event' : 'event ' + commas(Math.round(x))));
        [[la, 'before'], [lb, 'after']].forEach(function (pair) {
          var tl = pair[0];
          if (!tl) return;
          var xs = xsOf(tl), i = Math.max(0, lowerBound(xs, x + 1e-9) - 1);
          t.appendChild(text('div', '', pair[1] + ': allocated ' + humanBytes(tl.allocated[i]) + ', reserved ' + humanBytes(tl.reserved[i])));
        });
        return t;
      }
    });
    p.canvas.classList.add('overlay');
    box.appendChild(text('div', 'note', 'Both timelines on one axis: ' + (timed ? 'time since each file\'s first trace event' : 'the event index') + '.'));
    return box;
  }

  // ---- the page ---------------------------------------------------------------------------

  function header() {
    var h = el('header', 'top');
    h.appendChild(text('h1', '', DATA.files.length === 2 ? 'memsnap report: diff' : 'memsnap report'));
    DATA.files.forEach(function (f, fi) {
      var inp = f.analysis.input || {};
      h.appendChild(text('span', 'path', (DATA.files.length > 1 ? (fi === 0 ? 'before ' : 'after ') : '') + f.path +
        (inp.bytes !== undefined ? ' (' + humanBytes(inp.bytes) + ')' : '')));
    });
    h.appendChild(text('span', 'gen', DATA.generator));
    return h;
  }
  function nav(parts) {
    var n = el('nav', 'sections');
    parts.forEach(function (p) {
      var a = text('a', '', p[1]);
      a.href = '#' + p[0];
      n.appendChild(a);
    });
    return n;
  }
  function build() {
    DATA = JSON.parse(document.getElementById('memsnap-data').textContent);
    app.appendChild(header());
    var parts = [['verdict', 'Verdict'], ['timeline', 'Timeline'], ['allocations', 'Largest blocks'], ['flame', 'Flame graph'],
      ['fragmentation', 'Fragmentation']];
    if (DATA.diff) parts.splice(1, 0, ['diff', 'Diff']);
    app.appendChild(nav(parts));
    var main = el('main');
    app.appendChild(main);
    main.appendChild(verdictSection());
    if (DATA.diff) main.appendChild(diffSection());
    main.appendChild(timelineSection());
    main.appendChild(allocationsSection());
    main.appendChild(flameSection());
    main.appendChild(fragmentationSection());
    // Open each timeline on the state at its OOM, else its peak.
    plots.forEach(function (p) {
      var f = DATA.files[p.file], d = findDevice(f, p.device), tl = d.page.timeline;
      var ev = tl.ooms && tl.ooms.length ? tl.ooms[tl.ooms.length - 1] : tl.peak ? tl.peak.event : null;
      if (ev !== null) p.showState(ev, ev);
    });
    document.body.dataset.ready = '1';
  }

  // What the page's tests (and curious users) can ask it.
  window.memsnapReport = {
    plots: plots,
    pointOfEvent: function (file, device, event) {
      for (var i = 0; i < plots.length; i++)
        if (plots[i].file === file && plots[i].device === device) return plots[i].clientPoint(plots[i].xOf(event));
      return null;
    }
  };

  try {
    build();
  } catch (e) {
    app.appendChild(text('p', 'error', 'memsnap report: the page could not be drawn: ' + e));
    console.error(e);
  }
})();
