// The JSON API under /api/v1: one place that adds the CSRF token to changes
// and turns error replies into exceptions carrying the server's message.
let csrf = null;
let user = null;

export function setCsrf(token, name) {
  csrf = token;
  user = name || null;
}

export class ApiError extends Error {
  constructor(message, status, data) {
    super(message);
    this.status = status;
    this.data = data;
  }
}

// The session's token when a change was refused with 403 and the browser's
// cookie now is another session of the same user (logged in again in
// another tab after a logout or expiry), else null.
async function newerCsrf() {
  try {
    const s = await (await fetch("/api/v1/session", { credentials: "same-origin" })).json();
    return s.state === "ok" && s.user === user && s.csrf !== csrf ? s.csrf : null;
  } catch (e) {
    return null;
  }
}

export async function api(method, path, body) {
  const opt = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opt.headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body);
  }
  if (method !== "GET" && csrf) opt.headers["X-CSRF-Token"] = csrf;
  let r = await fetch("/api/v1/" + path, opt);
  // Refused for the old token before it ran: once more with the new one.
  if (r.status === 403 && method !== "GET" && csrf) {
    const fresh = await newerCsrf();
    if (fresh) {
      csrf = fresh;
      opt.headers["X-CSRF-Token"] = csrf;
      r = await fetch("/api/v1/" + path, opt);
    }
  }
  let data = null;
  try {
    data = await r.json();
  } catch (e) {
    data = null;
  }
  if (r.status === 401 && !path.startsWith("session")) {
    window.dispatchEvent(new CustomEvent("tlsbox:logged-out"));
  }
  // A change the box answered: a form it stored holds no unsaved edit now
  // (drafts.js).
  if (method !== "GET" && r.status !== 401) {
    window.dispatchEvent(new CustomEvent("tlsbox:written", { detail: { ok: r.ok } }));
  }
  if (!r.ok) {
    throw new ApiError((data && data.error) || `HTTP ${r.status}`, r.status, data);
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body === undefined ? {} : body);
export const put = (path, body) => api("PUT", path, body);
