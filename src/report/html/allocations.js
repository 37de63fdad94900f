// The largest live blocks section, one device and moment at a time.

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
  var sec = section('allocations', 'Largest live blocks');
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
