// The bench panel: experiments, the run form, the job's live progress and the leaderboard
// (table and SVG chart, the same figures as `tipbench compare --format json`).
"use strict";

(() => {
  const { el, show } = tipbench;
  const $ = (id) => document.getElementById(id);
  const ACTIVE = new Set(["queued", "running"]);
  const POLL_MS = 1000;
  const TIER_TITLES = { human: "Human judge", auto: "Automatic judge" };
  const board = $("leaderboard");
  const COMPOSITE_LOW = Number(board.dataset.compositeLow);
  const COMPOSITE_HIGH = Number(board.dataset.compositeHigh);
  const exp = (name) => encodeURIComponent(name);

  // ---- formatting (as `tipbench compare` prints it) ------------------------------------
  const fixed = (v, digits = 2, signed = false) => {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const text = v.toFixed(digits);
    return (signed && v >= 0 ? "+" : "") + text.replace("-", "−");
  };
  const interval = (lo, hi, signed = false) => `[${fixed(lo, 2, signed)}, ${fixed(hi, 2, signed)}]`;
  const pValue = (p) => (p === null || p === undefined ? "–" : p < 0.001 ? "<0.001" : p.toFixed(3));
  const when = (ms) =>
    ms ? new Date(ms).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) : "–";

  // ---- experiments ---------------------------------------------------------------------
  async function loadExperiments(select) {
    let experiments;
    try {
      experiments = await tipbench.get("/api/bench/experiments");
      show($("experiments-error"), "");
    } catch (error) {
      show($("experiments-error"), `Could not list the experiments: ${error.message}`);
      return;
    }
    const body = $("experiments").tBodies[0];
    body.replaceChildren(
      ...(experiments.length
        ? experiments.map((e) =>
            el(
              "tr",
              {},
              el("td", { class: "name" }, el("strong", {}, e.name)),
              el("td", {}, when(e.last_update_time)),
              el(
                "td",
                { class: "num" },
                el("button", { type: "button", class: "secondary", "data-show": e.name }, "Leaderboard"),
                " ",
                el("a", { href: `/judge/${exp(e.name)}` }, "Judge"),
              ),
            ),
          )
        : [el("tr", {}, el("td", { colspan: 3, class: "muted" }, "No experiments yet: start a run."))]),
    );
    const picker = $("leaderboard-experiment");
    const current = select || picker.value || (experiments[0] && experiments[0].name);
    picker.replaceChildren(...experiments.map((e) => el("option", { value: e.name }, e.name)));
    if (current && experiments.some((e) => e.name === current)) {
      picker.value = current;
      await showLeaderboard(current);
    }
  }

  $("experiments").addEventListener("click", (event) => {
    const name = event.target.dataset && event.target.dataset.show;
    if (!name) return;
    $("leaderboard-experiment").value = name;
    showLeaderboard(name);
    board.scrollIntoView({ behavior: "smooth", block: "start" });
  });
  $("leaderboard-experiment").addEventListener("change", (e) => showLeaderboard(e.target.value));

  // ---- leaderboard: table and chart ----------------------------------------------------
  async function showLeaderboard(name) {
    $("leaderboard-judge").href = `/judge/${exp(name)}`;
    $("leaderboard-judge").hidden = false;
    let boards;
    try {
      boards = await tipbench.get(`/api/bench/leaderboard/${exp(name)}?tier=both`);
      show($("leaderboard-error"), "");
    } catch (error) {
      show($("leaderboard-error"), `Could not load the leaderboard: ${error.message}`);
      return;
    }
    $("leaderboard-tiers").replaceChildren(
      ...Object.values(boards).map((tier) => renderTier(tier)),
    );
  }

  function renderTier(tier) {
    const ranked = tier.rows.filter((r) => r.rank !== null).length;
    const section = el(
      "section",
      { class: "tier", "data-tier": tier.tier, "aria-label": `${TIER_TITLES[tier.tier]} leaderboard` },
      el(
        "h3",
        {},
        `${TIER_TITLES[tier.tier] || tier.tier} `,
        el("span", { class: "muted" }, `· ${tier.n_runs} judged runs, ${ranked} of ${tier.rows.length} cells ranked`),
      ),
    );
    if (!tier.rows.length) {
      section.append(
        el(
          "p",
          { class: "muted" },
          tier.tier === "human"
            ? ["No runs judged by a human yet: ", el("a", { href: `/judge/${exp(tier.experiment)}` }, "judge them"), "."]
            : "No runs judged by the automatic judge yet.",
        ),
      );
      return section;
    }
    section.append(el("div", { class: "table-scroll" }, renderTable(tier)), renderChart(tier));
    const notes = [
      `Means over scenarios (each weighs the same); ${Math.round(tier.confidence * 100)}% bootstrap intervals. ` +
        "Δ = this cell − the leader, paired by scenario; ≈ not significantly behind (p ≥ 0.05).",
    ];
    if (ranked < tier.rows.length) {
      notes.push(`Cells judged on fewer than ${tier.min_scenarios} scenarios are not ranked.`);
    }
    section.append(el("p", { class: "hint" }, notes.join(" ")));
    // The automatic tier's judge calibration: whether its scores are evidence at all.
    for (const status of tier.calibration || []) {
      section.append(
        el("p", { class: status.calibrated ? "hint calibration" : "calibration not-calibrated", role: "note" }, status.summary),
      );
    }
    return section;
  }

  function versus(row) {
    if (row.rank === 1) return ["leader", ""];
    if (row.rank === null) return ["not ranked", ""];
    const vs = row.vs_leader;
    if (!vs) return ["", ""];
    if (vs.n_pairs === 0) return ["no shared scenarios", ""];
    const diff = `${fixed(vs.diff, 2, true)}${row.tied_with_leader ? " ≈" : ""}`;
    const ci = el("span", { class: "ci" }, interval(vs.ci_low, vs.ci_high, true));
    return [[diff, " ", ci], pValue(vs.p_value)];
  }

  function renderTable(tier) {
    const pct = `${Math.round(tier.confidence * 100)}% CI`;
    const headings = [
      ["#", true], ["Model", false], ["Prompt", false], ["Composite", true], [pct, true],
      ["Relevance", true], ["Action.", true], ["Tone", true], ["Format ok", true],
      ["Overlong", true], ["Scen.", true], ["Cand.", true], ["Δ vs leader [CI]", true], ["p", true],
    ];
    const head = el("tr", {}, headings.map(([h, num]) => el("th", { scope: "col", class: num ? "num" : null }, h)));
    const rows = tier.rows.map((row) => {
      const [vs, p] = versus(row);
      const num = (v) => el("td", { class: "num" }, v);
      return el(
        "tr",
        { class: row.rank === 1 ? "leader" : row.rank === null ? "unranked" : null },
        num(row.rank === null ? "–" : row.rank),
        el("td", {}, row.model),
        el("td", {}, row.prompt_version),
        el("td", { class: "num" }, el("strong", {}, fixed(row.composite))),
        num(interval(row.ci_low, row.ci_high)),
        num(fixed(row.relevance)),
        num(fixed(row.actionability)),
        num(fixed(row.tone)),
        num(fixed(row.format_ok)),
        num(fixed(row.overlong)),
        num(row.n_scenarios),
        num(row.n_candidates),
        el("td", { class: "num versus" }, vs),
        num(p),
      );
    });
    return el("table", { class: "leaderboard-table" }, el("thead", {}, head), el("tbody", {}, rows));
  }

  // Horizontal bars of the mean composite from the rubric's floor, whiskers for the
  // interval; colours as in `tipbench compare --plot`.
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children) node.append(child);
    return node;
  }
  const colour = (row) =>
    row.rank === null ? "#c8c8c8" : row.rank === 1 ? "#d9822b" : row.tied_with_leader ? "#f2c18f" : "#2f6f9f";

  function renderChart(tier) {
    const rows = tier.rows;
    const labels = rows.map((r) => `${r.rank === null ? "–" : r.rank + "."} ${r.model} · ${r.prompt_version}`);
    const labelWidth = Math.min(360, Math.max(140, 7.2 * Math.max(...labels.map((l) => l.length))));
    const width = 900;
    const rowHeight = 30;
    const top = 8;
    const plotLeft = labelWidth + 12;
    const plotRight = width - 56;
    const height = top + rows.length * rowHeight + 40;
    const ends = rows.flatMap((r) => [r.ci_high, r.composite]).filter((v) => v !== null);
    const low = COMPOSITE_LOW;
    const high = Math.min(COMPOSITE_HIGH, Math.floor(Math.max(...ends, low)) + 1);
    const x = (v) => plotLeft + ((Math.min(Math.max(v, low), high) - low) / (high - low)) * (plotRight - plotLeft);
    const title = `Mean composite per (model, prompt), ${TIER_TITLES[tier.tier] || tier.tier}`;
    const chart = svg("svg", {
      viewBox: `0 0 ${width} ${height}`,
      role: "img",
      "aria-label": title,
      class: "leaderboard-chart",
      "font-family": "system-ui, sans-serif",
      "font-size": "13",
    });
    chart.append(svg("title", {}, title));
    const step = high - low > 8 ? 2 : 1;
    const axisY = top + rows.length * rowHeight + 4;
    for (let t = Math.ceil(low); t <= high; t += step) {
      chart.append(
        svg("line", { x1: x(t), x2: x(t), y1: top, y2: axisY, stroke: "#e5e5e5" }),
        svg("text", { x: x(t), y: axisY + 16, "text-anchor": "middle", fill: "#636c76" }, String(t)),
      );
    }
    chart.append(
      svg("line", { x1: plotLeft, x2: plotLeft, y1: top, y2: axisY, stroke: "#8c959f" }),
      svg(
        "text",
        { x: (plotLeft + plotRight) / 2, y: axisY + 34, "text-anchor": "middle", fill: "#636c76", "font-size": "12" },
        `mean composite (${low}–${COMPOSITE_HIGH}), ${Math.round(tier.confidence * 100)}% bootstrap CI`,
      ),
    );
    rows.forEach((row, i) => {
      const mid = top + i * rowHeight + rowHeight / 2;
      const muted = row.rank === null;
      chart.append(
        svg("text", { x: labelWidth, y: mid + 4, "text-anchor": "end", fill: muted ? "#8c959f" : "#1f2328" }, labels[i]),
      );
      if (row.composite === null) return;
      const bar = svg("rect", {
        x: plotLeft,
        y: mid - 9,
        width: Math.max(0, x(row.composite) - plotLeft),
        height: 18,
        fill: colour(row),
        rx: 2,
      });
      bar.append(svg("title", {}, `${labels[i]}: ${fixed(row.composite)} ${interval(row.ci_low, row.ci_high)}`));
      chart.append(bar);
      let labelX = x(row.composite);
      if (row.ci_low !== null && row.ci_high !== null) {
        const [a, b] = [x(row.ci_low), x(row.ci_high)];
        chart.append(
          svg("line", { x1: a, x2: b, y1: mid, y2: mid, stroke: "#333", "stroke-width": 1.3 }),
          svg("line", { x1: a, x2: a, y1: mid - 5, y2: mid + 5, stroke: "#333", "stroke-width": 1.3 }),
          svg("line", { x1: b, x2: b, y1: mid - 5, y2: mid + 5, stroke: "#333", "stroke-width": 1.3 }),
        );
        labelX = Math.max(labelX, b);
      }
      chart.append(
        svg("text", { x: labelX + 6, y: mid + 4, fill: muted ? "#8c959f" : "#333", "font-size": "12" }, fixed(row.composite)),
      );
    });
    return el("figure", { class: "chart" }, chart);
  }

  // ---- the run form and the job --------------------------------------------------------
  const form = $("run-form");
  let watching = null;

  function runBody() {
    const data = new FormData(form);
    const number = (name) => Number(data.get(name));
    return {
      models: String(data.get("models")).trim(),
      prompts: String(data.get("prompts")).trim(),
      n_tips: number("n_tips"),
      n_scenarios: number("n_scenarios"),
      temperature: number("temperature"),
      experiment: String(data.get("experiment")).trim(),
      max_model_b: number("max_model_b"),
      ollama_url: String(data.get("ollama_url")).trim(),
    };
  }

  // A field the browser refuses may sit in the closed "More options": open it to show why.
  form.addEventListener(
    "invalid",
    (event) => {
      const details = event.target.closest("details");
      if (details) details.open = true;
    },
    true,
  );

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    show($("run-error"), "");
    $("run-submit").disabled = true;
    try {
      const job = await tipbench.post("/api/bench/run", runBody());
      watch(job.job_id);
    } catch (error) {
      show($("run-error"), `Not started: ${error.message}`);
    } finally {
      $("run-submit").disabled = false;
    }
  });

  const PHASES = {
    collect: "collecting candidates", judge: "automatic judge", report: "export and compare",
    plan: "planning (validating the conf)", judge_auto: "automatic judge",
    export_for_judge: "export for the human judge", compare: "compare",
  };

  function renderJob(job) {
    $("job").hidden = false;
    const state = $("job-state");
    state.textContent = job.state;
    state.className = `job-state ${job.state}`;
    $("job-id").textContent = job.job_id;
    $("job-experiment").textContent = job.experiment || "–";
    const phase = job.phase ? PHASES[job.phase] || job.phase : "–";
    $("job-phase").textContent = job.state === "succeeded" ? "done" : phase;
    const finished = job.state === "succeeded";
    const airflow = $("job-airflow");
    airflow.hidden = !job.airflow_url;
    if (job.airflow_url) {  // on Airflow: progress is its mapped collect tasks, one per model
      $("job-airflow-link").href = job.airflow_url;
      $("job-airflow-link").textContent = job.dag_run_id;
      meter($("job-cells-progress"), $("job-cells"), job.models_done, job.models_total, "models collected", finished);
    } else {
      meter($("job-cells-progress"), $("job-cells"), job.cells_done, job.cells_total, "cells", finished);
    }
    $("job-judge-line").hidden = !job.judge_total;
    meter($("job-judge-progress"), $("job-judged"), job.judged, job.judge_total, "candidates judged", finished);
    show($("job-error"), job.error || "");
    $("job-cancel").hidden = !job.cancellable;
    $("job-resume").hidden = !job.resumable;
  }

  function meter(bar, label, done, total, what, finished) {
    bar.max = Math.max(total, 1);
    bar.value = finished && total ? total : done;
    label.textContent = `${finished && total ? total : done} of ${total} ${what}`;
  }

  async function refreshLog(jobId) {
    try {
      const text = await tipbench.get(`/api/bench/jobs/${jobId}/log?tail=400`);
      const pre = $("job-log");
      const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = (typeof text === "string" && text) || "(no output yet)";
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    } catch (error) {
      $("job-log").textContent = `The log could not be read: ${error.message}`;
    }
  }

  async function watch(jobId) {
    watching = jobId;
    while (watching === jobId) {
      let job;
      try {
        job = await tipbench.get(`/api/bench/jobs/${jobId}`);
      } catch (error) {
        show($("job-error"), `Lost track of the job: ${error.message}`);
        return;
      }
      renderJob(job);
      await refreshLog(jobId);
      if (!ACTIVE.has(job.state)) {
        if (job.state === "succeeded") await loadExperiments(job.experiment);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  async function jobAction(action) {
    const jobId = $("job-id").textContent;
    try {
      const job = await tipbench.post(`/api/bench/jobs/${jobId}/${action}`);
      watch(job.job_id || jobId);
    } catch (error) {
      show($("job-error"), `Could not ${action} the job: ${error.message}`);
    }
  }
  $("job-cancel").addEventListener("click", () => jobAction("cancel"));
  $("job-resume").addEventListener("click", () => jobAction("resume"));

  // The latest job, so a reload (or a second admin) sees the one that is running.
  async function latestJob() {
    try {
      const jobs = await tipbench.get("/api/bench/jobs?limit=1");
      if (jobs.length) watch(jobs[0].job_id);
    } catch (error) {
      show($("run-error"), `Could not list the jobs: ${error.message}`);
    }
  }

  loadExperiments();
  latestJob();
})();
