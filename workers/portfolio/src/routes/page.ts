import { FAVICON_LINK } from "@edge-platform/shared/http/favicon";
import { Hono } from "hono";
import type { AppEnv } from "../app-env.ts";

/**
 * GET /: a small chat page that streams answers from POST /v1/chat.
 * In development mode the page carries the (fictional, committed) dev token
 * so it works out of the box; anywhere else it carries no secret and asks
 * the visitor for a token, kept only in the tab's sessionStorage.
 */

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** JSON that is safe inside a <script> element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026");
}

const SCRIPT = String.raw`
const config = JSON.parse(document.getElementById("config").textContent);
const form = document.getElementById("ask");
const input = document.getElementById("question");
const button = document.getElementById("send");
const log = document.getElementById("log");
const tokenField = document.getElementById("token");
const sessionKey = "portfolio-session-id";
let sessionId = sessionStorage.getItem(sessionKey);
if (!sessionId) { sessionId = crypto.randomUUID(); sessionStorage.setItem(sessionKey, sessionId); }
if (tokenField) tokenField.value = sessionStorage.getItem("portfolio-token") || "";

function token() {
  if (config.devToken) return config.devToken;
  const value = tokenField.value.trim();
  sessionStorage.setItem("portfolio-token", value);
  return value;
}

function entry(kind, text) {
  const item = document.createElement("article");
  item.className = kind;
  const body = document.createElement("p");
  body.textContent = text;
  item.append(body);
  log.append(item);
  item.scrollIntoView({ block: "end" });
  return { item, body };
}

async function ask(question) {
  entry("question", question);
  const { item, body } = entry("answer", "");
  item.setAttribute("aria-busy", "true");
  const response = await fetch("/v1/chat", {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + token() },
    body: JSON.stringify({ question, session_id: sessionId, stream: true }),
  });
  if (!response.ok || !response.body) {
    let message = "Request failed (" + response.status + ")";
    try { message = (await response.json()).error.message; } catch {}
    body.textContent = message;
    item.classList.add("error");
    item.removeAttribute("aria-busy");
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    const events = buffered.split("\n\n");
    buffered = events.pop();
    for (const raw of events) {
      if (!raw.startsWith("data: ")) continue;
      const event = JSON.parse(raw.slice(6));
      if (event.type === "token") body.textContent += event.content;
      if (event.type === "done") showDone(item, event);
    }
  }
  item.removeAttribute("aria-busy");
}

function showDone(item, event) {
  const meta = document.createElement("footer");
  // Nothing in the portfolio supports a declined answer: no sources line, marked as such.
  if (event.sources.length === 0) item.classList.add("unsupported");
  if (event.sources.length > 0) {
    const label = document.createElement("span");
    label.textContent = "Sources: ";
    meta.append(label);
    const list = document.createElement("ul");
    list.className = "sources";
    for (const source of event.sources) {
      const li = document.createElement("li");
      li.textContent = source.title;
      li.dataset.type = source.type;
      list.append(li);
    }
    meta.append(list);
  }
  const timing = document.createElement("small");
  timing.className = "timing";
  timing.textContent = (event.cached ? "cached · " : "") + event.latency_ms + " ms";
  meta.append(timing);
  item.append(meta);
  item.dataset.done = "true";
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const question = input.value.trim();
  if (question.length < 2) return;
  input.value = "";
  button.disabled = true;
  try { await ask(question); } catch (error) { entry("answer error", String(error)); }
  finally { button.disabled = false; input.focus(); }
});
`;

const STYLE = `
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { max-width: 46rem; margin: 0 auto; padding: 1.5rem; }
h1 { font-size: 1.4rem; margin-bottom: .25rem; }
.note { color: GrayText; margin-top: 0; }
#log { display: flex; flex-direction: column; gap: .75rem; margin: 1.5rem 0; }
article { padding: .75rem 1rem; border-radius: .75rem; }
article p { margin: 0; white-space: pre-wrap; }
.question { align-self: flex-end; background: #2563eb; color: white; }
.answer { background: color-mix(in srgb, CanvasText 8%, Canvas); }
.answer.error { outline: 2px solid #dc2626; }
.answer.unsupported { border-left: 3px solid GrayText; }
.answer[aria-busy="true"] p::after { content: "▍"; animation: blink 1s steps(2) infinite; }
@keyframes blink { 50% { opacity: 0; } }
footer { margin-top: .5rem; font-size: .85rem; color: GrayText; }
.sources { display: inline; padding: 0; } .sources li { display: inline; } .sources li + li::before { content: " · "; }
.timing { display: block; }
form { display: flex; gap: .5rem; } input { flex: 1; padding: .6rem; font: inherit; }
button { padding: .6rem 1rem; font: inherit; }
`;

export function chatPage(options: {
  assistantName: string;
  personName: string;
  devToken: string | null;
}): string {
  const title = escapeHtml(options.assistantName);
  const tokenInput = options.devToken
    ? ""
    : `<p><label>API token <input id="token" type="password" autocomplete="off" required></label></p>`;
  const note = options.devToken
    ? `Development mode: answers come from the fictional portfolio of ${escapeHtml(options.personName)}.`
    : `Ask about ${escapeHtml(options.personName)}'s projects, experience and skills.`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${FAVICON_LINK}
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${title}</h1>
<p class="note">${note}</p>
${tokenInput}
<section id="log" aria-live="polite"></section>
<form id="ask">
<input id="question" name="question" maxlength="500" placeholder="What projects has ${escapeHtml(options.personName.split(" ")[0] ?? "")} built?" autocomplete="off" required>
<button id="send" type="submit">Ask</button>
</form>
</main>
<script type="application/json" id="config">${scriptJson({ devToken: options.devToken })}</script>
<script>${SCRIPT}</script>
</body>
</html>`;
}

export const pageRoutes = new Hono<AppEnv>().get("/", (c) => {
  const settings = c.get("settings");
  const html = chatPage({
    assistantName: settings.persona.assistantName || "Portfolio assistant",
    personName: settings.persona.personName || "the portfolio owner",
    devToken: settings.devMode && settings.apiToken ? settings.apiToken : null,
  });
  c.header("Cache-Control", "no-store");
  return c.html(html);
});
