// The diff section (two files): totals, both timelines on one axis, sites by change.

function diffSection() {
  var sec = section('diff', 'Diff: ' + DATA.files[0].path + ' \u2192 ' + DATA.files[1].path);
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
