// A zoomable plot of step series on a canvas: the timeline and the diff's overlay.

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
// One drawing of the plot: the canvas sized to its box, the y scale fitted to the view, then
// grid, marks, series, labels and cursors, each by its own method over the frame `f`.
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
  var m = this.m, plotH = H - m.t - m.b;
  var drawn = this.maxInView();
  this.drawnMax = drawn;
  var ymax = 0;
  Object.keys(drawn).forEach(function (k) { ymax = Math.max(ymax, drawn[k]); });
  if (ymax <= 0) ymax = 1;
  var ystep = niceBytesStep(ymax, 4), ytop = Math.ceil(ymax * 1.04 / ystep) * ystep;
  var f = { g: g, W: W, plotH: plotH, yToPx: function (y) { return m.t + plotH - y / ytop * plotH; } };
  this.drawGrid(f, ystep, ytop);
  g.save();
  g.beginPath();
  g.rect(m.l, m.t - 4, W - m.l - m.r, plotH + 4);
  g.clip();
  this.drawMarks(f);
  var self = this;
  this.series.forEach(function (s) { self.drawSeries(f, s); });
  this.drawLabels(f);
  this.drawCursors(f);
  g.restore();
  g.strokeStyle = '#9aa6bb';
  g.strokeRect(m.l + 0.5, m.t + 0.5, W - m.l - m.r - 1, plotH - 1);
  c.dataset.viewFrom = String(this.view[0]);
  c.dataset.viewTo = String(this.view[1]);
  Object.keys(drawn).forEach(function (k) { c.dataset['drawnMax' + k.charAt(0).toUpperCase() + k.slice(1)] = String(drawn[k]); });
};
// The indices of series s from the point before the view to the one after it: [i0, i1).
Plot.prototype.inView = function (s) {
  return [Math.max(0, lowerBound(s.xs, this.view[0]) - 1), Math.min(s.xs.length, lowerBound(s.xs, this.view[1]) + 1)];
};
// The highest value of each series in view, by name (the y scale follows the highest; the
// drawn maximum is recorded on the canvas).
Plot.prototype.maxInView = function () {
  var self = this, drawn = {};
  this.series.forEach(function (s) {
    var r = self.inView(s), mx = null;
    for (var i = r[0]; i < r[1]; i++) if (mx === null || s.ys[i] > mx) mx = s.ys[i];
    if (mx !== null) drawn[s.name] = mx;
  });
  return drawn;
};
Plot.prototype.drawGrid = function (f, ystep, ytop) {
  var g = f.g, m = this.m, plotH = f.plotH;
  g.font = '11px system-ui, sans-serif';
  g.fillStyle = '#5b6474';
  g.strokeStyle = '#e6eaf0';
  g.lineWidth = 1;
  g.textAlign = 'right';
  g.textBaseline = 'middle';
  for (var y = 0; y <= ytop + 1e-9; y += ystep) {
    var py = Math.round(f.yToPx(y)) + 0.5;
    g.beginPath(); g.moveTo(m.l, py); g.lineTo(f.W - m.r, py); g.stroke();
    g.fillText(humanBytes(y), m.l - 6, py);
  }
  var span = this.view[1] - this.view[0], xstep = niceStep(span, 8);
  g.textAlign = 'center';
  g.textBaseline = 'top';
  for (var x = Math.ceil(this.view[0] / xstep) * xstep; x <= this.view[1]; x += xstep) {
    var px = Math.round(this.xToPx(x)) + 0.5;
    g.beginPath(); g.moveTo(px, m.t); g.lineTo(px, m.t + plotH); g.stroke();
    if (px < f.W - m.r - 24) g.fillText(this.opts.xLabel(x, xstep), px, m.t + plotH + 6);
  }
};
// Marks of one style are one path; marks denser than one per four pixels are drawn as
// short ticks at the top (a trace of thousands of iterations).
Plot.prototype.drawMarks = function (f) {
  var self = this, g = f.g, m = this.m, plotH = f.plotH, groups = {};
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
};
// A series by pixel column: the first, lowest, highest and last value of the points in it
// (so every column's extremes are drawn exactly), a value holding until the next.
Plot.prototype.drawSeries = function (f, s) {
  var self = this, g = f.g, yToPx = f.yToPx, r = this.inView(s), i0 = r[0], i1 = r[1];
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
};
// Labelled points (the peak) and labels of marks.
Plot.prototype.drawLabels = function (f) {
  var self = this, g = f.g, m = this.m, W = f.W;
  g.textAlign = 'left';
  g.textBaseline = 'bottom';
  g.font = '600 11px system-ui, sans-serif';
  (this.opts.points || []).forEach(function (p) {
    if (p.x < self.view[0] || p.x > self.view[1]) return;
    var px = self.xToPx(p.x), py = f.yToPx(p.y);
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
};
// The selected event (its state is shown below) and the cursor.
Plot.prototype.drawCursors = function (f) {
  var g = f.g, m = this.m, plotH = f.plotH;
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
