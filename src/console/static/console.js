// corral's web console: plain browser JavaScript, no dependencies. It calls the JSON API under
// /console/api/ (src/console/console-service.ts) on the admin port that served it.
const $ = (id) => document.getElementById(id);
const API = "api/";

/** Builds an element; children are nodes or strings (always set as text, never as HTML). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  for (const child of children.flat()) if (child !== undefined && child !== null) node.append(child instanceof Node ? child : String(child));
  return node;
}

class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function api(route, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  let answer;
  try {
    answer = await fetch(API + route, init);
  } catch (error) {
    throw new ApiError("CONNECTIONLOSS", `the admin port did not answer (${error.message})`);
  }
  const value = await answer.json().catch(() => ({ error: { code: "SYSTEMERROR", message: `HTTP ${answer.status}` } }));
  if (!answer.ok || value.error) throw new ApiError(value.error?.code ?? "SYSTEMERROR", value.error?.message ?? `HTTP ${answer.status}`);
  return value;
}

function showError(error, doing) {
  const box = $("error");
  box.replaceChildren(el("b", {}, error.code ?? "ERROR"), ` ${doing ? doing + ": " : ""}${error.message}`);
  box.dataset.code = error.code ?? "ERROR";
  box.hidden = false;
}
/** `api`'s answer, or undefined once a failure is shown in the error box. */
async function apiOrShowError(route, doing) {
  try {
    return await api(route);
  } catch (error) {
    showError(error, doing);
    return undefined;
  }
}
function clearError() {
  $("error").hidden = true;
  delete $("error").dataset.code;
}
let noticeTimer;
function notice(text) {
  const box = $("notice");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (box.hidden = true), 4000);
}

const childPath = (parent, name) => (parent === "/" ? `/${name}` : `${parent}/${name}`);

// ---- tabs

let activeTab = "tree";
for (const button of document.querySelectorAll(".tab")) {
  button.addEventListener("click", () => {
    activeTab = button.dataset.tab;
    for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b === button);
    for (const panel of document.querySelectorAll(".panel")) panel.hidden = panel.id !== `tab-${activeTab}`;
    if (activeTab === "recipes") loadRecipes();
    poll();
  });
}

// ---- tree

/** path → { li, ul, expanded } for every node shown in the tree. */
const shown = new Map();
let selected = "/";
let current; // the selected node's last answer
let dataView = "text";

function treeRow(path, name, info) {
  const toggle = el("span", { class: "toggle" }, info.numChildren > 0 ? "▸" : "·");
  const row = el(
    "div",
    { class: "row", "data-path": path },
    toggle,
    el("span", { class: "name" }, name),
    info.ephemeral ? el("span", { class: "eph", title: "ephemeral" }, "eph") : null,
    info.numChildren > 0 ? el("span", { class: "count" }, `(${info.numChildren})`) : null,
  );
  const ul = el("ul");
  const li = el("li", {}, row, ul);
  const entry = { li, ul, row, toggle, expanded: false, numChildren: info.numChildren };
  shown.set(path, entry);
  toggle.addEventListener("click", (event) => {
    event.stopPropagation();
    if (entry.expanded) collapse(path);
    else expand(path);
  });
  row.addEventListener("click", () => select(path));
  row.addEventListener("dblclick", () => (entry.expanded ? collapse(path) : expand(path)));
  return li;
}

async function expand(path) {
  const entry = shown.get(path);
  if (!entry) return;
  try {
    const answer = await api(`children?path=${encodeURIComponent(path)}`);
    entry.expanded = true;
    entry.numChildren = answer.total;
    entry.toggle.textContent = answer.total > 0 ? "▾" : "·";
    const keep = new Set(answer.children.map((c) => childPath(path, c.name)));
    for (const key of [...shown.keys()]) if (key !== path && parentOf(key) === path && !keep.has(key)) forget(key);
    const items = answer.children.map((child) => {
      const p = childPath(path, child.name);
      const old = shown.get(p);
      if (old) {
        old.numChildren = child.numChildren;
        setCount(old, child.numChildren);
        return old.li;
      }
      return treeRow(p, child.name, child);
    });
    if (answer.total > answer.children.length) items.push(el("li", { class: "muted" }, `… ${answer.total - answer.children.length} more`));
    entry.ul.replaceChildren(...items);
    markSelected();
  } catch (error) {
    showError(error, `list ${path}`);
  }
}

function collapse(path) {
  const entry = shown.get(path);
  if (!entry) return;
  entry.expanded = false;
  for (const key of [...shown.keys()]) if (key !== path && key.startsWith(path === "/" ? "/" : path + "/")) shown.delete(key);
  entry.ul.replaceChildren();
  entry.toggle.textContent = entry.numChildren > 0 ? "▸" : "·";
}

/** A collapsed node's child count, as last read. */
function setCount(entry, numChildren) {
  entry.numChildren = numChildren;
  if (!entry.expanded) entry.toggle.textContent = numChildren > 0 ? "▸" : "·";
  let count = entry.row.querySelector(".count");
  if (numChildren > 0) {
    if (!count) entry.row.append((count = el("span", { class: "count" })));
    count.textContent = `(${numChildren})`;
  } else count?.remove();
}

function forget(path) {
  for (const key of [...shown.keys()]) if (key === path || key.startsWith(path + "/")) shown.delete(key);
}

function parentOf(path) {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function markSelected() {
  for (const [path, entry] of shown) entry.row.classList.toggle("selected", path === selected);
}

async function resetTree() {
  shown.clear();
  const root = treeRow("/", "/", { numChildren: 1 });
  $("tree").replaceChildren(root);
  await expand("/");
}

async function select(path) {
  selected = path;
  markSelected();
  $("edit-form").hidden = true;
  $("create-form").hidden = true;
  await loadNode();
}

async function loadNode() {
  const path = selected;
  $("node-path").textContent = path;
  try {
    const answer = await api(`node?path=${encodeURIComponent(path)}`);
    if (path !== selected) return;
    current = answer;
    clearError();
    renderNode();
  } catch (error) {
    if (path !== selected) return;
    current = undefined;
    renderNode();
    showError(error, `read ${path}`);
  }
}

function renderNode() {
  const node = current;
  const entry = shown.get(selected);
  if (entry && node?.children) setCount(entry, node.children.length);
  const data = node?.data;
  $("data-size").textContent = data ? `${data.size} bytes` : "";
  for (const b of document.querySelectorAll(".view")) {
    const view = b.dataset.view;
    b.disabled = !data || (view === "text" && data.text === undefined) || (view === "json" && data.json === undefined);
  }
  let view = dataView;
  if (data) {
    if (view === "json" && data.json === undefined) view = "text";
    if (view === "text" && data.text === undefined) view = "hex";
    if (dataView === "text" && data.json !== undefined) view = "json";
  }
  for (const b of document.querySelectorAll(".view")) b.classList.toggle("active", b.dataset.view === view);
  const pre = $("node-data");
  pre.dataset.view = view;
  if (!node) pre.textContent = "";
  else if (node.dataError) pre.textContent = `${node.dataError.code}: ${node.dataError.message}`;
  else if (view === "json") pre.textContent = data.json;
  else if (view === "text") pre.textContent = data.text;
  else pre.textContent = hexDump(data.hex) + (data.hexTruncated ? "\n… (cut)" : "");
  const stat = node?.stat ?? {};
  $("node-stat").replaceChildren(
    ...Object.entries(stat).map(([key, value]) =>
      el("tr", {}, el("td", {}, key), el("td", { "data-stat": key }, key.endsWith("time") && value ? `${value} (${new Date(value).toISOString()})` : value)),
    ),
  );
  $("node-acl").replaceChildren(
    el("tr", {}, el("th", {}, "scheme"), el("th", {}, "id"), el("th", {}, "perms")),
    ...(node?.acl ?? []).map((a) => el("tr", {}, el("td", {}, a.scheme), el("td", { class: "mono" }, a.id), el("td", { class: "mono" }, a.perms))),
    ...(node?.aclError ? [el("tr", {}, el("td", { colspan: 3 }, `${node.aclError.code}: ${node.aclError.message}`))] : []),
  );
}

function hexDump(hex) {
  const lines = [];
  for (let i = 0; i < hex.length; i += 32) {
    const chunk = hex.slice(i, i + 32);
    const bytes = chunk.match(/../g) ?? [];
    const ascii = bytes
      .map((b) => {
        const c = parseInt(b, 16);
        return c >= 32 && c < 127 ? String.fromCharCode(c) : ".";
      })
      .join("");
    lines.push(`${(i / 2).toString(16).padStart(8, "0")}  ${bytes.join(" ").padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}

for (const b of document.querySelectorAll(".view"))
  b.addEventListener("click", () => {
    dataView = b.dataset.view;
    renderNode();
  });
$("btn-refresh").addEventListener("click", () => {
  loadNode();
  const e = shown.get(selected);
  if (e?.expanded) expand(selected);
});
$("tree-refresh").addEventListener("click", () => resetTree());

$("btn-edit").addEventListener("click", () => {
  $("create-form").hidden = true;
  const data = current?.data;
  const hex = data && data.text === undefined;
  $("edit-encoding").value = hex ? "hex" : "text";
  $("edit-data").value = !data ? "" : hex ? data.hex : data.text;
  $("edit-version").value = current?.stat?.version ?? -1;
  $("edit-form").hidden = false;
  $("edit-data").focus();
});
$("edit-cancel").addEventListener("click", () => ($("edit-form").hidden = true));
$("edit-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const path = selected;
  const version = $("edit-version").value;
  try {
    const answer = await api("set", { path, data: $("edit-data").value, encoding: $("edit-encoding").value, version });
    clearError();
    $("edit-form").hidden = true;
    notice(`saved ${path}: version ${answer.stat.version}`);
    await loadNode();
  } catch (error) {
    if (error.code === "BADVERSION") {
      error.message = `${path} changed since you loaded version ${version}: someone else wrote it. Your text is kept below; Reload to see theirs, or set the version to -1 to overwrite.`;
    }
    showError(error, `save ${path}`);
  }
});

$("btn-create").addEventListener("click", () => {
  $("edit-form").hidden = true;
  $("create-path").value = selected === "/" ? "/" : `${selected}/`;
  $("create-form").hidden = false;
  $("create-path").focus();
});
$("create-cancel").addEventListener("click", () => ($("create-form").hidden = true));
$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const path = $("create-path").value;
  try {
    const answer = await api("create", {
      path,
      data: $("create-data").value,
      encoding: $("create-encoding").value,
      mode: $("create-mode").value,
      ttlMs: $("create-ttl").value,
    });
    clearError();
    $("create-form").hidden = true;
    $("create-data").value = "";
    notice(`created ${answer.path}`);
    const parent = parentOf(answer.path);
    if (shown.get(parent)) await expand(parent);
    await select(answer.path);
  } catch (error) {
    showError(error, `create ${path}`);
  }
});

function confirmDialog(text, okLabel) {
  return new Promise((resolve) => {
    const dialog = $("confirm");
    $("confirm-text").textContent = text;
    $("confirm-ok").textContent = okLabel;
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

async function deleteSelected(recursive) {
  const path = selected;
  const version = current?.stat?.version ?? -1;
  const text = recursive
    ? `Delete ${path} and everything under it (${current?.stat?.numChildren ?? 0} children, and theirs)?`
    : `Delete ${path} (version ${version})?`;
  if (!(await confirmDialog(text, recursive ? "Delete all" : "Delete"))) return;
  try {
    const answer = await api("delete", { path, version, recursive });
    clearError();
    notice(`deleted ${answer.deleted} znode${answer.deleted === 1 ? "" : "s"}`);
    const parent = parentOf(path);
    forget(path);
    if (shown.get(parent)) await expand(parent);
    await select(parent);
  } catch (error) {
    showError(error, `delete ${path}`);
  }
}
$("btn-delete").addEventListener("click", () => deleteSelected(false));
$("btn-deleteall").addEventListener("click", () => deleteSelected(true));

// ---- live updates (watches, as server-sent events)

function connectEvents() {
  const source = new EventSource(API + "events");
  source.addEventListener("open", () => {
    $("live").textContent = "● live";
    $("live").classList.add("on");
  });
  source.addEventListener("error", () => {
    $("live").textContent = "○ live";
    $("live").classList.remove("on");
  });
  source.addEventListener("change", (event) => {
    const change = JSON.parse(event.data);
    if (change.kind === "children" && shown.get(change.path)?.expanded) expand(change.path);
    if (change.path === selected) {
      loadNode();
      if (change.kind === "data") notice(`${change.path} changed (${change.type}, zxid ${change.zxid})`);
    }
    if (change.type === "NodeDeleted" && shown.has(change.path)) {
      const parent = parentOf(change.path);
      if (shown.get(parent)?.expanded) expand(parent);
    }
  });
}

// ---- cluster and sessions

async function loadCluster() {
  const answer = await apiOrShowError("cluster", "read the cluster");
  if (answer === undefined) return;
  const members = answer.members;
  const leader = members.find((m) => m.status?.state === "leading");
  $("cluster-leader").textContent = leader
    ? `leader: server ${leader.id} (epoch ${leader.status.epoch})`
    : members.length === 1 && members[0].status?.state === "standalone"
      ? "standalone"
      : "no leader";
  $("cluster-leader").dataset.leader = leader ? String(leader.id) : "";
  $("members").replaceChildren(
    el(
      "tr",
      {},
      ...["id", "host", "role", "state", "serving", "leader", "epoch", "last zxid", "zab", "znodes", "sessions here", "outstanding"].map((h) =>
        el("th", {}, h),
      ),
    ),
    ...members.map((m) => {
      const s = m.status;
      const known = [el("td", {}, m.id), el("td", {}, m.host), el("td", {}, m.role)];
      if (!s) return el("tr", { "data-member": m.id }, ...known, el("td", { colspan: 9, class: "state-looking" }, m.error));
      return el(
        "tr",
        { "data-member": m.id },
        ...known,
        el("td", { class: `state-${s.state}`, "data-state": s.state }, s.state),
        el("td", {}, s.serving ? "yes" : "no"),
        el("td", {}, s.leaderId ?? "—"),
        el("td", {}, s.epoch),
        el("td", { class: "mono" }, s.lastZxid),
        el("td", {}, s.zabState ?? ""),
        el("td", {}, s.nodeCount),
        el("td", {}, s.sessions.length),
        el("td", {}, s.outstandingRequests),
      );
    }),
  );
  const learners = leader?.status.leader?.learners ?? [];
  $("learners").replaceChildren(
    el("tr", {}, ...["learner", "role", "stage", "acked zxid", "lag (txns)"].map((h) => el("th", {}, h))),
    ...learners.map((l) =>
      el("tr", {}, el("td", {}, l.sid), el("td", {}, l.role), el("td", {}, l.stage), el("td", { class: "mono" }, l.ackedZxid), el("td", {}, l.lagZxids ?? "—")),
    ),
  );
  const elections = [];
  for (const m of members) for (const e of m.status?.elections ?? []) elections.push({ member: m.id, ...e });
  elections.sort((a, b) => b.decidedAtMs - a.decidedAtMs || a.member - b.member);
  $("elections").replaceChildren(
    el("tr", {}, ...["decided at", "member", "became", "leader", "round", "looked for (ms)"].map((h) => el("th", {}, h))),
    ...elections.map((e) =>
      el(
        "tr",
        { "data-election": `${e.member}-${e.round}` },
        el("td", { class: "mono" }, e.decidedAt),
        el("td", {}, e.member),
        el("td", { class: `state-${e.state}` }, e.state),
        el("td", {}, e.leader),
        el("td", {}, e.round),
        el("td", {}, e.tookMs),
      ),
    ),
  );
  const rows = [];
  for (const m of members) for (const s of m.status?.sessions ?? []) rows.push({ server: m.id, ...s });
  $("sessions").replaceChildren(
    el("tr", {}, ...["session", "connected to", "timeout ms", "ephemerals", "data watches", "child watches"].map((h) => el("th", {}, h))),
    ...rows.map((r) =>
      el(
        "tr",
        { "data-session": r.id },
        el("td", { class: "mono" }, r.id),
        el("td", {}, `server ${r.server}`),
        el("td", {}, r.timeoutMs ?? ""),
        el("td", { class: "mono" }, r.ephemerals.join("\n") || "—"),
        el("td", { class: "mono" }, r.dataWatches.join("\n") || "—"),
        el("td", { class: "mono" }, r.childWatches.join("\n") || "—"),
      ),
    ),
  );
  for (const td of $("sessions").querySelectorAll("td.mono")) td.style.whiteSpace = "pre";
}

async function loadSelf() {
  try {
    const self = await api("self");
    const badge = $("server-badge");
    badge.textContent = `server ${self.serverId} · ${self.state}${self.leaderId !== undefined && self.state !== "leading" ? ` · leader ${self.leaderId}` : ""} · zxid ${self.lastZxid}`;
    badge.className = `badge ${self.state}`;
  } catch (error) {
    $("server-badge").textContent = `unreachable (${error.code})`;
  }
}

// ---- charts

async function loadCharts() {
  const answer = await apiOrShowError("metrics", "read the metrics");
  if (answer === undefined) return;
  const samples = answer.samples;
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = (samples[i].t - samples[i - 1].t) / 1000 || 1;
    rates.push({ t: samples[i].t, reads: (samples[i].reads - samples[i - 1].reads) / dt, updates: (samples[i].updates - samples[i - 1].updates) / dt });
  }
  drawChart($("chart-rate"), rates, ["reads", "updates"]);
  drawChart($("chart-latency"), samples, ["p50Ms", "p95Ms", "p99Ms"]);
  drawChart($("chart-outstanding"), samples, ["outstanding"]);
}

const COLOURS = ["#2f6fdf", "#e08a1e", "#c2362b"];
function drawChart(canvas, points, keys) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width,
    h = canvas.height,
    left = 44,
    bottom = 20,
    top = 8;
  ctx.clearRect(0, 0, w, h);
  ctx.font = "11px system-ui, sans-serif";
  let max = 0;
  for (const p of points) for (const k of keys) if (Number.isFinite(p[k])) max = Math.max(max, p[k]);
  max = max <= 0 ? 1 : niceCeil(max);
  ctx.strokeStyle = "#d9dde6";
  ctx.fillStyle = "#6b7385";
  for (let i = 0; i <= 4; i++) {
    const y = top + ((h - top - bottom) * i) / 4;
    ctx.beginPath();
    ctx.moveTo(left, y);
    ctx.lineTo(w - 4, y);
    ctx.stroke();
    ctx.fillText(formatNumber(max * (1 - i / 4)), 2, y + 4);
  }
  if (points.length === 0) {
    ctx.fillText("no samples yet", left + 8, h / 2);
    return;
  }
  const t0 = points[0].t,
    t1 = points[points.length - 1].t,
    span = Math.max(1, t1 - t0);
  ctx.fillText(`${Math.round(span / 1000)} s`, left, h - 4);
  ctx.fillText("now", w - 28, h - 4);
  keys.forEach((k, i) => {
    ctx.strokeStyle = COLOURS[i];
    ctx.lineWidth = 2;
    ctx.beginPath();
    let drawing = false;
    for (const p of points) {
      const v = p[k];
      if (!Number.isFinite(v)) {
        drawing = false;
        continue;
      }
      const x = left + ((w - left - 4) * (p.t - t0)) / span;
      const y = top + (h - top - bottom) * (1 - v / max);
      if (drawing) ctx.lineTo(x, y);
      else ctx.moveTo(x, y);
      drawing = true;
    }
    ctx.stroke();
  });
  ctx.lineWidth = 1;
}
function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
function formatNumber(v) {
  return v >= 100 ? Math.round(v).toString() : v >= 1 ? v.toFixed(1) : v.toFixed(2);
}

// ---- recipes

async function loadRecipes() {
  try {
    const answer = await api("recipes");
    $("recipes").replaceChildren(
      el("tr", {}, ...["parent", "sequential children", "lowest (holder / leader / head)", "its owner session", "its data"].map((h) => el("th", {}, h))),
      ...answer.recipes.map((r) =>
        el(
          "tr",
          {},
          el("td", { class: "mono" }, r.path),
          el("td", {}, r.children),
          el("td", { class: "mono" }, r.first),
          el("td", { class: "mono" }, r.firstOwner || "—"),
          el("td", { class: "mono" }, r.firstData),
        ),
      ),
    );
  } catch (error) {
    showError(error, "read the recipes");
  }
}
$("recipes-refresh").addEventListener("click", loadRecipes);

// ---- polling

async function poll() {
  await loadSelf();
  if (activeTab === "cluster" || activeTab === "sessions") await loadCluster();
  if (activeTab === "charts") await loadCharts();
}

connectEvents();
resetTree().then(() => select("/"));
poll();
setInterval(poll, 2000);
