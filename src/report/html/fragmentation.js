// The fragmentation section: figures, segment maps and the sites that pin stranded memory.

function fragmentationSection() {
  var sec = section('fragmentation', 'Fragmentation');
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
