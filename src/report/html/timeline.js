// The timeline section: a plot per device with its events, a click shows the state there.

// Every device's timeline plot, for the page's tests (memsnapReport.plots) and its first state.
var plots = [];
function timelineSection() {
  var sec = section('timeline', 'Timeline');
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
// The x of an event: a kept point's, else interpolated by index.
function eventToX(tl, xs) {
  return function (event) {
    var i = lowerBound(tl.ev, event);
    if (i < tl.ev.length && tl.ev[i] === event) return xs[i];
    if (!tl.timed) return event;
    if (i === 0) return xs[0];
    if (i >= tl.ev.length) return xs[xs.length - 1];
    var f = (event - tl.ev[i - 1]) / (tl.ev[i] - tl.ev[i - 1]);
    return xs[i - 1] + f * (xs[i] - xs[i - 1]);
  };
}
function timelineNote(tl, d) {
  return commas(tl.ev.length) + ' of ' + commas(d.page.trace_events) + ' events drawn (each a real event; ' +
    'every bucket of events keeps its lowest and highest values, so the peak stays at its value)' +
    (tl.timed ? '; x: time from the first event in the file' : '; x: event index (the trace has no times)') +
    (tl.consistent ? '' : '; the replay met a contradiction: figures after it are approximate');
}
// Iteration starts, OOMs and recorded states as marks; the peak as a labelled point.
function timelineMarks(tl, states, xOf) {
  var marks = [], points = [];
  (tl.iterations || []).forEach(function (e, k) {
    marks.push({ x: xOf(e), color: '#9aa6bb', dash: [3, 3], label: tl.iterations.length <= 24 ? 'it ' + (k + 1) : null, row: 1 });
  });
  (tl.ooms || []).forEach(function (e) { marks.push({ x: xOf(e), color: '#c62828', width: 2, label: 'OOM' }); });
  if (tl.peak) points.push({ x: xOf(tl.peak.event), y: tl.peak.allocated, color: '#c62828', label: 'peak ' + humanBytes(tl.peak.allocated) });
  states.forEach(function (s) { if (s.event !== null) marks.push({ x: xOf(s.event), color: '#1d2330', width: 1.5, tick: true }); });
  return { marks: marks, points: points };
}
// The point under the cursor: of the points within two pixels, the one with the most
// allocated memory (a pixel column can hold many events; its top is what is drawn).
function nearestPoint(plot, tl, xs, x) {
  var px = plot.xToPx(x), lo = lowerBound(xs, plot.pxToX(px - 2)), hi = lowerBound(xs, plot.pxToX(px + 2) + 1e-9);
  var best = -1;
  for (var k = lo; k < hi && k < xs.length; k++) if (best < 0 || tl.allocated[k] > tl.allocated[best]) best = k;
  if (best >= 0) return best;
  var i = lowerBound(xs, x);
  if (i >= xs.length) i = xs.length - 1;
  if (i > 0 && Math.abs(xs[i - 1] - x) <= Math.abs(xs[i] - x)) i--;
  return i;
}
function timelineToolbar(toolbar, plot, tl, showDump) {
  var jump = function (label, pick) {
    var b = text('button', '', label);
    b.addEventListener('click', pick);
    return b;
  };
  append(toolbar, [jump('reset zoom', function () { plot.reset(); }),
    jump('zoom in', function () { plot.zoom((plot.view[0] + plot.view[1]) / 2, 1 / 1.6); }),
    jump('zoom out', function () { plot.zoom((plot.view[0] + plot.view[1]) / 2, 1.6); }),
    tl.peak ? jump('state at the peak', function () { plot.showState(tl.peak.event, tl.peak.event); }) : null,
    tl.ooms && tl.ooms.length ? jump('state at the OOM', function () { plot.showState(tl.ooms[tl.ooms.length - 1], tl.ooms[tl.ooms.length - 1]); }) : null,
    jump('state at the dump', showDump),
    text('span', 'hint', 'wheel: zoom; drag: pan; double-click: reset; hover: the event and its stack; click: the allocator state there')]);
}
function deviceTimeline(file, fi, d) {
  var tl = d.page.timeline, card = el('div', 'card');
  card.dataset.device = String(d.json.device);
  card.dataset.file = String(fi);
  var title = text('h3', '', (DATA.files.length > 1 ? fileLabel(fi) + ', ' : '') + 'GPU ' + d.json.device);
  card.appendChild(title);
  var timed = tl.timed;
  var xs = tl.ev.map(function (e, i) { return timed ? tl.t[i] : e; });
  var xOf = eventToX(tl, xs);
  var states = moments(d), shown = timelineMarks(tl, states, xOf);
  var toolbar = el('div', 'toolbar');
  card.appendChild(toolbar);
  card.appendChild(legend([{ color: '#b9c3d3', label: 'reserved' }, { color: '#e68a00', label: 'active (allocated + pending free)', dash: true },
    { color: '#3b78d8', label: 'allocated' }, { color: '#c62828', label: 'OOM, peak' }, { color: '#9aa6bb', label: 'iteration starts', dash: true },
    { color: '#1d2330', label: 'recorded states (ticks)' }]));
  var panel = el('div', 'statepanel');
  var plot;
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
    marks: shown.marks,
    points: shown.points,
    xLabel: function (x) { return timed ? '+' + duration(x) : Math.abs(x - Math.round(x)) > 1e-6 ? '' : commas(Math.round(x)); },
    onHover: function (x) { return pointTip(file, tl, nearestPoint(plot, tl, xs, x)); },
    onClick: function (x) { var i = nearestPoint(plot, tl, xs, x); showState(tl.ev[i], tl.ev[i]); }
  });
  plot.device = d.json.device;
  plot.file = fi;
  plot.xOf = xOf;
  plot.showState = showState;
  plots.push(plot);
  plot.canvas.dataset.device = String(d.json.device);
  plot.canvas.dataset.file = String(fi);
  plot.canvas.classList.add('timeline');
  timelineToolbar(toolbar, plot, tl, function () {
    plot.selected = null;
    plot.draw();
    renderState(panel, file, d, stateByMoment(d, 'dump'), null, xOf);
  });
  card.appendChild(text('div', 'note', timelineNote(tl, d)));
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
