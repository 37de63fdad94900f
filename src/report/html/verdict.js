// The verdict section: per device, the OOM, the figures, leaks and findings.

// The verdict: per device, the OOM, peak, leaks and findings as `analyze --format json` gives them.
function verdictSection() {
  var sec = section('verdict', 'Verdict');
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
  // The OOM box above is the last OOM's finding in full: the list leaves out its cause finding
  // (the retry-in-except anti-pattern, a finding of its own, stays).
  var shown = j.oom && j.ooms ? j.ooms.length - 1 : -1;
  var findings = j.findings || [];
  var listed = function (f) { return !(f.oom_index === shown && f.kind !== 'oom_retry_in_except'); };
  if (findings.some(listed)) {
    card.appendChild(text('h4', '', 'findings'));
    findings.forEach(function (f, k) {
      if (!listed(f)) return;
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
    ', largest free block ', num(o.largest_free_block_bytes, base + 'largest_free_block_bytes'), poolOf(o, base),
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
// Where the request looked: its stream and pool (the tiles above are the whole device's).
function poolOf(o, base) {
  if (!o.pool) return '';
  var where = ' in the ' + o.pool + ' pool' + (o.stream !== null && o.stream !== undefined ? ' on stream ' + o.stream : '');
  if (o.largest_free_block_any_bytes === undefined || o.largest_free_block_any_bytes === o.largest_free_block_bytes)
    return where;
  return [where, ' (', num(o.largest_free_block_any_bytes, base + 'largest_free_block_any_bytes'), ' in any pool)'];
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
