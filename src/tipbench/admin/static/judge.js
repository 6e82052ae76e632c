// The judging page: one candidate at a time, scored from the keyboard. Every saved
// candidate is sent at once (POST .../scores, validated as `tipbench judge apply` validates
// a file): a run not completely scored is kept as a draft, which the next load fills in;
// the last candidate records the run. Saves carry the version of the run's scores they
// build on, so a run scored elsewhere meanwhile is refused, not overwritten. Leaving the
// page with scores not saved asks first. Runs come in the experiment's judging order, and
// after every save the page says whether the leader is decided or how much is left.
"use strict";

(() => {
  const { el, ident, show } = tipbench;
  const root = document.getElementById("judge");
  const experiment = root.dataset.experiment;
  const form = document.getElementById("score-form");
  const criteria = [...form.querySelectorAll("fieldset.criterion")].map((f) => f.dataset.criterion);
  const flagKeys = { f: "format_ok", o: "overlong" };
  const $ = (id) => document.getElementById(id);
  const nameInput = $("judge-name");
  // A touch screen has no keys to press: the page hides its keyboard hints (style.css).
  const touch = window.matchMedia("(hover: none) and (pointer: coarse)");

  const state = {
    item: null, // the run being judged, as the API sent it; scores filled in as we go
    number: null, // the item's number (shown instead of its run id: judging is blind)
    total: 0,
    index: 0, // the candidate shown
    active: 0, // the criterion keys 1-5 score
    remainingRuns: 0,
    remainingCandidates: 0,
    saved: "", // the scores as last saved (or loaded), to tell what is not saved yet
    saving: Promise.resolve(), // saves go one after the other, each on the last's version
    busy: false,
  };

  nameInput.value = localStorage.getItem("tipbench.judge") || "";
  nameInput.addEventListener("change", () => {
    localStorage.setItem("tipbench.judge", nameInput.value.trim());
  });

  const candidate = () => state.item.candidates[state.index];
  const complete = (c) => criteria.every((name) => Number.isInteger(c.scores[name]));
  const scoredCount = () => state.item.candidates.filter(complete).length;
  const itemName = () => (state.number ? `item ${state.number}` : "this item");
  const scoresOf = (item) => JSON.stringify(item.candidates.map((c) => c.scores));
  // Scores on the page that no save has sent yet (the form of the shown candidate included).
  const unsaved = () => {
    if (!state.item) return false;
    const shown = { ...state.item, candidates: [...state.item.candidates] };
    shown.candidates[state.index] = { ...candidate(), scores: readForm() };
    return scoresOf(shown) !== state.saved;
  };

  function renderRemaining() {
    const left = state.remainingCandidates - (state.item ? scoredCount() : 0);
    const runs = state.remainingRuns;
    let text = `${left} candidate${left === 1 ? "" : "s"} left in ${runs} run${runs === 1 ? "" : "s"}`;
    if (runs === 0) text = state.total ? "Nothing left to judge." : ""; // the empty state says it
    else if (left === 0) text = "Every candidate scored; the last run is not saved yet";
    $("remaining").textContent = text;
  }

  // How the judging stands for the combined tier: "The leader is decided: you can stop."
  // or "About 12 more judgments expected." — after every load and every save.
  function renderJudging(judging) {
    const box = $("judging-status");
    if (!judging || !judging.message) return;
    const text = judging.message.charAt(0).toUpperCase() + judging.message.slice(1);
    box.textContent = `${text}.`;
    // What the gate can find on these scenarios, said before anyone judges (issue 43).
    $("judging-detectable").textContent = judging.detectable ? `${judging.detectable}.` : "";
    box.classList.toggle("decided", judging.decided);
    box.hidden = false;
  }

  function renderScenario(scenario) {
    $("scenario-id").textContent = scenario.id || "";
    $("persona-name").textContent = scenario.persona_name || scenario.persona || "";
    $("persona-description").textContent = scenario.persona_description || "";
    $("time-slot").textContent = scenario.time_slot_label || scenario.time_slot || "";
    $("local-time").textContent = scenario.local_time ? `at ${scenario.local_time}` : "";
    $("slot-context").textContent = scenario.slot_context || "";
    $("tasks").replaceChildren(...(scenario.tasks || []).map((task) => el("li", {}, task)));
  }

  // The rubric is Markdown; show its headings, lists and **bold** without any raw HTML.
  function renderRubric(rubric) {
    $("rubric-id").textContent = rubric.id;
    const box = $("rubric-text");
    box.replaceChildren();
    let list = null;
    const inline = (text) =>
      text.split(/(\*\*[^*]+\*\*|`[^`]+`)/).map((part) => {
        if (part.startsWith("**") && part.endsWith("**")) return el("strong", {}, part.slice(2, -2));
        if (part.startsWith("`") && part.endsWith("`")) return el("code", {}, part.slice(1, -1));
        return part;
      });
    const lines = Array.isArray(rubric.text) ? rubric.text : String(rubric.text).split("\n");
    for (const line of lines) {
      const heading = line.match(/^(#{1,3}) (.*)$/);
      const item = line.match(/^(\s*)- (.*)$/);
      if (heading) {
        list = null;
        const name = heading[2].split(" ")[0];
        box.append(el(heading[1].length === 1 ? "h3" : "h4", { "data-section": name }, heading[2]));
      } else if (item) {
        if (!list) box.append((list = el("ul")));
        list.append(el("li", { class: item[1] ? "example" : null }, inline(item[2])));
      } else if (line.trim()) {
        list = null;
        box.append(el("p", {}, inline(line)));
      }
    }
  }

  function renderCandidate() {
    const item = state.item;
    const current = candidate();
    // Blind judging: an item number, never the run id (it leads to the model in MLflow); the
    // model, prompt and run are only there when the page was opened with ?reveal=1.
    const of = state.number ? `Item ${state.number} of ${state.total}` : "Item";
    const shown = item.model
      ? [" · ", ident(item.model), " · prompt ", ident(item.prompt_version), " · run ", ident(item.run_id)]
      : [];
    $("run-info").replaceChildren(of, ...shown);
    $("candidate-position").textContent = `${state.index + 1} of ${item.candidates.length}`;
    $("candidate-text").textContent = current.text;
    $("candidate-steps").replaceChildren(
      ...item.candidates.map((c, i) =>
        el(
          "li",
          {
            class: [complete(c) ? "scored" : "", i === state.index ? "current" : ""].join(" "),
            "aria-current": i === state.index ? "step" : null,
            title: complete(c) ? `${c.id}: scored` : `${c.id}: not scored yet`,
          },
          String(i + 1),
        ),
      ),
    );
    for (const name of criteria) {
      for (const radio of form.elements[name]) {
        radio.checked = Number(radio.value) === current.scores[name];
      }
    }
    for (const flag of Object.values(flagKeys)) form.elements[flag].checked = current.scores[flag] === 1;
    const firstMissing = criteria.findIndex((name) => !Number.isInteger(current.scores[name]));
    setActive(firstMissing === -1 ? criteria.length : firstMissing);
    show($("judge-error"), "");
    renderRemaining();
  }

  // Which criterion the number keys score; past the last one, Enter saves.
  function setActive(index) {
    state.active = index;
    form.querySelectorAll("fieldset.criterion").forEach((fieldset, i) => {
      fieldset.classList.toggle("active", i === index);
    });
    $("save").classList.toggle("ready", index >= criteria.length);
    const name = criteria[Math.min(index, criteria.length - 1)];
    const box = $("rubric-text");
    box.querySelectorAll("[data-section]").forEach((h) => {
      h.classList.toggle("current", h.dataset.section === name && index < criteria.length);
    });
    const heading = box.querySelector(`[data-section="${name}"]`);
    // .rubric-text is positioned, so offsetTop is measured from its top.
    if (heading && index < criteria.length) box.scrollTop = heading.offsetTop - 8;
  }

  function readForm() {
    const scores = { ...candidate().scores };
    for (const name of criteria) {
      const checked = form.querySelector(`input[name="${name}"]:checked`);
      scores[name] = checked ? Number(checked.value) : null;
    }
    for (const flag of Object.values(flagKeys)) scores[flag] = form.elements[flag].checked ? 1 : 0;
    return scores;
  }

  function go(index) {
    candidate().scores = readForm();
    state.index = (index + state.item.candidates.length) % state.item.candidates.length;
    renderCandidate();
  }

  async function saveCandidate() {
    if (state.busy || !state.item) return;
    const scores = readForm();
    const missing = criteria.filter((name) => scores[name] === null);
    if (missing.length) {
      const names = new Intl.ListFormat("en", { type: "conjunction" }).format(missing);
      show($("judge-error"), `Score ${names} first${touch.matches ? "" : " (keys 1–5)"}.`);
      setActive(criteria.indexOf(missing[0]));
      return;
    }
    candidate().scores = scores;
    const candidates = state.item.candidates;
    const next = candidates.findIndex((c, i) => i > state.index && !complete(c));
    const anyLeft = next === -1 ? candidates.findIndex((c) => !complete(c)) : next;
    if (anyLeft !== -1) {
      // Kept as a draft in the background; the judge goes on to the next candidate.
      save(state.item).catch(() => {});
      state.index = anyLeft;
      renderCandidate();
      return;
    }
    await saveRun();
  }

  // Send the run's scores as they are now; queued after any save still on its way, and sent
  // with the version of the scores that save left.
  function save(item) {
    const body = { ...item, candidates: item.candidates.map((c) => ({ ...c, scores: { ...c.scores } })) };
    const judge = nameInput.value.trim();
    const query = judge ? `?judge=${encodeURIComponent(judge)}` : "";
    const sent = state.saving.then(async () => {
      body.scores_version = item.scores_version;
      try {
        const saved = await tipbench.post(
          `/api/bench/judging/${encodeURIComponent(experiment)}/scores${query}`,
          body,
        );
        item.scores_version = saved.scores_version;
        renderJudging(saved.judging);
        if (state.item === item) state.saved = scoresOf(body);
        if (!saved.applied && !saved.unchanged && !saved.drafted && !saved.incomplete) {
          throw new Error("the scores were not written to the tracking store; try again");
        }
        if (saved.drafted && state.item === item) {
          show($("judge-notice"), `Draft of ${itemName()} saved: ${scoredCount()} of ${item.candidates.length} candidates scored.`);
        }
        return saved;
      } catch (error) {
        show($("judge-notice"), "");
        show($("judge-error"), `Not saved: ${error.message}`);
        throw error;
      }
    });
    state.saving = sent.catch(() => {});
    return sent;
  }

  async function saveRun() {
    state.busy = true;
    $("save").disabled = true;
    try {
      const saved = await save(state.item);
      if (!saved.applied && !saved.unchanged) {
        throw new Error("the run is not complete on the server; reload the page");
      }
      show($("judge-notice"), `Saved ${itemName()}.`);
      await loadNext();
    } catch (error) {
      renderCandidate();
      show($("judge-notice"), "");
      show($("judge-error"), `Not saved: ${error.message}`);
    } finally {
      state.busy = false;
      $("save").disabled = false;
    }
  }

  async function loadNext() {
    const reveal = new URLSearchParams(window.location.search).has("reveal") ? "?reveal=true" : "";
    const next = await tipbench.get(`/api/bench/judging/${encodeURIComponent(experiment)}/next${reveal}`);
    state.remainingRuns = next.remaining_runs;
    state.remainingCandidates = next.remaining_candidates;
    state.item = next.item;
    state.number = next.number;
    state.total = next.total;
    if (!next.item) {
      root.hidden = true;
      // No run at all is an empty state (nothing collected yet), not "nothing left".
      $(next.total ? "done" : "empty").hidden = false;
      if (next.total) renderJudging(next.judging);
      renderRemaining();
      return;
    }
    renderJudging(next.judging);
    if (next.rubric) renderRubric(next.rubric);
    renderScenario(next.item.scenario);
    state.saved = scoresOf(next.item); // a draft loaded is saved already
    const first = next.item.candidates.findIndex((c) => !complete(c));
    state.index = first === -1 ? 0 : first;
    root.hidden = false;
    renderCandidate();
  }

  function onKey(event) {
    if (!state.item || event.ctrlKey || event.metaKey || event.altKey) return;
    const target = event.target;
    if (target === nameInput || (target.tagName === "INPUT" && target.type === "text")) return;
    if (target.closest("a, button") && !form.contains(target)) return; // e.g. Log out
    const key = event.key;
    if (/^[1-5]$/.test(key)) {
      const index = Math.min(state.active, criteria.length - 1);
      const radio = form.querySelector(`input[name="${criteria[index]}"][value="${key}"]`);
      radio.checked = true;
      candidate().scores = readForm();
      show($("judge-error"), "");
      setActive(index + 1);
    } else if (flagKeys[key.toLowerCase()]) {
      const box = form.elements[flagKeys[key.toLowerCase()]];
      box.checked = !box.checked;
    } else if (key === "Enter") {
      saveCandidate();
    } else if (key === "ArrowLeft" && !target.matches("input[type=radio]")) {
      go(state.index - 1);
    } else if (key === "ArrowRight" && !target.matches("input[type=radio]")) {
      go(state.index + 1);
    } else {
      return;
    }
    event.preventDefault();
  }

  document.addEventListener("keydown", onKey);
  // Leaving (reload, another page, closing the tab) with scores not saved asks first.
  window.addEventListener("beforeunload", (event) => {
    if (!unsaved()) return;
    event.preventDefault();
    event.returnValue = ""; // older browsers ask only when this is set
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    saveCandidate();
  });
  form.addEventListener("change", (event) => {
    const index = criteria.indexOf(event.target.name);
    if (index !== -1) setActive(index + 1);
  });
  form.querySelectorAll("fieldset.criterion").forEach((fieldset, i) => {
    fieldset.addEventListener("click", () => {
      if (!fieldset.querySelector("input:checked")) setActive(i);
    });
  });

  // An experiment not collected yet shows its empty state (the page's): nothing to ask.
  if (root.dataset.exists === "true") {
    loadNext().catch((error) => show($("load-error"), `Could not load the next run: ${error.message}`));
  }
})();
