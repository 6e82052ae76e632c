// The bench panel's online tier: for the experiment the leaderboard shows, what
// `/api/bench/online/{experiment}` gives (the figures of `tipbench compare --tier online`, the
// judged tiers' agreement with them, and promote's online condition).
"use strict";

(() => {
  const { el, ident, show } = tipbench;
  const $ = (id) => document.getElementById(id);
  const number = (v, digits = 4) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
  const signed = (v) => (v === null || v === undefined ? "–" : `${v >= 0 ? "+" : ""}${Number(v).toFixed(4)}`);
  const interval = (e, sign = false) =>
    e ? `${sign ? signed(e.value) : number(e.value)} [${sign ? signed(e.low) : number(e.low)}, ${sign ? signed(e.high) : number(e.high)}]` : "–";

  function table(header, rows) {
    return el(
      "table",
      {},
      el("thead", {}, el("tr", {}, header.map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows),
    );
  }

  function tierTable(online) {
    const rows = online.rows.map((r) =>
      el(
        "tr",
        { "data-source": r.source, "data-standing": r.standing },
        el("td", { class: "num" }, r.rank ?? "–"),
        el("td", {}, ident(r.source)),
        el("td", {}, r.standing),
        el("td", { class: "num" }, interval(r.value)),
        el("td", { class: "num" }, interval(r.vs_leader, true)),
        el("td", { class: "num" }, r.ess === null ? "–" : Math.round(r.ess).toLocaleString()),
        el("td", { class: "num" }, r.decisions.toLocaleString()),
        el("td", { class: "num" }, r.served.toLocaleString()),
      ),
    );
    return table(["#", "source", "standing", "value (DR)", "vs leader", "ESS", "offered", "served"], rows);
  }

  function agreementTable(found) {
    const rows = found.criteria.map((c) =>
      el(
        "tr",
        { "data-criterion": c.criterion, "data-verdict": c.verdict },
        el("td", {}, c.criterion),
        el("td", { class: "num" }, interval(c.rho, true)),
        el("td", {}, c.verdict),
      ),
    );
    return el(
      "section",
      { class: "agreement", "data-tier": found.tier },
      el("h3", {}, `Does the ${found.tier} tier's rubric predict what users do? `,
        el("span", { class: "muted" }, `· ${found.sources.length} sources with both, Spearman's rho`)),
      table(["criterion", "rho [95%]", "verdict"], rows),
    );
  }

  function promotionLine(promotion) {
    if (!promotion || !promotion.online) return null;
    const check = promotion.online;
    return el(
      "p",
      { id: "online-condition", "data-passed": String(check.passed) },
      el("strong", {}, `${check.passed ? "✓" : "✗"} ${check.name}: `),
      check.figure,
    );
  }

  let requested = 0;
  async function showOnline(name) {
    const request = ++requested;
    let found;
    try {
      found = await tipbench.get(`/api/bench/online/${encodeURIComponent(name)}`);
    } catch (error) {
      if (request === requested) show($("online-error"), `Could not load the online tier: ${error.message}`);
      return;
    }
    if (request !== requested) return;
    show($("online-error"), "");
    if (!found.online) {
      $("online-tier").replaceChildren(el("p", { class: "muted" }, found.note));
      return;
    }
    const online = found.online;
    const parts = [
      el("p", { class: "muted" },
        `${online.rewarded.toLocaleString()} rewarded decisions (live policy: ${online.live || "none"})`),
    ];
    parts.push(online.rows.length ? tierTable(online) : el("p", { class: "muted" }, "No rewarded decision yet."));
    for (const row of online.rows.filter((r) => !r.value)) {
      parts.push(el("p", { class: "muted" }, `${row.source}: ${row.status}: ${row.reason}`));
    }
    parts.push(...online.agreement.map(agreementTable));
    const line = promotionLine(found.promotion);
    if (line) parts.push(line);
    $("online-tier").replaceChildren(...parts);
  }

  document.addEventListener("tipbench:experiment", (event) => showOnline(event.detail));
})();
