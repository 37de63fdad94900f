// The segment map of an allocator state, to scale in address order, and its legend.

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
