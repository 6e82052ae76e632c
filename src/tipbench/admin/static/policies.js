// The Policies page: the serving state, the latest simulation, the off-policy evaluation and
// the promotion dry run from /api/policies, and a form that starts a simulation job.
"use strict";

(() => {
  const { el, show, get, post } = tipbench;
  const $ = (id) => document.getElementById(id);
  const fixed = (x, digits = 4) => (x === null || x === undefined ? "—" : Number(x).toFixed(digits));
  const signed = (x) => (x === null || x === undefined ? "—" : (x >= 0 ? "+" : "") + Number(x).toFixed(4));
  const ci = (e) => (e && e.value !== null ? `${fixed(e.value)} [${fixed(e.low)}, ${fixed(e.high)}]` : "—");
  const interval = (e) => (e ? `${fixed(e.value)} [${fixed(e.low)}, ${fixed(e.high)}]` : "—");
  const count = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en"));

  function fill(table, rows) {
    const body = table.querySelector("tbody");
    body.replaceChildren(...rows);
    table.hidden = rows.length === 0;
  }

  let livePolicy = null; // the serving state's, once loaded

  async function loadServing() {
    try {
      const data = await get("/api/policies");
      livePolicy = data.state ? data.state.live : null;
      if (!data.state) {
        $("serving-state").textContent =
          `Nothing served yet: tipbench policy serve starts the policies (state: ${data.state_url}).`;
        fill($("serving"), []);
        return;
      }
      const state = data.state;
      $("serving-state").textContent =
        `Live: ${state.live}; shadows: ${state.shadows.join(", ") || "none"} (state: ${data.state_url}).`;
      fill(
        $("serving"),
        state.policies.map((p) =>
          el("tr", { "data-role": p.role },
            el("td", {}, p.policy), el("td", {}, p.role), el("td", {}, p.features),
            el("td", { class: "num" }, count(p.decisions)),
            el("td", { class: "num" }, count(p.shadow_decisions)),
            el("td", { class: "num" }, count(p.rewards)),
            el("td", { class: "num" }, fixed(p.mean_reward)))),
      );
    } catch (error) {
      show($("serving-error"), error.message);
    }
  }

  async function loadSimulation() {
    try {
      const data = await get("/api/policies/simulation");
      const report = data.simulation;
      if (!report) {
        $("simulation-summary").textContent = `No simulation in ${data.experiment} yet: start one below.`;
        fill($("simulation"), []);
        $("simulation-chart").hidden = true;
        return;
      }
      const when = new Date(data.started_ms).toLocaleString("en-GB");
      $("simulation-summary").textContent =
        `${report.seeds.length} seeds × ${report.days} days, live: ${report.live}; ` +
        `oracle ${ci(report.oracle)}; run ${data.run_id} (${when}).`;
      fill(
        $("simulation"),
        report.policies.map((p) => {
          const vs = p.vs_live;
          return el("tr", { "data-role": p.policy === report.live ? "live" : "other" },
            el("td", {}, p.policy === report.live ? `${p.policy} (live)` : p.policy),
            el("td", { class: "num" }, ci(p.overall.reward)),
            el("td", { class: "num" }, fixed(p.overall.regret.value)),
            el("td", { class: "num" }, fixed(p.overall.completion.value, 3)),
            el("td", { class: "num" }, fixed(p.overall.dismiss.value, 3)),
            el("td", { class: "num" }, vs ? `${signed(vs.difference.value)} [${signed(vs.difference.low)}, ${signed(vs.difference.high)}]` : "—"),
            el("td", { class: "num" }, vs && vs.p_value !== null ? Number(vs.p_value).toPrecision(3) : "—"));
        }),
      );
      const img = $("simulation-plot");
      img.src = data.plot;
      img.alt = `Cumulative reward per user by day for ${report.policies.map((p) => p.policy).join(", ")}`;
      $("simulation-chart").hidden = false;
    } catch (error) {
      show($("simulation-error"), error.message);
    }
  }

  async function loadEvaluation() {
    try {
      const { evaluation } = await get("/api/policies/evaluation");
      if (!evaluation) {
        $("evaluation-summary").textContent =
          "Nothing logged to evaluate yet: the policy service logs each decision it serves.";
        fill($("evaluation"), []);
        return;
      }
      const observed = evaluation.observed.map((o) => `${o.policy} ${fixed(o.value.value)} over ${count(o.decisions)}`);
      $("evaluation-summary").textContent =
        `${count(evaluation.decisions)} logged decisions, ${count(evaluation.rewarded)} rewarded; ` +
        `observed: ${observed.join("; ") || "none"}.`;
      fill(
        $("evaluation"),
        evaluation.policies.map((p) =>
          p.status === "estimated"
            ? el("tr", {},
                el("td", {}, p.policy), el("td", {}, p.source),
                el("td", { class: "num" }, interval(p.estimates.ips)),
                el("td", { class: "num" }, interval(p.estimates.snips)),
                el("td", { class: "num" }, interval(p.estimates.dr)),
                el("td", { class: "num" }, fixed(p.ess, 1)),
                el("td", { class: "num" }, `${(100 * p.clipped).toFixed(1)}%`),
                el("td", { class: "num" }, count(p.decisions)))
            : el("tr", { "data-standing": "too little data" },
                el("td", {}, p.policy), el("td", {}, p.source),
                el("td", { colspan: 6 }, `${p.status}: ${p.reason}`))),
      );
      if (!evaluation.policies.length) $("evaluation-summary").append(" No shadow policy to evaluate.");
    } catch (error) {
      show($("evaluation-error"), error.message);
    }
  }

  async function loadPromotion() {
    const box = $("promotion");
    try {
      const data = await get("/api/policies/promotion");
      if (data.note) {
        box.replaceChildren(el("p", { class: "muted" }, data.note));
        return;
      }
      box.replaceChildren(
        ...data.decisions.map((d) =>
          el("div", { class: "decision" },
            el("h3", {}, `${d.challenger} over ${d.live}`,
              el("span", { class: `verdict ${d.promote ? "promote" : "refuse"}` },
                d.promote ? "would be promoted" : "refused")),
            el("ul", {}, d.conditions.map((c) =>
              el("li", { class: c.passed ? "passed" : null }, `${c.name}: ${c.figure}`))))),
      );
    } catch (error) {
      show($("promotion-error"), error.message);
    }
  }

  function reload() {
    return Promise.all([loadServing(), loadSimulation(), loadEvaluation(), loadPromotion()]);
  }

  async function follow(jobId) {
    $("simulate-job").hidden = false;
    $("simulate-job-id").textContent = jobId;
    for (;;) {
      const job = await get(`/api/bench/jobs/${jobId}`);
      const state = $("simulate-job-state");
      state.textContent = job.state;
      state.className = `job-state ${job.state}`;
      if (job.state === "succeeded") return reload();
      if (!["queued", "running"].includes(job.state)) {
        show($("simulate-job-error"), job.error || `the job ${job.state}`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }
  }

  $("simulate-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const form = event.target;
    show($("simulate-error"), "");
    show($("simulate-job-error"), "");
    const policies = [...form.querySelectorAll('input[name="policies"]:checked')].map((c) => c.value);
    const body = {
      policies,
      live: policies.includes(livePolicy) ? livePolicy : null,
      seeds: Number(form.seeds.value),
      days: Number(form.days.value),
      users: Number(form.users.value),
      experiment: form.experiment.value.trim(),
    };
    $("simulate-submit").disabled = true;
    try {
      const created = await post("/api/policies/simulate", body);
      await follow(created.job_id);
    } catch (error) {
      show($("simulate-error"), error.message);
    } finally {
      $("simulate-submit").disabled = false;
    }
  });

  reload();
})();
