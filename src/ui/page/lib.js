// What every view shares: htm bound to Preact, the API helpers, links.
// Every call goes to this server's own API (relative URLs under the token
// path); nothing is fetched from anywhere else.
import { h } from "./vendor/preact.mjs";
import htm from "./vendor/htm.mjs";

export const html = htm.bind(h);

// GET an API call; resolves to its JSON, or throws an Error with the
// server's message. A parameter that is undefined or null is left out; an
// empty string is sent (`group=` asks for the sessions of no project).
export async function api(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) query.set(key, value);
  }
  const text = query.toString();
  const response = await fetch(`api/${path}${text ? "?" + text : ""}`);
  return answer(response);
}

// POST a write (delete) as JSON.
export async function post(path, body) {
  const response = await fetch(`api/${path}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return answer(response);
}

async function answer(response) {
  let body;
  try {
    body = await response.json();
  } catch {
    throw new Error(`${response.status}: ${await response.text().catch(() => "")}`);
  }
  if (!response.ok) {
    const error = new Error(body.error || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

// A link to a view with parameters; undefined and null ones are left out, an
// empty string is kept (the timeline's `group=` is the "(no project)" group).
export function href(view, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) query.set(key, value);
  }
  const text = query.toString();
  return `#/${view}${text ? "?" + text : ""}`;
}

// Goes to a view (pushes a history entry).
export function go(view, params) {
  location.hash = href(view, params);
}

// Only the parameters with a value: a search form's blank fields left out.
export function filled(params) {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
}

// A project as the page names it: its folder, or "(no project)".
export function projectName(project) {
  return project ? project : "(no project)";
}

