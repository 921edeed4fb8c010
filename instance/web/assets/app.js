// The live view: one EventSource, uPlot charts per direction, and a flow
// table that renders only its top rows so thousands of flows stay cheap.
(function () {
  "use strict";
  var token = new URLSearchParams(location.search).get("token") || "";
  var q = token ? "?token=" + encodeURIComponent(token) : "";
  var KEEP = 120; // seconds of history on the charts
  var ROWS = 100; // flow rows rendered
  var COLOURS = { l: "#0a6", c: "#d60", l99: "#075", c99: "#a30", a: "#36c", b: "#999" };

  document.getElementById("dljson").href = "download.json" + q;
  document.getElementById("dlcsv").href = "download.csv" + q;

  // Chart definitions: title, unit, series (label, field, colour, scale).
  var CHARTS = [
    { id: "tput", title: "throughput (Mbit/s)", series: [
      ["throughput", function (d) { return d.tput_bps / 1e6; }, COLOURS.a],
      ["link rate", function (d) { return d.rate_bps ? d.rate_bps / 1e6 : null; }, COLOURS.b]] },
    { id: "util", title: "utilisation (%)", series: [
      ["utilisation", function (d) { return 100 * d.util; }, COLOURS.a]] },
    { id: "sojourn", title: "sojourn (ms)", series: [
      ["L p50", function (d) { return d.l_p50_ms; }, COLOURS.l],
      ["L p99", function (d) { return d.l_p99_ms; }, COLOURS.l99],
      ["C p50", function (d) { return d.c_p50_ms; }, COLOURS.c],
      ["C p99", function (d) { return d.c_p99_ms; }, COLOURS.c99]] },
    { id: "prob", title: "coupled probability p'", series: [
      ["p'", function (d) { return d.prob; }, COLOURS.a]] },
    { id: "marks", title: "marks and drops per second", series: [
      ["CE marks", function (d) { return d.marks_ps; }, COLOURS.l]], drops: true }
  ];

  var dirs = {}; // name -> {data: {chartId: [xs, ys...]}, plots: {chartId: uPlot}, reasons: []}

  function width() { return Math.max(280, Math.min(460, (window.innerWidth - 80) / 3)); }

  // The x axis is the last KEEP seconds, scrolling, or all of a shorter
  // history; never a zero span.
  function xrange(u, min, max) {
    if (min == null || max == null) { var now = Date.now() / 1000; return [now - KEEP, now]; }
    return [Math.max(min, max - KEEP), max > min ? max : min + 1];
  }
  // Every figure here is non-negative: the y axis starts at zero. That
  // also keeps uPlot from splitting a near-constant series' tiny range
  // (90 ± 1e-7 %) into ticks it never finishes.
  function yrange(u, min, max) {
    if (max == null || !(max > 0)) return [0, 1];
    return [0, max * 1.1];
  }

  function makeDir(name) {
    var sec = document.createElement("div");
    sec.className = "dir";
    sec.innerHTML = "<h3>" + name + " <span class=\"dirinfo\"></span></h3><div class=\"charts\"></div>";
    document.getElementById("dirs").appendChild(sec);
    var d = { el: sec, data: {}, plots: {}, reasons: [] };
    CHARTS.forEach(function (c) { newChart(d, c); });
    dirs[name] = d;
    return d;
  }

  function newChart(d, c) {
    if (d.plots[c.id]) { d.plots[c.id].destroy(); }
    var box = document.createElement("div");
    box.className = "chart";
    var old = d.el.querySelector(".chart-" + c.id);
    if (old) { old.replaceWith(box); } else { d.el.querySelector(".charts").appendChild(box); }
    box.classList.add("chart-" + c.id);
    var series = [{}];
    c.series.forEach(function (s) { series.push({ label: s[0], stroke: s[2], width: 1.5, spanGaps: false }); });
    if (c.drops) {
      d.reasons.forEach(function (r, i) {
        series.push({ label: "drop " + r, stroke: ["#b00", "#808", "#a60", "#555"][i % 4], width: 1.5 });
      });
    }
    var opts = { title: c.title, width: width(), height: 170, series: series,
      scales: { x: { time: true, range: xrange }, y: { range: yrange } }, legend: { live: false } };
    var data = d.data[c.id] || series.map(function () { return []; });
    while (data.length < series.length) { data.push(data[0].map(function () { return null; })); }
    d.data[c.id] = data;
    d.plots[c.id] = new uPlot(opts, data, box);
  }

  function push(smp) {
    var x = smp.t / 1000;
    smp.dirs.forEach(function (ds) {
      var d = dirs[ds.dir] || makeDir(ds.dir);
      d.el.querySelector(".dirinfo").textContent =
        ds.kind + ", " + ds.rate + ", delay " + ds.delay_ms.toFixed(1) + " ms";
      Object.keys(ds.drops_ps || {}).forEach(function (r) {
        if (d.reasons.indexOf(r) < 0) {
          d.reasons.push(r);
          newChart(d, CHARTS[4]);
        }
      });
      CHARTS.forEach(function (c) {
        var data = d.data[c.id];
        data[0].push(x);
        c.series.forEach(function (s, i) { var v = s[1](ds); data[i + 1].push(v === undefined ? null : v); });
        if (c.drops) {
          d.reasons.forEach(function (r, i) { data[c.series.length + 1 + i].push((ds.drops_ps || {})[r] || 0); });
        }
        while (data[0].length && data[0][0] < x - KEEP) { data.forEach(function (a) { a.shift(); }); }
      });
    });
    document.getElementById("name").textContent = smp.name;
  }

  function redraw() {
    Object.keys(dirs).forEach(function (n) {
      var d = dirs[n];
      CHARTS.forEach(function (c) { d.plots[c.id].setData(d.data[c.id]); });
    });
  }

  // The flow table: sorted on the client, only the top ROWS rendered.
  var flows = [];
  var sortKey = "rate_bps", sortAsc = false;
  function fmtRate(b) {
    if (b >= 1e9) return (b / 1e9).toFixed(2) + " Gbit/s";
    if (b >= 1e6) return (b / 1e6).toFixed(2) + " Mbit/s";
    if (b >= 1e3) return (b / 1e3).toFixed(1) + " kbit/s";
    return b.toFixed(0) + " bit/s";
  }
  function fmtBytes(b) {
    if (b >= 1 << 30) return (b / (1 << 30)).toFixed(1) + " GiB";
    if (b >= 1 << 20) return (b / (1 << 20)).toFixed(1) + " MiB";
    if (b >= 1 << 10) return (b / (1 << 10)).toFixed(1) + " KiB";
    return b + " B";
  }
  function cell(tr, text, cls) {
    var td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
  }
  function renderFlows() {
    var k = sortKey, dir = sortAsc ? 1 : -1;
    var rows = flows.slice().sort(function (a, b) {
      var x = a[k], y = b[k];
      if (x === y) return 0;
      if (x === undefined) return 1;
      if (y === undefined) return -1;
      return (x < y ? -1 : 1) * dir;
    }).slice(0, ROWS);
    var body = document.createElement("tbody");
    rows.forEach(function (f) {
      var tr = document.createElement("tr");
      cell(tr, f.dir); cell(tr, f.proto); cell(tr, f.src); cell(tr, f.dst);
      cell(tr, f.class, f.class === "L4S" ? "L4S class" : "class");
      cell(tr, f.queue); cell(tr, fmtRate(f.rate_bps), "num"); cell(tr, fmtBytes(f.bytes), "num");
      cell(tr, String(f.marks), "num"); cell(tr, String(f.drops), "num");
      cell(tr, f.p99_ms.toFixed(2) + " ms", "num");
      cell(tr, f.rtt || "-", "num");
      cell(tr, f.verdict, /sanction/.test(f.verdict) ? "sanction" : "");
      cell(tr, f.device || "");
      body.appendChild(tr);
    });
    var table = document.getElementById("flows");
    table.replaceChild(body, table.tBodies[0]);
    document.getElementById("flowcount").textContent = flows.length > ROWS ?
      "(top " + ROWS + " of " + flows.length + ")" : "(" + flows.length + ")";
    table.querySelectorAll("th[data-k]").forEach(function (th) {
      th.classList.toggle("sorted", th.dataset.k === sortKey);
      th.classList.toggle("asc", th.dataset.k === sortKey && sortAsc);
    });
  }
  document.querySelectorAll("#flows th[data-k]").forEach(function (th) {
    th.addEventListener("click", function () {
      if (sortKey === th.dataset.k) { sortAsc = !sortAsc; } else { sortKey = th.dataset.k; sortAsc = false; }
      renderFlows();
    });
  });

  function renderDevices(devs) {
    document.getElementById("devices-section").hidden = devs.length === 0;
    var body = document.createElement("tbody");
    devs.forEach(function (d) {
      var tr = document.createElement("tr");
      cell(tr, d.hostname || "-"); cell(tr, d.addr); cell(tr, d.mac);
      cell(tr, fmtBytes(d.up_bytes), "num"); cell(tr, fmtBytes(d.down_bytes), "num");
      body.appendChild(tr);
    });
    var t = document.getElementById("devices");
    t.replaceChild(body, t.tBodies[0]);
  }

  // Edits: the same typed edit as `set`.
  function post(edit) {
    var reply = document.getElementById("reply");
    reply.textContent = "…";
    reply.className = "";
    var h = { "Content-Type": "application/json" };
    if (token) h["X-Pi2hop-Token"] = token;
    return fetch("set", { method: "POST", headers: h, body: JSON.stringify(edit) })
      .then(function (r) { return r.json(); })
      .then(function (j) {
        if (j.error) { reply.textContent = j.error; reply.className = "err"; return; }
        reply.textContent = "set " + JSON.stringify(edit) + (j.warnings ? " (" + j.warnings.join("; ") + ")" : "");
      })
      .catch(function (e) { reply.textContent = String(e); reply.className = "err"; });
  }
  document.getElementById("throttle").addEventListener("click", function () {
    var v = document.getElementById("rate").value.trim();
    if (v) post({ rate: v });
  });
  document.getElementById("unthrottle").addEventListener("click", function () { post({ rate: "unlimited" }); });
  document.getElementById("setdelay").addEventListener("click", function () {
    var v = document.getElementById("delay").value.trim();
    if (v) post({ delay: v });
  });

  var status = document.getElementById("status");
  var dirty = false;
  var es = new EventSource("events" + q);
  es.addEventListener("history", function (e) {
    JSON.parse(e.data).forEach(push);
    dirty = true;
  });
  es.addEventListener("sample", function (e) {
    push(JSON.parse(e.data));
    dirty = true;
    status.textContent = "live";
    status.className = "status";
  });
  es.addEventListener("table", function (e) {
    var t = JSON.parse(e.data);
    flows = t.flows || [];
    renderFlows();
    renderDevices(t.devices || []);
  });
  es.onerror = function () { status.textContent = "disconnected, retrying…"; status.className = "status bad"; };
  // Charts redraw once per animation frame at most, however fast samples come.
  (function frame() {
    if (dirty) { dirty = false; redraw(); }
    requestAnimationFrame(frame);
  })();

  // For tests and the curious: the newest x of a direction's throughput chart.
  window.pi2hop = {
    lastT: function (dir) { var d = dirs[dir]; if (!d) return 0; var x = d.data.tput[0]; return x.length ? x[x.length - 1] : 0; },
    lastTput: function (dir) { var d = dirs[dir]; if (!d) return 0; var y = d.data.tput[1]; return y.length ? y[y.length - 1] * 1e6 : 0; },
    points: function (dir) { var d = dirs[dir]; return d ? d.data.tput[0].length : 0; }
  };
})();
