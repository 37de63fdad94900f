// Flame graphs of live memory by call stack, zoomable by a click.

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
  var sec = section('flame', 'Flame graph of live memory');
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
