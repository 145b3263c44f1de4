// The four views: Search, Timeline, Record, Health. Each loads what it
// shows through the API (lib.js), a page at a time.
import { useEffect, useState } from "./vendor/hooks.mjs";
import { api, filled, go, href, html, post, projectName } from "./lib.js";

// ---- small pieces -------------------------------------------------------

const day = (time) => (time ? time.slice(0, 10) : "—");
const when = (time) => (time ? time.replace("T", " ").replace(/(:\d\d)(\.\d+)?Z$/, "$1") : "—");
const short = (id) => (id && id.length > 14 ? id.slice(0, 8) + "…" : id);
const score = (n) => (n === null || n === undefined ? "—" : n.toFixed(3));
/// `1 session`, `2 sessions`.
export const count = (n, word, plural = word + "s") => `${(n ?? 0).toLocaleString()} ${n === 1 ? word : plural}`;

/// What an empty store says: where memory comes from.
function EmptyStore({ what }) {
  return html`<div class="empty" data-testid="empty-store">
    <p><b>${what}</b> The store holds no records yet. Fill it from a terminal:</p>
    <pre>knowledge-db ingest ~/.claude/projects   # the Claude Code sessions you already have
knowledge-db hook install                # store and recall every new session from now on</pre>
    <p class="hint">Then reload this page.</p>
  </div>`;
}

function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function Problem({ error }) {
  return error ? html`<p class="error" role="alert">${error}</p>` : null;
}

function Kind({ kind }) {
  return html`<span class=${"badge kind-" + kind}>${kind}</span>`;
}

function RecordLink({ id, children }) {
  return html`<a class="record-link" href=${href("record", { id })} title=${id}>${children || id}</a>`;
}

/// A link into the timeline: a session, from a turn or from the turn that
/// holds a stored message (`message`: a message hit's own place).
function SessionLink({ session, group, turn, message, children }) {
  if (!session) return null;
  const at = message ? { message } : { from: turn };
  return html`<a class="session-link" href=${href("timeline", { group, session, ...at })} title=${session}
    >${children || short(session)}</a
  >`;
}

/// The snippet with its highlighted ranges marked. The ranges are byte
/// offsets into the UTF-8 text (as the CLI and --json give them), not
/// JavaScript's UTF-16 indices: the text is cut as bytes, so marks stay on
/// their words after an em dash, an accent or an emoji.
export function Snippet({ text, highlights }) {
  if (!highlights || !highlights.length) return html`<span>${text}</span>`;
  const bytes = new TextEncoder().encode(text);
  const decoder = new TextDecoder();
  const cut = (from, to) => decoder.decode(bytes.subarray(from, to));
  const parts = [];
  let at = 0;
  for (const [start, end] of highlights) {
    if (start < at || end > bytes.length) continue;
    parts.push(cut(at, start));
    parts.push(html`<mark>${cut(start, end)}</mark>`);
    at = end;
  }
  parts.push(cut(at, bytes.length));
  return html`<span>${parts}</span>`;
}

/// Asks, then forgets through the API; `done` gets the report.
async function confirmForget(what, body, done, setError) {
  if (!confirm(`Forget ${what}? It is removed from both tiers and from disk, and kept out of later ingests (\`knowledge-db forget --undo\` lets it back in).`)) return;
  try {
    done(await post("forget", body));
  } catch (e) {
    setError(e.message);
  }
}

/// The forget button: enabled when the viewer allows writes, else telling
/// how to allow them.
function ForgetButton({ info, testid, label, what, body, done, setError }) {
  if (!info.allow_delete)
    return html`<button class="danger" data-testid=${testid} disabled
      title="This viewer is read-only: restart it with knowledge-db ui --allow-delete, or run knowledge-db forget">${label}</button>`;
  return html`<button class="danger" data-testid=${testid} onClick=${() => confirmForget(what, body, done, setError)}>${label}</button>`;
}

// ---- Search -------------------------------------------------------------

export function SearchView({ info, params }) {
  const [form, setForm] = useState(params);
  const [answer, setAnswer] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [scopes, setScopes] = useState({ projects: {}, namespaces: {}, origins: {} });
  useEffect(() => {
    api("scopes").then(setScopes, () => {});
  }, []);
  useEffect(() => {
    setForm(params);
    setAnswer(null);
    if (!params.q) return;
    setBusy(true);
    setError(null);
    const started = performance.now();
    // A slower answer to an earlier query must not replace this one's.
    let current = true;
    api("search", { ...params, k: params.k || 20 })
      .then(
        (a) => current && setAnswer({ ...a, round_trip_ms: performance.now() - started, asked: params }),
        (e) => current && setError(e.message),
      )
      .finally(() => current && setBusy(false));
    return () => {
      current = false;
    };
  }, [JSON.stringify(params)]);
  const set = (name) => (event) =>
    setForm({ ...form, [name]: event.target.type === "checkbox" ? (event.target.checked ? "1" : "") : event.target.value });
  const submit = (event) => {
    event.preventDefault();
    performance.mark("kdb:search-submit");
    go("search", filled(form));
  };
  // The page marks its own timings (User Timing): scripts/ui-measure.mjs reads them.
  useEffect(() => performance.mark("kdb:search-view"), []);
  useEffect(() => {
    if (!answer) return;
    const submitted = performance.getEntriesByName("kdb:search-submit").pop();
    if (submitted) performance.measure("kdb:search-drawn", "kdb:search-submit");
  }, [answer]);
  return html`
    <form class="search" onSubmit=${submit}>
      <div class="query-row">
        <input name="q" type="search" placeholder="What to look for: words, identifiers, file names, error codes"
          value=${form.q || ""} onInput=${set("q")} maxlength=${info.limits.query_chars} autofocus />
        <button type="submit" disabled=${busy}>${busy ? "Searching…" : "Search"}</button>
      </div>
      <div class="filters">
        <label title="records of no project are found from every project">project
          <${ScopeSelect} name="project" value=${form.project} counts=${scopes.projects} all="all" onChange=${set("project")} />
        </label>
        <label>session <input name="session" value=${form.session || ""} onInput=${set("session")} placeholder="id" /></label>
        <label>kind
          <select name="kind" value=${form.kind || ""} onChange=${set("kind")}>
            <option value="">any</option>
            ${info.kinds.map((k) => html`<option value=${k}>${k}</option>`)}
          </select>
        </label>
        <label>since <input name="since" value=${form.since || ""} onInput=${set("since")} placeholder="2026-01-05 or 7d" size="11" /></label>
        <label>until <input name="until" value=${form.until || ""} onInput=${set("until")} placeholder="date or age" size="11" /></label>
        <label>file <input name="file" value=${form.file || ""} onInput=${set("file")} placeholder="oauth2.py" size="14" /></label>
        <label>tier
          <select name="tier" value=${form.tier || "l2"} onChange=${set("tier")}>
            <option value="l2">l2 (store)</option><option value="l3">l3 (archive)</option><option value="all">all</option>
          </select>
        </label>
        <label title="local: this store's own; else the machine a record was pulled from">origin
          <${ScopeSelect} name="origin" value=${form.origin} counts=${scopes.origins} all="any" onChange=${set("origin")} />
        </label>
        <label>namespace
          <${ScopeSelect} name="namespace" value=${form.namespace} counts=${scopes.namespaces} all="all" onChange=${set("namespace")} />
        </label>
        <label class="check"><input type="checkbox" name="all" checked=${!!form.all} onChange=${set("all")} /> weak results too</label>
      </div>
    </form>
    <${Problem} error=${error} />
    ${answer && html`<${SearchAnswer} answer=${answer} />`}
  `;
}

/// A filter's choices: the values the live records hold, with their counts
/// ("" — records of no project — is not a choice: every project's scope holds them).
function ScopeSelect({ name, value, counts, all, onChange }) {
  const names = Object.keys(counts || {}).filter((n) => n !== "");
  if (value && !names.includes(value)) names.push(value);
  return html`<select name=${name} value=${value || ""} onChange=${onChange}>
    <option value="">${all}</option>
    ${names.map((n) => html`<option value=${n}>${n}${counts[n] ? ` (${counts[n].toLocaleString()})` : ""}</option>`)}
  </select>`;
}

/// Why nothing came back, in the page's own words: the checkbox and the
/// tier choice, not the CLI's flags.
function Explanation({ answer }) {
  const text = answer.explanation;
  if (answer.best_score !== undefined && answer.best_score !== null && /^nothing relevant/.test(text))
    return html`<p class="abstain" data-testid="explanation">Nothing relevant: the best match scores ${score(answer.best_score)},
      under the minimum ${score(answer.min_score)}. Tick <b>weak results too</b> above to see the weak matches.</p>`;
  if (/^the store is empty/.test(text)) return html`<${EmptyStore} what="Nothing to search." />`;
  return html`<p class="abstain" data-testid="explanation">${text
    .replace(/`--tier all` \(or `--tier l3`; over MCP, `tier: "l3"`\)/g, "the tier choice above (all, or l3)")
    .replace(/ \(weak matches are shown with `--all` or `--min-score 0`; over MCP, `minScore: 0`\)/g, "")}</p>`;
}

function SearchAnswer({ answer }) {
  const n = answer.results.length;
  const unsure = n > 0 && answer.results.every((h) => h.low_confidence);
  return html`
    <section class="answer" data-testid="answer" data-asked=${JSON.stringify(answer.asked)}>
      <p class="summary" data-testid="search-summary">
        ${n ? count(n, "result") : "No results"} ·
        searched in ${answer.took_ms.toFixed(1)} ms (round trip ${answer.round_trip_ms.toFixed(0)} ms) ·
        vectors: ${answer.vector} · minimum score ${score(answer.min_score)}
        ${answer.below_min_score ? ` · ${answer.below_min_score} weaker left out` : ""}
      </p>
      ${answer.explanation && html`<${Explanation} answer=${answer} />`}
      ${unsure && html`<p class="unsure-note" data-testid="low-confidence">None of these is a confident match (each scores under 0.5, or holds little of
        the question's words and meaning): the store may hold nothing about it.</p>`}
      ${answer.unknown_words && answer.unknown_words.length > 0 && !/^the store is empty/.test(answer.explanation || "") &&
        html`<p class="unknown" data-testid="unknown-words">No record holds: ${answer.unknown_words.map((w) => html`<code>${w}</code> `)}</p>`}
      <ol class="hits">${answer.results.map((hit) => html`<${Hit} hit=${hit} />`)}</ol>
    </section>
  `;
}

function Hit({ hit }) {
  const s = hit.scores;
  return html`
    <li class=${"hit" + (hit.weak ? " weak" : hit.low_confidence ? " unsure" : "")} data-testid="hit">
      <div class="hit-head">
        <span class="score" title="calibrated probability of relevance">${score(hit.score)}</span>
        ${hit.weak && html`<span class="badge weak">weak</span>`}
        ${!hit.weak && hit.low_confidence && html`<span class="badge weak" title="score under 0.5, or little of the question's words and meaning">low confidence</span>`}
        <${Kind} kind=${hit.kind} />
        <span class="badge tier">${hit.tier}</span>
        <span class="title"><${RecordLink} id=${hit.id}>${hit.title || hit.id}<//></span>
      </div>
      <p class="snippet"><${Snippet} text=${hit.snippet} highlights=${hit.highlights} /></p>
      <div class="hit-meta">
        <span class="project" title="project">${projectName(hit.project)}</span>
        <span class="origin" title="origin: who wrote it">${hit.origin || "local"}</span>
        ${hit.namespace !== "default" && html`<span title="namespace">ns ${hit.namespace}</span>`}
        ${hit.session_id && html`<span>session <${SessionLink} session=${hit.session_id} group=${hit.project || ""}
          turn=${hit.start_turn} message=${hit.kind === "message" ? hit.id : undefined} /></span>`}
        ${hit.start_turn !== undefined && hit.start_turn !== null && html`<span>turn ${hit.start_turn}${hit.end_turn !== hit.start_turn ? "–" + hit.end_turn : ""}</span>`}
        <span>${day(hit.timestamp)}</span>
        ${hit.copies > 1 && html`<span title=${(hit.duplicates || []).join("\n")}>the same text is stored ${count(hit.copies - 1, "more time")}</span>`}
        <details class="why">
          <summary>why</summary>
          <table>
            <tr><th>BM25 (words)</th><td>${score(s.bm25)}</td><td>${s.bm25_rank ? "rank " + s.bm25_rank : "not a word match"}</td></tr>
            <tr><th>vector (meaning)</th><td>${score(s.vector)}</td><td>${s.vector_rank ? "rank " + s.vector_rank : "not a vector candidate"}</td></tr>
            <tr><th>fused</th><td>${score(s.fused)}</td><td>final score ${score(hit.score)}</td></tr>
          </table>
          ${hit.files && hit.files.length > 0 && html`<p>files: ${hit.files.map((f) => html`<code>${f}</code> `)}</p>`}
          <p class="citation">${hit.citation}</p>
        </details>
      </div>
    </li>
  `;
}

// ---- Timeline -----------------------------------------------------------

const SESSION_PAGE = 25;
const TURN_PAGE = 60;

export function TimelineView({ info, params }) {
  const [groups, setGroups] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api("groups").then(setGroups, (e) => setError(e.message));
  }, []);
  // undefined: every project; "": the sessions of no project.
  const group = params.group;
  return html`
    <div class="timeline">
      <aside class="groups">
        <h2>Projects</h2>
        <${Problem} error=${error} />
        ${groups && html`
          <ul data-testid="projects">
            <li class=${group === undefined ? "active" : ""}><a href=${href("timeline")}>all <small>${count(groups.sessions, "session")}</small></a></li>
            ${groups.groups.map(
              (g) => html`<li class=${g.name === group ? "active" : ""}>
                <a href=${href("timeline", { group: g.name })} data-project=${g.name} class=${g.name ? "" : "no-project"}>${projectName(g.name)}</a>
                <small>${count(g.sessions, "session")} · ${count(g.records, "record")} · ${day(g.last)}</small>
              </li>`,
            )}
          </ul>`}
        <${SessionList} group=${group} selected=${params.session} />
      </aside>
      <section class="session-pane">
        ${params.session
          ? html`<${Session} info=${info} session=${params.session} group=${group} from=${params.from} to=${params.to} message=${params.message} />`
          : groups && groups.sessions === 0
            ? html`<${EmptyStore} what="No sessions yet." />`
            : html`<p class="hint">Pick a session on the left: its summaries and raw turns show here.</p>`}
      </section>
    </div>
  `;
}

/// The sessions of a group, newest first, a page at a time ("more" loads the next).
function SessionList({ group, selected }) {
  const [pages, setPages] = useState({ sessions: [], total: null });
  const [error, setError] = useState(null);
  const load = (offset) =>
    api("sessions", { group, offset, limit: SESSION_PAGE }).then(
      (page) =>
        setPages((old) => ({
          sessions: offset ? old.sessions.concat(page.sessions) : page.sessions,
          total: page.total,
          group: page.group,
        })),
      (e) => setError(e.message),
    );
  useEffect(() => {
    setPages({ sessions: [], total: null });
    load(0);
  }, [group]);
  useEffect(() => {
    if (pages.total !== null) performance.mark("kdb:sessions-drawn");
  }, [pages]);
  let lastDay = null;
  return html`
    <h2>Sessions ${pages.total !== null && html`<small>${pages.total}</small>`}</h2>
    <${Problem} error=${error} />
    <ul class="sessions" data-testid="sessions" data-group=${pages.group ?? "*"} data-total=${pages.total ?? ""}>
      ${pages.sessions.map((s) => {
        const d = day(s.last);
        const heading = d !== lastDay ? html`<li class="day">${d}</li>` : null;
        lastDay = d;
        return html`${heading}<li class=${s.session_id === selected ? "active" : ""}>
          <a href=${href("timeline", { group, session: s.session_id })} data-session=${s.session_id} title=${s.session_id}
            class="session-title">${s.title || short(s.session_id)}</a>
          <small>${s.title ? short(s.session_id) + " · " : ""}${group === undefined ? projectName(s.group) + " · " : ""}${count(s.records, "record")}${s.by_kind.segment ? ` · ${count(s.by_kind.segment, "segment")}` : ""}${s.by_kind.task ? ` · ${count(s.by_kind.task, "task")}` : ""} · ${when(s.last).slice(11)}</small>
        </li>`;
      })}
    </ul>
    ${pages.total !== null && pages.sessions.length < pages.total &&
      html`<button class="more" onClick=${() => load(pages.sessions.length)}>more sessions (${pages.total - pages.sessions.length} left)</button>`}
  `;
}

function Session({ info, session, group, from, to, message }) {
  const [detail, setDetail] = useState(null);
  const [error, setError] = useState(null);
  const [deleted, setDeleted] = useState(null);
  useEffect(() => {
    setDetail(null);
    setDeleted(null);
    api("session", { id: session }).then(setDetail, (e) => setError(e.message));
  }, [session]);
  if (deleted) return html`<p class="done" data-testid="deleted">Forgot ${count(deleted.forgotten, "record")} of session ${deleted.session || session}.</p>`;
  return html`
    <div class="session-head">
      <h2>${detail && detail.title ? html`<span data-testid="session-title">${detail.title}</span>` : "Session"} <code title=${session}>${short(session)}</code></h2>
      <${ForgetButton} info=${info} testid="delete-session" label="forget session…" what=${`every record of session ${session}`}
        body=${{ session }} done=${setDeleted} setError=${setError} />
    </div>
    <${Problem} error=${error} />
    ${detail && html`<${Summaries} detail=${detail} session=${session} group=${group} />`}
    <${Turns} key=${session + ":" + (from || 1) + ":" + (to || "") + ":" + (message || "")} session=${session} group=${group} from=${from} to=${to} message=${message} />
  `;
}

function Summaries({ detail, session, group }) {
  if (!detail.summaries.length)
    return html`<p class="hint">No segment or task summaries stored for this session (the Claude Code hooks write them; \`ingest\` stores messages only).</p>`;
  return html`
    <h3>Summaries <small>${detail.summaries_total}${detail.summaries_cut ? " (first " + detail.summaries.length + " shown)" : ""}</small></h3>
    <ol class="summaries" data-testid="summaries">
      ${detail.summaries.map(
        (s) => html`<li>
          <div class="hit-head">
            <${Kind} kind=${s.kind} />
            <span class="title"><${RecordLink} id=${s.id}>${s.title || s.id}<//></span>
            ${s.start_turn !== null &&
              html`<a class="turns-link" data-testid="raw-turns" href=${href("timeline", { group, session, from: s.start_turn, to: s.end_turn })}
                >turns ${s.start_turn}–${s.end_turn} →</a>`}
            ${s.hook_summary && html`<span class="badge">rule-based</span>`}
          </div>
          ${s.content && html`<p class="content">${s.content.length > 600 ? s.content.slice(0, 600) + "…" : s.content}</p>`}
          ${s.decisions.length > 0 && html`<p><b>decisions</b> ${s.decisions.join(" · ")}</p>`}
          ${s.files.length > 0 && html`<p><b>files</b> ${s.files.map((f) => html`<code>${f}</code> `)}</p>`}
          ${outcome(s.outcome) && html`<p><b>outcome</b> ${outcome(s.outcome)}</p>`}
        </li>`,
      )}
    </ol>
    ${detail.queue && html`<${QueueLine} queue=${detail.queue} />`}
  `;
}

/// A task's key outcomes, or whether a segment's task was completed.
function outcome(value) {
  if (Array.isArray(value)) return value.join(" · ");
  if (value === true) return "task completed";
  if (value === false) return "task not completed";
  return value ? String(value) : "";
}

function QueueLine({ queue }) {
  return html`<p class="queue">Compression queue: ${queue.pending.length} pending, ${queue.compressed.length} compressed
    (last check at turn ${queue.last_check_turn}).</p>`;
}

/// A session's raw messages by turn, a page at a time; tool calls folded.
function Turns({ session, group, from, to, message }) {
  const [page, setPage] = useState({ messages: [], next: null, meta: null });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const load = (start, first) => {
    setBusy(true);
    api("turns", { session, from: start, to, limit: TURN_PAGE, message: first ? message : undefined })
      .then(
        (t) =>
          setPage((old) => ({
            messages: first ? t.messages : old.messages.concat(t.messages),
            next: t.nextFrom ?? null,
            meta: t,
          })),
        (e) => setError(e.message),
      )
      .finally(() => setBusy(false));
  };
  useEffect(() => load(from || 1, true), []);
  const meta = page.meta;
  let turn = null;
  const shownFrom = message && meta ? meta.from : from;
  return html`
    <h3 id="turns">Raw turns ${shownFrom ? html`<small>turns ${shownFrom}${to ? "–" + to : " on"}</small>` : ""}
      ${(shownFrom || to) && html` <a href=${href("timeline", { group, session })} class="small all-turns">(show every turn)</a>`}</h3>
    <${Problem} error=${error} />
    ${meta && html`<p class="hint">${meta.clock === "assistant"
      ? `Turns count the assistant's responses (the hooks' clock); ${meta.turns} so far. Read from the ${meta.source}${meta.transcript ? " (" + meta.transcript + ")" : ""}.`
      : meta.note}</p>`}
    <div class="turns" data-testid="turns">
      ${page.messages.map((m) => {
        const heading = m.turn !== turn ? html`<h4 class="turn">turn ${m.turn}</h4>` : null;
        turn = m.turn;
        return html`${heading}<${Message} m=${m} />`;
      })}
    </div>
    ${page.next !== null && html`<button class="more" disabled=${busy} onClick=${() => load(page.next)}>more turns (from ${page.next})</button>`}
  `;
}

function Message({ m }) {
  const tool = /^\[tool_(use|result)/.test(m.text);
  const head = html`<span class=${"role role-" + m.role}>${m.role}</span>
    ${m.id && html`<${RecordLink} id=${m.id}>line ${m.line}<//>`} <small>${when(m.timestamp)}</small>`;
  if (tool) {
    const label = m.text.startsWith("[tool_use") ? "tool call" : m.text.startsWith("[tool_result error") ? "tool error" : "tool output";
    return html`<details class="message tool">
      <summary>${head} <span class="tool-name">${label}${m.tools && m.tools.length ? ": " + m.tools.join(", ") : ""}</span>
        <span class="preview">${m.text.slice(0, 120)}</span></summary>
      <pre>${m.text}</pre>
    </details>`;
  }
  return html`<div class="message"><div class="message-head">${head}</div><pre>${m.text}</pre></div>`;
}

// ---- Record -------------------------------------------------------------

/// The access log's reads of a record: how many, and the latest few.
function readsLine(reads) {
  if (!reads.length) return "none (every read is folded into the count)";
  const latest = reads.slice(-5).map(when).join(", ");
  return `${reads.length} in the access log${reads.length > 5 ? "; the latest: " : ": "}${latest}`;
}

export function RecordView({ info, params }) {
  const [record, setRecord] = useState(null);
  const [error, setError] = useState(null);
  const [deleted, setDeleted] = useState(null);
  useEffect(() => {
    setRecord(null);
    setError(null);
    setDeleted(null);
    api("record", { id: params.id }).then(setRecord, (e) => setError(e.message));
  }, [params.id]);
  if (!params.id) return html`<p class="hint">Open a record from a search hit or a session.</p>`;
  if (deleted) return html`<p class="done" data-testid="deleted">Forgot record ${params.id}.</p>`;
  if (error) return html`<${Problem} error=${error} />`;
  if (!record) return html`<p class="loading">Loading…</p>`;
  const provenance = record.provenance;
  return html`
    <div class="record" data-testid="record">
      <div class="session-head">
        <h2><${Kind} kind=${record.kind} /> <code>${record.id}</code></h2>
        <${ForgetButton} info=${info} testid="delete-record" label="forget record…" what=${`record ${record.id}`}
          body=${{ ids: [record.id] }} done=${setDeleted} setError=${setError} />
      </div>
      <table class="facts">
        <tr><th>citation</th><td>${record.citation}</td></tr>
        <tr><th>project</th><td data-testid="project">${projectName(record.project)}</td></tr>
        <tr><th>origin</th><td data-testid="origin">${record.origin === "local" ? "local (written on this machine)" : `${record.origin} (pulled by sync)`}</td></tr>
        <tr><th>namespace</th><td>${record.namespace}</td></tr>
        <tr><th>tier</th><td>${record.tier}${record.archived ? ` (archived ${when(record.archived.archived_at)}${record.archived.dropped.length ? "; pruning dropped " + record.archived.dropped.join(", ") : ""})` : ""}</td></tr>
        <tr><th>vector</th><td data-testid="vector-state">${record.vector}</td></tr>
        <tr><th>access count</th><td data-testid="access-count">${record.access.count}${record.access.last_accessed ? ` · last read ${when(record.access.last_accessed)}` : " · never read"}</td></tr>
        <tr><th>reads not yet folded</th><td>${readsLine(record.access.reads_not_folded)}</td></tr>
        ${record.session_id && html`<tr><th>session</th><td><${SessionLink} session=${record.session_id} group=${record.project}
          turn=${record.start_turn} message=${record.kind === "message" ? record.id : undefined}>${record.session_id}<//>
          ${record.start_turn !== null ? ` · turn ${record.start_turn}${record.end_turn !== record.start_turn ? "–" + record.end_turn : ""}` : ""}</td></tr>`}
        <tr><th>came from</th><td data-testid="provenance">${provenance
          ? provenance.path
            ? html`<code>${provenance.path}</code> line ${provenance.line} (${provenance.format || "transcript"}, via ${provenance.via || "?"})`
            : html`<code>${JSON.stringify(provenance)}</code>`
          : "not recorded (added as a record, not read from a transcript)"}</td></tr>
      </table>
      <h3>JSON</h3>
      <pre class="json">${JSON.stringify(record.record, null, 2)}</pre>
    </div>
  `;
}

// ---- Health -------------------------------------------------------------

function Counts({ title, counts, name = (n) => n, testid, wide }) {
  const rows = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);
  return html`<div class=${wide ? "card wide" : "card"} data-testid=${testid}><h3>${title}</h3><table>
    ${rows.map(([n, count]) => html`<tr><th>${name(n)}</th><td>${count.toLocaleString()}</td></tr>`)}
    ${rows.length === 0 && html`<tr><td>none</td></tr>`}
  </table></div>`;
}

export function HealthView() {
  const [health, setHealth] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    api("health").then(setHealth, (e) => setError(e.message));
  }, []);
  if (error) return html`<${Problem} error=${error} />`;
  if (!health) return html`<p class="loading">Loading…</p>`;
  const { stats, upkeep, verify } = health;
  const v = stats.vectors;
  return html`
    <div class="health" data-testid="health">
      ${stats.records === 0 && html`<${EmptyStore} what="An empty store." />`}
      <div class="cards">
        <div class="card"><h3>Records</h3><p class="big">${stats.records.toLocaleString()}</p>
          <p>${day(stats.oldest)} → ${day(stats.newest)}</p><p class="small">format ${stats.format_version} · ${stats.store}</p></div>
        <div class="card"><h3>Tiers</h3><table>
          <tr><th></th><th>records</th><th>on disk</th></tr>
          ${stats.tiers.map((t) => html`<tr><th>${t.tier}</th><td>${t.records.toLocaleString()}</td><td>${bytes(t.bytes_on_disk)}</td></tr>`)}
          <tr><th>text index</th><td></td><td>${bytes(stats.text_index_bytes)}</td></tr>
          <tr><th>vectors</th><td></td><td>${bytes(stats.vector_files_bytes)}</td></tr>
        </table></div>
        <div class="card" data-testid="vectors"><h3>Vectors</h3><table>
          <tr><th>with a vector</th><td>${v.with_vector.toLocaleString()}</td></tr>
          <tr><th>drafts</th><td>${v.drafts.toLocaleString()}</td></tr>
          <tr><th>waiting</th><td>${v.without_vector.toLocaleString()}</td></tr>
          <tr><th>graphs</th><td>${stats.vector_graphs} of ${stats.segments} segments</td></tr>
        </table></div>
        <div class="card" data-testid="upkeep"><h3>Upkeep</h3><table>
          <tr><th>worker</th><td data-testid="upkeep-worker">${upkeep.running
            ? `running (pid ${upkeep.pid}): ${upkeep.step || "starting"}`
            : health.upkeep_off ? "off" : "not running"}</td></tr>
          <tr><th>vectors waiting</th><td>${upkeep.vectors_waiting.toLocaleString()}</td></tr>
          <tr><th>embedded</th><td>${upkeep.embedded.toLocaleString()}</td></tr>
          ${upkeep.last_run && html`<tr><th>last run</th><td>${when(upkeep.last_run.finished_at)}: ${upkeep.last_run.embedded} embedded,
            ${upkeep.last_run.archived} archived, ${upkeep.last_run.pruned} pruned (${upkeep.last_run.seconds.toFixed(1)} s)</td></tr>`}
          ${upkeep.last_error && html`<tr><th>last error</th><td class="error">${when(upkeep.last_error.at)}: ${upkeep.last_error.message}</td></tr>`}
          ${upkeep.model_unavailable && html`<tr><th>model</th><td class="error">${upkeep.model_unavailable}</td></tr>`}
          <tr><th>access log</th><td>${bytes(health.access_log_bytes)} not folded</td></tr>
        </table>
        ${health.upkeep_off && html`<p class="small" data-testid="upkeep-off">Off: ${health.upkeep_off}; \`knowledge-db upkeep\` runs it now.</p>`}</div>
        <div class="card" data-testid="verify"><h3>Last verify</h3>
          ${verify === null
            ? html`<p>never run on this store (<code>knowledge-db verify</code>)</p>`
            : verify.error
              ? html`<p class="error">${verify.error}</p>`
              : html`<p class=${verify.ok ? "ok" : "error"}>${verify.ok ? "all checks passed" : "problems found"} · ${when(verify.at)} · ${verify.records.toLocaleString()} records</p>
                <table>${verify.checks.map((c) => html`<tr><th>${c.name}</th><td class=${c.ok ? "ok" : "error"}>${c.ok ? "ok" : c.detail}</td></tr>`)}</table>`}
        </div>
        <${Counts} title="By kind" counts=${stats.by_kind} />
        <${Counts} title="By origin" counts=${stats.by_origin} />
        <${Counts} title="By namespace" counts=${stats.by_namespace} />
        <${Counts} title="By project" counts=${stats.by_project} name=${projectName} testid="by-project" wide=${true} />
      </div>
      <h3>Hook log ${health.hook_log.length > 0 && html`<small>last ${count(health.hook_log.length, "line")} of hooks.log</small>`}</h3>
      ${health.hook_log.length === 0
        ? html`<p class="hint">hooks.log is empty: no hook reported a problem.</p>`
        : html`<pre class="log" data-testid="hook-log">${health.hook_log.join("\n")}</pre>`}
      <h3>Compression queues <small>${count(health.queue_files, "session")}${health.queues_shown < health.queue_files ? `, ${health.queues_shown} most recent shown` : ""}</small></h3>
      ${health.queues.length === 0
        ? html`<p class="hint">No session has a compression queue (the Claude Code hooks keep them).</p>`
        : html`<table class="queues" data-testid="queues">
            <tr><th>session</th><th>pending</th><th>compressed</th><th>tokens before → after</th><th>last check</th></tr>
            ${health.queues.map(
              (q) => html`<tr>
                <td><${SessionLink} session=${q.session_id}>${short(q.session_id)}<//></td>
                <td title=${q.pending.map((p) => p.topic).join("\n")}>${q.pending.length}</td>
                <td>${q.compressed}</td>
                <td>${q.compressed ? `${q.original_tokens.toLocaleString()} → ${q.compressed_tokens.toLocaleString()}` : "—"}</td>
                <td>turn ${q.last_check_turn}</td>
              </tr>`,
            )}
          </table>`}
    </div>
  `;
}
