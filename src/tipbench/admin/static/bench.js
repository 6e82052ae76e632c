// The bench panel: experiments, the run form, the job's live progress and the leaderboard
// (table and SVG chart of what `/api/bench/leaderboard/{experiment}/view` gives: the figures
// of `tipbench compare`, formatted, worded and coloured by the server).
"use strict";

(() => {
  const { el, ident, show } = tipbench;
  const $ = (id) => document.getElementById(id);
  const ACTIVE = new Set(["queued", "running"]);
  const POLL_MS = 1000;
  const board = $("leaderboard");
  const exp = (name) => encodeURIComponent(name);

  const sentence = (text) => (text ? `${text.charAt(0).toUpperCase()}${text.slice(1)}.` : "");

  const when = (ms) =>
    ms ? new Date(ms).toLocaleString([], { dateStyle: "medium", timeStyle: "short" }) : "–";

  // ---- experiments ---------------------------------------------------------------------
  // The experiment of the job being watched, while it runs: listed at once, before MLflow
  // has it (the job creates it when its collect starts).
  let running = null;

  function experimentRow(e) {
    const updated = when(e.last_update_time);
    return el(
      "tr",
      {},
      // On a phone the "Last update" column folds under the name.
      el("td", { class: "name" }, el("strong", {}, ident(e.name)), el("span", { class: "when-inline" }, updated)),
      el("td", { class: "when" }, updated),
      el(
        "td",
        { class: "controls" },
        el("button", { type: "button", class: "secondary", "data-show": e.name }, "Leaderboard"),
        " ",
        el("a", { href: `/judge/${exp(e.name)}` }, "Judge"),
      ),
    );
  }

  function startingRow(job) {
    const state = job.state === "queued" ? "queued" : "starting";
    return el(
      "tr",
      { class: "starting" },
      el("td", { class: "name" }, el("strong", {}, ident(job.experiment)), el("span", { class: "when-inline" }, `run ${state}…`)),
      el("td", { class: "when" }, `run ${state}…`),
      el("td", { class: "controls muted" }, ""),
    );
  }

  // `select`: show that experiment's leaderboard; without it the board shown stays (only
  // the first load shows one).
  async function loadExperiments(select) {
    let experiments;
    try {
      experiments = await tipbench.get("/api/bench/experiments");
      show($("experiments-error"), "");
    } catch (error) {
      show($("experiments-error"), `Could not list the experiments: ${error.message}`);
      return [];
    }
    const names = experiments.map((e) => e.name);
    const rows = experiments.map(experimentRow);
    if (running && running.experiment && !names.includes(running.experiment)) rows.unshift(startingRow(running));
    const body = $("experiments").tBodies[0];
    body.replaceChildren(
      ...(rows.length
        ? rows
        : [el("tr", {}, el("td", { colspan: 3, class: "muted" }, "No experiments yet: start a run."))]),
    );
    const picker = $("leaderboard-experiment");
    picker.parentElement.hidden = !names.length;
    if (!names.length) {  // a fresh install: an empty state that says what to do
      $("leaderboard-tiers").replaceChildren(
        el("p", { class: "muted" }, "No leaderboard yet: start a run above, and its leaderboard shows here."),
      );
    }
    const shown = picker.value;
    const current = select || shown || names[0];
    picker.replaceChildren(...names.map((name) => el("option", { value: name }, name)));
    if (current && names.includes(current)) {
      picker.value = current;
      if (select || !shown) await showLeaderboard(current);
    }
    return names;
  }

  $("experiments").addEventListener("click", (event) => {
    const name = event.target.dataset && event.target.dataset.show;
    if (!name) return;
    $("leaderboard-experiment").value = name;
    showLeaderboard(name);
    board.scrollIntoView({ behavior: "smooth", block: "start" });
  });
  $("leaderboard-experiment").addEventListener("change", (e) => showLeaderboard(e.target.value));

  // ---- leaderboard: table and chart, as the server formats them ----------------------
  // Only the answer to the latest request is shown: the first load's answer, arriving after
  // the reader chose another experiment, showed the wrong board (or redrew the one being
  // read). An answer with the figures already shown leaves the board, and its scrolling, be.
  let requested = 0;
  let shownFigures = "";
  async function showLeaderboard(name) {
    const request = ++requested;
    document.dispatchEvent(new CustomEvent("tipbench:experiment", { detail: name })); // online.js
    $("leaderboard-judge").href = `/judge/${exp(name)}`;
    $("leaderboard-judge").hidden = false;
    let views;
    try {
      views = await tipbench.get(`/api/bench/leaderboard/${exp(name)}/view?tier=both`);
    } catch (error) {
      if (request === requested) show($("leaderboard-error"), `Could not load the leaderboard: ${error.message}`);
      return;
    }
    if (request !== requested) return;
    show($("leaderboard-error"), "");
    const figures = JSON.stringify(views);
    if (figures === shownFigures) return;
    shownFigures = figures;
    shownViews = Object.values(views);
    $("leaderboard-tiers").replaceChildren(...shownViews.map((view) => renderTier(view)));
  }

  // The charts are drawn for the room they have: when it changes (a phone turned, a window
  // resized), they are drawn again, and nothing else.
  let shownViews = [];
  const chartRoom = () => $("leaderboard-tiers").clientWidth;
  let drawnRoom = 0;
  new ResizeObserver(() => {
    const room = chartRoom();
    if (Math.abs(room - drawnRoom) < 8) return;
    drawnRoom = room;
    for (const view of shownViews) {
      const figure = board.querySelector(`section.tier[data-tier="${view.tier}"] figure.chart`);
      if (figure) figure.replaceWith(renderChart(view, room));
    }
  }).observe($("leaderboard-tiers"));

  function renderTier(view) {
    const section = el(
      "section",
      { class: "tier", "data-tier": view.tier, "aria-label": `${view.title} leaderboard` },
      el("h3", {}, `${view.title} `, el("span", { class: "muted" }, `· ${view.summary}`)),
    );
    if (!view.rows.length) {
      section.append(
        el(
          "p",
          { class: "muted" },
          view.tier === "human"
            ? ["No runs judged by a human yet: ", el("a", { href: `/judge/${exp(view.experiment)}` }, "judge them"), "."]
            : view.judging // the combined tier: how the human judging stands
              ? sentence(view.judging)
              : "No runs judged by the automatic judge yet.",
        ),
      );
      return section;
    }
    section.append(
      el("div", { class: "table-scroll" }, renderTable(view)),
      renderChart(view, (drawnRoom = chartRoom())),
      el("p", { class: "hint" }, view.notes.join(" ")),
    );
    // The automatic tier's judge calibration: whether its scores are evidence at all.
    for (const status of view.calibration) {
      section.append(
        el("p", { class: status.calibrated ? "hint calibration" : "calibration not-calibrated", role: "note" }, status.text),
      );
    }
    return section;
  }

  // The columns in the order the page shows them: what tells a row (rank, model, prompt),
  // its composite and its standing first, so that a phone shows them without scrolling
  // sideways; the other figures after them, in the server's order, and they may scroll.
  function shownOrder(columns) {
    const last = columns.length - 1; // the standing
    const composite = columns.findIndex((c) => c.strong);
    const names = columns.map((c, i) => i).filter((i) => i < composite && i !== last);
    const first = [...names, composite, last];
    return [...first, ...columns.map((c, i) => i).filter((i) => !first.includes(i))];
  }

  function renderTable(view) {
    const order = shownOrder(view.columns);
    const standingAt = view.columns.length - 1;
    const key = new Set(order.slice(0, order.indexOf(standingAt) + 1));
    const classes = (column, i) =>
      [i === standingAt ? "standing" : column.numeric ? "num" : "name", key.has(i) ? "key" : ""].join(" ").trim();
    const head = el(
      "tr",
      {},
      // each mean says what it runs over (composite 2–17, criteria 1–5, flags as shares)
      order.map((i) => {
        const c = view.columns[i];
        return el("th", { scope: "col", class: classes(c, i) }, c.heading, c.scale ? el("span", { class: "scale" }, c.scale) : null);
      }),
    );
    const rows = view.rows.map((row) =>
      el(
        "tr",
        { "data-standing": row.standing },  // the leaderboard's class of the row, as given
        order.map((i) => {
          const column = view.columns[i];
          const text = row.cells[i];
          const content = column.strong
            ? el("strong", {}, text)
            : column.numeric || i === standingAt
              ? withInterval(text)
              : ident(text); // a model spec or a prompt version: wraps at `:` and `-` only
          return el("td", { class: classes(column, i) }, content);
        }),
      ),
    );
    return el("table", { class: "leaderboard-table" }, el("thead", {}, head), el("tbody", {}, rows));
  }

  // "−1.20 [−2.10, −0.30]": the interval may go under the value, but never breaks itself.
  function withInterval(text) {
    const parts = /^(.*\S) (\[[^\]]*\])$/.exec(text);
    if (!parts) return /^\[.*\]$/.test(text) ? el("span", { class: "interval" }, text) : text;
    return [parts[1], " ", el("span", { class: "interval" }, parts[2])];
  }

  // Horizontal bars of the mean composite from the rubric's floor, whiskers for the
  // interval; colours and texts as the server gives them (those of `tipbench compare --plot`).
  const SVG = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children) node.append(child);
    return node;
  }

  const NARROW_CHART = 600;  // narrower than this, each bar's label goes above it
  const pen = document.createElement("canvas").getContext("2d");
  // How wide `text` is drawn in the chart's font at `size` px.
  function textWidth(text, size) {
    pen.font = `${size}px system-ui, sans-serif`;
    return pen.measureText(text).width;
  }
  // `text`, or as much of its start and end as fits `room` px with "…" for its middle.
  function shortened(text, room, size = 13) {
    if (textWidth(text, size) <= room) return text;
    for (let keep = text.length - 1; keep > 1; keep--) {
      const head = Math.ceil(keep / 2);
      const cut = `${text.slice(0, head)}…${text.slice(text.length - (keep - head))}`;
      if (textWidth(cut, size) <= room) return cut;
    }
    return "…";
  }

  // `text` in lines at most `room` px wide at `size` px, broken between words.
  function wrapped(text, room, size) {
    const lines = [];
    for (const word of text.split(" ")) {
      const last = lines.length - 1;
      if (last >= 0 && textWidth(`${lines[last]} ${word}`, size) <= room) lines[last] += ` ${word}`;
      else lines.push(word);
    }
    return lines;
  }

  // The chart is drawn for the width it has, so that its text keeps its size: on a wide
  // screen the labels stand left of the bars, on a phone each label is above its bar.
  function chartLayout(bars, room) {
    const width = Math.round(Math.min(Math.max(room, 280), 900));
    if (width < NARROW_CHART) {
      return {
        width, narrow: true, rowHeight: 44, plotLeft: 4, plotRight: width - 48,
        labelRoom: width - 8,
      };
    }
    const labelWidth = Math.min(360, Math.max(140, ...bars.map((b) => textWidth(b.label, 13) + 4)));
    return {
      width, narrow: false, rowHeight: 30, plotLeft: labelWidth + 12, plotRight: width - 56, labelWidth,
      labelRoom: labelWidth - 4,
    };
  }

  function renderChart(view, room) {
    const bars = view.rows.map((row) => row.bar);
    const { title, axis, low, high } = view.chart;
    const layout = chartLayout(bars, room);
    const { width, rowHeight, plotLeft, plotRight } = layout;
    const top = 8;
    // The axis's title on as many lines as the width needs.
    const axisLines = wrapped(axis, width - 8, 12);
    const height = top + bars.length * rowHeight + 26 + 14 * axisLines.length;
    const x = (v) => plotLeft + ((Math.min(Math.max(v, low), high) - low) / (high - low)) * (plotRight - plotLeft);
    const chart = svg("svg", {
      viewBox: `0 0 ${width} ${height}`,
      width,
      role: "img",
      "aria-label": title,
      class: "leaderboard-chart",
      "font-family": "system-ui, sans-serif",
      "font-size": "13",
    });
    chart.append(svg("title", {}, title));
    const step = high - low > 8 ? 2 : 1;
    const axisY = top + bars.length * rowHeight + 4;
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
        { y: axisY + 34, "text-anchor": "middle", fill: "#636c76", "font-size": "12" },
        ...axisLines.map((line, i) =>
          svg("tspan", { x: layout.narrow ? width / 2 : (plotLeft + plotRight) / 2, dy: i ? 14 : 0 }, line),
        ),
      ),
    );
    bars.forEach((bar, i) => {
      const mid = top + i * rowHeight + (layout.narrow ? 30 : rowHeight / 2);
      // A label too long for its room loses its middle (rank and model start, prompt end
      // stay), never its start off the chart's edge; the whole label is its tooltip.
      const place = layout.narrow
        ? { x: plotLeft, y: mid - 13, "text-anchor": "start" }
        : { x: layout.labelWidth, y: mid + 4, "text-anchor": "end" };
      const label = svg(
        "text",
        { ...place, fill: bar.muted ? "#8c959f" : "#1f2328" },
        shortened(bar.label, layout.labelRoom),
        svg("title", {}, bar.label),
      );
      chart.append(label);
      if (bar.value === null) return;
      const rect = svg("rect", {
        x: plotLeft,
        y: mid - 9,
        width: Math.max(0, x(bar.value) - plotLeft),
        height: 18,
        fill: bar.colour,
        rx: 2,
      });
      rect.append(svg("title", {}, bar.tooltip));
      chart.append(rect);
      let labelX = x(bar.value);
      if (bar.interval.low !== null && bar.interval.high !== null) {
        const [a, b] = [x(bar.interval.low), x(bar.interval.high)];
        chart.append(
          svg("line", { x1: a, x2: b, y1: mid, y2: mid, stroke: "#333", "stroke-width": 1.3 }),
          svg("line", { x1: a, x2: a, y1: mid - 5, y2: mid + 5, stroke: "#333", "stroke-width": 1.3 }),
          svg("line", { x1: b, x2: b, y1: mid - 5, y2: mid + 5, stroke: "#333", "stroke-width": 1.3 }),
        );
        labelX = Math.max(labelX, b);
      }
      chart.append(
        svg("text", { x: labelX + 6, y: mid + 4, fill: bar.muted ? "#8c959f" : "#333", "font-size": "12" }, bar.text),
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
      watch(job.job_id, { scroll: true });
    } catch (error) {
      show($("run-error"), `Not started: ${error.message}`);
    } finally {
      $("run-submit").disabled = false;
    }
  });

  // What `tipbench run` warns for a grid of so many scenarios that it can never promote a
  // prompt (the server's words, by number of scenarios asked; 0: all).
  const neverPromotes = JSON.parse(form.dataset.neverPromotes);
  const all = Number(form.dataset.allScenarios);
  const promotionWarning = (asked) => neverPromotes[String(Math.min(Math.max(asked, 0), all))] || "";

  // How many cells the form's grid has, said beside "Start run", with the CLI's warning
  // when it is too small to ever promote.
  function gridSize() {
    const count = (name) => String(form.elements[name].value).split(",").filter((v) => v.trim()).length;
    const asked = Number(form.elements.n_scenarios.value);
    show($("run-warning"), sentence(promotionWarning(asked)));
    const scenarios = asked > 0 ? Math.min(asked, all) : all;
    const [models, prompts] = [count("models"), count("prompts")];
    const cells = models * prompts * scenarios;
    const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
    $("run-size").textContent =
      `${plural(cells, "cell")}: ${plural(models, "model")} × ${plural(prompts, "prompt")} × ` +
      `${plural(scenarios, "scenario")}, ${plural(Number(form.elements.n_tips.value), "tip")} each`;
  }
  form.addEventListener("input", gridSize);
  gridSize();

  const PHASES = {
    // a local job's phases (tipbench._progress_events.Phase), then the Airflow DAG's tasks
    collect: "collecting candidates", judge: "automatic judge",
    export: "export for the human judge", compare: "compare", report: "writing the report",
    plan: "planning (validating the conf)", judge_auto: "automatic judge",
    export_for_judge: "export for the human judge",
    cancelling: "cancelling (Airflow is stopping its tasks)",
  };

  // The phases from which on the automatic judge has counted candidates (a local job's,
  // then the Airflow DAG's tasks): before them the card has no candidates to count.
  const JUDGED_FROM = new Set(["judge", "export", "compare", "report", "judge_auto", "export_for_judge"]);

  // The card counts what the job's phases have done so far, the current one last: cells
  // (an optimization's evaluations; on Airflow, its mapped collect tasks) from the start,
  // candidates once the automatic judge runs. A count with nothing to count ("0 of 0": a
  // simulation's cells, the judge of a run still collecting) is not shown.
  function renderJob(job) {
    $("job").hidden = false;
    const state = $("job-state");
    state.textContent = job.state;
    state.className = `job-state ${job.state}`;
    $("job-id").textContent = job.job_id;
    $("job-experiment").replaceChildren(job.experiment ? ident(job.experiment) : "–");
    const phase = job.phase ? PHASES[job.phase] || job.phase : "–";
    $("job-phase").textContent = job.state === "succeeded" ? "done" : phase;
    const finished = job.state === "succeeded";
    const airflow = $("job-airflow");
    airflow.hidden = !job.airflow_url;
    let steps = [job.cells_done, job.cells_total, job.phase === "optimize" ? "evaluations" : "cells"];
    if (job.airflow_url) {  // on Airflow: progress is its mapped collect tasks, one per model
      $("job-airflow-link").href = job.airflow_url;
      $("job-airflow-link").textContent = job.dag_run_id;
      steps = [job.models_done, job.models_total, "models collected"];
    }
    $("job-cells-line").hidden = !steps[1];
    meter($("job-cells-progress"), $("job-cells"), ...steps, finished);
    // Before its first candidate the judge loads its model and reads the rubric: say so,
    // rather than "0 of N candidates judged" for as long as that takes.
    const loading = Boolean(job.judge_loading) && ACTIVE.has(job.state);
    const judging = JUDGED_FROM.has(job.phase) && (job.judge_total > 0 || loading);
    $("job-judge-line").hidden = !judging;
    meter($("job-judge-progress"), $("job-judged"), job.judged, job.judge_total, "candidates judged", finished);
    if (loading) $("job-judged").textContent = "loading the judge model…";
    $("job-judged").title = loading ? job.judge_loading : "";
    $("job-judge-progress").toggleAttribute("data-loading", loading);
    if (loading) $("job-judge-progress").removeAttribute("value");  // indeterminate
    // A run's grid too small to promote anything: the warning the form and the CLI give.
    const grid = job.config && !job.config.kind ? job.config : null;
    const asked = grid ? (grid.scenarios && grid.scenarios.length) || grid.n_scenarios : null;
    show($("job-warning"), grid ? sentence(promotionWarning(asked)) : "");
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

  // Follow a job to its end. `scroll`: bring its card into view (a run just started).
  async function watch(jobId, { scroll = false } = {}) {
    watching = jobId;
    let listed = false;
    let phase = null;
    while (watching === jobId) {
      let job;
      try {
        job = await tipbench.get(`/api/bench/jobs/${jobId}`);
      } catch (error) {
        show($("job-error"), `Lost track of the job: ${error.message}`);
        return;
      }
      renderJob(job);
      if (scroll) {
        $("job").scrollIntoView({ behavior: "smooth", block: "start" });
        scroll = false;
      }
      if (!ACTIVE.has(job.state)) {
        await refreshLog(jobId);
        if (running) {  // it ended while watched: list it as it is now, and its leaderboard
          running = null;
          await loadExperiments(job.state === "succeeded" ? job.experiment : undefined);
        }
        return;
      }
      // The experiment is listed while its run goes on: at once, then as MLflow has it,
      // with its last update refreshed at each phase.
      running = job;
      if (!listed || job.phase !== phase) {
        listed = (await loadExperiments()).includes(job.experiment);
        phase = job.phase;
      }
      await refreshLog(jobId);
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
