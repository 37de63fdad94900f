// The allocator state at a recorded event: figures, segment map, live sites and blocks.

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
