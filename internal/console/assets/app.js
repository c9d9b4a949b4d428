// berth console: one module, no dependencies, built only on berth's public
// API (docs/openapi.yaml). Pages are routed by the URL fragment (#/containers,
// #/containers/ID, #/groups, #/groups/NAME, #/templates, #/templates/NAME,
// #/templates/new, #/quotas, #/usage, #/overview, #/signin) so that the server serves a single page.
"use strict";

const TOKEN_KEY = "berth.token";
// PKCE_KEY holds, between leaving for the identity provider and coming
// back, the sign-in's code verifier and state (this tab only).
const PKCE_KEY = "berth.pkce";
// OIDC_KEY holds, for a sign-in with the identity provider, what keeps it
// going (this tab only): {exp, life} of the token in ms, the refresh token
// if the provider gave one, and whether the token is an ID token (the hint
// sign-out gives the provider).
const OIDC_KEY = "berth.oidc";
// SIGNED_OUT_KEY marks a sign-out at the provider, to say so on the way back.
const SIGNED_OUT_KEY = "berth.signedout";
// REFRESH_LEAD_MS is how long before its token expires a provider's
// sign-in is renewed (or the user asked to sign in again); half the
// token's life where that is shorter.
const REFRESH_LEAD_MS = 60000;
const POLL_MS = 1500;

// session: how this page reaches the API.
const session = { token: sessionStorage.getItem(TOKEN_KEY) || "", local: false, admin: false };
let fsmTable = null;
// provider is the identity provider to sign in with (config.json), or null.
let provider = null;
// timers holds the current page's pollers (each {id} of its next
// setTimeout); a route change stops them.
let timers = [];
let routeSeq = 0;

class APIError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || "HTTP " + status);
    this.status = status;
    this.problem = problem || {};
  }
}

async function api(method, path, body, token = session.token) {
  const headers = { Accept: "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  const init = { method, headers, cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  let data = null;
  const text = await resp.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = { detail: text }; }
  }
  if (!resp.ok) {
    // A token that stopped working (expired, removed from the config):
    // back to the sign-in page. A probe without a token is not a session.
    // A provider's sign-in is renewed or re-asked for in place, keeping
    // the page.
    // Probes before the page is up (boot's) are not a session yet.
    if (resp.status === 401 && token && !session.local && location.hash !== "#/signin" && document.body.dataset.ready) {
      if (oidcState() && token === session.token) sessionEnded();
      else if (!oidcState()) signOut("Your session has ended: sign in again.");
    }
    throw new APIError(resp.status, data);
  }
  return data;
}

// apiText GETs a plain-text answer (the logs route): its text, or an
// APIError with the server's problem.
async function apiText(path) {
  const headers = { Accept: "text/plain" };
  if (session.token) headers.Authorization = "Bearer " + session.token;
  const resp = await fetch(path, { headers, cache: "no-store" });
  const text = await resp.text();
  if (!resp.ok) {
    let problem;
    try { problem = JSON.parse(text); } catch { problem = { detail: text }; }
    throw new APIError(resp.status, problem);
  }
  return text;
}

// el builds an element: el("a", {href: "#"}, "text", child…). Text is always
// text (never parsed as HTML), so API data cannot inject markup.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const main = () => document.getElementById("main");
let idSeq = 0;
const uid = (p) => p + "-" + ++idSeq;

function say(msg) {
  const s = document.getElementById("status");
  s.textContent = msg;
  clearTimeout(say.t);
  say.t = setTimeout(() => { s.textContent = ""; }, 4000);
}

function fmtTime(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? t : d.toLocaleString();
}

function badge(status) {
  return el("span", { class: "badge s-" + status }, status);
}

function problemText(err) {
  if (!(err instanceof APIError)) return String(err.message || err);
  const p = err.problem;
  let s = `${p.title || "Error"} (${err.status})` + (p.detail ? ": " + p.detail : "");
  if (p.errors && p.errors.length) s += " — " + p.errors.map((f) => `${f.field}: ${f.message}`).join("; ");
  return s;
}

function errorBox(err) {
  return el("p", { class: "error", role: "alert" }, problemText(err));
}

// page replaces the main area and moves focus to its heading, so that a
// keyboard or screen reader user lands on the new page.
function page(title, ...children) {
  const h1 = el("h1", { tabindex: "-1" }, title);
  main().replaceChildren(h1, ...children);
  document.title = title + " · berth";
  return h1;
}

// every calls fn every ms while the page that started it is shown; a tab
// in the background asks nothing of the API.
function every(ms, fn) {
  const seq = routeSeq;
  const timer = { id: 0 };
  const tick = async () => {
    if (seq !== routeSeq) return;
    if (!document.hidden) {
      try { await fn(); } catch { /* the next tick tries again */ }
    }
    if (seq === routeSeq) timer.id = setTimeout(tick, ms);
  };
  timer.id = setTimeout(tick, ms);
  timers.push(timer);
}

function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.forEach((x) => x && u.append(k, x));
    else if (v) u.set(k, v);
  }
  const s = u.toString();
  return s ? "?" + s : "";
}

// ---- sign-in ----

async function probe(token) {
  await api("GET", "/api/containers?limit=1", undefined, token);
}

// detectAdmin asks for another owner's containers: only admins may (any
// other caller gets a 400), so the answer tells the page which controls to
// offer. The server checks every write again whatever the page shows.
async function detectAdmin() {
  try {
    await api("GET", "/api/containers?limit=1&owner=" + encodeURIComponent("console-admin-probe-" + Date.now()));
    return true;
  } catch {
    return false;
  }
}

function signOut(msg) {
  forgetSession();
  chrome();
  location.hash = "#/signin";
  if (msg) say(msg);
}

// forgetSession drops this tab's token and what renews it.
function forgetSession() {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(OIDC_KEY);
  clearTimeout(session.renewTimer);
  showBanner(null);
  session.token = "";
  session.admin = false;
}

// signOutEverywhere signs out of the console and, for a sign-in with the
// identity provider, of the provider's own session too: the browser goes
// to its end_session_endpoint (or Cognito's /logout) and comes back to the
// sign-in page. Otherwise, or where the provider has none, the token is
// forgotten here only.
function signOutEverywhere() {
  const st = oidcState();
  const tok = session.token;
  if (!st || !provider || !provider.end_session_endpoint) {
    signOut("Signed out.");
    return;
  }
  forgetSession();
  sessionStorage.setItem(SIGNED_OUT_KEY, new URL(provider.end_session_endpoint).host);
  const u = new URL(provider.end_session_endpoint);
  if (provider.logout === "cognito") {
    u.searchParams.set("client_id", provider.client_id);
    u.searchParams.set("logout_uri", redirectURI());
  } else {
    u.searchParams.set("client_id", provider.client_id);
    u.searchParams.set("post_logout_redirect_uri", redirectURI());
    if (st.id_token) u.searchParams.set("id_token_hint", tok);
  }
  location.assign(u.toString());
}

function chrome() {
  const signedIn = session.local || !!session.token;
  document.getElementById("nav").hidden = !signedIn;
  document.getElementById("nav-overview").hidden = !session.admin;
  document.getElementById("signout").hidden = !session.token;
  document.getElementById("who").textContent = session.local
    ? "local admin (no tokens configured)"
    : session.token ? (session.admin ? "signed in · admin" : "signed in") : "";
}

// ---- sign-in with the identity provider (authorization code + PKCE) ----

function b64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

// redirectURI is where the provider sends the browser back: the console's
// own address, as the provider's client registers it.
function redirectURI() {
  return location.origin + "/console";
}

// startSignIn sends the browser to the provider with a fresh verifier's
// challenge (S256) and a state, both kept in this tab for the way back,
// with the page to come back to (back: a console URL fragment).
async function startSignIn(back = "") {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, back: back.startsWith("#/") ? back : "" }));
  const u = new URL(provider.authorization_endpoint);
  for (const [k, v] of Object.entries({ response_type: "code", client_id: provider.client_id, redirect_uri: redirectURI(),
    scope: provider.scope, state, code_challenge: b64url(new Uint8Array(digest)), code_challenge_method: "S256" })) {
    u.searchParams.set(k, v);
  }
  location.assign(u.toString());
}

// finishSignIn is the way back (?code=…&state=… or ?error=…): the code is
// traded for a token at the token endpoint with the kept verifier, once,
// and the address loses the code (and gets back the page the sign-in
// left from). It returns the token endpoint's answer.
async function finishSignIn(params) {
  const kept = JSON.parse(sessionStorage.getItem(PKCE_KEY) || "null");
  sessionStorage.removeItem(PKCE_KEY);
  history.replaceState(null, "", location.pathname + ((kept && kept.back) || location.hash));
  if (params.get("error")) throw new Error(`The identity provider refused: ${params.get("error_description") || params.get("error")}`);
  if (!kept || !params.get("state") || params.get("state") !== kept.state) {
    throw new Error("This sign-in answer was not asked for by this tab: sign in again.");
  }
  return tokenRequest({ grant_type: "authorization_code", client_id: provider.client_id, code: params.get("code") || "",
    redirect_uri: redirectURI(), code_verifier: kept.verifier });
}

// tokenRequest POSTs a grant to the token endpoint and returns its answer,
// which has a token.
async function tokenRequest(grant) {
  const resp = await fetch(provider.token_endpoint, { method: "POST", body: new URLSearchParams(grant), cache: "no-store", credentials: "omit",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" } });
  let data = {};
  try { data = await resp.json(); } catch { /* reported below */ }
  if (!resp.ok) throw new Error(`The identity provider did not give a token (${resp.status}${data.error ? ": " + data.error : ""}).`);
  // The ID token's audience is the console's client, which the API's
  // authorizer accepts; an access token where there is none.
  if (!data.id_token && !data.access_token) throw new Error("The identity provider's answer has no token.");
  return data;
}

// ---- keeping a provider's sign-in going ----

function oidcState() {
  try { return JSON.parse(sessionStorage.getItem(OIDC_KEY) || "null"); } catch { return null; }
}

// jwtExp is a JWT's exp claim in ms, or 0 where the token is not a JWT.
function jwtExp(tok) {
  try {
    const part = tok.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const exp = JSON.parse(atob(part + "===".slice((part.length + 3) % 4))).exp;
    return typeof exp === "number" ? exp * 1000 : 0;
  } catch {
    return 0;
  }
}

// keepSession takes a token endpoint's answer as this tab's session: its
// token, when it expires (the ID token's exp, or expires_in, whichever is
// sooner), and its refresh token (a refresh answer without one keeps the
// one before, as Cognito's does), then plans the renewal.
function keepSession(data) {
  const tok = data.id_token || data.access_token;
  const now = Date.now();
  const exps = [jwtExp(tok), data.expires_in > 0 ? now + data.expires_in * 1000 : 0].filter((x) => x > 0);
  const before = oidcState() || {};
  const st = { id_token: !!data.id_token, refresh_token: data.refresh_token || before.refresh_token || "" };
  if (exps.length) {
    st.exp = Math.min(...exps);
    st.life = st.exp - now;
  }
  session.token = tok;
  sessionStorage.setItem(TOKEN_KEY, tok);
  sessionStorage.setItem(OIDC_KEY, JSON.stringify(st));
  showBanner(null);
  planRenewal();
}

// planRenewal sets the one timer that renews the sign-in REFRESH_LEAD_MS
// (or half its life) before the token expires.
function planRenewal() {
  clearTimeout(session.renewTimer);
  const st = oidcState();
  if (!st || !st.exp) return;
  const at = st.exp - Math.min(REFRESH_LEAD_MS, (st.life || 0) / 2);
  session.renewTimer = setTimeout(renew, Math.max(0, at - Date.now()));
}

// renew trades the refresh token for a new token, in place; without one,
// or when the provider refuses it, the page asks the user to sign in again
// and stays as it is meanwhile.
async function renew() {
  const st = oidcState();
  if (!st) return;
  if (st.refresh_token && provider) {
    try {
      keepSession(await tokenRequest({ grant_type: "refresh_token", client_id: provider.client_id, refresh_token: st.refresh_token }));
      return;
    } catch {
      st.refresh_token = "";
      sessionStorage.setItem(OIDC_KEY, JSON.stringify(st));
    }
  }
  askToSignInAgain(st.exp && st.exp > Date.now()
    ? `Your sign-in ends at ${new Date(st.exp).toLocaleTimeString()}.`
    : "Your sign-in has ended.");
}

// sessionEnded is a 401 on a provider's sign-in: renewed if it can be,
// else the user is asked to sign in again, on the same page.
function sessionEnded() {
  if (session.renewing) return;
  session.renewing = true;
  clearTimeout(session.renewTimer);
  const st = oidcState();
  if (st && st.exp > Date.now()) {
    st.exp = Date.now();
    sessionStorage.setItem(OIDC_KEY, JSON.stringify(st));
  }
  renew().finally(() => { session.renewing = false; });
}

// askToSignInAgain shows the banner that leads to the provider and back to
// this very page.
function askToSignInAgain(why) {
  showBanner(el("p", {}, why + " ",
    el("button", { type: "button", class: "primary", id: "reauth", onclick: () => {
      startSignIn(location.hash).catch((e) => say(problemText(e)));
    } }, "Sign in again"),
    " You come back to this page."));
}

function showBanner(content) {
  const b = document.getElementById("session-banner");
  if (!content) {
    b.hidden = true;
    b.replaceChildren();
    return;
  }
  b.replaceChildren(content);
  b.hidden = false;
}

function signInPage() {
  const tokId = uid("token"), errId = uid("err");
  const err = el("p", { id: errId, class: "error", role: "alert" });
  const input = el("input", { id: tokId, type: "password", name: "token", autocomplete: "current-password", required: true,
    "aria-describedby": errId + " " + tokId + "-hint", size: "40" });
  const form = el("form", { class: "panel", onsubmit: async (ev) => {
    ev.preventDefault();
    err.textContent = "";
    const tok = input.value.trim();
    try {
      await probe(tok);
    } catch (e) {
      err.textContent = e.status === 401 ? "That token is not valid here." : problemText(e);
      input.setAttribute("aria-invalid", "true");
      input.focus();
      return;
    }
    // A pasted token is not the provider's: nothing renews or replaces it.
    forgetSession();
    session.token = tok;
    sessionStorage.setItem(TOKEN_KEY, tok);
    session.admin = await detectAdmin();
    chrome();
    location.hash = "#/containers";
  } },
  el("div", { class: "field" },
    el("label", { for: tokId }, "API token"),
    input,
    el("p", { class: "hint", id: tokId + "-hint" }, "A token from berth serve's auth.tokens. It is kept in this tab only (sessionStorage).")),
  err,
  el("button", { type: "submit", class: "primary" }, "Sign in"));
  if (!provider) {
    page("Sign in to berth", form);
    return;
  }
  const host = new URL(provider.authorization_endpoint).host;
  page("Sign in to berth",
    el("div", { class: "panel" },
      el("p", {}, el("button", { type: "button", class: "primary", id: "signin-oidc", onclick: () => {
        startSignIn().catch((e) => say(problemText(e)));
      } }, "Sign in with " + host)),
      el("p", { class: "hint" }, "Your organisation's sign-in page; you come back here signed in.")),
    el("h2", {}, "Or with an API token"), form);
}

// ---- containers ----

function containersPage(params) {
  const f = {
    status: params.getAll("status"), template: params.get("template") || "", group: params.get("group") || "",
    owner: params.get("owner") || "", cursor: params.get("cursor") || "",
  };
  const prev = params.getAll("prev"); // cursors of the pages before this one
  const createBox = el("div");
  const listBox = el("div", { "aria-live": "off" });
  const pager = el("div", { class: "pager" });
  const filters = filterForm(f);
  page("Containers", createBox, el("h2", {}, session.admin ? "Everyone's containers" : "Your containers"),
    filters, listBox, pager);
  createForm(createBox);

  let last = "";
  const load = async () => {
    const body = await api("GET", "/api/containers" + qs({ status: f.status, template: f.template, group: f.group, owner: f.owner, cursor: f.cursor, limit: "20" }));
    const key = JSON.stringify(body);
    if (key === last) return;
    last = key;
    listBox.replaceChildren(containerTable(body.items || []));
    const nav = [];
    if (prev.length) {
      const p = new URLSearchParams(params);
      p.delete("prev");
      prev.slice(0, -1).forEach((c) => p.append("prev", c));
      p.set("cursor", prev[prev.length - 1]);
      if (!p.get("cursor")) p.delete("cursor");
      nav.push(el("a", { href: "#/containers?" + p }, "← Previous page"));
    }
    if (body.next_cursor) {
      const p = new URLSearchParams(params);
      p.append("prev", f.cursor);
      p.set("cursor", body.next_cursor);
      nav.push(el("a", { href: "#/containers?" + p }, "Next page →"));
    }
    pager.replaceChildren(...nav);
  };
  load().catch((e) => listBox.replaceChildren(errorBox(e)));
  every(POLL_MS, load);
}

function filterForm(f) {
  const ids = { status: uid("f-status"), template: uid("f-template"), group: uid("f-group"), owner: uid("f-owner") };
  const status = el("select", { id: ids.status, name: "status" }, el("option", { value: "" }, "any"),
    ...fsmTable.statuses.map((s) => el("option", { value: s, selected: f.status.includes(s) }, s)));
  const template = el("input", { id: ids.template, name: "template", value: f.template, size: "12" });
  const group = el("input", { id: ids.group, name: "group", value: f.group, size: "12" });
  const owner = session.admin ? el("input", { id: ids.owner, name: "owner", value: f.owner, size: "10" }) : null;
  return el("form", { class: "row panel", role: "search", "aria-label": "Filter containers", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = "#/containers" + qs({ status: status.value, template: template.value.trim(), group: group.value.trim(), owner: owner && owner.value.trim() });
  } },
  el("div", { class: "field" }, el("label", { for: ids.status }, "Status"), status),
  el("div", { class: "field" }, el("label", { for: ids.template }, "Template"), template),
  el("div", { class: "field" }, el("label", { for: ids.group }, "Group"), group),
  owner && el("div", { class: "field" }, el("label", { for: ids.owner }, "Owner"), owner),
  el("button", { type: "submit" }, "Filter"));
}

function containerTable(items) {
  if (!items.length) return el("p", { class: "muted" }, "No containers.");
  const cols = ["Name", "Status", "Template", "Group", "Owner", "Created"];
  return el("div", { class: "scroll" }, el("table", { class: "cards", id: "containers" },
    el("thead", {}, el("tr", {}, cols.map((c) => el("th", { scope: "col" }, c)))),
    el("tbody", {}, items.map((i) => el("tr", { "data-id": i.id },
      el("td", { "data-label": "Name" }, el("a", { href: "#/containers/" + encodeURIComponent(i.id) }, i.name || i.id)),
      el("td", { "data-label": "Status" }, badge(i.status)),
      el("td", { "data-label": "Template" }, i.template),
      el("td", { "data-label": "Group" }, i.group ? el("a", { href: "#/groups/" + encodeURIComponent(i.group) + (session.admin ? qs({ owner: i.owner }) : "") }, i.group) : ""),
      el("td", { "data-label": "Owner" }, i.owner),
      el("td", { "data-label": "Created" }, el("time", { datetime: i.created_at }, fmtTime(i.created_at))))))));
}

async function createForm(box) {
  const ids = { tpl: uid("c-template"), name: uid("c-name"), group: uid("c-group") };
  let templates = [];
  try {
    templates = (await api("GET", "/api/templates")).items || [];
  } catch (e) {
    box.replaceChildren(errorBox(e));
    return;
  }
  const err = el("div");
  const tpl = el("select", { id: ids.tpl, name: "template", required: true },
    templates.map((t) => el("option", { value: t.name }, t.name + (t.description ? " — " + t.description : ""))));
  const name = el("input", { id: ids.name, name: "name", size: "16", "aria-describedby": ids.name + "-hint" });
  const group = el("input", { id: ids.group, name: "group", size: "12" });
  const form = el("form", { class: "panel", "aria-labelledby": ids.tpl + "-h", onsubmit: async (ev) => {
    ev.preventDefault();
    err.replaceChildren();
    const body = { template: tpl.value };
    if (name.value.trim()) body.name = name.value.trim();
    if (group.value.trim()) body.group = group.value.trim();
    try {
      const inst = await api("POST", "/api/containers", body);
      say(`Created ${inst.name || inst.id}`);
      location.hash = "#/containers/" + encodeURIComponent(inst.id);
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  } },
  el("h2", { id: ids.tpl + "-h" }, "New container"),
  templates.length ? el("div", { class: "row" },
    el("div", { class: "field" }, el("label", { for: ids.tpl }, "Template"), tpl),
    el("div", { class: "field" }, el("label", { for: ids.name }, "Name"), name, el("p", { class: "hint", id: ids.name + "-hint" }, "optional")),
    el("div", { class: "field" }, el("label", { for: ids.group }, "Group"), group),
    el("button", { type: "submit", class: "primary" }, "Create")) : el("p", { class: "muted" }, "No templates yet."),
  err);
  box.replaceChildren(form);
}

// why says why an action is not offered from a status.
function why(action, status) {
  if (action === "stop" && (status === "stopped" || status === "failed")) return `already ${status}: nothing runs`;
  if (action === "stop" && (status === "stop_pending" || status === "stopping")) return "already stopping";
  if (action === "start" && (status === "start_pending" || status === "starting")) return "already starting";
  if (action === "delete" && (status === "delete_pending" || status === "deleting")) return "already being deleted";
  return `not allowed from ${status}; wait until it settles`;
}

function allowed(action, status) {
  const to = fsmTable.actions[action];
  return (fsmTable.next[status] || []).includes(to);
}

function instancePage(id) {
  const path = "/api/containers/" + encodeURIComponent(id);
  const head = el("div");
  const actions = el("div", { class: "actions", role: "group", "aria-label": "Actions" });
  const confirmBox = el("div");
  const actErr = el("div");
  const spec = el("div");
  const timeline = el("div");
  const logs = logsPanel(path, () => inst);
  const stats = statsPanel(path);
  const exec = execPanel(path);
  const endpoints = endpointsPanel();
  const h1 = page("Container", head, actions, confirmBox, actErr, endpoints.box, stats.box, exec.box, el("h2", {}, "Spec"), spec, logs.box, el("h2", {}, "Timeline"), timeline);
  let inst = null, lastVersion = -1, gone = false;

  const doAction = async (action) => {
    actErr.replaceChildren();
    confirmBox.replaceChildren();
    try {
      const out = action === "delete" ? await api("DELETE", path) : await api("POST", path + "/" + action);
      say(`${action} requested`);
      render(out);
      loadEvents();
    } catch (e) {
      actErr.replaceChildren(errorBox(e));
    }
  };

  const render = (i) => {
    inst = i;
    h1.textContent = i.name || i.id;
    document.title = h1.textContent + " · berth";
    head.replaceChildren(el("p", {}, "Status: ", el("span", { id: "inst-status" }, badge(i.status)),
      i.status_reason ? el("span", { class: "muted" }, " — " + i.status_reason) : ""));
    endpoints.show(i);
    if (i.version === lastVersion) return;
    lastVersion = i.version;
    // Pause where it runs, resume where it is paused: Kubernetes cannot.
    const pr = i.runtime === "kubernetes" ? "" : { running: "pause", paused: "resume" }[i.status];
    actions.replaceChildren(...["start", "stop", pr, "delete"].filter(Boolean).map((a) => {
      const ok = allowed(a, i.status);
      const hint = uid("why");
      const btn = el("button", { type: "button", id: "action-" + a, class: a === "delete" ? "danger" : "",
        disabled: !ok, "aria-describedby": ok ? null : hint, onclick: () => {
          if (a !== "delete") return doAction(a);
          const yes = el("button", { type: "button", class: "danger", id: "confirm-delete", onclick: () => doAction("delete") }, "Delete it");
          confirmBox.replaceChildren(el("div", { class: "panel confirm", role: "alertdialog", "aria-label": "Confirm delete" },
            el("p", {}, `Delete ${i.name || i.id}? Its container is removed; its events stay readable for 7 days.`),
            el("div", { class: "actions" }, yes, el("button", { type: "button", onclick: () => { confirmBox.replaceChildren(); btn.focus(); } }, "Cancel"))));
          yes.focus();
        } }, a === "start" && i.status === "running" ? "Restart" : a[0].toUpperCase() + a.slice(1));
      return el("div", {}, btn, ok ? "" : el("span", { class: "hint", id: hint }, why(a, i.status)));
    }));
    if (i.expires_at && EXTENDABLE.includes(i.status)) {
      // POST /extend: ten more minutes, never past the lifetime's max (the
      // API's 422 says how much is left).
      actions.append(el("div", {}, el("button", { type: "button", id: "action-extend", onclick: async () => {
        actErr.replaceChildren();
        try {
          render(await api("POST", path + "/extend", { by: "10m" }));
          say("lifetime extended by 10 minutes");
          loadEvents();
        } catch (e) {
          actErr.replaceChildren(errorBox(e));
        }
      } }, "Extend 10m")));
    }
    const rows = [["ID", i.id], ["Owner", i.owner], ["Template", i.template],
      ["Group", i.group ? el("a", { href: "#/groups/" + encodeURIComponent(i.group) + (session.admin ? qs({ owner: i.owner }) : "") }, i.group) : "—"],
      ["Runtime", i.runtime], ["Image", i.image], ["Runtime ID", i.runtime_id], ["Node", i.runtime_node_name],
      ["Exit code", i.exit_code], ["Created", fmtTime(i.created_at)], ["Started", fmtTime(i.started_at)],
      ["Finished", fmtTime(i.finished_at)], ["Expires", i.expires_at ? fmtTime(i.expires_at) + " (" + (i.lifetime && i.lifetime.on_expiry || "stop") + ")" : ""],
      // delete_at: when berth deletes the ended instance under its
      // retention (the one it was created under, shown beside it).
      ["Deletes at", fmtTime(i.delete_at)],
      ["Retention", ["stopped", "failed"].filter((s) => i.retention && i.retention[s]).map((s) => s + " " + i.retention[s]).join(", ")],
      // restarts under the template's policy: how many, the exit that
      // brought the latest, and when the one waiting comes.
      ["Restarts", i.restart && i.restart.policy !== "never" ? (i.restarts || 0) + " (" + i.restart.policy + ")" +
        (i.last_exit !== undefined ? ", last exit " + i.last_exit : "") + (i.restart_at ? ", next " + fmtTime(i.restart_at) : "") : ""],
      ["Updated", fmtTime(i.updated_at)], ["Version", i.version]];
    if (i.labels && Object.keys(i.labels).length) rows.push(["Labels", Object.entries(i.labels).map(([k, v]) => k + "=" + v).join(", ")]);
    spec.replaceChildren(el("dl", { class: "spec" }, rows.filter(([, v]) => v !== undefined && v !== null && v !== "")
      .map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])));
  };

  const loadEvents = async () => {
    const items = [];
    let cursor = "";
    for (let n = 0; n < 20; n++) {
      const page = await api("GET", path + "/events" + qs({ cursor, limit: "100" }));
      items.push(...(page.items || []));
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    timeline.replaceChildren(items.length ? el("ol", { class: "timeline", id: "timeline" }, items.map((e) => el("li", {},
      el("span", { class: "ev" }, e.type), " ",
      e.from || e.to ? el("span", {}, `${e.from || "·"} → ${e.to || "·"}`) : "", el("br"),
      el("time", { datetime: e.at }, fmtTime(e.at)),
      e.message ? el("span", {}, " — " + e.message) : "",
      e.exit_code !== undefined && e.exit_code !== null ? el("span", {}, ` (exit ${e.exit_code})`) : ""))) : el("p", { class: "muted" }, "No events."));
  };

  const load = async () => {
    if (gone) return;
    try {
      const i = await api("GET", path);
      const changed = i.version !== lastVersion;
      render(i);
      if (changed) await loadEvents();
      logs.tick(i);
      stats.tick(i);
      exec.tick(i, loadEvents);
    } catch (e) {
      if (e.status === 404 && inst) {
        gone = true;
        head.replaceChildren(el("p", { id: "inst-status" }, badge("deleted"), " This container has been deleted."));
        actions.replaceChildren();
        confirmBox.replaceChildren();
        await loadEvents();
        return;
      }
      throw e;
    }
  };
  load().catch((e) => { head.replaceChildren(errorBox(e)); });
  every(POLL_MS, load);
}

// EXTENDABLE are the statuses whose lifetime an extension may move
// (manager.extendable): the instance still lives.
const EXTENDABLE = ["pending", "creating", "running", "paused", "start_pending", "starting"];

// HTTPS_PORTS are the container ports whose endpoint link is https.
const HTTPS_PORTS = [443, 8443];

// endpointURL is the link to a tcp endpoint (http, or https on the usual
// TLS ports), or "" where there is none to offer: udp and sctp, or a host
// the URL does not take as it is. The scheme is always set here, so API
// data cannot make it any other kind of link.
function endpointURL(ep) {
  if (ep.protocol !== "tcp" || !ep.host || !ep.host_port) return "";
  const host = ep.host.includes(":") && !ep.host.startsWith("[") ? "[" + ep.host + "]" : ep.host;
  const u = new URL("/", location.origin);
  u.protocol = HTTPS_PORTS.includes(ep.port) ? "https:" : "http:";
  u.hostname = host;
  u.port = String(ep.host_port);
  // A host the setter refused would leave the console's own in place.
  return u.hostname.toLowerCase() === host.toLowerCase() ? u.href : "";
}

// endpointsPanel is the instance page's endpoints (instance.endpoints):
// each published port, its protocol, the address that reaches it and what
// that address is (a Docker host's, or a Pod's inside its cluster), with a
// link where the protocol is tcp. It is drawn again only when they change.
function endpointsPanel() {
  const ids = { h: uid("endpoints-h") };
  const body = el("div", { id: "endpoints" });
  const box = el("section", { "aria-labelledby": ids.h }, el("h2", { id: ids.h }, "Endpoints"), body);
  let last = null;
  const show = (i) => {
    const eps = i.endpoints || [];
    const key = JSON.stringify(eps);
    if (key === last) return;
    last = key;
    if (!eps.length) {
      body.replaceChildren(el("p", { class: "muted" }, i.status === "running"
        ? "No published ports." : "None while it is not running: published ports are named while it runs."));
      return;
    }
    body.replaceChildren(el("div", { class: "scroll" }, el("table", { class: "cards" },
      el("thead", {}, el("tr", {}, ["Port", "Protocol", "Address", "Via"].map((c) => el("th", { scope: "col" }, c)))),
      el("tbody", {}, eps.map((ep) => {
        const href = endpointURL(ep);
        const addr = (ep.host.includes(":") ? "[" + ep.host + "]" : ep.host) + ":" + ep.host_port;
        return el("tr", { "data-port": ep.port + "/" + ep.protocol },
          el("td", { "data-label": "Port" }, String(ep.port)),
          el("td", { "data-label": "Protocol" }, ep.protocol),
          el("td", { "data-label": "Address" }, href
            ? el("a", { href, target: "_blank", rel: "noopener noreferrer", "aria-label": `Open ${addr} (port ${ep.port}) in a new tab` }, addr)
            : el("code", {}, addr)),
          el("td", { "data-label": "Via" }, ep.via === "pod" ? "the Pod's IP (inside its cluster)" : ep.via === "host" ? "the Docker host" : ep.via));
      })))));
  };
  return { box, show };
}

// STATS_EVERY_MS is how often the usage panel reads a running container's
// stats; the last STATS_KEEP readings (five minutes) are drawn.
const STATS_EVERY_MS = 5000;
const STATS_KEEP = 60;

// keep appends v to a, dropping what is older than the last STATS_KEEP.
const keep = (a, v) => { a.push(v); if (a.length > STATS_KEEP) a.shift(); };

// SVG_NS is the SVG namespace, as the HTML parser gives an <svg> (no URL
// is written in the script: the console serves none).
const SVG_NS = new DOMParser().parseFromString("<svg></svg>", "text/html").body.firstChild.namespaceURI;

// svgEl is el for SVG elements (attributes only).
function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  e.append(...children);
  return e;
}

// sparkline draws values (oldest first, the newest at the right edge, one
// step a reading) against [0, top], named by label for screen readers.
function sparkline(id, values, top, label) {
  const w = 240, h = 48, step = w / (STATS_KEEP - 1);
  const y = (v) => (h - 1 - (Math.min(v, top) / top) * (h - 2)).toFixed(1);
  const pts = values.map((v, k) => (w - (values.length - 1 - k) * step).toFixed(1) + "," + y(v));
  // One reading is drawn as a short flat line: a polyline needs two points.
  if (values.length === 1) pts.unshift((w - step).toFixed(1) + "," + y(values[0]));
  return svgEl("svg", { id, class: "spark", viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img", "aria-label": label },
    svgEl("polyline", { points: pts.join(" "), fill: "none", stroke: "currentColor", "stroke-width": 2 }));
}

// fmtBytes writes n bytes with a binary unit: 64.0 MiB.
function fmtBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let k = 0;
  while (n >= 1024 && k < units.length - 1) { n /= 1024; k++; }
  return (k ? n.toFixed(1) : String(n)) + " " + units[k];
}

// statsPanel is the instance page's usage: while the container runs, its
// stats (GET .../stats) every STATS_EVERY_MS, CPU and memory drawn over the
// last readings. Where the deployment or the runtime serves no stats (501)
// it says so and stops asking.
function statsPanel(path) {
  const ids = { h: uid("stats-h") };
  const body = el("div", { id: "stats" });
  const note = el("p", { class: "muted", id: "stats-note" }, "Usage is read while the container runs.");
  const box = el("section", { "aria-labelledby": ids.h }, el("h2", { id: ids.h }, "Usage"), note, body);
  const cpu = [], mem = [];
  let busy = false, served = true, lastLoad = 0;
  const draw = (s) => {
    keep(cpu, s.cpu.cores);
    keep(mem, s.memory.usage_bytes);
    const pct = s.cpu.percent_of_limit, limit = s.memory.limit_bytes;
    const cpuText = `CPU: ${s.cpu.cores.toFixed(2)} cores` + (pct === null ? "" : ` (${pct.toFixed(0)} % of its limit)`);
    const memText = `Memory: ${fmtBytes(s.memory.usage_bytes)}` + (limit === null ? "" : ` of ${fmtBytes(limit)}`);
    const net = s.network ? ` · network in ${fmtBytes(s.network.rx_bytes)}, out ${fmtBytes(s.network.tx_bytes)}` : "";
    note.textContent = `The last ${cpu.length} reading(s), every ${STATS_EVERY_MS / 1000} s, read at ${fmtTime(s.at)}.`;
    body.replaceChildren(el("div", { class: "charts" },
      el("figure", {}, sparkline("stats-cpu", cpu, Math.max(1, ...cpu), cpuText + ", over the last readings"), el("figcaption", {}, cpuText)),
      el("figure", {}, sparkline("stats-mem", mem, limit || Math.max(1, ...mem) * 1.25, memText + ", over the last readings"), el("figcaption", {}, memText))),
    el("p", { class: "muted" }, `Processes: ${s.pids === null ? "—" : s.pids}` + net));
  };
  const load = async () => {
    if (busy) return;
    busy = true;
    try {
      draw(await api("GET", path + "/stats"));
    } catch (e) {
      if (e.status === 501) {
        served = false;
        note.textContent = "This deployment does not read usage: " + (e.problem.detail || "no stats route") + ".";
      } else if (e.status === 409) note.textContent = "Usage is read while the container runs.";
      else note.textContent = problemText(e);
    } finally {
      busy = false;
    }
  };
  // tick follows the instance: usage is read every STATS_EVERY_MS while it
  // runs.
  const tick = (i) => {
    if (!i || !served || i.status !== "running") return;
    const now = Date.now();
    if (now - lastLoad >= STATS_EVERY_MS) {
      lastLoad = now;
      load();
    }
  };
  return { box, tick };
}

// execPanel is the instance page's command box: shown while the container
// runs and its template allows exec (read once); a command (words split at
// spaces, quotes keep them together) runs through POST .../exec and its
// exit code and both streams are shown apart.
function execPanel(path) {
  const ids = { h: uid("exec-h"), l: uid("exec-l") };
  const box = el("section", { id: "exec", "aria-labelledby": ids.h, hidden: true });
  const cmd = el("input", { id: "exec-cmd", name: "command", autocomplete: "off", "aria-labelledby": ids.l });
  const state = el("p", { id: "exec-status", role: "status" });
  const out = el("div");
  let tpl = null, busy = false;
  const run = async (ev, after) => {
    ev.preventDefault();
    const words = (cmd.value.match(/"[^"]*"|'[^']*'|\S+/g) || []).map((w) => w.replace(/^(["'])(.*)\1$/, "$2"));
    if (busy || !words.length) return;
    busy = true;
    state.textContent = "Running…";
    out.replaceChildren();
    try {
      const r = await api("POST", path + "/exec", { command: words });
      state.textContent = (r.timed_out ? "Timed out and killed" : `Exit ${r.exit_code}`) + ` after ${r.duration_ms} ms` + (r.truncated ? " (output truncated)" : "");
      out.replaceChildren(...["stdout", "stderr"].map((k) => el("div", {}, el("h3", {}, k),
        el("pre", { id: "exec-" + k, class: "logs", tabindex: "0", "aria-label": k }, r[k]))));
      after();
    } catch (e) {
      state.textContent = "";
      out.replaceChildren(errorBox(e));
    } finally {
      busy = false;
    }
  };
  const tick = async (i, after) => {
    if (tpl === null && i.status === "running") {
      tpl = false;
      try { tpl = (await api("GET", "/api/templates/" + encodeURIComponent(i.template))).exec === true; } catch { tpl = null; }
      box.replaceChildren(el("h2", { id: ids.h }, "Run a command"), el("form", { onsubmit: (ev) => run(ev, after) },
        el("label", { id: ids.l, for: "exec-cmd" }, "Command (no shell: sh -c '…' for one)"),
        el("div", { class: "row" }, cmd, el("button", { type: "submit", id: "exec-run" }, "Run"))), state, out);
      box.dataset.exec = tpl ? "on" : "off";
    }
    box.hidden = !tpl || i.status !== "running";
  };
  return { box, tick };
}

// LOG_TAIL is how many of the last lines the logs panel shows; while the
// container runs they are read again every LOG_EVERY_MS.
const LOG_TAIL = 200;
const LOG_EVERY_MS = 5000;

// logsPanel is the instance page's logs: the last LOG_TAIL lines the
// container printed (GET .../logs?tail=…), read again while it runs, and
// on demand. Where the deployment serves no logs (501, the api function on
// AWS) or the container has no output yet (409), it says so.
function logsPanel(path, current) {
  const ids = { h: uid("logs-h") };
  const out = el("pre", { id: "logs", class: "logs", tabindex: "0", "aria-labelledby": ids.h }, "");
  const note = el("p", { class: "muted", id: "logs-note" });
  let busy = false, lastStatus = "", shown = false, lastLoad = 0;
  const load = async () => {
    if (busy) return;
    busy = true;
    try {
      const text = await apiText(path + "/logs" + qs({ tail: String(LOG_TAIL), timestamps: "true" }));
      out.textContent = text;
      note.textContent = text ? `The last ${LOG_TAIL} lines at most, with their times.` : "No output yet.";
    } catch (e) {
      out.textContent = "";
      if (e.status === 501) note.textContent = "This deployment does not serve logs (on AWS, read them with the Docker or cluster tools).";
      else if (e.status === 409) note.textContent = "No output to read now: " + (e.problem.detail || "the container is not there yet") + ".";
      else note.textContent = problemText(e);
    } finally {
      busy = false;
      shown = true;
    }
  };
  const refresh = el("button", { type: "button", id: "logs-refresh", onclick: load }, "Refresh logs");
  const box = el("section", { "aria-labelledby": ids.h }, el("h2", { id: ids.h }, "Logs"), el("div", { class: "actions" }, refresh), note, out);
  // tick follows the instance: its logs are read when it is first shown,
  // when its status changes, and again on each poll while it runs.
  const tick = (i) => {
    if (!i) return;
    const now = Date.now();
    if (!shown || i.status !== lastStatus || (i.status === "running" && now - lastLoad >= LOG_EVERY_MS)) {
      lastLoad = now;
      load();
    }
    lastStatus = i.status;
  };
  return { box, tick };
}

// ---- groups ----

function groupsPage(params) {
  const owner = params.get("owner") || "";
  const cursor = params.get("cursor") || "";
  const box = el("div"), pager = el("div", { class: "pager" });
  page("Groups", box, pager);
  const load = async () => {
    const body = await api("GET", "/api/groups" + qs({ owner, cursor, limit: "50" }));
    const items = body.items || [];
    box.replaceChildren(items.length ? el("div", { class: "scroll" }, el("table", { class: "cards" },
      el("thead", {}, el("tr", {}, ["Group", "Owner", "Members", "By status"].map((c) => el("th", { scope: "col" }, c)))),
      el("tbody", {}, items.map((g) => el("tr", {},
        el("td", { "data-label": "Group" }, el("a", { href: "#/groups/" + encodeURIComponent(g.group) + (session.admin ? qs({ owner: g.owner }) : "") }, g.group)),
        el("td", { "data-label": "Owner" }, g.owner),
        el("td", { "data-label": "Members" }, g.total),
        el("td", { "data-label": "By status" }, countsText(g.counts))))))) : el("p", { class: "muted" }, "No groups. A group is the containers created with the same group name."));
    pager.replaceChildren(body.next_cursor ? el("a", { href: "#/groups" + qs({ owner, cursor: body.next_cursor }) }, "Next page →") : "");
  };
  load().catch((e) => box.replaceChildren(errorBox(e)));
  every(3000, load);
}

function countsText(counts) {
  return Object.entries(counts || {}).filter(([, n]) => n).map(([s, n]) => `${s} ${n}`).join(", ");
}

function groupPage(name, params) {
  const owner = params.get("owner") || "";
  const path = "/api/groups/" + encodeURIComponent(name);
  const q = qs({ owner });
  const policyBox = el("div"), controls = el("div"), confirmBox = el("div"), result = el("div"), members = el("div");
  page("Group " + name, policyBox, controls, confirmBox, result, el("h2", {}, "Members by status"), members);
  let g = null, last = "";

  const ask = (what, text, run) => {
    const yes = el("button", { type: "button", class: "danger", id: "confirm-" + what, onclick: run }, "Confirm " + what);
    confirmBox.replaceChildren(el("div", { class: "panel confirm", role: "alertdialog", "aria-label": "Confirm " + what },
      el("p", {}, text), el("div", { class: "actions" }, yes,
        el("button", { type: "button", onclick: () => confirmBox.replaceChildren() }, "Cancel"))));
    yes.focus();
  };
  const showResult = (r) => {
    confirmBox.replaceChildren();
    result.replaceChildren(el("div", { class: "panel", role: "status" }, el("h2", {}, `Policy applied: ${r.policy}` + (r.outcome ? ` (outcome ${r.outcome})` : "")),
      el("ul", {}, (r.members || []).map((m) => el("li", {}, `${m.name || m.id}: ${m.action} (was ${m.status})`)))));
    load();
  };

  const renderControls = () => {
    const p = g.policies || {};
    policyBox.replaceChildren(el("div", { class: "panel" }, el("h2", {}, "Cleanup policies"), el("dl", { class: "spec" },
      el("dt", {}, "On finish"), el("dd", {}, `dag_node_cleanup_on_dag_finished: ${p.dag_node_cleanup_on_dag_finished || "unknown"}`),
      el("dt", {}, "On a failed member"), el("dd", {}, `dag_node_cleanup_on_failed: ${p.dag_node_cleanup_on_failed || "unknown"}`),
      el("dt", {}, "On a member's success"), el("dd", {}, `delete_container_on_node_success: ${p.delete_container_on_node_success}`),
      el("dt", {}, "Reset"), el("dd", {}, `cleanup_dag_node_containers_before_start: ${p.cleanup_dag_node_containers_before_start}`))));
    const outId = uid("outcome"), resetWhy = uid("why");
    const outcome = el("select", { id: outId }, ["succeeded", "failed", "cancelled"].map((o) => el("option", { value: o }, o)));
    const resetOK = !!p.cleanup_dag_node_containers_before_start;
    controls.replaceChildren(el("div", { class: "row panel" },
      el("div", { class: "field" }, el("label", { for: outId }, "Outcome"), outcome),
      el("button", { type: "button", id: "group-finish", onclick: () => ask("finish",
        `Finish ${name} as ${outcome.value}: the policy "${p.dag_node_cleanup_on_dag_finished || "none"}" is applied to all ${g.total} members; members still queued are cancelled.`,
        async () => { try { showResult(await api("POST", path + "/finish" + q, { outcome: outcome.value })); } catch (e) { confirmBox.replaceChildren(errorBox(e)); } }) }, "Finish…"),
      el("div", {}, el("button", { type: "button", id: "group-reset", disabled: !resetOK, "aria-describedby": resetOK ? null : resetWhy, onclick: () => ask("reset",
        `Reset ${name}: every one of its ${g.total} members is deleted, queued ones included.`,
        async () => { try { showResult(await api("POST", path + "/reset" + q)); } catch (e) { confirmBox.replaceChildren(errorBox(e)); } }) }, "Reset…"),
      resetOK ? "" : el("p", { class: "hint", id: resetWhy }, "cleanup_dag_node_containers_before_start is false on this berth"))));
  };

  const load = async () => {
    try {
      g = await api("GET", path + q);
    } catch (e) {
      if (e.status === 404) { members.replaceChildren(el("p", { class: "muted" }, "This group has no containers.")); controls.replaceChildren(); return; }
      throw e;
    }
    const key = JSON.stringify(g);
    if (key === last) return;
    const first = !last;
    last = key;
    if (first) renderControls();
    const by = new Map();
    for (const m of g.members || []) {
      if (!by.has(m.status)) by.set(m.status, []);
      by.get(m.status).push(m);
    }
    members.replaceChildren(...fsmTable.statuses.filter((s) => by.has(s)).map((s) => el("section", {},
      el("h3", {}, badge(s), ` ${by.get(s).length}`),
      el("ul", {}, by.get(s).map((m) => el("li", {}, el("a", { href: "#/containers/" + encodeURIComponent(m.id) }, m.name || m.id),
        m.status_reason ? el("span", { class: "muted" }, " — " + m.status_reason) : ""))))));
  };
  load().catch((e) => members.replaceChildren(errorBox(e)));
  every(2000, load);
}

// ---- templates ----

async function templatesPage() {
  const box = el("div");
  page("Templates", session.admin ? el("p", {}, el("a", { href: "#/templates/new", id: "new-template" }, "New template")) : "", box);
  try {
    const items = (await api("GET", "/api/templates")).items || [];
    box.replaceChildren(items.length ? el("div", { class: "scroll" }, el("table", { class: "cards" },
      el("thead", {}, el("tr", {}, ["Name", "Runtime", "Image", "Description"].map((c) => el("th", { scope: "col" }, c)))),
      el("tbody", {}, items.map((t) => el("tr", {},
        el("td", { "data-label": "Name" }, el("a", { href: "#/templates/" + encodeURIComponent(t.name) }, t.name)),
        el("td", { "data-label": "Runtime" }, t.runtime),
        el("td", { "data-label": "Image" }, t.image),
        el("td", { "data-label": "Description" }, t.description || "")))))) : el("p", { class: "muted" }, "No templates."));
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}

// The form's own fields; every other template field is edited as JSON.
const FORM_FIELDS = ["description", "runtime", "image", "pull_policy", "command", "args", "workdir", "env", "user_env"];
const READ_ONLY = ["name", "version", "updated_at", "image_status"];

async function templatePage(name) {
  const isNew = name === "new";
  let t = { runtime: "docker", pull_policy: "IfNotPresent" };
  if (!isNew) {
    try {
      t = await api("GET", "/api/templates/" + encodeURIComponent(name));
    } catch (e) {
      page("Template " + name, errorBox(e));
      return;
    }
  }
  const read = isNew ? "" : el("div", {}, el("dl", { class: "spec" },
    [["Runtime", t.runtime], ["Image", t.image], ["Pull policy", t.pull_policy], ["Command", (t.command || []).join(" ")],
      ["Args", (t.args || []).join(" ")], ["Workdir", t.workdir], ["Version", t.version], ["Updated", fmtTime(t.updated_at)]]
      .filter(([, v]) => v !== undefined && v !== "").map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("h2", {}, "Whole template"), el("pre", { tabindex: "0", "aria-label": "Template as JSON" }, JSON.stringify(t, null, 2)));
  if (!session.admin) {
    page("Template " + name, read);
    return;
  }
  page(isNew ? "New template" : "Template " + name, read, templateForm(t, isNew));
}

function templateForm(t, isNew) {
  const inputs = {};
  const errs = {};
  const field = (key, label, control, hint) => {
    const id = "t-" + key;
    const errId = id + "-err", hintId = id + "-hint";
    control.id = id;
    control.name = key;
    control.setAttribute("aria-describedby", (hint ? hintId + " " : "") + errId);
    inputs[key] = control;
    errs[key] = el("p", { class: "error", id: errId });
    return el("div", { class: "field" }, el("label", { for: id }, label), control, hint ? el("p", { class: "hint", id: hintId }, hint) : "", errs[key]);
  };
  const lines = (a) => (a || []).join("\n");
  const kv = (o) => Object.entries(o || {}).map(([k, v]) => k + "=" + v).join("\n");
  const rest = {};
  for (const [k, v] of Object.entries(t)) if (!FORM_FIELDS.includes(k) && !READ_ONLY.includes(k)) rest[k] = v;
  const nameIn = isNew ? field("name", "Name", el("input", { required: true, size: "24" }), "letters, digits, - and _") : "";
  const form = el("form", { class: "panel", novalidate: true, onsubmit: async (ev) => {
    ev.preventDefault();
    for (const k of Object.keys(errs)) { errs[k].textContent = ""; inputs[k].removeAttribute("aria-invalid"); }
    formErr.replaceChildren();
    let body;
    try {
      body = JSON.parse(inputs.other.value.trim() || "{}");
    } catch (e) {
      return mark([{ field: "other", message: "not valid JSON: " + e.message }]);
    }
    const target = isNew ? inputs.name.value.trim() : t.name;
    if (!target) return mark([{ field: "name", message: "is required" }]);
    const split = (s) => s.split("\n").map((x) => x.trim()).filter(Boolean);
    Object.assign(body, {
      description: inputs.description.value, runtime: inputs.runtime.value, image: inputs.image.value.trim(),
      pull_policy: inputs.pull_policy.value, command: split(inputs.command.value), args: split(inputs.args.value),
      workdir: inputs.workdir.value.trim(), user_env: split(inputs.user_env.value),
      env: Object.fromEntries(split(inputs.env.value).map((l) => { const i = l.indexOf("="); return i < 0 ? [l, ""] : [l.slice(0, i), l.slice(i + 1)]; })),
    });
    try {
      await api("PUT", "/api/templates/" + encodeURIComponent(target), body);
      say(`Template ${target} saved`);
      if (isNew) location.hash = "#/templates/" + encodeURIComponent(target);
      else route();
    } catch (e) {
      if ((e.status === 422 || e.status === 400) && e.problem.errors && e.problem.errors.length) mark(e.problem.errors);
      else formErr.replaceChildren(errorBox(e));
    }
  } },
  el("h2", {}, isNew ? "Create" : "Edit"),
  nameIn,
  field("description", "Description", el("input", { value: t.description || "", size: "40" })),
  field("runtime", "Runtime", el("select", {}, ["docker", "kubernetes"].map((r) => el("option", { value: r, selected: t.runtime === r }, r)))),
  field("image", "Image", el("input", { value: t.image || "", size: "40", required: true })),
  field("pull_policy", "Pull policy", el("select", {}, ["IfNotPresent", "Always", "Never"].map((r) => el("option", { value: r, selected: t.pull_policy === r }, r)))),
  field("command", "Command", el("textarea", { rows: "3" }, lines(t.command)), "one argument a line"),
  field("args", "Args", el("textarea", { rows: "2" }, lines(t.args)), "one argument a line"),
  field("workdir", "Workdir", el("input", { value: t.workdir || "", size: "30" })),
  field("env", "Env", el("textarea", { rows: "3" }, kv(t.env)), "NAME=value, one a line"),
  field("user_env", "User env", el("textarea", { rows: "2" }, lines(t.user_env)), "variables users may set, one a line"),
  field("other", "Other fields (JSON)", el("textarea", { rows: "6" }, JSON.stringify(rest, null, 2)), "volumes, ports, resources, scheduling, labels, secret_env"),
  el("div", { class: "actions" }, el("button", { type: "submit", class: "primary", id: "template-save" }, isNew ? "Create template" : "Save template"),
    isNew ? "" : el("button", { type: "button", class: "danger", id: "template-delete", onclick: () => {
      const yes = el("button", { type: "button", class: "danger", id: "confirm-template-delete", onclick: async () => {
        try {
          await api("DELETE", "/api/templates/" + encodeURIComponent(t.name));
          say(`Template ${t.name} deleted`);
          location.hash = "#/templates";
        } catch (e) { formErr.replaceChildren(errorBox(e)); }
      } }, "Delete it");
      formErr.replaceChildren(el("div", { class: "panel confirm", role: "alertdialog", "aria-label": "Confirm template delete" },
        el("p", {}, `Delete template ${t.name}? Existing containers keep their spec.`), yes));
      yes.focus();
    } }, "Delete template")));
  const formErr = el("div");
  form.append(formErr);

  // mark shows each field error at its field (a nested field such as
  // resources.cpu or volumes[0].target at the JSON box) and focuses the first.
  function mark(list) {
    let first = null;
    const rest = [];
    for (const fe of list) {
      const top = String(fe.field || "").split(/[.[]/)[0];
      const key = inputs[top] ? top : inputs.other && !FORM_FIELDS.includes(top) && top ? "other" : null;
      if (!key) { rest.push(fe); continue; }
      errs[key].textContent = (errs[key].textContent ? errs[key].textContent + "; " : "") + (key === top ? fe.message : `${fe.field}: ${fe.message}`);
      inputs[key].setAttribute("aria-invalid", "true");
      first = first || inputs[key];
    }
    if (rest.length) formErr.replaceChildren(el("p", { class: "error", role: "alert" }, rest.map((f) => `${f.field}: ${f.message}`).join("; ")));
    else say("The template was not saved: see the marked fields");
    if (first) first.focus();
  }
  return form;
}

// ---- quotas ----

const QUOTAS = ["instances", "running", "pending", "cpus", "memory"];

function quotaTable(rows) {
  return el("div", { class: "scroll" }, el("table", { class: "cards" },
    el("thead", {}, el("tr", {}, ["Whose", ...QUOTAS].map((c) => el("th", { scope: "col" }, c)))),
    el("tbody", {}, rows.map(([what, q, del]) => el("tr", {}, el("th", { scope: "row" }, what, del || ""),
      QUOTAS.map((k) => el("td", { "data-label": k }, String(q[k] ?? 0))))))));
}

// quotasPage shows the caller's limits and use (and their team's); an
// admin also sees every override, sets and removes them.
async function quotasPage() {
  const box = el("div");
  page("Quotas", el("p", { class: "muted" }, "0: no limit. A team's limits cover its members together."), box);
  try {
    const me = await api("GET", "/api/quotas/me");
    const rows = [["you: limits", me.user.limits], ["you: used", me.user.used]];
    if (me.team) rows.push(["team " + me.team.name + ": limits", me.team.limits], ["team " + me.team.name + ": used", me.team.used]);
    const parts = [quotaTable(rows)];
    if (session.admin) {
      const l = await api("GET", "/api/quotas");
      parts.push(el("h2", {}, "Overrides"), quotaTable([["default", l.default], ...l.items.map((o) => [o.kind + " " + o.name, o,
        el("button", { type: "button", class: "link", onclick: () => api("DELETE", `/api/quotas/${o.kind}s/${encodeURIComponent(o.name)}`).then(route, (e) => box.append(errorBox(e))) }, " remove")])]), quotaForm(box));
    }
    box.replaceChildren(...parts);
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}

function quotaForm(box) {
  const f = {};
  const kind = el("select", { id: "q-kind" }, el("option", {}, "user"), el("option", {}, "team"));
  const name = el("input", { id: "q-name", required: true, size: "12" });
  const field = (label, input) => el("div", { class: "field" }, el("label", { for: input.id }, label), input);
  return el("form", { class: "row panel", onsubmit: async (ev) => {
    ev.preventDefault();
    const body = {};
    for (const k of QUOTAS) if (f[k].value.trim()) body[k] = k === "memory" ? f[k].value.trim() : Number(f[k].value);
    try {
      await api("PUT", `/api/quotas/${kind.value}s/${encodeURIComponent(name.value.trim())}`, body);
      say("Saved");
      route();
    } catch (e) {
      box.append(errorBox(e));
    }
  } }, field("Kind", kind), field("Name", name),
  ...QUOTAS.map((k) => field(k, f[k] = el("input", { id: "q-" + k, size: "6" }))),
  el("button", { type: "submit", class: "primary", id: "quota-save" }, "Set override"));
}

// ---- usage ----

// usagePage charts container-hours per UTC day (the caller's; an admin may
// name an owner or a team) and lists each day's figures (GET /api/usage).
async function usagePage(params) {
  const f = Object.fromEntries(params);
  const box = el("div");
  const input = (k, label, type) => el("div", { class: "field" }, el("label", { for: "u-" + k }, label), el("input", { id: "u-" + k, name: k, type, value: f[k] || "", size: "12" }));
  const form = el("form", { class: "row panel", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = "#/usage" + qs(Object.fromEntries(new FormData(form)));
  } }, input("from", "From (UTC day)", "date"), input("to", "To (UTC day, not counted)", "date"),
  session.admin && [input("owner", "Owner"), input("team", "Team")], el("button", { type: "submit", class: "primary" }, "Show"));
  page("Usage", el("p", { class: "muted" }, "Hours running or paused, and the cores and GiB their templates reserve meanwhile, per UTC day."), form, box);
  const day = (d) => d && d + "T00:00:00Z";
  const h = (s) => (s / 3600).toFixed(1);
  try {
    const u = await api("GET", "/api/usage" + qs({ from: day(f.from), to: day(f.to), owner: f.owner, team: f.team, group_by: "day" }));
    box.replaceChildren(usageChart(u), el("div", { class: "scroll" }, el("table", { class: "cards" },
      el("thead", {}, el("tr", {}, ["Day", "Container-hours", "CPU-hours", "GiB-hours", "Creates", "Failures"].map((c) => el("th", { scope: "col" }, c)))),
      el("tbody", {}, u.items.map((i) => el("tr", {}, el("th", { scope: "row" }, i.key),
        [h(i.running_seconds), h(i.cpu_seconds), h(i.memory_gib_seconds), i.creates, i.failures].map((v) => el("td", {}, String(v)))))))));
  } catch (e) {
    box.replaceChildren(errorBox(e));
  }
}

// usageChart draws a bar a day from u.from up to now, its height the day's
// container-hours.
function usageChart(u) {
  const by = Object.fromEntries(u.items.map((i) => [i.key, i.running_seconds]));
  const days = [];
  for (let t = Date.parse(u.from); t < Date.parse(u.to) && t <= Date.now(); t += 864e5) days.push(new Date(t).toISOString().slice(0, 10));
  const w = 480, h = 120, bw = w / Math.max(days.length, 1), top = Math.max(1, ...Object.values(by));
  return svgEl("svg", { id: "usage-chart", class: "spark", viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: "img",
    "aria-label": `Container-hours per day, ${days[0]} to ${days[days.length - 1]}` },
  ...days.map((d, k) => {
    const bh = ((by[d] || 0) / top) * (h - 2);
    return svgEl("rect", { x: (k * bw).toFixed(1), y: (h - bh).toFixed(1), width: Math.max(bw - 1, 1).toFixed(1), height: bh.toFixed(1), fill: "currentColor" },
      svgEl("title", {}, `${d}: ${((by[d] || 0) / 3600).toFixed(1)} h`));
  }));
}

// ---- overview (admins) ----

// OVERVIEW_EVERY_MS is how often the overview reads GET /metrics; the last
// STATS_KEEP readings are drawn.
const OVERVIEW_EVERY_MS = 3000;

// parseMetrics reads Prometheus's text format (GET /metrics) into samples
// [name, labels, value]; comment lines match nothing.
function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    const m = /^(\w+)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push([m[1], labels, Number(m[3])]);
  }
  return out;
}

// total adds the samples of name whose labels pass f.
const total = (s, name, f = () => true) => s.reduce((a, [n, l, v]) => n === name && f(l) ? a + v : a, 0);

// bound is "≤ " the upper bound (seconds, +Inf past the last) of the
// histogram's bucket that holds its q quantile, over every series (the
// buckets come in ascending order); "—" without observations.
function bound(s, name, q) {
  const b = new Map();
  for (const [n, l, v] of s) if (n === name + "_bucket") b.set(l.le, (b.get(l.le) || 0) + v);
  const all = b.get("+Inf"), [le] = [...b].find(([, c]) => c >= q * all) || [];
  return all ? "≤ " + le : "—";
}

// overviewPage draws berth's own numbers (GET /metrics, for admins), read
// every OVERVIEW_EVERY_MS: charts over the last readings (queued, admission
// in use, requests per second), tiles for creates accepted and refused and
// create → running, then a tile for each of berth's metrics (its total over
// the labels). Where the deployment serves no /metrics (501: on AWS,
// CloudWatch has them) it says so and stops asking.
async function overviewPage() {
  const note = el("p", { class: "muted", id: "overview-note" }, "Reading…");
  const body = el("div");
  page("Overview", note, body);
  const q = [], adm = [], rps = [];
  let last = null, served = true;
  const load = async () => {
    if (!served) return;
    let s;
    try {
      s = parseMetrics(await apiText("/metrics"));
    } catch (e) {
      served = e.status !== 501;
      note.textContent = problemText(e);
      return;
    }
    const t = (n, f) => total(s, "berth_" + n, f), now = Date.now(), D = "berth_create_duration_seconds";
    // Only a create is 202 or 429 there.
    const creates = (c) => t("http_requests_total", (l) => l.route === "/api/containers" && l.code === c);
    const req = t("http_requests_total"), queued = t("queue_messages", (l) => l.state !== "in_flight"), use = t("admission_in_use"), lim = t("admission_limit");
    keep(q, queued);
    keep(adm, use);
    if (last) keep(rps, Math.max(0, (req - last[0]) / (now - last[1]) * 1000));
    last = [req, now];
    const fams = {};
    for (const [n, , v] of s) if (/^berth_(?!.*_(sum|bucket)$)/.test(n)) fams[n] = (fams[n] || 0) + v;
    const tiles = [["accepted", "Creates accepted", creates("202")], ["refused", "Creates refused", creates("429")],
      ["latency", "Create → running p50, p99 (s)", bound(s, D, 0.5) + ", " + bound(s, D, 0.99)],
      ...Object.entries(fams).map(([n, v]) => [n, n.slice(6).replace(/_/g, " "), +v.toFixed(3)])];
    const chart = (id, a, top, text) => el("figure", {}, sparkline("ov-" + id, a, top, text), el("figcaption", {}, text));
    note.textContent = q.length + " reading(s)";
    body.replaceChildren(el("div", { class: "charts" }, chart("queued", q, Math.max(1, ...q), "Queued: " + queued),
      chart("admission", adm, Math.max(1, lim), `Admission in use: ${use} of ${lim}`),
      chart("rps", rps, Math.max(1, ...rps), `Requests per second: ${(rps[rps.length - 1] || 0).toFixed(1)}`)),
    el("dl", { class: "tiles" }, tiles.map(([id, k, v]) => el("div", {}, el("dt", {}, k), el("dd", { id: "m-" + id }, String(v))))));
  };
  await load();
  every(OVERVIEW_EVERY_MS, load);
}

// ---- router ----

function route() {
  routeSeq++;
  timers.forEach((t) => clearTimeout(t.id));
  timers = [];
  const hash = location.hash.replace(/^#/, "") || "/containers";
  const [p, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = p.split("/").filter(Boolean).map(decodeURIComponent);
  for (const a of document.querySelectorAll("#nav a")) {
    if (("#/" + parts[0]) === a.getAttribute("href")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!session.local && !session.token && parts[0] !== "signin") {
    location.hash = "#/signin";
    return;
  }
  switch (parts[0]) {
    case "signin": return signInPage();
    case "groups": return parts[1] ? groupPage(parts[1], params) : groupsPage(params);
    case "templates": return parts[1] ? templatePage(parts[1]) : templatesPage();
    case "quotas": return quotasPage();
    case "usage": return usagePage(params);
    case "overview": return overviewPage();
    case "containers":
    default:
      return parts[1] ? instancePage(parts[1]) : containersPage(params);
  }
}

async function boot() {
  document.getElementById("signout").addEventListener("click", signOutEverywhere);
  try {
    const [f, c] = await Promise.all([fetch("/console/fsm.json"), fetch("/console/config.json", { cache: "no-store" })]);
    fsmTable = await f.json();
    provider = (await c.json()).oidc || null;
  } catch (e) {
    page("berth console", errorBox(e));
    return;
  }
  // Back from the identity provider: trade the code for a token.
  const back = new URLSearchParams(location.search);
  let signInError = "";
  if (provider && (back.has("code") || back.has("error"))) {
    try {
      const data = await finishSignIn(back);
      await probe(data.id_token || data.access_token);
      keepSession(data);
    } catch (e) {
      signInError = e.status === 401 ? "berth does not accept the token the identity provider gave." : problemText(e);
    }
  } else if (provider && session.token && oidcState()) {
    // A reload: the sign-in goes on, renewed first if it is due.
    const st = oidcState();
    if (st.exp && st.exp - Math.min(REFRESH_LEAD_MS, (st.life || 0) / 2) <= Date.now()) await renew();
    else planRenewal();
  }
  const signedOutAt = sessionStorage.getItem(SIGNED_OUT_KEY);
  sessionStorage.removeItem(SIGNED_OUT_KEY);
  // With no tokens configured, berth serve answers every request as its
  // local admin: an unauthenticated probe tells.
  if (session.token) {
    try { await probe(session.token); } catch { forgetSession(); }
  }
  if (!session.token) {
    try { await probe(""); session.local = true; } catch { session.local = false; }
  }
  if (session.local || session.token) session.admin = await detectAdmin();
  chrome();
  window.addEventListener("hashchange", () => {
    route();
    const h = main().querySelector("h1");
    if (h) h.focus();
  });
  route();
  if (signInError) say(signInError);
  else if (signedOutAt) say(`Signed out, at ${signedOutAt} too.`);
  document.body.dataset.ready = "true";
}

boot();
