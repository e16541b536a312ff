/*
 * otelprofd flame graph: reads the JSON in #otelprofd-data (written by daemon/output/flame_tree.c)
 * and draws an icicle (root on top) as absolutely placed <div>s, only those at least a pixel wide,
 * so a profile of a million nodes draws a few thousand elements. Click zooms, the search highlights
 * and sums what it matches, the select filters by process or service, the table ranks functions.
 * The URL fragment keeps the state: #view=1&search=NAME&process=NAME.
 */
(function () {
  'use strict';
  var t0 = performance.now();
  var D = JSON.parse(document.getElementById('otelprofd-data').textContent);
  var tParsed = performance.now();
  var S = D.strings, F = D.frames, NF = F.length / 5;
  var ROW = 17, MINPX = 1;

  function $(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  function esc(s) {
    return s.replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; });
  }
  function fname(fr) { return S[F[fr * 5]]; }
  function fmodule(fr) { return S[F[fr * 5 + 1]]; }
  function ffile(fr) { return S[F[fr * 5 + 2]]; }
  function fline(fr) { return F[fr * 5 + 3]; }
  function ftype(fr) { return S[F[fr * 5 + 4]]; }

  /* Colours by frame type: a hue range each, the shade picked by the name (stable across files). */
  var HUES = { kernel: [20, 40], native: [0, 18], inlined: [165, 185], go: [195, 212], python: [90, 125],
    cpython: [90, 125], process: [0, 0], root: [0, 0] };
  var colorCache = [];
  function hash(s) {
    var h = 2166136261;
    for (var i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return (h >>> 0) / 4294967296;
  }
  function frameColor(fr) {
    var c = colorCache[fr];
    if (c) return c;
    var t = ftype(fr), r = hash(fname(fr)), hue = HUES[t] || [265, 295];
    if (t === 'process' || t === 'root') c = 'hsl(0,0%,' + (78 + 8 * r).toFixed(0) + '%)';
    else c = 'hsl(' + (hue[0] + (hue[1] - hue[0]) * r).toFixed(0) + ',' + (t === 'native' ? 75 : 62) + '%,' +
      (t === 'kernel' ? 58 : 62 + 10 * r).toFixed(0) + '%)';
    colorCache[fr] = c;
    return c;
  }

  /* A view's tree, decoded from flame_tree.c's string: per node in preorder, levels up from the
   * previous node to its parent and its frame, in base64url digits; self values sparse. */
  var DIGIT = new Int8Array(128);
  'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('').forEach(function (c, i) {
    DIGIT[c.charCodeAt(0)] = i;
  });
  /* Sparse [distance from the previous node, value, ...] scattered into a node array. */
  function scatter(list, out) {
    for (var j = 0, k = 0; j < list.length; j += 2) { k += list[j]; out[k] = list[j + 1]; }
    return out;
  }
  function prepare(V) {
    var n = V.n, k = V.k, t = V.t, pos = 0, i, j, x;
    var par = new Int32Array(n), size = new Int32Array(n).fill(1), depth = new Uint16Array(n);
    var fr = new Int32Array(n), path = new Int32Array(65536), d = 0;
    /* Totals start as self values and are added up to the parent as each node's subtree ends
     * (in preorder, when a later node is not below it): one pass, no second walk. */
    var a = scatter(V.v, new Float64Array(n)), b = V.diff ? scatter(V.w, new Float64Array(n)) : null;
    par[0] = -1;
    for (i = 1; i < n; i++) {
      var up = DIGIT[t.charCodeAt(pos++)];
      if (up === 63) { up = (DIGIT[t.charCodeAt(pos)] << 12) | (DIGIT[t.charCodeAt(pos + 1)] << 6) | DIGIT[t.charCodeAt(pos + 2)]; pos += 3; }
      var nd = d + 1 - up;
      for (; d >= nd; d--) {
        x = path[d];
        a[path[d - 1]] += a[x]; size[path[d - 1]] += size[x];
        if (b) b[path[d - 1]] += b[x];
      }
      d = nd;
      var f = DIGIT[t.charCodeAt(pos++)];
      for (j = 1; j < k; j++) f = (f << 6) | DIGIT[t.charCodeAt(pos++)];
      fr[i] = f;
      depth[i] = d;
      par[i] = path[d - 1];
      path[d] = i;
    }
    for (; d >= 1; d--) {
      x = path[d];
      a[path[d - 1]] += a[x]; size[path[d - 1]] += size[x];
      if (b) b[path[d - 1]] += b[x];
    }
    V.f = fr;
    var wt = a;
    if (b) {
      /* A diff lays out the mean of the two normalized shares: both removed and added code show. */
      var ta = V.total[0] || 1, tb = V.total[1] || 1;
      wt = new Float64Array(n);
      for (i = 0; i < n; i++) wt[i] = (a[i] / ta + b[i] / tb) / 2;
    }
    var procs = [];
    for (i = 1; i < n; i += size[i]) procs.push(i);
    return { V: V, n: n, par: par, size: size, depth: depth, a: a, b: b, wt: wt, procs: procs };
  }

  var views = D.views.map(function () { return null; });
  var state = { view: 0, zoom: 0, history: [], filter: '', search: '' };
  var T = null, allowed = null, rootW = 0, matched = null;

  function applyFilter() {
    allowed = new Uint8Array(T.n);
    rootW = 0;
    var f = state.filter;
    T.procs.forEach(function (i) {
      var fr = T.V.f[i], ok = !f || f === 'p:' + fname(fr) || f === 's:' + fmodule(fr);
      allowed[i] = ok ? 1 : 0;
      if (ok) rootW += T.wt[i];
    });
  }
  function W(i) { return i === 0 ? rootW : T.wt[i]; }
  /* The depth-1 (process) node a node is under. */
  function procOf(i) {
    while (i > 0 && T.depth[i] > 1) i = T.par[i];
    return i;
  }
  /* A node's own value: its total less its children's. */
  function selfOf(i) {
    var v = slotValue(i, 0);
    for (var c = i + 1; c < i + T.size[i]; c += T.size[c]) if (i || allowed[c]) v -= T.a[c];
    return v;
  }
  /* Values of a node's slot (0: the only or base one, 1: the diff's new one), filtered at the root. */
  function slotValue(i, s) {
    var arr = s ? T.b : T.a;
    if (i !== 0) return arr[i];
    var sum = 0;
    T.procs.forEach(function (j) { if (allowed[j]) sum += arr[j]; });
    return sum;
  }
  function fmtValue(x, unit) {
    if (unit === 'ns') return x >= 1e9 ? (x / 1e9).toFixed(2) + ' s' : (x / 1e6).toFixed(x >= 1e7 ? 0 : 2) + ' ms';
    if (unit === 'bytes') return x >= 1073741824 ? (x / 1073741824).toFixed(2) + ' GiB' :
      x >= 1048576 ? (x / 1048576).toFixed(1) + ' MiB' : x >= 1024 ? (x / 1024).toFixed(1) + ' KiB' : Math.round(x) + ' B';
    return Math.round(x).toLocaleString('en') + ' ' + unit;
  }
  function pct(x) { return (100 * x).toFixed(x >= 0.1 || x === 0 ? 1 : 2) + '%'; }

  /* ---- page ---- */
  var body = document.body;
  var header = $('header');
  header.appendChild($('h1', null, D.title || 'otelprofd'));
  header.appendChild($('div', { class: 'sub' }, D.subtitle || ''));
  body.appendChild(header);
  var bar = $('div', { class: 'bar' });
  var tabs = $('span', { id: 'views' });
  D.views.forEach(function (V, k) {
    var btn = $('button', { 'data-view': k }, V.name);
    btn.onclick = function () { setView(k); };
    tabs.appendChild(btn);
  });
  bar.appendChild(tabs);
  var backBtn = $('button', { id: 'back', title: 'Back to the previous zoom (Backspace)' }, 'Back');
  var resetBtn = $('button', { id: 'reset', title: 'Show everything (Escape)' }, 'Reset zoom');
  var filterSel = $('select', { id: 'filter', title: 'Filter by process or service' });
  var searchIn = $('input', { id: 'search', type: 'search', placeholder: 'Search (text or /regex/)' });
  var matchedEl = $('span', { id: 'matched' });
  bar.appendChild(backBtn);
  bar.appendChild(resetBtn);
  bar.appendChild(filterSel);
  bar.appendChild(searchIn);
  bar.appendChild(matchedEl);
  var legend = $('span', { class: 'legend', id: 'legend' });
  bar.appendChild(legend);
  body.appendChild(bar);
  if (D.dropped) body.appendChild($('div', { class: 'note' }, D.dropped + ' stacks were left out (bound of the tree).'));
  var crumbs = $('div', { class: 'crumbs', id: 'crumbs' });
  body.appendChild(crumbs);
  var flame = $('div', { id: 'flame' });
  body.appendChild(flame);
  var tip = $('div', { id: 'tip' });
  body.appendChild(tip);
  var topTitle = $('h2', null, 'Top functions');
  body.appendChild(topTitle);
  var table = $('table', { id: 'top' });
  body.appendChild(table);

  function fillFilter() {
    var byProc = {}, bySvc = {};
    T.procs.forEach(function (i) {
      var fr = T.V.f[i];
      byProc[fname(fr)] = (byProc[fname(fr)] || 0) + T.wt[i];
      if (fmodule(fr)) bySvc[fmodule(fr)] = (bySvc[fmodule(fr)] || 0) + T.wt[i];
    });
    var html = '<option value="">All processes</option>';
    Object.keys(bySvc).sort(function (x, y) { return bySvc[y] - bySvc[x]; }).forEach(function (s) {
      html += '<option value="s:' + esc(s) + '">service: ' + esc(s) + '</option>';
    });
    Object.keys(byProc).sort(function (x, y) { return byProc[y] - byProc[x]; }).forEach(function (p) {
      html += '<option value="p:' + esc(p) + '">' + esc(p) + '</option>';
    });
    filterSel.innerHTML = html;
    filterSel.value = state.filter;
    if (filterSel.value !== state.filter) state.filter = '';
  }

  function fillLegend() {
    var seen = {};
    for (var fr = 1; fr < NF; fr++) seen[ftype(fr)] = 1;
    var html = '';
    if (T.V.diff) {
      html = '<span><i style="background:#e03030"></i>grew</span><span><i style="background:#3060e0"></i>shrank</span>';
    } else {
      Object.keys(seen).filter(function (t) { return t !== 'root' && t !== 'process'; }).sort().forEach(function (t) {
        var h = HUES[t] || [265, 295];
        html += '<span><i style="background:hsl(' + h[0] + ',70%,60%)"></i>' + esc(t) + '</span>';
      });
    }
    legend.innerHTML = html;
  }

  /* Growth red, shrinkage blue, by how much the node's share of its profile moved. */
  var maxDelta = 0;
  function delta(i) {
    var ta = T.V.total[0] || 1, tb = T.V.total[1] || 1;
    return slotValue(i, 1) / tb - slotValue(i, 0) / ta;
  }
  function diffColor(d) {
    var k = maxDelta ? Math.min(1, Math.abs(d) / maxDelta) : 0, c = Math.round(235 - 190 * Math.sqrt(k));
    if (Math.abs(d) < 1e-9) return 'rgb(225,225,225)';
    return d > 0 ? 'rgb(255,' + c + ',' + c + ')' : 'rgb(' + c + ',' + c + ',255)';
  }

  /* ---- drawing ---- */
  function draw() {
    var width = flame.clientWidth || 1000, out = [], maxDepth = 0, z = state.zoom;
    var zw = W(z) || 1, zoomDepth = T.depth[z];
    function box(i, x, w, d) {
      var fr = T.V.f[i], cls = 'f', bg, extra = '';
      if (T.V.diff) {
        var dl = delta(i);
        bg = diffColor(dl);
        cls += Math.abs(dl) < 1e-9 ? ' same' : dl > 0 ? ' up' : ' down';
        extra = ' data-delta="' + dl.toFixed(6) + '"';
      } else bg = frameColor(fr);
      if (matched && matched[fr]) cls += ' m';
      if (d < zoomDepth) cls += ' dim';
      var label = w * width >= 24 ? esc(i === 0 ? 'all' : fname(fr)) : '';
      out.push('<div class="' + cls + '" data-i="' + i + '"' + extra + ' style="left:' + (100 * x).toFixed(4) +
        '%;width:' + (100 * w).toFixed(4) + '%;top:' + d * ROW + 'px;background:' + bg + '">' + label + '</div>');
      if (d > maxDepth) maxDepth = d;
    }
    function walk(i, x, d) {
      var w = W(i) / zw;
      if (w * width < MINPX) return;
      box(i, x, w, d);
      var end = i + T.size[i];
      for (var c = i + 1; c < end; c += T.size[c]) {
        if (d === 0 && !allowed[c]) continue;
        walk(c, x, d + 1);
        x += W(c) / zw;
      }
    }
    /* The zoomed node's ancestors span the width above it. */
    for (var a = T.par[z]; a >= 0; a = T.par[a]) box(a, 0, 1, T.depth[a]);
    walk(z, 0, zoomDepth);
    flame.style.height = (maxDepth + 1) * ROW + 'px';
    flame.innerHTML = out.join('');
    var path = [];
    for (var p = z; p > 0; p = T.par[p]) path.unshift(fname(T.V.f[p]));
    crumbs.textContent = !rootW ? 'No samples in this view.' :
      path.length ? 'Zoomed: ' + path.join(' \u203a ') : 'Click a frame to zoom in.';
    backBtn.disabled = !state.history.length;
    resetBtn.disabled = z === 0;
  }

  /* ---- search ---- */
  function runSearch() {
    var q = state.search;
    matched = null;
    matchedEl.textContent = '';
    if (!q) return;
    var re = null;
    if (q.length > 2 && q[0] === '/' && q[q.length - 1] === '/') {
      try { re = new RegExp(q.slice(1, -1)); } catch (e) { matchedEl.textContent = 'bad regex'; return; }
    }
    var ql = q.toLowerCase();
    matched = new Uint8Array(NF);
    for (var fr = 1; fr < NF; fr++) {
      var name = fname(fr);
      if (re ? re.test(name) : name.toLowerCase().indexOf(ql) >= 0) matched[fr] = 1;
    }
    /* Share matched: nodes that match, not counted again under a matching ancestor. */
    var sum = 0, sumA = 0, sumB = 0;
    for (var i = 1; i < T.n; i++) {
      if (T.depth[i] === 1 && !allowed[i]) { i += T.size[i] - 1; continue; }
      if (matched[T.V.f[i]]) {
        sum += T.wt[i]; sumA += T.a[i]; if (T.b) sumB += T.b[i];
        i += T.size[i] - 1;
      }
    }
    var share = rootW ? sum / rootW : 0;
    matchedEl.setAttribute('data-share', share.toFixed(6));
    if (T.V.diff)
      matchedEl.textContent = 'Matched: base ' + pct(sumA / (slotValue(0, 0) || 1)) + ', new ' +
        pct(sumB / (slotValue(0, 1) || 1));
    else
      matchedEl.textContent = 'Matched: ' + pct(share) + ' (' + fmtValue(sumA, T.V.unit) + ')';
  }

  /* ---- top table ---- */
  function fillTable() {
    var nf = NF, selfA = new Float64Array(nf), selfB = new Float64Array(nf), tot = new Float64Array(nf);
    var open = new Int32Array(nf), stack = new Int32Array(65536), top = 0, seen = new Uint8Array(nf);
    for (var i = 1; i < T.n; i++) {
      while (top && i >= stack[top - 1] + T.size[stack[top - 1]])
        open[T.V.f[stack[--top]]]--;
      if (T.depth[i] === 1 && !allowed[i]) { i += T.size[i] - 1; continue; }
      var fr = T.V.f[i];
      if (T.depth[i] > 1) {
        /* A function counts once per stack in its total, however deep it recurses. */
        if (!open[fr]) tot[fr] += T.wt[i];
        seen[fr] = 1;
      }
      open[fr]++;
      stack[top++] = i;
    }
    /* Self values from the sparse lists: only nodes that have one. */
    var all = !state.filter;
    [[T.V.v, selfA], [T.V.w, selfB]].forEach(function (pair) {
      var list = pair[0], out = pair[1];
      for (var j = 0, k = 0; list && j < list.length; j += 2) {
        k += list[j];
        if (all || allowed[procOf(k)]) out[T.V.f[k]] += list[j + 1];
      }
    });
    var rows = [];
    for (var f = 1; f < nf; f++) if (seen[f]) rows.push(f);
    var ta = slotValue(0, 0) || 1, tb = T.b ? slotValue(0, 1) || 1 : 1, html;
    if (T.V.diff) {
      var d = function (f) { return selfB[f] / tb - selfA[f] / ta; };
      rows.sort(function (x, y) { return Math.abs(d(y)) - Math.abs(d(x)); });
      html = '<thead><tr><th class="n">Function</th><th class="n">Module</th><th>Base self</th><th>New self</th>' +
        '<th>Delta</th></tr></thead><tbody>';
      rows.slice(0, 200).forEach(function (f) {
        var dd = d(f);
        html += '<tr data-f="' + f + '"><td class="n">' + esc(fname(f)) + '</td><td class="n">' + esc(fmodule(f)) +
          '</td><td>' + pct(selfA[f] / ta) + '</td><td>' + pct(selfB[f] / tb) + '</td><td class="' +
          (dd > 0 ? 'up' : dd < 0 ? 'down' : '') + '">' + (dd > 0 ? '+' : '') + (100 * dd).toFixed(2) + '%</td></tr>';
      });
      topTitle.textContent = 'Changes by function (self share, sorted by |delta|)';
    } else {
      rows.sort(function (x, y) { return selfA[y] - selfA[x] || tot[y] - tot[x]; });
      html = '<thead><tr><th class="n">Function</th><th class="n">Module</th><th>Self</th><th>Self%</th>' +
        '<th>Total</th><th>Total%</th></tr></thead><tbody>';
      rows.slice(0, 200).forEach(function (f) {
        html += '<tr data-f="' + f + '"><td class="n">' + esc(fname(f)) + '</td><td class="n">' + esc(fmodule(f)) +
          '</td><td>' + fmtValue(selfA[f], T.V.unit) + '</td><td>' + pct(selfA[f] / ta) + '</td><td>' +
          fmtValue(tot[f], T.V.unit) + '</td><td>' + pct(tot[f] / (rootW || 1)) + '</td></tr>';
      });
      topTitle.textContent = 'Top functions (' + T.V.name + ', by self)';
    }
    table.innerHTML = html + '</tbody>';
  }

  /* ---- state ---- */
  function saveHash() {
    var h = [];
    if (state.view) h.push('view=' + state.view);
    if (state.filter) h.push('process=' + encodeURIComponent(state.filter));
    if (state.search) h.push('search=' + encodeURIComponent(state.search));
    history.replaceState(null, '', h.length ? '#' + h.join('&') : location.pathname + location.search);
  }
  var timing = {};
  function timed(name, fn) {
    var t = performance.now();
    fn();
    timing[name] = (timing[name] || 0) + performance.now() - t;
  }
  function refresh(all) {
    applyFilter();
    if (T.V.diff) {
      maxDelta = 0;
      for (var i = 1; i < T.n; i++) maxDelta = Math.max(maxDelta, Math.abs(delta(i)));
    }
    timed('search', runSearch);
    timed('draw', draw);
    /* The table after the graph is on screen: the page opens at the graph. */
    if (all) setTimeout(function () {
      timed('table', fillTable);
      body.setAttribute('data-table-ms', timing.table.toFixed(0));
    }, 0);
  }
  function setView(k) {
    if (!views[k]) timed('prepare', function () { views[k] = prepare(D.views[k]); });
    state.view = k;
    T = views[k];
    state.zoom = 0;
    state.history = [];
    colorCache = [];
    Array.prototype.forEach.call(tabs.children, function (b, j) { b.className = j === k ? 'on' : ''; });
    tabs.style.display = D.views.length > 1 ? '' : 'none';
    fillFilter();
    fillLegend();
    refresh(true);
    saveHash();
  }
  function zoom(i) {
    if (i === state.zoom) return;
    state.history.push(state.zoom);
    state.zoom = i;
    draw();
  }

  flame.addEventListener('click', function (e) {
    var i = e.target.getAttribute('data-i');
    if (i != null) zoom(+i);
  });
  flame.addEventListener('mousemove', function (e) {
    var i = e.target.getAttribute('data-i');
    if (i == null) { tip.style.display = 'none'; return; }
    i = +i;
    var fr = T.V.f[i], html = '<b>' + esc(i ? fname(fr) : 'all') + '</b>', unit = T.V.unit;
    if (T.V.diff) {
      var ta = T.V.total[0] || 1, tb = T.V.total[1] || 1, va = slotValue(i, 0), vb = slotValue(i, 1), dl = vb / tb - va / ta;
      html += 'base: ' + fmtValue(va, unit) + ' (' + pct(va / ta) + ')<br>new: ' + fmtValue(vb, unit) + ' (' +
        pct(vb / tb) + ')<br>delta: ' + (dl > 0 ? '+' : '') + (100 * dl).toFixed(2) + '% of the total';
    } else {
      var v = slotValue(i, 0);
      html += fmtValue(v, unit) + ', ' + pct(rootW ? W(i) / rootW : 0) + ' of the total';
      if (i && T.par[i] > 0) html += ', ' + pct(W(i) / (W(T.par[i]) || 1)) + ' of its caller';
      html += '<br>self: ' + fmtValue(selfOf(i), unit);
    }
    if (i) {
      var t = ftype(fr);
      if (fmodule(fr)) html += '<br><span>' + (t === 'process' ? 'service' : 'module') + ':</span> ' + esc(fmodule(fr));
      if (ffile(fr)) html += '<br><span>file:</span> ' + esc(ffile(fr)) + (fline(fr) ? ':' + fline(fr) : '');
      html += '<br><span>type:</span> ' + esc(t);
    }
    tip.innerHTML = html;
    tip.style.display = 'block';
    var x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    var y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ? e.clientY - tip.offsetHeight - 8 : e.clientY + 16;
    tip.style.left = Math.max(0, x) + 'px';
    tip.style.top = y + 'px';
  });
  flame.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  backBtn.onclick = function () { if (state.history.length) { state.zoom = state.history.pop(); draw(); } };
  resetBtn.onclick = function () { if (state.zoom) zoom(0); };
  filterSel.onchange = function () { state.filter = filterSel.value; state.zoom = 0; state.history = []; refresh(true); saveHash(); };
  var searchTimer = 0;
  searchIn.oninput = function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { state.search = searchIn.value; runSearch(); draw(); saveHash(); }, 150);
  };
  table.addEventListener('click', function (e) {
    var tr = e.target.closest('tr[data-f]');
    if (!tr) return;
    var name = fname(+tr.getAttribute('data-f'));
    state.search = searchIn.value = '/^' + name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&') + '$/';
    runSearch();
    draw();
    saveHash();
    window.scrollTo(0, 0);
  });
  document.addEventListener('keydown', function (e) {
    if (e.target === searchIn) return;
    if (e.key === 'Escape') resetBtn.onclick();
    else if (e.key === 'Backspace') backBtn.onclick();
    else if (e.key === '/') { e.preventDefault(); searchIn.focus(); }
  });
  var resizeTimer = 0;
  window.addEventListener('resize', function () { clearTimeout(resizeTimer); resizeTimer = setTimeout(draw, 100); });

  /* Start from the fragment: #view=N&process=p:NAME&search=TEXT */
  var params = new URLSearchParams(location.hash.slice(1)), v0 = +(params.get('view') || 0);
  state.filter = params.get('process') || '';
  state.search = searchIn.value = params.get('search') || '';
  setView(v0 >= 0 && v0 < D.views.length ? v0 : 0);
  document.body.setAttribute('data-parse-ms', (tParsed - t0).toFixed(0));
  document.body.setAttribute('data-timing-ms', Object.keys(timing).map(function (k) {
    return k + ':' + timing[k].toFixed(0);
  }).join(' '));
  document.body.setAttribute('data-script-start-ms', t0.toFixed(0));
  document.body.setAttribute('data-render-ms', (performance.now() - t0).toFixed(0));
  document.body.setAttribute('data-load-ms', performance.now().toFixed(0));
  performance.mark('otelprofd-rendered');
})();
