// The Optimize page: start a `tipbench optimize` job, follow it, and read the optimizations of
// the experiment per iteration with the lineage of their versions (each proposal as a diff
// from its parent), then the held-out grid with the gate's verdict (from /api/optimize).
"use strict";

(() => {
  const { el, show, get, post } = tipbench;
  const $ = (id) => document.getElementById(id);
  const fixed = (x) => (x === null || x === undefined ? "—" : Number(x).toFixed(2));
  const POLL_MS = 2000;
  const CELL_TEXT = {
    missing: "not collected",
    failed: "failed",
    collected: "collected",
    "auto-judged": "auto-judged",
    judged: "judged",
  };
  let experiment = $("optimize-experiment").value;
  let selected = null; // the run id shown in detail

  function fill(table, rows) {
    table.querySelector("tbody").replaceChildren(...rows);
  }

  async function loadList() {
    try {
      const data = await get(`/api/optimize/${encodeURIComponent(experiment)}`);
      $("list-experiment").textContent = experiment;
      const rows = data.optimizations.map((o) => {
        const link = el("a", { href: "#", "data-run": o.run_id }, o.name);
        link.addEventListener("click", (event) => {
          event.preventDefault();
          selected = o.run_id;
          loadDetail();
        });
        return el("tr", {},
          el("td", {}, link), el("td", {}, o.status.toLowerCase()), el("td", {}, o.from_version),
          el("td", {}, o.model), el("td", { class: "num" }, o.iteration),
          el("td", { class: "num" }, `${o.evaluations} / ${o.budget}`),
          el("td", { class: "num" }, fixed(o.best)), el("td", {}, o.shortlist.join(", ") || "—"));
      });
      // an experiment without optimizations (or not made yet) is a state, not an error
      show($("list-empty"), rows.length ? "" : `Nothing optimized yet in ${experiment}: start an optimization above.`);
      $("list-table").hidden = !rows.length;
      fill($("optimizations"), rows);
      if (!selected && data.optimizations.length) selected = data.optimizations[0].run_id;
      show($("list-error"), "");
    } catch (error) {
      show($("list-error"), error.message);
    }
  }

  function diffView(diff) {
    if (!diff) return "—";
    const lines = diff.split("\n").slice(2); // the hunks: the versions are on the row
    return el("details", {}, el("summary", {}, "diff"),
      el("pre", { class: "diff" }, ...lines.map((line) =>
        el("span", { class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "" },
          `${line}\n`))));
  }

  function showLineage(lineage) {
    fill($("lineage"), (lineage.rows || []).map((row) =>
      el("tr", { "data-standing": row.standing, "data-shortlisted": row.shortlisted ? "yes" : "no" },
        el("td", { class: `depth-${Math.min(row.depth, 6)}` }, row.shortlisted ? `${row.version} ★` : row.version),
        el("td", {}, row.parent || "—"), el("td", { class: "num" }, row.iteration),
        el("td", {}, row.rewritten || "—"), el("td", { class: "num" }, fixed(row.mean)),
        el("td", { class: "num" }, row.scored), el("td", {}, row.standing),
        el("td", {}, row.front.join(", ") || "—"), el("td", {}, row.reasons || ""),
        el("td", {}, diffView(row.diff)))));
    const counts = Object.entries(lineage.skipped_by_reason || {});
    show($("skipped-counts"), counts.length
      ? `Skipped proposals: ${counts.map(([why, n]) => `${n} ${why}`).join(", ")}.` : "");
    $("skipped").replaceChildren(...(lineage.skipped || []).map((s) =>
      el("li", {}, `iteration ${s.iteration}: skipped a new ${s.component} template for ${s.parent}: ${s.problem}`)));
  }

  function showHeldout(heldout) {
    $("heldout").hidden = !heldout;
    if (!heldout) return;
    $("heldout-summary").textContent =
      `${heldout.judged} of ${heldout.total} cells judged by people in ${heldout.experiment}.`;
    $("heldout-judge").href = heldout.judge_page;
    $("heldout-grid").querySelector("thead").replaceChildren(el("tr", {},
      el("th", { scope: "col" }, "Version"),
      ...heldout.scenarios.map((s) => el("th", { scope: "col" }, s))));
    fill($("heldout-grid"), heldout.prompts.map((prompt) => el("tr", {},
      el("th", { scope: "row" }, prompt),
      ...heldout.scenarios.map((s) => {
        const state = heldout.cells[prompt][s];
        return el("td", { "data-state": state }, CELL_TEXT[state] || state);
      }))));
    const gate = heldout.gate || {};
    const what = gate.promote ? `would promote ${gate.prompt_version}`
      : gate.prompt_version ? `refuses ${gate.prompt_version}` : "nothing to promote yet";
    const verdict = gate.error ? `Gate: cannot decide yet: ${gate.error}` : `Gate: ${what}: ${gate.decided_how}`;
    $("heldout-gate").textContent = verdict;
    $("heldout-gate").dataset.promote = gate.promote ? "yes" : "no";
    $("heldout-checks").replaceChildren(...(gate.conditions || []).map((condition) =>
      el("li", { "data-passed": condition.passed ? "yes" : "no" },
        `${condition.passed ? "✓" : "✗"} ${condition.name}: ${condition.figure}`)));
  }

  async function loadDetail() {
    if (!selected) return;
    try {
      const data = await get(`/api/optimize/${encodeURIComponent(experiment)}/${selected}`);
      $("detail").hidden = false;
      $("detail-name").textContent = data.optimization.name;
      fill($("iterations"), data.iterations.map((row) =>
        el("tr", {},
          el("td", { class: "num" }, row.iteration), el("td", { class: "num" }, fixed(row.best_training_score)),
          el("td", { class: "num" }, row.evaluations), el("td", { class: "num" }, row.pool_size),
          el("td", { class: "num" }, row.proposals), el("td", { class: "num" }, row.skipped_proposals))));
      showLineage(data.lineage);
      const finished = data.optimization.status === "FINISHED";
      $("detail-chart").hidden = !finished;
      if (finished) {
        $("detail-plot").src = `/api/optimize/${encodeURIComponent(experiment)}/${selected}/chart.png`;
        $("detail-plot").alt = `Best training score per iteration of ${data.optimization.name}`;
      }
      showHeldout(data.heldout);
      show($("detail-error"), "");
    } catch (error) {
      show($("detail-error"), error.message);
    }
  }

  async function followJob(jobId) {
    $("optimize-job").hidden = false;
    $("optimize-job-id").textContent = jobId;
    for (;;) {
      try {
        const job = await get(`/api/bench/jobs/${jobId}`);
        $("optimize-job-state").textContent = job.state;
        const steps = job.cells_total ? ` ${job.phase || ""}: ${job.cells_done} / ${job.cells_total}` : "";
        $("optimize-job-progress").textContent = steps;
        show($("optimize-job-error"), job.error || "");
        await loadList();
        await loadDetail();
        if (!["queued", "running"].includes(job.state)) return;
      } catch (error) {
        show($("optimize-job-error"), error.message);
        return;
      }
      await new Promise((done) => setTimeout(done, POLL_MS));
    }
  }

  $("optimize-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = new FormData(event.target);
    const body = Object.fromEntries(form.entries());
    for (const key of ["budget", "seed"]) body[key] = Number(body[key]);
    try {
      $("optimize-submit").disabled = true;
      const created = await post("/api/optimize/run", body);
      experiment = body.experiment;
      selected = null;
      show($("optimize-error"), "");
      followJob(created.job_id);
    } catch (error) {
      show($("optimize-error"), error.message);
    } finally {
      $("optimize-submit").disabled = false;
    }
  });

  loadList().then(loadDetail);
})();
