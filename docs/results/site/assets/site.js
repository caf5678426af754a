// corobench results site: filters, tables and run details of one scenario page.
// The data (window.COROBENCH_SITE) comes from data/<scenario>.js; plotly.js draws every chart from
// the figure specs in it: this script only picks which points the filters leave (by the row ids in
// each trace's customdata) and hands the figure back to Plotly.react. Program text goes in as text.
"use strict";

(function () {
  const site = window.COROBENCH_SITE;
  if (!site) return;
  const $ = (id) => document.getElementById(id);
  const form = $("filters");
  const LIMIT = 2000; // table rows shown at once; the filters narrow the rest
  const loadedRuns = new Map(); // runs file -> Promise of its document

  function checked(name) {
    return new Set(Array.from(form.querySelectorAll(`input[name="${name}"]:checked`), (e) => e.value));
  }

  function current() {
    const value = (name) => (form.elements[name] ? form.elements[name].value : "");
    return {
      params: site.params.map((_, i) => value("p" + i)), threads: value("threads"),
      programs: checked("program"), machines: checked("machine"), from: value("from"), to: value("to"),
    };
  }

  function paramsMatch(values, threads, f) {
    return (!f.threads || threads === f.threads) && f.params.every((v, i) => !v || values[i] === v);
  }

  function passes(row, f) {
    return f.programs.has(row.prog) && f.machines.has(row.m) && (!f.from || row.d >= f.from) &&
      (!f.to || row.d <= f.to) && paramsMatch(row.p, row.thr, f);
  }

  // per comparability key, the row of its latest session
  function latest(rows) {
    const best = new Map();
    for (const r of rows) {
      const b = best.get(r.k);
      if (!b || r.t > b.t || (r.t === b.t && r.s > b.s)) best.set(r.k, r);
    }
    return rows.filter((r) => best.get(r.k) === r);
  }

  function td(tr, text, cls) {
    const cell = tr.insertCell();
    cell.textContent = text;
    if (cls) cell.className = cls;
    return cell;
  }

  function paramsText(row) {
    const parts = site.varying.map((i) => `${site.params[i]}=${row.p[i]}`);
    if (row.thr) parts.push(`threads=${row.thr}`);
    return parts.join(" ");
  }

  function vsBest(rows) {
    const lower = site.columns[0].better === "lower";
    const best = new Map();
    for (const r of rows) {
      const v = r.st === "ok" ? r.v[0] : null;
      if (v === null || v <= 0) continue;
      const b = best.get(r.g);
      if (b === undefined || (lower ? v < b : v > b)) best.set(r.g, v);
    }
    return (r) => {
      const v = r.v[0], b = best.get(r.g);
      if (r.st !== "ok" || v === null || v <= 0 || b === undefined) return "";
      return "×" + (lower ? v / b : b / v).toFixed(2);
    };
  }

  function fillTable(rows) {
    const body = $("results").tBodies[0];
    body.replaceChildren();
    const ratio = vsBest(rows);
    for (const r of rows.slice(0, LIMIT)) {
      const tr = body.insertRow();
      td(tr, r.prog);
      td(tr, r.tc);
      td(tr, paramsText(r), "params");
      const where = td(tr, site.machines[r.m] + (r.topo && site.severalLayouts ? ` · ${site.layouts[r.topo]}` : ""), "machine");
      if (r.topo) where.title = site.layouts[r.topo];
      td(tr, `${r.s} (${r.d})`, "num");
      if (r.st !== "ok") {
        td(tr, `${r.st.toUpperCase()}: ${r.why}`, "fail").colSpan = site.columns.length + 1;
      } else {
        td(tr, r.f[0], "num");
        td(tr, ratio(r), "num");
        site.columns.slice(1).forEach((_, i) => td(tr, r.f[i + 1], "num"));
      }
      td(tr, `${r.n}/${r.of}`, "num").title = r.w.join("\n");
      if (r.w.length) tr.classList.add("warned");
    }
  }

  // a figure with only the points of visible rows; traces left empty are dropped
  function filtered(fig, visible) {
    const data = [];
    const legend = new Set();
    for (const trace of fig.data) {
      const keep = [];
      trace.customdata.forEach((id, i) => { if (visible.has(id)) keep.push(i); });
      if (!keep.length) continue;
      const pick = (array) => keep.map((i) => array[i]);
      const copy = Object.assign({}, trace, {
        x: pick(trace.x), y: pick(trace.y), customdata: pick(trace.customdata), hovertext: pick(trace.hovertext),
      });
      for (const bars of ["error_x", "error_y"]) {
        if (trace[bars]) {
          copy[bars] = Object.assign({}, trace[bars], { array: pick(trace[bars].array), arrayminus: pick(trace[bars].arrayminus) });
        }
      }
      if (trace.type !== "bar") { // a series' legend entry goes with its first trace still drawn
        copy.showlegend = !legend.has(trace.legendgroup);
        legend.add(trace.legendgroup);
      }
      data.push(copy);
    }
    return data;
  }

  // charts are drawn when they come near the screen: a page of years of sessions has dozens
  const near = new Set();
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (entry.isIntersecting) {
        near.add(entry.target);
        if (entry.target.pending) drawNow(entry.target);
      } else {
        near.delete(entry.target);
      }
    }
  }, { rootMargin: "600px" });

  function makeCharts(container, figures) {
    return figures.map((fig) => {
      const div = document.createElement("div");
      div.className = "chart";
      div.style.height = `${fig.layout.height}px`; // what plotly.js reads back when the window resizes
      container.appendChild(div);
      observer.observe(div);
      return div;
    });
  }

  function drawNow(div) {
    const { traces, layout } = div.pending;
    div.pending = null;
    Plotly.react(div, traces, structuredClone(layout), site.config);
  }

  function draw(divs, figures, visible) {
    let shown = 0;
    figures.forEach((fig, n) => {
      const traces = filtered(fig, visible);
      const div = divs[n];
      div.hidden = traces.length === 0;
      div.dataset.traces = traces.length; // what is (or will be, once near the screen) drawn
      div.pending = traces.length ? { traces, layout: fig.layout } : null;
      if (!traces.length) {
        if (div.data) Plotly.purge(div);
        return;
      }
      shown++;
      if (near.has(div)) drawNow(div);
    });
    return shown;
  }

  const summaryDivs = makeCharts($("summary-charts"), site.figures.summary);
  const historyDivs = makeCharts($("history-charts"), site.figures.history);

  function update() {
    const f = current();
    const within = site.rows.filter((r) => passes(r, f));
    const shown = latest(within);
    fillTable(shown);
    const charts = draw(summaryDivs, site.figures.summary, new Set(shown.map((r) => r.i))) +
      draw(historyDivs, site.figures.history, new Set(within.map((r) => r.i)));
    $("shown").textContent = `${shown.length} result(s) shown (the latest of each comparability key)` +
      (shown.length > LIMIT ? `, the first ${LIMIT} in the table` : "") +
      `; ${within.length} of ${site.rows.length} across sessions; ${charts} chart(s).`;
    showRuns();
  }

  // ------------------------------------------------------------------ runs of one session

  const sessionSelect = $("run-session");
  for (const s of site.sessions.slice().reverse()) {
    const option = document.createElement("option");
    option.value = s.file;
    option.textContent = `session ${s.id}, ${s.date}, ${s.machine}`;
    sessionSelect.appendChild(option);
  }

  function loadRuns(file) {
    if (!loadedRuns.has(file)) {
      loadedRuns.set(file, new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = file;
        script.onload = () => resolve(file);
        script.onerror = () => reject(new Error(`cannot load ${file}`));
        document.head.appendChild(script);
      }));
    }
    return loadedRuns.get(file);
  }

  function detail(run, hosts) {
    const pre = document.createElement("pre");
    const lines = [
      ["command", run.cmd], ["working directory", run.cwd], ["hosts", hosts], ["CPUs", run.cpus],
      ["started", run.at], ["status", run.st + (run.kind ? ` (${run.kind})` : "")], ["exit code", run.exit],
      ["signal", run.sig], ["reason", run.why],
    ].filter(([, v]) => v);
    pre.textContent = lines.map(([k, v]) => `${k}: ${v}`).join("\n") +
      (run.err ? `\n\nstderr (last lines):\n${run.err}` : "\n\nstderr: (empty)");
    return pre;
  }

  function showRuns() {
    const file = sessionSelect.value;
    if (!file) return;
    const f = current();
    loadRuns(file).then(() => {
      if (sessionSelect.value !== file) return; // another session was chosen meanwhile
      const key = file.replace(/^runs\//, "").replace(/\.js$/, "");
      const doc = window.COROBENCH_RUNS[key];
      $("run-hosts").textContent = `session ${doc.session}, started ${doc.started_at}; ${doc.hosts}`;
      const body = $("run-table").tBodies[0];
      body.replaceChildren();
      for (const run of doc.runs) {
        if (!f.programs.has(run.prog) || !paramsMatch(run.p, run.thr, f)) continue;
        const tr = body.insertRow();
        tr.className = "run" + (run.st === "failed" ? " failed" : "");
        tr.tabIndex = 0;
        td(tr, String(run.id), "num");
        td(tr, run.prog);
        td(tr, run.params + (run.thr ? ` threads=${run.thr}` : ""), "params");
        td(tr, run.rep === 0 ? "verify" : String(run.rep), "num");
        td(tr, run.st.toUpperCase(), run.st === "ok" ? "" : "fail");
        td(tr, run.hl, "num");
        td(tr, run.wall, "num");
        td(tr, run.why, "reason");
        const open = () => {
          const next = tr.nextElementSibling;
          if (next && next.classList.contains("detail")) { next.remove(); return; }
          const row = body.insertRow(tr.sectionRowIndex + 1);
          row.className = "detail";
          const cell = row.insertCell();
          cell.colSpan = 8;
          cell.appendChild(detail(run, doc.hosts));
        };
        tr.addEventListener("click", open);
        tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
      }
    }, (error) => { $("run-hosts").textContent = error.message; });
  }

  form.addEventListener("change", update);
  form.addEventListener("reset", () => setTimeout(update)); // after the form has its defaults back
  sessionSelect.addEventListener("change", showRuns);
  update();
})();
