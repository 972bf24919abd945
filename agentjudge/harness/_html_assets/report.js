/* agentjudge browser report: renders the JSON in #report-data (no network, no framework). */
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var S = D.strings, ST = D.statuses, J = D.judges, C = D.cases, SUM = D.summary;
  var B = D.baseline || null;
  var F = {};
  D.fields.forEach(function (f, i) { F[f] = i; });
  var ROWH = 28, NS = 'http://www.w3.org/2000/svg';

  // ------------------------------------------------------------------ helpers
  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v == null || v === false) return;
      if (k === 'text') node.textContent = v;
      else if (k.slice(0, 2) === 'on') node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : v);
    });
  }
  function add(node) {
    for (var i = 1; i < arguments.length; i++) {
      var kid = arguments[i];
      if (kid == null || kid === false) continue;
      if (Array.isArray(kid)) kid.forEach(function (k) { add(node, k); });
      else node.appendChild(typeof kid === 'object' ? kid : document.createTextNode(String(kid)));
    }
  }
  function sv(tag, attrs) {
    var node = document.createElementNS(NS, tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function str(i) { return i == null ? '' : S[i]; }
  function num(v, d) { return v == null ? '-' : Number(v).toFixed(d == null ? 3 : d); }
  function pct(v) { return v == null ? '-' : (100 * v).toFixed(1) + '%'; }
  function ci(v) { return v ? '[' + num(v[0]) + ', ' + num(v[1]) + ']' : '-'; }
  function chip(code) {
    var w = ST[code] || 'none';
    return el('span', { class: 'chip s-' + w, text: w === 'task_error' ? 'task error' : w });
  }
  function chipWord(word) { return chip(ST.indexOf(word)); }
  function text(v) {
    if (v == null) return '';
    return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  }
  function pretty(json) {
    try { return JSON.stringify(JSON.parse(json), null, 2); } catch (e) { return json; }
  }
  function field(row, name) { var v = row[F[name]]; return v === undefined ? null : v; }
  function judgment(row, j) {
    var js = row[F.judgments];
    return js && js[j] ? js[j] : null;
  }
  function table(headers, rows, label) {
    return el('div', { class: 'wrap' }, el('table', { class: 't', 'aria-label': label },
      el('thead', null, el('tr', null, headers.map(function (h) {
        return el('th', { scope: 'col', text: h });
      }))),
      el('tbody', null, rows.map(function (r) {
        return el('tr', null, r.map(function (c, i) {
          return el(i === 0 ? 'th' : 'td', i === 0 ? { scope: 'row' } : null, c);
        }));
      }))));
  }

  // ------------------------------------------------------------------ header
  function renderHeader() {
    var top = document.getElementById('top');
    var passed = SUM.passed;
    add(top, el('h1', null, 'Run ' + SUM.run_id + ' ',
      passed == null ? null : chipWord(passed ? 'pass' : 'fail')));
    add(top, el('p', { class: 'meta' }, SUM.status + ' · dataset ' + SUM.dataset.path + ' (' +
      SUM.dataset.rows + ' rows) · ' + SUM.cases.total + ' cases, ' + SUM.cases.errors +
      (SUM.cases.errors === 1 ? ' task error' : ' task errors') + ' · started ' + SUM.started_at + (SUM.completed_at ? ', completed ' +
      SUM.completed_at : '')));
    (SUM.warnings || []).forEach(function (w) { add(top, el('p', { class: 'meta', text: 'warning: ' + w })); });
    if (SUM.gates && SUM.gates.length) {
      add(top, el('ul', { class: 'gates', 'aria-label': 'Gates' }, SUM.gates.map(function (g) {
        return el('li', null, chipWord(g.passed ? 'pass' : 'fail'), ' ', el('code', { text: g.expr }),
          el('span', { class: 'muted', text: ' value ' + num(g.value, 4) + (g.reason ? ' · ' + g.reason : '') }));
      })));
    }
    var bl = SUM.baseline;
    if (bl) {
      add(top, el('p', { class: 'meta' }, chipWord(bl.passed ? 'pass' : 'fail'),
        ' baseline check against ' + bl.summary + ': ' + bl.flipped_count + ' verdicts flipped pass → not pass'));
    }
    var bad = (SUM.checks || []).filter(function (c) { return !c.passed; });
    if (bad.length) {
      add(top, el('ul', { class: 'checks', 'aria-label': 'Trust checks' }, bad.map(function (c) {
        return el('li', null, chipWord(c.warning ? 'abstain' : 'fail'), ' ' + c.name + ': ' + c.message);
      })));
    }
  }

  // ------------------------------------------------------------------ overview tables
  function judgeTable() {
    var names = Object.keys(SUM.judges);
    var agree = names.some(function (n) { return SUM.judges[n].agreement; });
    var cost = SUM.cost && SUM.cost.calls ? SUM.cost.by_judge || {} : null;
    var lat = D.latency || {};
    var hasLat = Object.keys(lat).length > 0;
    var head = ['judge', 'mean', 'mean ci95', 'pass rate', 'pass rate ci95 (Wilson)', 'pass', 'fail', 'abstain', 'error'];
    if (agree) head = head.concat(['human n', 'accuracy', 'accuracy ci95', 'Cohen κ', 'Krippendorff α']);
    if (cost) head = head.concat(['calls', 'usd']);
    if (hasLat) head = head.concat(['p50 s', 'p95 s']);
    function row(name, s) {
      var c = s.counts || {};
      var r = [name, num(s.mean), ci(s.ci95), num(s.pass_rate), ci(s.pass_rate_ci95),
        c.pass || 0, c.fail || 0, c.abstain || 0, c.error || 0];
      if (agree) {
        var a = s.agreement;
        r = r.concat(a ? [a.n, num(a.accuracy), ci(a.accuracy_ci95), num(a.cohen_kappa), num(a.krippendorff_alpha)] : ['-', '-', '-', '-', '-']);
      }
      if (cost) {
        var k = cost[name];
        r = r.concat(k ? [k.calls, k.usd == null ? '≥ $' + num(k.priced_usd, 4) : '$' + num(k.usd, 4)] : ['-', '-']);
      }
      if (hasLat) r = r.concat(lat[name] ? [num(lat[name][0]), num(lat[name][1])] : ['-', '-']);
      return r;
    }
    var rows = names.map(function (n) { return row(n, SUM.judges[n]); });
    if (SUM.verdict) rows.push(row('(verdict)', SUM.verdict));
    return table(head, rows, 'Per-judge results');
  }
  function juryTable() {
    var names = Object.keys(SUM.juries || {});
    if (!names.length) return null;
    // The least-agreeing pair of members, with its n and Wilson interval.
    function weakest(ij) {
      var low = null;
      Object.keys(ij.pairwise || {}).forEach(function (a) {
        Object.keys(ij.pairwise[a]).forEach(function (b) {
          var p = ij.pairwise[a][b];
          if (p.agreement != null && (!low || p.agreement < low[2].agreement)) low = [a, b, p];
        });
      });
      return low ? low[0] + ' ~ ' + low[1] + ': ' + num(low[2].agreement) + ' ' + ci(low[2].agreement_ci95) +
        ' (n ' + low[2].n + ')' : '-';
    }
    return table(['jury', 'members', 'tier', 'cases', 'Fleiss κ', 'Krippendorff α', 'scale',
      'least-agreeing pair (95% Wilson)'], names.map(function (n) {
      var j = SUM.juries[n], ij = j.inter_judge || {};
      return [n, j.members.join(', '), j.tier || '-', ij.n, num(ij.fleiss_kappa), num(ij.krippendorff_alpha),
        ij.scale || '-', weakest(ij)];
    }), 'Per-jury agreement');
  }

  // One confusion matrix per judge (and the verdict) with human labels: rows are the human
  // label, columns what the judge said as compared with it; the diagonal agrees.
  var CONFUSION_MAX = 12;
  function confusionTable(name, a) {
    var human = Object.keys(a.confusion || {});
    if (!human.length) return null;
    var said = [];
    human.forEach(function (h) {
      Object.keys(a.confusion[h]).forEach(function (j) { if (said.indexOf(j) < 0) said.push(j); });
    });
    said.sort();
    var label = 'Confusion matrix of ' + name + ' (rows: human label, columns: judge)';
    var caption = el('caption', { text: name + ' (n ' + a.n + ')' });
    if (human.length > CONFUSION_MAX || said.length > CONFUSION_MAX) {
      return el('p', { class: 'muted', text: name + ': ' + human.length + ' human labels x ' + said.length +
        ' judge values, too many to tabulate (see agreement.confusion in summary.json)' });
    }
    var head = el('tr', null, el('th', { scope: 'col', text: 'human \\ judge' }),
      said.map(function (j) { return el('th', { scope: 'col', text: j }); }),
      el('th', { scope: 'col', text: 'total' }));
    var body = human.map(function (h) {
      var row = a.confusion[h], total = 0;
      var cells = said.map(function (j) {
        var n = row[j] || 0;
        total += n;
        var cls = j === h ? 'agree' : n ? 'disagree' : null;
        return el('td', cls ? { class: cls } : null, String(n));
      });
      return el('tr', null, el('th', { scope: 'row', text: h }), cells, el('td', { text: String(total) }));
    });
    return el('div', { class: 'wrap' }, el('table', { class: 't confusion', 'aria-label': label },
      caption, el('thead', null, head), el('tbody', null, body)));
  }
  function confusionTables() {
    var items = Object.keys(SUM.judges).map(function (n) { return [n, SUM.judges[n].agreement]; });
    if (SUM.verdict) items.push(['(verdict)', SUM.verdict.agreement]);
    var tables = items.filter(function (it) { return it[1]; }).map(function (it) {
      return confusionTable(it[0], it[1]);
    }).filter(Boolean);
    return tables.length ? el('div', { class: 'confusions' }, tables) : null;
  }

  // ------------------------------------------------------------------ charts (inline SVG)
  function figure(title, summary, svg) {
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', title + ': ' + summary);
    return el('figure', { class: 'chart' }, el('figcaption', { text: title }), svg);
  }
  function statusColor(code) { return 'var(--c-' + ST[code] + ')'; }
  function judgeChart(j) {
    var counts = [0, 0, 0, 0, 0, 0], scores = [];
    for (var i = 0; i < C.length; i++) {
      var g = judgment(C[i], j);
      if (!g) continue;
      counts[g[0]]++;
      if (g[1] != null) scores.push(g[1]);
    }
    var total = counts.reduce(function (a, b) { return a + b; }, 0);
    var W = 240, svg = sv('svg', { width: W, height: 130, viewBox: '0 0 ' + W + ' 130' });
    var x = 0;
    counts.forEach(function (n, code) {
      if (!n) return;
      var w = W * n / total;
      add(svg, sv('rect', { x: x, y: 0, width: w, height: 14, fill: statusColor(code) },
        sv('title', { text: ST[code] + ': ' + n })));
      x += w;
    });
    var bins = new Array(10).fill(0);
    var lo = Math.min(0, Math.min.apply(null, scores.length ? scores : [0]));
    var hi = Math.max(1, Math.max.apply(null, scores.length ? scores : [1]));
    scores.forEach(function (s) { bins[Math.min(9, Math.floor(10 * (s - lo) / (hi - lo)))]++; });
    var top = Math.max.apply(null, bins) || 1;
    if (!scores.length) add(svg, sv('text', { x: W / 2, y: 64, 'text-anchor': 'middle', text: 'no scores' }));
    bins.forEach(function (n, b) {
      var h = 80 * n / top;
      add(svg, sv('rect', { x: b * 24 + 1, y: 104 - h, width: 22, height: h, fill: 'var(--c-bar)' },
        sv('title', { text: num(lo + b * (hi - lo) / 10, 1) + '–' + num(lo + (b + 1) * (hi - lo) / 10, 1) + ': ' + n })));
    });
    add(svg, sv('line', { x1: 0, x2: W, y1: 104.5, y2: 104.5, class: 'axis', stroke: 'currentColor' }));
    add(svg, sv('text', { x: 0, y: 120, text: num(lo, 1) }), sv('text', { x: W, y: 120, 'text-anchor': 'end', text: num(hi, 1) }));
    var parts = counts.map(function (n, c) { return n ? ST[c] + ' ' + n : null; }).filter(Boolean).join(', ');
    return figure(J[j], parts + '; ' + scores.length + ' scores', svg);
  }
  function intervalChart(title, items) {
    // items: [label, value, [lo, hi], n]
    var W = 420, LW = 130, H = 22 * items.length + 24;
    var svg = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    var PW = W - LW - 50;
    items.forEach(function (it, i) {
      var y = 6 + i * 22;
      add(svg, sv('text', { x: 0, y: y + 12, text: it[0].length > 20 ? it[0].slice(0, 19) + '…' : it[0] }));
      if (it[1] == null) return;
      add(svg, sv('rect', { x: LW, y: y + 2, width: PW * it[1], height: 14, fill: 'var(--c-bar)', opacity: 0.8 },
        sv('title', { text: it[0] + ': ' + pct(it[1]) + ' ' + ci(it[2]) + ' n=' + it[3] })));
      if (it[2]) {
        var a = LW + PW * it[2][0], b = LW + PW * it[2][1];
        add(svg, sv('line', { x1: a, x2: b, y1: y + 9, y2: y + 9, stroke: 'var(--c-ci)', 'stroke-width': 2 }),
          sv('line', { x1: a, x2: a, y1: y + 4, y2: y + 14, stroke: 'var(--c-ci)', 'stroke-width': 2 }),
          sv('line', { x1: b, x2: b, y1: y + 4, y2: y + 14, stroke: 'var(--c-ci)', 'stroke-width': 2 }));
      }
      add(svg, sv('text', { x: LW + PW + 6, y: y + 12, text: pct(it[1]) }));
    });
    var yb = H - 4;
    add(svg, sv('text', { x: LW, y: yb, text: '0%' }), sv('text', { x: LW + PW, y: yb, 'text-anchor': 'end', text: '100%' }));
    return figure(title, items.map(function (it) { return it[0] + ' ' + pct(it[1]) + ' ' + ci(it[2]); }).join('; '), svg);
  }
  function barChart(title, items, unit) {
    var W = 420, LW = 130, H = 22 * items.length + 8, PW = W - LW - 80;
    var top = Math.max.apply(null, items.map(function (it) { return it[1]; })) || 1;
    var svg = sv('svg', { width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    items.forEach(function (it, i) {
      var y = 4 + i * 22;
      add(svg, sv('text', { x: 0, y: y + 12, text: it[0].length > 20 ? it[0].slice(0, 19) + '…' : it[0] }),
        sv('rect', { x: LW, y: y + 2, width: PW * it[1] / top, height: 14, fill: it[2] || 'var(--c-bar)' }),
        sv('text', { x: LW + PW * it[1] / top + 4, y: y + 12, text: unit(it[1]) }));
    });
    return figure(title, items.map(function (it) { return it[0] + ' ' + unit(it[1]); }).join('; '), svg);
  }
  function latencyChart() {
    var ds = [];
    for (var i = 0; i < C.length; i++) { var d = C[i][F.duration_s]; if (d != null) ds.push(d); }
    if (!ds.length) return null;
    ds.sort(function (a, b) { return a - b; });
    var hi = ds[Math.floor(0.99 * (ds.length - 1))] || ds[ds.length - 1] || 1, bins = new Array(20).fill(0);
    ds.forEach(function (d) { bins[Math.min(19, Math.floor(20 * d / (hi || 1)))]++; });
    var top = Math.max.apply(null, bins) || 1, W = 420;
    var svg = sv('svg', { width: W, height: 120, viewBox: '0 0 ' + W + ' 120' });
    bins.forEach(function (n, b) {
      var h = 90 * n / top;
      add(svg, sv('rect', { x: b * 21, y: 96 - h, width: 19, height: h, fill: 'var(--c-bar)' },
        sv('title', { text: num(b * hi / 20, 2) + '–' + num((b + 1) * hi / 20, 2) + ' s: ' + n })));
    });
    add(svg, sv('text', { x: 0, y: 112, text: '0 s' }), sv('text', { x: W, y: 112, 'text-anchor': 'end', text: '≥ ' + num(hi, 2) + ' s' }));
    return figure('Task latency per case', 'median ' + num(ds[Math.floor(ds.length / 2)]) + ' s, p99 ' + num(hi) + ' s', svg);
  }
  function renderCharts(host) {
    var charts = el('div', { class: 'charts' });
    J.forEach(function (_, j) { add(charts, judgeChart(j)); });
    add(host, el('h2', { text: 'Status shares and score distribution per judge' }),
      el('p', { class: 'muted', text: 'Top bar: statuses (pass, fail, abstain, error); bars: scores in ten bins.' }), charts);
    var more = el('div', { class: 'charts' });
    var tags = Object.keys(D.tags || {});
    if (tags.length) {
      add(more, intervalChart('Verdict pass rate per tag (95% Wilson interval)', tags.map(function (t) {
        var x = D.tags[t]; return [t, x.pass_rate, x.ci95, x.decided];
      })));
    }
    var cas = SUM.cascade;
    if (cas && cas.n) {
      var items = Object.keys(cas.by_tier).map(function (t) { return ['tier ' + t, cas.by_tier[t].decided]; });
      items.push(['abstained', cas.abstained, statusColor(2)], ['errors', cas.errors, statusColor(3)]);
      add(more, barChart('Cascade: where cases were decided (coverage ' + pct(cas.coverage) + ')', items,
        function (v) { return v + ' (' + pct(v / cas.n) + ')'; }));
    }
    add(more, latencyChart());
    var lat = D.latency || {};
    if (Object.keys(lat).length) {
      add(more, barChart('Judge latency p95 (s)', Object.keys(lat).map(function (n) { return [n, lat[n][1]]; }),
        function (v) { return num(v) + ' s'; }));
    }
    var cost = SUM.cost;
    if (cost && cost.calls) {
      var by = cost.by_judge || {};
      add(more, barChart('Cost per judge (USD)', Object.keys(by).map(function (n) {
        return [n, by[n].usd == null ? by[n].priced_usd : by[n].usd];
      }), function (v) { return '$' + num(v, 4); }));
    }
    if (more.childNodes.length) add(host, el('h2', { text: 'Tags, cascade, latency and cost' }), more);
  }
  function renderOverview() {
    var host = document.getElementById('view-overview');
    add(host, el('h2', { text: 'Judges' }), judgeTable());
    var jt = juryTable();
    if (jt) add(host, el('h2', { text: 'Juries' }), jt);
    var cm = confusionTables();
    if (cm) {
      add(host, el('h2', { text: 'Agreement with human labels' }), el('p', { class: 'muted',
        text: 'Confusion matrices: rows are the human label, columns what the judge said as compared ' +
          'with it (its label, status or score); the diagonal agrees. ABSTAIN and ERROR judgments are not counted.' }), cm);
    }
    renderCharts(host);
    if (!D.results_file) add(host, el('p', { class: 'muted', text: 'No results.jsonl beside summary.json: no cases to show.' }));
  }

  // ------------------------------------------------------------------ case table (virtualised)
  var flips = {}; // judge index (or -1 = verdict) -> Map(row -> [before, after, reasonBefore])
  if (B && B.compared) {
    Object.keys(B.flips).forEach(function (name) {
      var m = new Map();
      B.flips[name].forEach(function (f) { m.set(f[0], [f[1], f[2], f[3]]); });
      flips[J.indexOf(name)] = m;
    });
    var vm = new Map();
    B.verdict_flips.forEach(function (f) { vm.set(f[0], [f[1], f[2], null]); });
    flips[-1] = vm;
  }
  var state = { judge: -1, status: '', tag: '', q: '', sort: null, dir: 1, view: null, active: 0 };
  var hay = null;
  var shownJudges = J.slice(0, 8);
  var widths = [160, 150, 70, 70, 140].concat(shownJudges.map(function () { return 150; }));
  var cols = widths.map(function (w) { return w + 'px'; }).join(' ');
  var fullWidth = widths.reduce(function (a, b) { return a + b; }, 0) + 'px';
  var viewport, spacer, head, countEl;

  function statusOf(i) {
    if (state.judge < 0) return C[i][F.status];
    var g = judgment(C[i], state.judge);
    return g ? g[0] : -1;
  }
  function scoreOf(i) {
    if (state.judge < 0) return field(C[i], 'score');
    var g = judgment(C[i], state.judge);
    return g && g[1] != null ? g[1] : null;
  }
  function haystack() {
    if (hay) return hay;
    hay = new Array(C.length);
    for (var i = 0; i < C.length; i++) {
      var r = C[i];
      hay[i] = (r[0] + '\n' + text(field(r, 'input')) + '\n' + text(field(r, 'output')) + '\n' +
        text(field(r, 'error'))).toLowerCase();
    }
    return hay;
  }
  function applyFilters() {
    var out = [], st = state.status, tag = state.tag === '' ? -1 : Number(state.tag);
    var q = state.q.trim().toLowerCase(), h = q ? haystack() : null;
    var fl = flips[state.judge];
    for (var i = 0; i < C.length; i++) {
      if (st === 'flip') { if (!fl || !fl.has(i)) continue; }
      else if (st !== '' && statusOf(i) !== Number(st)) continue;
      if (tag >= 0 && (C[i][F.tags] || []).indexOf(tag) < 0) continue;
      if (h && h[i].indexOf(q) < 0) continue;
      out.push(i);
    }
    var view = Int32Array.from(out);
    if (state.sort) {
      var key = sortKey(state.sort), dir = state.dir;
      var keys = new Array(C.length);
      view.forEach(function (i) { keys[i] = key(i); });
      view.sort(function (a, b) {
        var x = keys[a], y = keys[b];
        if (x === y) return a - b;
        if (x == null) return 1;
        if (y == null) return -1;
        return (x < y ? -1 : 1) * dir;
      });
    }
    state.view = view;
    state.active = Math.min(state.active, Math.max(0, view.length - 1));
    spacer.style.height = view.length * ROWH + 'px';
    viewport.setAttribute('aria-rowcount', view.length + 1);
    countEl.textContent = view.length.toLocaleString() + ' of ' + C.length.toLocaleString() + ' cases';
    paint();
  }
  function sortKey(col) {
    if (col === 'id') return function (i) { return C[i][0]; };
    if (col === 'status') return function (i) { return statusOf(i); };
    if (col === 'score') return function (i) { return scoreOf(i); };
    if (col === 'duration') return function (i) { return field(C[i], 'duration_s'); };
    if (col === 'tags') return function (i) { return (C[i][F.tags] || []).map(str).join(','); };
    var j = Number(col.slice(2));
    return function (i) { var g = judgment(C[i], j); return g ? g[0] : null; };
  }
  function cell(kid, cls) { return el('div', { role: 'gridcell', class: cls }, kid); }
  function judgeCell(i, j) {
    var g = judgment(C[i], j), f = flips[j] && flips[j].get(i);
    if (!g) return cell(el('span', { class: 'muted', text: '–' }));
    return cell(f ? [chip(f[0]), ' → ', chip(g[0])] : chip(g[0]), f ? 'flip' : null);
  }
  function paint() {
    var view = state.view, headH = head.offsetHeight;
    var top = Math.max(0, viewport.scrollTop - headH), h = viewport.clientHeight || 400;
    var first = Math.max(0, Math.floor(top / ROWH) - 5), last = Math.min(view.length, Math.ceil((top + h) / ROWH) + 5);
    var frag = document.createDocumentFragment();
    for (var k = first; k < last; k++) {
      var i = view[k], r = C[i], st = statusOf(i), vf = flips[state.judge] && flips[state.judge].get(i);
      var row = el('div', {
        role: 'row', class: 'grow' + (k === state.active ? ' active' : ''), id: 'row-' + k,
        'aria-rowindex': k + 2, 'data-row': i, style: 'top:' + k * ROWH + 'px;grid-template-columns:' + cols,
        'aria-selected': k === state.active ? 'true' : 'false'
      },
      cell(r[0]),
      cell(st < 0 ? el('span', { class: 'muted', text: 'not run' }) : (vf ? [chip(vf[0]), '→', chip(st)] : chip(st)), vf ? 'flip' : null),
      cell(num(scoreOf(i))), cell(num(field(r, 'duration_s'), 2)),
      cell((r[F.tags] || []).map(str).join(', ')));
      shownJudges.forEach(function (_, j) { add(row, judgeCell(i, j)); });
      frag.appendChild(row);
    }
    spacer.replaceChildren(frag);
    if (view.length) viewport.setAttribute('aria-activedescendant', 'row-' + state.active);
    else viewport.removeAttribute('aria-activedescendant');
  }
  function moveActive(k) {
    var n = state.view.length;
    if (!n) return;
    state.active = Math.max(0, Math.min(n - 1, k));
    var y = state.active * ROWH, headH = head.offsetHeight;
    if (y < viewport.scrollTop) viewport.scrollTop = y;
    else if (y + ROWH + headH > viewport.scrollTop + viewport.clientHeight) {
      viewport.scrollTop = y + ROWH + headH - viewport.clientHeight;
    }
    paint();
  }
  function headButton(label, col) {
    var b = el('button', { type: 'button', 'data-sort': col, text: label, title: 'Sort by ' + label,
      onclick: function () {
        if (state.sort === col) state.dir = -state.dir; else { state.sort = col; state.dir = 1; }
        head.querySelectorAll('[role=columnheader]').forEach(function (h) { h.setAttribute('aria-sort', 'none'); });
        b.parentNode.setAttribute('aria-sort', state.dir > 0 ? 'ascending' : 'descending');
        applyFilters();
      } });
    return el('div', { role: 'columnheader', 'aria-sort': 'none' }, b);
  }
  function select(label, name, options, onchange) {
    return el('label', null, label, el('select', { name: name, onchange: onchange }, options.map(function (o) {
      return el('option', { value: o[0], text: o[1] });
    })));
  }
  function renderCases() {
    var host = document.getElementById('view-cases');
    var statusOpts = [['', 'any']].concat(ST.map(function (w, c) { return [String(c), w.replace('_', ' ')]; }));
    if (B && B.compared) statusOpts.push(['flip', 'flipped vs baseline']);
    var tagOpts = [['', 'any']].concat(Object.keys(D.tags || {}).map(function (t) { return [String(S.indexOf(t)), t]; }));
    var timer = null;
    countEl = el('span', { class: 'count', role: 'status', 'aria-live': 'polite' });
    add(host, el('div', { class: 'controls', role: 'search', 'aria-label': 'Filter cases' },
      select('Judge', 'judge', [['-1', '(verdict)']].concat(J.map(function (n, j) { return [String(j), n]; })),
        function (e) { state.judge = Number(e.target.value); applyFilters(); }),
      select('Status', 'status', statusOpts, function (e) { state.status = e.target.value; applyFilters(); }),
      select('Tag', 'tag', tagOpts, function (e) { state.tag = e.target.value; applyFilters(); }),
      el('label', null, 'Search id, input, output', el('input', { type: 'search', name: 'q', placeholder: 'text…',
        oninput: function (e) {
          clearTimeout(timer);
          timer = setTimeout(function () { state.q = e.target.value; applyFilters(); }, 120);
        } })),
      countEl));
    head = el('div', { role: 'row', class: 'ghead', 'aria-rowindex': 1,
      style: 'grid-template-columns:' + cols + ';width:' + fullWidth },
      headButton('id', 'id'), headButton('status', 'status'), headButton('score', 'score'),
      headButton('time s', 'duration'), headButton('tags', 'tags'),
      shownJudges.map(function (n, j) { return headButton(n, 'j:' + j); }));
    spacer = el('div', { class: 'spacer', role: 'rowgroup', style: 'width:' + fullWidth });
    viewport = el('div', { class: 'viewport grid', role: 'grid', tabindex: 0,
      'aria-label': 'Cases (arrow keys move, Enter opens a case)', 'aria-colcount': 5 + shownJudges.length },
      el('div', { role: 'rowgroup', class: 'ghead-group' }, head), spacer);
    if (J.length > shownJudges.length) add(host, el('p', { class: 'muted', text: 'Columns show the first 8 judges; choose another with Judge.' }));
    add(host, viewport);
    var raf = 0;
    viewport.addEventListener('scroll', function () {
      if (!raf) raf = requestAnimationFrame(function () { raf = 0; paint(); });
    });
    viewport.addEventListener('click', function (e) {
      var row = e.target.closest('.grow');
      if (!row) return;
      state.active = Number(row.id.slice(4));
      paint();
      openCase(Number(row.getAttribute('data-row')));
    });
    viewport.addEventListener('keydown', function (e) {
      var page = Math.max(1, Math.floor(viewport.clientHeight / ROWH) - 1);
      var moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
      if (e.key in moves) moveActive(state.active + moves[e.key]);
      else if (e.key === 'Home') moveActive(0);
      else if (e.key === 'End') moveActive(state.view.length - 1);
      else if (e.key === 'Enter' && state.view.length) openCase(state.view[state.active]);
      else return;
      e.preventDefault();
    });
    applyFilters();
  }

  // ------------------------------------------------------------------ case view
  var dialog = document.getElementById('case');
  function section(title, value) {
    if (value == null || value === '') return null;
    return [el('h3', { text: title }), el('pre', { text: text(value) })];
  }
  var DIFF_MARKS = { match: '=', arguments: '~', missing: '−', extra: '+' };
  var DIFF_WORDS = { match: 'as expected', arguments: 'other arguments', missing: 'missing', extra: 'extra' };
  function toolDiff(d, name) {
    // d = [omitted, [op, step, reference step, expected, actual, differing keys], ...]
    var ops = D.diff_ops || [];
    var rows = d.slice(1).map(function (e) {
      var op = ops[e[0]];
      return el('tr', { class: 'd-' + op },
        el('td', { text: e[1] != null ? String(e[1]) : '–' }),
        el('td', { text: e[2] != null ? String(e[2]) : '–' }),
        el('td', null, el('span', { class: 'dmark', 'aria-hidden': 'true', text: DIFF_MARKS[op] + ' ' }), DIFF_WORDS[op],
          e[5] != null ? ' (' + str(e[5]) + ')' : ''),
        el('td', null, el('code', { text: str(e[3]) })),
        el('td', null, el('code', { text: str(e[4]) })));
    });
    return [el('h4', { text: 'Tool calls: expected vs actual' }),
      el('div', { class: 'wrap' }, el('table', { class: 't tdiff', 'aria-label': 'Tool calls of ' + name + ': expected vs actual' },
        el('thead', null, el('tr', null, ['step', 'reference step', 'difference', 'expected', 'actual'].map(function (h) {
          return el('th', { scope: 'col', text: h });
        }))),
        el('tbody', null, rows))),
      d[0] ? el('p', { class: 'muted', text: '… and ' + d[0] + ' more calls not listed' }) : null];
  }
  // A short traceback (innermost last): the user's own frames, marked '> ', are highlighted.
  function tracebackBlock(title, value, tag) {
    if (value == null || value === '') return null;
    var lines = text(value).split('\n');
    var mine = lines.some(function (l) { return l.slice(0, 2) === '> '; });
    return [el(tag, { text: title + (mine ? ' (innermost last; highlighted: your code)' : '') }),
      el('pre', { class: 'tb' }, lines.map(function (l, k) {
        var user = l.slice(0, 2) === '> ';
        return [k ? '\n' : '', user ? el('mark', { class: 'user', text: l }) : l];
      }))];
  }
  function judgmentBox(r, i, j) {
    var g = judgment(r, j), f = flips[j] && flips[j].get(i);
    if (!g) return null;
    var dl = el('dl', { class: 'kv' });
    function kv(k, v) { if (v != null && v !== '') add(dl, el('dt', { text: k }), el('dd', null, v)); }
    kv('score', g[1] == null ? null : num(g[1]));
    kv('label', str(g[4]) || null);
    kv('confidence', g[5] == null ? null : num(g[5]));
    kv('tier', str(g[9]) || null);
    kv('error type', str(g[7]) || null);
    kv('time', g[8] == null ? null : num(g[8]) + ' s');
    kv('reasoning', str(g[2]) || null);
    if (f) kv('baseline', [chip(f[0]), ' ', str(f[2]) || '']);
    var checks = (g[3] || []).map(function (c) {
      return el('li', null, c[1] ? '✓ ' : '✗ ', el('strong', { text: str(c[0]) }), c[2] != null ? ': ' + str(c[2]) : '');
    });
    return el('div', { class: 'judgment' + (f ? ' flip' : ''), role: 'group', 'aria-label': 'Judge ' + J[j] },
      el('h3', null, J[j] + ' ', f ? [chip(f[0]), ' → '] : null, chip(g[0]), f ? ' (flipped)' : null), dl,
      checks.length ? [el('h4', { text: 'Checks' }), el('ul', null, checks)] : null,
      g[11] ? toolDiff(g[11], J[j]) : null,
      g[6] != null ? [el('h4', { text: 'Metadata' }), el('pre', { text: pretty(S[g[6]]) })] : null,
      tracebackBlock('Traceback', g[10], 'h4'));
  }
  function tierPath(tiers) {
    if (!tiers) return null;
    if (typeof tiers === 'string') return section('Tier path', tiers);
    return [el('h3', { text: 'Tier path' }), el('ol', null, tiers.map(function (t) {
      return el('li', null, t.name + ' (' + t.policy + '): ', t.status ? chipWord(t.status) : 'failed',
        t.confidence != null ? ' confidence ' + num(t.confidence) : '', t.stopped ? ' · stopped here' : ' · escalated',
        t.failure ? ' · ' + t.failure : '');
    }))];
  }
  function openCase(i) {
    var r = C[i], pos = state.view ? Array.prototype.indexOf.call(state.view, i) : -1;
    var vf = flips[-1] && flips[-1].get(i);
    dialog.replaceChildren(
      el('div', { class: 'dhead' },
        el('h2', { id: 'case-title' }, 'Case ' + r[0] + ' ', vf ? [chip(vf[0]), ' → '] : null, chip(r[F.status])),
        el('button', { class: 'b', type: 'button', disabled: pos <= 0, 'aria-label': 'Previous case',
          onclick: function () { openCase(state.view[pos - 1]); }, text: '‹ Prev' }),
        el('button', { class: 'b', type: 'button', disabled: pos < 0 || pos >= state.view.length - 1, 'aria-label': 'Next case',
          onclick: function () { openCase(state.view[pos + 1]); }, text: 'Next ›' }),
        el('button', { class: 'b', type: 'button', 'aria-label': 'Close case', onclick: function () { dialog.close(); }, text: 'Close' })),
      el('div', { class: 'dbody' },
        el('p', { class: 'muted', text: 'score ' + num(field(r, 'score')) + ' · time ' + num(field(r, 'duration_s'), 3) +
          ' s · tags ' + ((r[F.tags] || []).map(str).join(', ') || '-') +
          (field(r, 'human') != null ? ' · human label ' + text(field(r, 'human')) : '') }),
        section('Task error', field(r, 'error')), tracebackBlock('Traceback', field(r, 'traceback'), 'h3'),
        section('Input', field(r, 'input')), section('Output', field(r, 'output')),
        section('Expected', field(r, 'expected')),
        el('h3', { text: 'Judgments' }), J.map(function (_, j) { return judgmentBox(r, i, j); }),
        tierPath(field(r, 'tiers')), section('Metadata', field(r, 'metadata'))));
    if (!dialog.open) { opener = document.activeElement; dialog.showModal(); }
    dialog.querySelector('button[aria-label="Close case"]').focus();
  }
  var opener = null; // the element focus returns to when the case view closes
  dialog.addEventListener('close', function () {
    if (opener && opener.isConnected && opener.offsetParent !== null) opener.focus();
    else if (viewport) viewport.focus();
  });

  // ------------------------------------------------------------------ comparison view
  function renderCompare() {
    var host = document.getElementById('view-compare');
    add(host, el('h2', { text: 'Compared with baseline ' + B.run_id }),
      el('p', { class: 'muted', text: 'baseline: ' + B.path + (B.same_dataset ? '' : ' · note: the runs read different datasets') }));
    function delta(a, b) { return a == null || b == null ? '-' : ((b - a) >= 0 ? '+' : '') + (b - a).toFixed(3); }
    var names = Object.keys(SUM.judges);
    var rows = names.map(function (n) {
      var s = SUM.judges[n], b = B.judges[n] || {}, fl = (B.flips || {})[n] || [];
      var down = fl.filter(function (f) { return f[1] === 0; }).length;
      return [n, num(b.mean), num(s.mean), delta(b.mean, s.mean), num(b.pass_rate), num(s.pass_rate),
        delta(b.pass_rate, s.pass_rate), fl.length, down, fl.length - down];
    });
    var changes = table(['judge', 'mean (baseline)', 'mean', 'Δ', 'pass rate (baseline)', 'pass rate', 'Δ', 'flips',
      'pass → not pass', 'not pass → pass'], rows, 'Per-judge changes against the baseline');
    changes.querySelectorAll('tbody tr').forEach(function (tr, k) { if (rows[k][7] > 0) tr.classList.add('flip'); });
    add(host, changes);
    if (!B.compared) { add(host, el('p', { text: 'Flipped cases not compared: results.jsonl missing on one side.' })); return; }
    add(host, el('p', { class: 'muted', text: 'Cases only in the baseline: ' + B.only_before + '; only in this run: ' + B.only_after + '.' }));
    function flipList(title, list, withReason) {
      var shown = list.slice(0, 500);
      return el('details', { open: list.length > 0 && list.length <= 50 },
        el('summary', null, el('strong', { text: title }), ' (' + list.length + ')'),
        table(['case', 'baseline', 'now', withReason ? 'reasoning: baseline → now' : ''], shown.map(function (f) {
          var j = J.indexOf(withReason), g = j >= 0 ? judgment(C[f[0]], j) : null;
          return [el('button', { class: 'linkrow', type: 'button', text: C[f[0]][0], onclick: function () { openCase(f[0]); } }),
            chip(f[1]), chip(f[2]), withReason ? (str(f[3]) + (g ? ' → ' + str(g[2]) : '')) : ''];
        }), title),
        list.length > shown.length ? el('p', { class: 'muted', text: '… and ' + (list.length - shown.length) + ' more (Cases tab, Status: flipped vs baseline)' }) : null);
    }
    add(host, el('h2', { text: 'Flipped cases' }), flipList('verdict', B.verdict_flips, null));
    names.concat(Object.keys(B.flips).filter(function (n) { return names.indexOf(n) < 0; })).forEach(function (n) {
      if (B.flips[n]) add(host, flipList(n, B.flips[n], n));
    });
  }

  // ------------------------------------------------------------------ tabs
  function renderTabs() {
    var tabs = [['overview', 'Overview'], ['cases', 'Cases (' + C.length.toLocaleString() + ')']];
    if (B) tabs.push(['compare', 'Comparison']);
    var bar = document.getElementById('tabs');
    var buttons = tabs.map(function (t) {
      return el('button', { role: 'tab', id: 'tab-' + t[0], type: 'button', 'aria-controls': 'view-' + t[0],
        'aria-selected': 'false', tabindex: -1, text: t[1], onclick: function () { show(t[0]); } });
    });
    function show(name) {
      buttons.forEach(function (b, k) {
        var on = tabs[k][0] === name;
        b.setAttribute('aria-selected', on ? 'true' : 'false');
        b.tabIndex = on ? 0 : -1;
        document.getElementById('view-' + tabs[k][0]).hidden = !on;
        if (on) b.focus({ preventScroll: true });
      });
      if (name === 'cases') paint();
    }
    bar.addEventListener('keydown', function (e) {
      var k = buttons.indexOf(document.activeElement);
      if (k < 0) return;
      if (e.key === 'ArrowRight') show(tabs[(k + 1) % tabs.length][0]);
      else if (e.key === 'ArrowLeft') show(tabs[(k + tabs.length - 1) % tabs.length][0]);
      else return;
      e.preventDefault();
    });
    add(bar, buttons);
    buttons[0].setAttribute('aria-selected', 'true');
    buttons[0].tabIndex = 0;
  }

  renderHeader();
  renderTabs();
  renderOverview();
  renderCases();
  if (B) renderCompare();
  document.body.setAttribute('data-ready', '1');
})();
