// The /ui page: polls /v1/overview and draws it. Everything from the service is set as text, never as markup.
"use strict";

const POLL_MS = 3000;
const TOKEN_KEY = "hetsched-planner-token";
const WEAK_FIT_R2 = 0.9; // a profile fit below this R² is marked: its cost line explains less than 90 % of the samples

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function num(x, digits) {
  if (x === null || x === undefined) return "–";
  return Number(x).toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

const componentHues = new Map();
function componentColour(component) {
  if (!componentHues.has(component)) {
    let h = 0;
    for (const c of component) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    componentHues.set(component, h % 360);
  }
  return `hsl(${componentHues.get(component)}, 55%, 40%)`;
}

function token() {
  const fromFragment = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromFragment) {
    sessionStorage.setItem(TOKEN_KEY, fromFragment);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

function executorChip(e) {
  const label = e.index !== null && e.index !== undefined ? `${e.component} #${e.index}` : `${e.component} [${e.tasks}]`;
  const chip = el("span", { class: "executor", "data-component": e.component, title: e.cpu !== null && e.cpu !== undefined
    ? `${label}: ${num(e.cpu, 1)} % CPU at ${num(e.input_rate, 2)} tuples/s in` : label }, label);
  chip.style.background = componentColour(e.component);
  return chip;
}

function machineBox(m, bottleneck) {
  const load = m.utilization;
  const isBottleneck = bottleneck !== undefined && bottleneck !== null && m.id === bottleneck;
  const head = el("div", { class: "machine-head" },
    el("span", { class: "machine-id" }, m.id),
    load !== null && load !== undefined
      ? el("span", { class: isBottleneck ? "weak" : "" }, `load ${num(load, 1)} %${isBottleneck ? " · bottleneck" : ""}`)
      : el("span", { class: "note" }, m.capacity ? `capacity ${num(m.capacity, 0)} % of a core` : ""));
  const box = el("div", { class: "machine", "data-machine": m.id, "data-machine-type": m.type }, head);
  if (load !== null && load !== undefined) {
    const fill = el("span");
    fill.style.width = `${Math.min(100, load)}%`;
    box.append(el("div", { class: `bar${isBottleneck ? " full" : ""}` }, fill));
  }
  box.append(el("div", { class: "executors" }, m.executors.map(executorChip)));
  return box;
}

function typeGroups(machines) {
  const groups = new Map();
  for (const m of machines) {
    if (!groups.has(m.type)) groups.set(m.type, []);
    groups.get(m.type).push(m);
  }
  return [...groups].map(([type, ms]) => ({ machine_type: type, machines: ms }));
}

function machineTypeGroups(groups, bottleneck) {
  return groups.map((g) => el("div", { class: "type-group", "data-machine-type": g.machine_type },
    el("div", { class: "type-name" }, g.machine_type ? `${g.machine_type} · ${g.machines.length} machine${g.machines.length === 1 ? "" : "s"}` : "not placed"),
    el("div", { class: "machines" }, g.machines.map((m) => machineBox(m, bottleneck)))));
}

function planCard(p) {
  const counts = Object.entries(p.instances).map(([c, n]) => `${c} ×${n}`).join(", ");
  return el("div", { class: "card plan", "data-plan": p.id, "data-topology": p.topology },
    el("h3", {}, `${p.topology}`, el("span", { class: "note" }, ` · plan ${p.id}`)),
    el("div", { class: "facts" },
      el("span", {}, "strategy ", el("b", {}, p.strategy)),
      el("span", {}, "input rate R ", el("b", {}, `${num(p.input_rate, 2)} tuples/s`)),
      el("span", {}, "weighted utilisation ", el("b", {}, `${num(p.weighted_utilization, 1)} %`)),
      el("span", {}, "bottleneck ", el("b", {}, p.bottleneck || "none")),
      el("span", {}, "profiles ", el("b", {}, p.profiles || "inline")),
      el("span", {}, "instances ", el("b", {}, counts)),
      p.feasible ? null : el("span", { class: "weak" }, "not feasible"),
      el("span", {}, `stored ${new Date(p.created_at * 1000).toLocaleString()}`)),
    machineTypeGroups(p.machine_types, p.bottleneck));
}

function drawPlans(overview) {
  const body = document.querySelector("#plans .body");
  const shown = overview.plans.length;
  body.replaceChildren(
    el("p", { class: "note" }, shown === 0 ? "No plan is stored yet (POST /v1/plans, or hetsched plan)."
      : `${overview.plans_stored} stored${overview.plans_stored > shown ? `, the newest ${shown} shown` : ""}. `
        + "Each machine's bar is its predicted CPU load at R, in percent of the whole machine; "
        + "the bottleneck is the machine (or instance) that limits R."),
    ...overview.plans.map(planCard));
}

function utc(iso) {
  return iso ? `${iso.slice(0, 19).replace("T", " ")} UTC` : "–";
}

function movesText(moves) {
  const byTarget = new Map();
  for (const m of moves) {
    if (!byTarget.has(m.machine)) byTarget.set(m.machine, []);
    byTarget.get(m.machine).push(`${m.component} #${m.index}`);
  }
  return [...byTarget].map(([machine, instances]) => `${instances.join(", ")} → ${machine}`).join("; ") || "nothing moves";
}

function runningContingency(t) {
  const r = t.running_contingency;
  return el("p", { class: "note", "data-running-contingency": r.machine },
    `Runs plan ${r.plan_id}'s contingency for machine ${r.machine}, lost ${utc(r.lost_at)} (the plugin applied it): `
    + (r.input_rate === null ? "the plan stores no contingency for it."
      : `predicted R ${num(r.input_rate, 2)} tuples/s${r.bottleneck ? ` (bottleneck ${r.bottleneck})` : ""}; `
        + `moved ${r.moved}: ${movesText(r.moves)}.`));
}

function contingencyTable(t) {
  const note = t.contingencies_note ? el("p", { class: "note" }, t.contingencies_note) : null;
  if (t.running_contingency) return el("div", {}, runningContingency(t), note);
  if (!t.contingencies || t.contingencies.length === 0) {
    return el("p", { class: "note" }, t.plan_id ? `Plan ${t.plan_id} stores no contingencies (plan it with options.survive_loss).`
      : "No plan is bound to it, so no contingency is known here.");
  }
  return el("div", {}, el("table", { class: "contingencies" },
    el("thead", {}, el("tr", {}, ["if this machine is lost", "predicted R after (tuples/s)", "bottleneck after", "moves"].map((h) => el("th", {}, h)))),
    el("tbody", {}, t.contingencies.map((c) => el("tr", { "data-lost-machine": c.machine },
      el("td", {}, c.machine), el("td", { class: "num" }, num(c.input_rate, 2)), el("td", {}, c.bottleneck ?? "–"),
      el("td", {}, movesText(c.moves)))))), note);
}

function eventsTable(t) {
  if (t.events.length === 0) return el("p", { class: "note" }, "No event recorded yet.");
  return el("table", { class: "events" },
    el("thead", {}, el("tr", {}, ["time", "event", "what happened"].map((h) => el("th", {}, h)))),
    el("tbody", {}, t.events.map((e) => el("tr", { "data-event-kind": e.kind },
      el("td", { class: "when" }, utc(e.at)), el("td", {}, e.kind), el("td", {}, e.sentence)))));
}

function drawTopologies(overview) {
  const body = document.querySelector("#topologies .body");
  if (overview.topologies.length === 0) {
    body.replaceChildren(el("p", { class: "note" }, "No topology is bound, registered or running yet."));
    return;
  }
  const live = overview.cluster.readable;
  body.replaceChildren(
    el("p", { class: "note" }, "Predicted: the R of the plan it is placed by. Measured: its spouts' emits over Nimbus's "
      + "last 10 minutes (with --nimbus). Each contingency says where a machine's loss moves which instances."),
    ...overview.topologies.map((t) => el("div", { class: "card topology-status", "data-topology-status": t.name },
      el("h3", {}, t.name, el("span", { class: "note" }, live ? (t.running ? " · running" : " · not running") : "")),
      el("div", { class: "facts" },
        el("span", {}, "plan ", el("b", {}, t.plan_id ?? "none known"),
          t.plan_source === "bound" ? ` (bound ${utc(t.bound_at)})` : t.plan_source === "ledger" ? " (its ledger registration)" : ""),
        el("span", {}, "predicted R ", el("b", {}, t.predicted_rate === null ? "–" : `${num(t.predicted_rate, 2)} tuples/s`)),
        el("span", {}, "measured R ", el("b", {}, t.measured_rate === null ? "–" : `${num(t.measured_rate, 2)} tuples/s`),
          t.measured_rate === null ? "" : ` over the last ${num(t.measured_window_s, 0)} s`)),
      contingencyTable(t),
      eventsTable(t))));
}

function fitCell(r2) {
  if (r2 === null || r2 === undefined) return el("td", { class: "num note" }, "–");
  return el("td", { class: `num ${r2 < WEAK_FIT_R2 ? "weak" : "good"}` }, num(r2, 3));
}

function drawProfiles(overview) {
  const body = document.querySelector("#profiles .body");
  if (overview.profile_sets.length === 0) {
    body.replaceChildren(el("p", { class: "note" }, "No profile set is stored yet (PUT /v1/profiles/NAME, or hetsched profiles put)."));
    return;
  }
  body.replaceChildren(...overview.profile_sets.map((s) => el("div", { class: "card profile-set", "data-profile-set": s.name },
    el("h3", {}, s.name, s.version ? el("span", { class: "note" }, ` · version ${s.version}`) : null),
    el("div", { class: "facts" }, el("span", {}, "weakest fit R² ",
      s.worst_r2 === null ? el("b", {}, "not recorded") : el("b", { class: s.worst_r2 < WEAK_FIT_R2 ? "weak" : "good" }, num(s.worst_r2, 3)))),
    el("table", {},
      el("thead", {}, el("tr", {}, ["profile", "machine type", "e (s/tuple)", "met (%)", "R²", "samples", "rates fitted (tuples/s)"].map((h) => el("th", {}, h)))),
      el("tbody", {}, s.entries.map((e) => el("tr", {},
        el("td", {}, e.profile), el("td", {}, e.machine_type),
        el("td", { class: "num" }, num(e.e, 5)), el("td", { class: "num" }, num(e.met, 2)),
        fitCell(e.r2), el("td", { class: "num" }, e.samples ?? "–"),
        el("td", { class: "num" }, e.rate_range ? `${num(e.rate_range[0], 1)} – ${num(e.rate_range[1], 1)}` : "–"))))))));
}

function drawCluster(overview) {
  const c = overview.cluster;
  const body = document.querySelector("#cluster .body");
  if (!c.readable) {
    body.replaceChildren(el("p", { class: c.nimbus ? "problem" : "note", id: "cluster-problem" }, c.problem));
    return;
  }
  const supervisors = el("table", { id: "supervisors" },
    el("thead", {}, el("tr", {}, ["host", "machine", "machine type", "CPU capacity (% of a core)", "slots used"].map((h) => el("th", {}, h)))),
    el("tbody", {}, c.supervisors.map((s) => el("tr", { "data-host": s.host },
      el("td", {}, s.host), el("td", {}, s.machine_id ?? "–"), el("td", {}, s.machine_type ?? "unknown"),
      el("td", { class: "num" }, num(s.capacity, 0)), el("td", { class: "num" }, `${s.used_slots} / ${s.slots}`)))));
  const topologies = c.topologies.length === 0 ? el("p", { class: "note" }, "No topology is running.")
    : c.topologies.map((t) => el("div", { class: "card topology", "data-topology": t.name },
      el("h3", {}, t.name, el("span", { class: "note" }, ` · ${t.id}`)),
      el("div", { class: "facts" }, el("span", {}, "status ", el("b", {}, t.status)),
        el("span", {}, "workers ", el("b", {}, t.workers))),
      el("div", { class: "sched" }, t.sched_status ? `scheduler: ${t.sched_status}` : "scheduler: (no message)"),
      t.error ? el("p", { class: "problem" }, t.error) : machineTypeGroups(typeGroups(t.machines), null)));
  body.replaceChildren(
    el("p", { class: "note" }, `Nimbus ${c.nimbus}, leader ${c.leader ?? "none"}; ${c.supervisors.length} supervisors.`),
    supervisors, el("h3", {}, "Running topologies"), ...[topologies].flat());
}

function showTokenForm(problem) {
  const form = document.getElementById("token-form");
  form.hidden = false;
  document.getElementById("token-problem").textContent = problem;
}

let timer = null;

async function refresh() {
  clearTimeout(timer);
  const status = document.getElementById("status");
  const t = token();
  try {
    const answer = await fetch("/v1/overview", { headers: t ? { Authorization: `Bearer ${t}` } : {}, cache: "no-store" });
    if (answer.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      showTokenForm(t ? "That token was refused." : "");
      status.textContent = "waiting for the token";
      return;
    }
    const overview = await answer.json();
    if (!answer.ok) throw new Error(overview.detail || `the service answered ${answer.status}`);
    document.getElementById("token-form").hidden = true;
    drawTopologies(overview);
    drawCluster(overview);
    drawPlans(overview);
    drawProfiles(overview);
    status.className = "";
    status.textContent = `updated ${new Date().toLocaleTimeString()}, again every ${POLL_MS / 1000} s`;
  } catch (fault) {
    status.className = "stale";
    status.textContent = `cannot read the planner (${fault.message}); trying again every ${POLL_MS / 1000} s`;
  }
  timer = setTimeout(refresh, POLL_MS);
}

document.getElementById("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = document.getElementById("token-input").value.trim();
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  refresh();
});

refresh();
