// The JSON API under /api/v1: one place that adds the CSRF token to changes
// and turns error replies into exceptions carrying the server's message.
let csrf = null;

export function setCsrf(token) {
  csrf = token;
}

export class ApiError extends Error {
  constructor(message, status, data) {
    super(message);
    this.status = status;
    this.data = data;
  }
}

export async function api(method, path, body) {
  const opt = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opt.headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body);
  }
  if (method !== "GET" && csrf) opt.headers["X-CSRF-Token"] = csrf;
  const r = await fetch("/api/v1/" + path, opt);
  let data = null;
  try {
    data = await r.json();
  } catch (e) {
    data = null;
  }
  if (r.status === 401 && !path.startsWith("session")) {
    window.dispatchEvent(new CustomEvent("tlsbox:logged-out"));
  }
  if (!r.ok) {
    throw new ApiError((data && data.error) || `HTTP ${r.status}`, r.status, data);
  }
  return data;
}

export const get = (path) => api("GET", path);
export const post = (path, body) => api("POST", path, body === undefined ? {} : body);
export const put = (path, body) => api("PUT", path, body);
