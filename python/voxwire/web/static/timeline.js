// The timeline of one session, drawn as SVG from its records (voxwire/timeline/observer.py says
// what each kind means). Used live by the page and inlined into the static report.

const SVG = "http://www.w3.org/2000/svg";
const LABEL_W = 150;
const LANES = ["User speech (VAD)", "Assistant audio", "Audio arriving", "Tools", "Events", "Agent state"];
const LANE_H = 34;
const STATE_COLOURS = {
  initializing: "#bbb", idle: "#ddd", listening: "#9ecae1", thinking: "#fdae6b", speaking: "#74c476",
};

function itemOf(model, record) {
  const key = `${record.item_id}/${record.content_index ?? 0}`;
  if (!model.items.has(key)) {
    model.items.set(key, {
      key, id: record.item_id, arrived: record.t, done: null, received: null, firstHeard: null,
      heard: 0, cut: null, cutAt: null, truncated: null, text: "", deleted: false,
    });
  }
  return model.items.get(key);
}

function speechFrom(records) {
  const fromVad = records.some((r) => r.kind === "speech_started");
  const speech = [];
  let open = null;
  for (const r of records) {
    const starts = fromVad ? r.kind === "speech_started" : r.kind === "user_state" && r.state === "speaking";
    const stops = fromVad ? r.kind === "speech_stopped" : r.kind === "user_state" && r.state !== "speaking";
    if (starts && open === null) {
      open = { start: r.t, end: null, fromMs: r.audio_ms ?? null, toMs: null };
      speech.push(open);
    } else if (stops && open !== null) {
      open.end = r.t;
      open.toMs = r.audio_ms ?? null;
      open = null;
    }
  }
  return speech;
}

const ON_RECORD = {
  audio_first: (m, r) => itemOf(m, r),
  audio_done: (m, r) => { const it = itemOf(m, r); it.done = r.t; it.received = r.received_ms; },
  heard: (m, r) => {
    const it = itemOf(m, r);
    // The first report of an item says how much was heard by then: its first sample was heard
    // that long before.
    if (it.firstHeard === null) it.firstHeard = Math.max(it.arrived, r.t - r.heard_ms / 1000);
    it.heard = Math.max(it.heard, r.heard_ms);
  },
  cut: (m, r) => {
    const it = itemOf(m, r);
    // audio_end_ms null: nothing of it was heard, the session deleted it.
    if (r.audio_end_ms === null) it.deleted = true;
    else { it.cut = r.audio_end_ms; it.cutAt = r.t; }
  },
  truncated: (m, r) => { itemOf(m, r).truncated = r.audio_end_ms; },
  transcript: (m, r) => {
    m.transcripts.push(r);
    if (r.role === "assistant" && m.items.has(`${r.item_id}/0`)) m.items.get(`${r.item_id}/0`).text = r.text;
  },
  tool_start: (m, r) => m.tools.set(r.call_id, { name: r.name, start: r.t, end: null, args: r.arguments, output: "" }),
  tool_end: (m, r) => {
    const tool = m.tools.get(r.call_id) || { name: r.name, start: r.t, args: "" };
    Object.assign(tool, { end: r.t, output: r.output, error: r.error });
    m.tools.set(r.call_id, tool);
  },
  handoff: (m, r) => m.marks.push({ t: r.t, shape: "handoff", text: `handoff ${r.from_agent} → ${r.to_agent}` }),
  guardrail: (m, r) => m.marks.push({ t: r.t, shape: "guardrail", text: `guardrail tripped: ${r.guardrails.join(", ")}` }),
  error: (m, r) => m.marks.push({ t: r.t, shape: "error", text: `error (${r.source}): ${r.message}` }),
  close: (m, r) => m.marks.push({ t: r.t, shape: "close", text: `closed: ${r.reason}` }),
  user_text: (m, r) => { m.marks.push({ t: r.t, shape: "text", text: `typed: ${r.text}` }); m.transcripts.push({ ...r, role: "user" }); },
  agent_state: (m, r) => m.states.push({ t: r.t, state: r.state }),
};

export function buildModel(records, now = null) {
  const model = { end: 0, items: new Map(), tools: new Map(), marks: [], transcripts: [], states: [], speech: [] };
  for (const r of records) {
    model.end = Math.max(model.end, r.t);
    const handle = ON_RECORD[r.kind];
    if (handle) handle(model, r);
  }
  if (now !== null) model.end = Math.max(model.end, now);
  for (const it of model.items.values()) {
    const playedTo = (it.firstHeard ?? it.arrived) + Math.max(it.received ?? 0, it.heard) / 1000;
    model.end = Math.max(model.end, it.cut === null ? playedTo : it.cutAt);
  }
  model.speech = speechFrom(records);
  model.turns = turnsOf(model);
  return model;
}

function turnsOf(model) {
  // A turn: the user's speech ends -> the first audio of the next assistant item -> its first
  // sample heard.
  const items = [...model.items.values()].sort((a, b) => a.arrived - b.arrived);
  const turns = [];
  model.speech.forEach((s, n) => {
    if (s.end === null) return;
    const next = model.speech[n + 1];
    const item = items.find((it) => it.arrived >= s.end && (!next || it.arrived < next.start));
    if (!item) return;
    turns.push({
      n: turns.length + 1, speechEnd: s.end,
      toFirstAudioMs: (item.arrived - s.end) * 1000,
      toFirstPlayedMs: item.firstHeard === null ? null : (item.firstHeard - item.arrived) * 1000,
    });
  });
  return turns;
}

function el(parent, name, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  parent.appendChild(node);
  return node;
}

function titled(node, text) { el(node, "title", {}, text); return node; }

function axis(svg, x, width, top, bottom, end) {
  const step = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300].find((s) => end / s <= 12) || 600;
  for (let s = 0; s <= end + 1e-9; s += step) {
    el(svg, "line", { x1: x(s), x2: x(s), y1: top, y2: bottom, class: "grid" });
    el(svg, "text", { x: x(s), y: top - 4, class: "tick" }, `${+s.toFixed(1)} s`);
  }
}

function drawSpeech(g, model, x, y) {
  for (const s of model.speech) {
    const end = s.end ?? model.end;
    const span = s.fromMs === null ? "" : ` (input ${s.fromMs}–${s.toMs ?? "…"} ms)`;
    titled(el(g, "rect", { x: x(s.start), y: y + 6, width: Math.max(1, x(end) - x(s.start)), height: LANE_H - 12, class: "speech" }),
      `user speech ${s.start.toFixed(2)}–${end.toFixed(2)} s${span}`);
  }
}

function drawItems(g, model, x, y, scale, width) {
  // Each item from its first heard sample on: heard (solid), received (thin bar below; the part
  // after a cut, received and never heard, in red, up to where the next item starts), and the
  // cut itself.
  const drawn = [...model.items.values()].filter((it) => !(it.firstHeard === null && (it.cut !== null || it.deleted)));
  const starts = drawn.map((it) => x(it.firstHeard ?? it.arrived)).sort((a, b) => a - b);
  const labels = [];
  for (const it of drawn) {
    const start = it.firstHeard ?? it.arrived;
    const received = Math.max(it.received ?? 0, it.heard);
    const heard = it.cut ?? it.heard;
    const title = `${it.id}: received ${received} ms, heard ${heard} ms` + (it.cut === null ? "" : `, cut at ${it.cut} ms`) +
      (it.truncated === null ? "" : " (server truncated)") + (it.text ? `\n“${it.text}”` : "");
    const x0 = x(start);
    if (heard > 0) titled(el(g, "rect", { x: x0, y: y + 4, width: (heard / 1000) * scale, height: LANE_H - 16, class: "heard" }), title);
    const shown = it.cut === null ? received : Math.min(received, it.cut); // the rest: "dropped"
    titled(el(g, "rect", { x: x0, y: y + LANE_H - 10, width: Math.max(1, (shown / 1000) * scale), height: 6, class: "received" }), title);
    if (it.cut !== null) {
      const cx = x0 + (it.cut / 1000) * scale;
      const room = Math.min(width, ...starts.filter((s) => s > cx + 1)) - cx - 2;
      const dropped = `${received - it.cut} ms received and never heard`;
      titled(el(g, "rect", { x: cx, y: y + LANE_H - 10, width: Math.max(0, Math.min(room, ((received - it.cut) / 1000) * scale)), height: 6, class: "dropped" }), dropped);
      el(g, "line", { x1: cx, x2: cx, y1: y + 1, y2: y + LANE_H - 1, class: "cut" });
      labels.push({ x: cx + 3, text: `cut ${it.cut} ms${it.truncated === null ? "" : " ✓"}` });
    }
  }
  drawCutLabels(g, labels, y);
}

// Cut labels, each { x, width } (its wanted left edge and its width), placed left to right: on
// the first row where it clears the label before it by `gap`, else on the row that frees first,
// moved right just past that label. Returns [{ x, row }] in the input order.
export function layoutLabels(labels, rows = 2, gap = 4) {
  const ends = new Array(rows).fill(-Infinity);
  const placed = new Array(labels.length);
  const order = labels.map((_, i) => i).sort((a, b) => labels[a].x - labels[b].x);
  for (const i of order) {
    let row = ends.findIndex((end) => end + gap <= labels[i].x);
    let at = labels[i].x;
    if (row < 0) {
      row = ends.indexOf(Math.min(...ends));
      at = ends[row] + gap;
    }
    ends[row] = at + labels[i].width;
    placed[i] = { x: at, row };
  }
  return placed;
}

function drawCutLabels(g, labels, y) {
  // Drawn first, measured (11 px bold: ~7 px a character where the text is not laid out yet),
  // then moved to their places: two cuts close together get two rows, a third goes right.
  const nodes = labels.map((l) => el(g, "text", { x: l.x, y: y + 13, class: "cut-label" }, l.text));
  const widths = nodes.map((node, n) => node.getComputedTextLength() || labels[n].text.length * 7);
  layoutLabels(labels.map((l, n) => ({ x: l.x, width: widths[n] }))).forEach((place, n) => {
    nodes[n].setAttribute("x", place.x);
    nodes[n].setAttribute("y", y + 13 + place.row * 13);
  });
}

function drawArrivals(g, model, x, y) {
  for (const it of model.items.values()) {
    const end = it.done ?? model.end;
    const never = it.deleted && it.heard === 0;
    titled(el(g, "rect", { x: x(it.arrived), y: y + 12, width: Math.max(2, x(end) - x(it.arrived)), height: LANE_H - 24, class: never ? "arrival dropped" : "arrival" }),
      `${it.id}: audio arrived ${it.arrived.toFixed(2)}–${end.toFixed(2)} s` + (never ? " (never heard: deleted)" : ""));
    if (never) el(g, "text", { x: x(it.arrived) + 3, y: y + 10, class: "label" }, "never heard");
  }
}

function drawTools(g, model, x, y) {
  for (const tool of model.tools.values()) {
    const end = tool.end ?? model.end;
    const ms = Math.round((end - tool.start) * 1000);
    titled(el(g, "rect", { x: x(tool.start), y: y + 6, width: Math.max(3, x(end) - x(tool.start)), height: LANE_H - 12, class: tool.error ? "tool error" : "tool" }),
      `${tool.name}(${tool.args}) → ${tool.error || tool.output} (${ms} ms)`);
    el(g, "text", { x: x(tool.start) + 4, y: y + LANE_H / 2 + 4, class: "label" }, `${tool.name} ${ms} ms`);
  }
}

function drawMarks(g, model, x, y) {
  model.marks.forEach((mark, n) => {
    const cx = x(mark.t);
    const cy = y + LANE_H / 2;
    const shape = mark.shape === "handoff"
      ? el(g, "path", { d: `M${cx} ${cy - 8}L${cx + 8} ${cy}L${cx} ${cy + 8}L${cx - 8} ${cy}Z`, class: "mark handoff" })
      : el(g, "circle", { cx, cy, r: 6, class: `mark ${mark.shape}` });
    titled(shape, mark.text);
    el(g, "text", { x: cx + 10, y: cy + (n % 2 ? 12 : -2), class: "label" }, mark.text.slice(0, 48));
  });
}

function drawStates(g, model, x, y) {
  model.states.forEach((s, n) => {
    const end = n + 1 < model.states.length ? model.states[n + 1].t : model.end;
    titled(el(g, "rect", { x: x(s.t), y: y + 10, width: Math.max(1, x(end) - x(s.t)), height: LANE_H - 20, fill: STATE_COLOURS[s.state] || "#ccc" }),
      `${s.state} ${s.t.toFixed(2)}–${end.toFixed(2)} s`);
  });
}

const DRAW = [drawSpeech, drawItems, drawArrivals, drawTools, drawMarks, drawStates];

function drawLatency(container, turns, width) {
  const h = 40 + turns.length * 26;
  const svg = el(container, "svg", { width, height: h, class: "latency", role: "img" });
  el(svg, "text", { x: 0, y: 14, class: "lane-label" }, "Per-turn latency: speech end → first audio → first played");
  const most = Math.max(500, ...turns.map((t) => t.toFirstAudioMs + (t.toFirstPlayedMs ?? 0)));
  const scale = (width - LABEL_W - 160) / most;
  turns.forEach((t, n) => {
    const y = 26 + n * 26;
    el(svg, "text", { x: 0, y: y + 14, class: "label" }, `turn ${t.n} (${t.speechEnd.toFixed(2)} s)`);
    const a = t.toFirstAudioMs * scale;
    titled(el(svg, "rect", { x: LABEL_W, y, width: Math.max(1, a), height: 18, class: "lat-audio" }), `speech end → first audio ${Math.round(t.toFirstAudioMs)} ms`);
    const b = (t.toFirstPlayedMs ?? 0) * scale;
    titled(el(svg, "rect", { x: LABEL_W + a, y, width: Math.max(1, b), height: 18, class: "lat-played" }), `first audio → first played ${t.toFirstPlayedMs === null ? "–" : Math.round(t.toFirstPlayedMs)} ms`);
    const played = t.toFirstPlayedMs === null ? "not played" : `${Math.round(t.toFirstPlayedMs)} ms`;
    el(svg, "text", { x: LABEL_W + a + b + 6, y: y + 14, class: "label" }, `${Math.round(t.toFirstAudioMs)} ms + ${played}`);
  });
}

// `text` split where the listener stopped hearing it: at the space nearest the heard share of
// the audio received (an estimate: the transcript taken to span that audio at an even rate; the
// cut itself is exact). The same rule as the console's (voxwire/console.py, split_heard).
export function splitHeard(text, heardMs, receivedMs) {
  if (receivedMs <= 0 || heardMs <= 0) return ["", text.trim()];
  if (heardMs >= receivedMs) return [text.trim(), ""];
  const target = Math.round((text.length * heardMs) / receivedMs);
  let at = text.length;
  for (let i = 0; i < text.length; i++) {
    if (/\s/.test(text[i]) && (at === text.length || Math.abs(i - target) < Math.abs(at - target))) at = i;
  }
  return [text.slice(0, at).trim(), text.slice(at).trim()];
}

function unheardOf(model, r) {
  // [heard, not heard] of an assistant transcript whose item was cut (or deleted unheard); null
  // when all of it was played.
  const it = r.role === "assistant" ? model.items.get(`${r.item_id}/0`) : undefined;
  if (!it || !(it.deleted || it.cut !== null)) return null;
  if (it.cut === null) return it.heard === 0 ? ["", r.text.trim()] : null;
  return splitHeard(r.text, it.cut, Math.max(it.received ?? 0, it.heard));
}

function drawTranscripts(container, model) {
  const list = document.createElement("ol");
  list.className = "transcripts";
  for (const r of model.transcripts) {
    const li = document.createElement("li");
    li.className = r.role;
    const parts = unheardOf(model, r);
    li.textContent = `${r.t.toFixed(2)} s  ${r.role}: ` + (parts === null ? r.text : `"${parts[0]}"`);
    if (parts !== null && parts[1]) {
      const rest = document.createElement("span");
      rest.className = "not-heard";
      rest.title = "received but never played: the listener cut it off (the word is estimated)";
      rest.textContent = `  [not heard: "${parts[1]}"]`;
      li.appendChild(rest);
    }
    list.appendChild(li);
  }
  container.appendChild(list);
}

export function renderTimeline(container, records, options = {}) {
  const model = buildModel(records, options.now ?? null);
  const width = Math.max(600, options.width || container.clientWidth || 1100);
  const end = Math.max(5, model.end * 1.02);
  const scale = (width - LABEL_W - 10) / end;
  const x = (t) => LABEL_W + t * scale;
  container.replaceChildren();
  const top = 22;
  const svg = el(container, "svg", { width, height: top + LANES.length * LANE_H + 4, class: "timeline", role: "img" });
  axis(svg, x, width, top, top + LANES.length * LANE_H, end);
  LANES.forEach((name, n) => {
    const y = top + n * LANE_H;
    el(svg, "rect", { x: 0, y, width, height: LANE_H, class: n % 2 ? "lane odd" : "lane" });
    el(svg, "text", { x: 4, y: y + LANE_H / 2 + 4, class: "lane-label" }, name);
    DRAW[n](el(svg, "g", { class: `lane-${n}` }), model, x, y, scale, width);
  });
  drawLatency(container, model.turns, width);
  drawTranscripts(container, model);
  return model;
}

export { LANES };
