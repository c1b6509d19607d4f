// The page: microphone -> the session (over /talk), the session's audio -> the speaker, with
// every "played" report of the playback worklet acknowledged to the session; or, with ?watch,
// the live timeline of a session attached from code (over /watch).
import { renderTimeline } from "./timeline.js";

const $ = (id) => document.getElementById(id);
const state = { records: [], reports: [], clears: [], socket: null, context: null, player: null, muted: false, started: null };
window.voxwire = state; // for tests and the curious

let drawPending = false;
function redraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => {
    drawPending = false;
    const now = state.started === null ? null : (performance.now() - state.started) / 1000;
    renderTimeline($("timeline"), state.records, { width: document.body.clientWidth - 10, now });
  });
}

function onRecord(record) {
  if (state.started === null) state.started = performance.now() - record.t * 1000;
  state.records.push(record);
  if (record.kind === "agent_state") {
    $("state").textContent = record.state;
    $("state").className = `badge ${record.state}`;
  }
  redraw();
}

function send(message) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) state.socket.send(message);
}

function latencyFrames() {
  // Web Audio's own figures: audio rendered now is heard base + output latency later.
  const c = state.context;
  return Math.round(((c.baseLatency || 0) + (c.outputLatency || 0)) * c.sampleRate);
}

function onMessage(event) {
  if (typeof event.data !== "string") {
    state.player.port.postMessage({ type: "chunk", data: event.data }, [event.data]);
    return;
  }
  const message = JSON.parse(event.data);
  if (message.type === "record") onRecord(message.record);
  else if (message.type === "clear") {
    state.player.port.postMessage({ type: "clear" });
    const last = state.reports.length ? state.reports[state.reports.length - 1].position : null;
    state.clears.push({ lastReported: last, at: performance.now(), sent: message.sent, acked: message.acked });
  } else if (message.type === "hello") {
    $("agent").textContent = message.agent;
    $("status").textContent = message.endpoint;
  } else if (message.type === "item_start") {
    (state.itemStarts = state.itemStarts || {})[message.item_id] = message.position;
  }
}

async function start() {
  $("start").disabled = true;
  // The device's own rate: no resampling in the browser (some refuse a microphone at another
  // rate); the Python side resamples the microphone to 24 kHz and the audio to this rate.
  const context = new AudioContext({ latencyHint: "interactive" });
  state.context = context;
  await context.audioWorklet.addModule("/static/capture-worklet.js");
  await context.audioWorklet.addModule("/static/playback-worklet.js");
  const player = new AudioWorkletNode(context, "voxwire-playback", { outputChannelCount: [1] });
  player.connect(context.destination);
  state.player = player;
  player.port.onmessage = (e) => {
    if (e.data.type !== "played") return;
    state.reports.push({ position: e.data.position, frame: e.data.frame });
    if (state.reports.length > 20000) state.reports.splice(0, 10000);
    send(JSON.stringify({ type: "played", position: e.data.position }));
  };
  const tellLatency = () => player.port.postMessage({ type: "latency", frames: latencyFrames() });
  tellLatency();
  setInterval(tellLatency, 1000);
  const stream = await navigator.mediaDevices.getUserMedia({
    audio: { channelCount: 1, echoCancellation: true, noiseSuppression: false, autoGainControl: false },
  });
  const capture = new AudioWorkletNode(context, "voxwire-capture", {
    numberOfInputs: 1, numberOfOutputs: 0,
    processorOptions: { frameSamples: Math.round(context.sampleRate / 50) }, // 20 ms
  });
  context.createMediaStreamSource(stream).connect(capture);
  capture.port.onmessage = (e) => { if (!state.muted) send(e.data); };
  const socket = new WebSocket(`ws://${location.host}/talk`);
  socket.binaryType = "arraybuffer";
  socket.onmessage = onMessage;
  socket.onclose = (e) => { $("status").textContent = `disconnected (${e.code} ${e.reason})`; $("state").textContent = "closed"; };
  socket.onopen = () => {
    socket.send(JSON.stringify({ type: "hello", rate_hz: context.sampleRate }));
    for (const id of ["mute", "interrupt", "text", "send"]) $(id).disabled = false;
  };
  state.socket = socket;
  await context.resume();
}

function sendText() {
  const text = $("text").value.trim();
  if (!text) return;
  send(JSON.stringify({ type: "text", text }));
  $("text").value = "";
}

function watch() {
  $("talk-controls").style.display = "none";
  const socket = new WebSocket(`ws://${location.host}/watch`);
  socket.onmessage = onMessage;
  socket.onclose = () => { $("agent").textContent += " (session ended)"; };
}

window.addEventListener("DOMContentLoaded", () => {
  if (new URLSearchParams(location.search).has("watch")) return watch();
  $("start").onclick = () => start().catch((err) => { $("status").textContent = `could not start: ${err}`; });
  $("mute").onclick = () => {
    state.muted = !state.muted;
    $("mute").textContent = state.muted ? "Unmute" : "Mute";
    send(JSON.stringify({ type: "mute", muted: state.muted }));
  };
  $("interrupt").onclick = () => send(JSON.stringify({ type: "interrupt" }));
  $("send").onclick = sendText;
  $("text").onkeydown = (e) => { if (e.key === "Enter") sendText(); };
  window.addEventListener("resize", redraw);
});
