// The viewer's shell: the hash router and the navigation. Views live in
// views.js, shared helpers in lib.js.
import { render } from "./vendor/preact.mjs";
import { useEffect, useState } from "./vendor/hooks.mjs";
import { api, href, html } from "./lib.js";
import { SearchView, TimelineView, RecordView, HealthView } from "./views.js";

// The route from the hash: `#/search?q=…` → {view: "search", params}.
function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [view, query] = hash.split("?");
  return { view: view || "search", params: Object.fromEntries(new URLSearchParams(query || "")) };
}

const TABS = [
  ["search", "Search"],
  ["timeline", "Timeline"],
  ["health", "Health"],
];

function App() {
  const [current, setCurrent] = useState(route());
  const [info, setInfo] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const changed = () => setCurrent(route());
    addEventListener("hashchange", changed);
    api("info").then(setInfo, (e) => setError(e.message));
    return () => removeEventListener("hashchange", changed);
  }, []);
  if (error) return html`<p class="error">The viewer cannot reach its server: ${error}</p>`;
  if (!info) return html`<p class="loading">Loading…</p>`;
  const { view, params } = current;
  const body = {
    search: () => html`<${SearchView} info=${info} params=${params} />`,
    timeline: () => html`<${TimelineView} info=${info} params=${params} />`,
    record: () => html`<${RecordView} info=${info} params=${params} />`,
    health: () => html`<${HealthView} info=${info} />`,
  }[view];
  return html`
    <header>
      <span class="brand">knowledge-db</span>
      <nav>
        ${TABS.map(
          ([name, label]) =>
            html`<a href=${href(name)} class=${view === name ? "active" : ""} data-tab=${name}>${label}</a>`,
        )}
      </nav>
      <span class="store" title=${info.store}>
        ${`${info.records.toLocaleString()} live records · vectors: ${info.vector === "used" ? "used" : "off"} · `}
        ${info.allow_delete ? html`<b class="warn">deletes allowed</b>` : "read-only"}
      </span>
    </header>
    <main>${body ? body() : html`<p class="error">No view named “${view}”.</p>`}</main>
  `;
}

render(html`<${App} />`, document.getElementById("app"));
