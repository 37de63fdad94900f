// The page: header, navigation, the sections in order; drawn when the script runs.

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
