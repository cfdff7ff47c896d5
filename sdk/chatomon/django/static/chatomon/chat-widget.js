/*
 * <chatomon-chat>: the chatomon chat as a dependency-free web component (open shadow DOM).
 *
 *   <chatomon-chat endpoint="/chat/"></chatomon-chat>
 *   <script src="/static/chatomon/chat-widget.js" defer></script>
 *
 * Attributes: endpoint (the chat routes' base URL, path or full URL), transport
 * ("websocket", default, or "sse"), token (a visitor token from chatomon.django.embed, for
 * another site's pages; observed: set a fresh one on the chatomon-token-expired event),
 * mode ("launcher", default: a button opening a dialog; "inline"), title, greeting,
 * color-scheme ("light", "dark", "auto"), position ("right", "left"), locale (dates),
 * max-length. Style it with the --chatomon-* custom properties.
 *
 * On load it restores the conversation from <endpoint>history/ (messages, tool lines, each
 * confirmation and how it was decided, the open one with its buttons), then follows a turn
 * still running from where the page left it (SSE: stream/resume/ after the last frame id;
 * WebSocket: a resume message), as it does when a stream drops mid-turn. Events follow the
 * chat event contract; unknown fields and types are ignored. Answers are Markdown drawn
 * with DOM nodes from an allow-list: the model's text is never parsed as markup.
 * Previews come parsed by the server (`preview_table`, chatomon.preview): drawn, not read.
 * The pure parts (Markdown, tool lines, previews, errors, URLs, SSE frames) are exported
 * for node's test runner when loaded as a CommonJS module.
 */
(function () {
  "use strict";

  // ---- pure helpers (tested under node) ----

  function socketURL(endpoint, base) {
    const url = new URL(endpoint, base);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return url.href;
  }

  function routeURL(endpoint, base, route) {
    return new URL(endpoint.replace(/\/?$/, "/") + route, base).href;
  }

  // SSE frames of a buffer: [{id, data}], and what is left for the next read.
  function sseFrames(buffer) {
    const frames = [];
    let end;
    buffer = buffer.replace(/\r\n/g, "\n");
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        else if (line.startsWith("id:")) id = line.slice(3).trim();
      }
      if (data.length) frames.push({ id: id, data: data.join("\n") });
    }
    return { frames: frames, rest: buffer };
  }

  // The turn and position of an SSE id ("<turn_id>:<n>"), or null.
  function eventPosition(id) {
    const m = /^(.+):(\d+)$/.exec(id || "");
    return m ? { turn: m[1], seq: Number(m[2]) } : null;
  }

  // Whether the event at `seq` of `turn` is new to a reader that saw `seen` ({turn, seq}),
  // which moves on to it: a resumed stream never shows an event twice.
  function advance(seen, turn, seq) {
    if (seen.turn === turn && seq <= seen.seq) return false;
    seen.turn = turn;
    seen.seq = seq;
    return true;
  }

  function noun(manager, count) {
    const base = String(manager || "record").replace(/Manager$/, "");
    const words = base.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
    if (count === 1) return words;
    return /(s|x|ch|sh)$/.test(words) ? words + "es" : /[^aeiou]y$/.test(words) ? words.slice(0, -1) + "ies" : words + "s";
  }

  // One human line per tool call: "Looked up 3 parts".
  function toolLine(name, args, result) {
    args = args || {};
    const failed = result && result.status === "error";
    const done = result !== undefined;
    let line;
    if (name === "query") {
      const rows = result && Array.isArray(result.data) ? result.data.length : null;
      const total = result && typeof result.total_count === "number" ? result.total_count : rows;
      line = done && total !== null && !failed ? "Looked up " + total + " " + noun(args.manager, total) : "Looking up " + noun(args.manager, 2);
    } else if (name === "aggregate") line = "Counted " + noun(args.manager, 2);
    else if (name === "search_managers") line = "Searched the data" + (args.query ? " for “" + args.query + "”" : "");
    else if (name === "get_manager_schema") line = "Checked what " + noun(args.manager, 2) + " hold";
    else if (name === "find_path") line = "Linked " + noun(args.from_manager, 2) + " to " + noun(args.to_manager, 2);
    else if (name === "mutate") {
      const status = result && result.status;
      const mutation = args.mutation || (result && result.mutation) || "";
      line = status === "executed" ? "Made the change " + mutation : status === "rejected" || status === "timed_out" ? "Did not make the change " + mutation : "Prepared the change " + mutation;
    } else line = (done ? "Used " : "Using ") + name;
    if (failed) line += " (failed)";
    return done || failed ? line : line + "…";
  }

  // A mutation preview as the server read it (chatomon.preview.preview_table, the console's
  // renderer): caption, Field / Before / After rows of text, the rest as JSON text. The
  // widget only draws it; an event without one shows its raw preview as text.
  function previewTable(doc, event) {
    const raw = event.preview === undefined ? event.input : event.preview;
    const table = event.preview_table || { caption: "Change", rows: [], rest: raw == null ? null : JSON.stringify(raw, null, 2) };
    const node = (tag, text, attrs) => {
      const n = doc.createElement(tag);
      for (const k in attrs || {}) n.setAttribute(k, attrs[k]);
      if (text != null) n.append(doc.createTextNode(String(text)));
      return n;
    };
    const grid = node("table");
    const head = node("tr");
    (table.columns || ["Field", "Before", "After"]).forEach((t) => head.append(node("th", t, { scope: "col" })));
    const thead = node("thead");
    const body = node("tbody");
    thead.append(head);
    const rows = table.rows || [];
    rows.forEach((row) => {
      const before = node("td");
      before.append(row.before == null ? node("span", "(new)") : node("del", row.before));
      const after = node("td");
      after.append(node("ins", row.after));
      const tr = node("tr");
      tr.append(node("th", row.field, { scope: "row" }), before, after);
      body.append(tr);
    });
    if (!rows.length) {
      const tr = node("tr");
      tr.append(node("td", "No field-level preview.", { colspan: "3" }));
      body.append(tr);
    }
    grid.append(node("caption", table.caption), thead, body);
    const box = node("div", null, { class: "preview" });
    box.append(grid);
    if (table.rest != null) box.append(node("pre", table.rest));
    return box;
  }

  function minutes(seconds) {
    if (seconds < 90) return Math.max(1, Math.round(seconds)) + " seconds";
    if (seconds < 5400) return Math.round(seconds / 60) + " minutes";
    return Math.round(seconds / 3600) + " hours";
  }

  // Every error code as a sentence for people.
  function errorText(event) {
    const code = event.code;
    if (code === "rate_limited") {
      const wait = Number(event.retry_after_seconds);
      return "You have sent too many messages." + (wait > 0 ? " Try again in " + minutes(wait) + "." : " Try again later.");
    }
    if (code === "chat_error" || code === "provider_failed" || code === "unavailable") return "The assistant is unavailable right now. Try again in a moment.";
    const known = {
      message_too_long: "That message is too long" + (event.max_chars ? " (at most " + event.max_chars + " characters)." : "."),
      confirmation_pending: "Confirm or reject the pending change first.",
      turn_in_progress: "Wait for the current answer to finish.",
      confirmation_unavailable: "This change can no longer be decided: it was decided or expired.",
      permission_denied: "You are not allowed to use this chat.",
      conversation_not_found: "That conversation is gone; a new one starts with your next message.",
      tool_retry_limit: "The assistant could not find an answer. Try rephrasing.",
      turn_limit: "The assistant could not finish this answer. Try a simpler question.",
      mutation_limit: "The assistant tried too many changes at once; nothing more was changed.",
      confirmation_required_transport: "This change needs a confirmation, which this connection cannot ask for.",
      bad_message: "That message could not be sent.",
      request_too_large: "That message is too long.",
    };
    return known[code] || event.message || "Something went wrong.";
  }

  // What a closed socket means: a message, and whether to reconnect.
  function closeMeaning(code) {
    if (code === 4403) return { retry: false, message: "You are not allowed to use this chat." };
    if (code === 4404) return { retry: false, message: "The chat is turned off." };
    if (code === 4401) return { retry: false, message: "Your session ended. Reload the page to chat again." };
    if (code === 1011) return { retry: false, message: "The assistant is unavailable right now." };
    return { retry: true, message: "" };
  }

  function decisionText(card, locale) {
    const status = card.status;
    if (!status || status === "pending") return card.approver === "staff" ? "Waiting for a staff approval." : "Needs your confirmation.";
    const by = card.decided_by ? " by " + card.decided_by : "";
    const label = { approved: "Approved" + by, rejected: "Rejected" + by, expired: "Expired without a decision", cancelled: "Cancelled" }[status] || status;
    const at = card.decided_at ? new Date(card.decided_at) : null;
    const time = at && !isNaN(at) ? " at " + at.toLocaleTimeString(locale || undefined, { hour: "2-digit", minute: "2-digit" }) : "";
    return label + time + ".";
  }

  // ---- Markdown: a small allow-list renderer building DOM nodes (never HTML strings) ----

  function safeHref(href) {
    const trimmed = String(href).trim();
    return /^(https?:|mailto:)/i.test(trimmed) ? trimmed : null;
  }

  function inline(doc, parent, text) {
    // Underscores inside words (unit_cost) are not emphasis.
    const pattern = /(`+)([^`]+?)\1|\*\*([^*]+)\*\*|(?<![\w])__([^_]+)__(?![\w])|\*([^*\s][^*]*)\*|(?<![\w])_([^_\s][^_]*)_(?![\w])|\[([^\]]+)\]\(([^)\s]+)\)/;
    while (text) {
      const match = pattern.exec(text);
      if (!match) {
        parent.append(doc.createTextNode(text));
        return;
      }
      if (match.index) parent.append(doc.createTextNode(text.slice(0, match.index)));
      let node;
      if (match[2] !== undefined) {
        node = doc.createElement("code");
        node.append(doc.createTextNode(match[2]));
      } else if (match[3] !== undefined || match[4] !== undefined) {
        node = doc.createElement("strong");
        inline(doc, node, match[3] || match[4]);
      } else if (match[5] !== undefined || match[6] !== undefined) {
        node = doc.createElement("em");
        inline(doc, node, match[5] || match[6]);
      } else {
        const href = safeHref(match[8]);
        if (href) {
          node = doc.createElement("a");
          node.setAttribute("href", href);
          node.setAttribute("rel", "noopener noreferrer nofollow");
          node.setAttribute("target", "_blank");
        } else node = doc.createElement("span");
        inline(doc, node, match[7]);
      }
      parent.append(node);
      text = text.slice(match.index + match[0].length);
    }
  }

  function renderMarkdown(doc, text) {
    const root = doc.createElement("div");
    root.setAttribute("class", "md");
    const lines = String(text).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let paragraph = [];
    const flush = () => {
      if (!paragraph.length) return;
      const p = doc.createElement("p");
      paragraph.forEach((line, n) => {
        if (n) p.append(doc.createElement("br"));
        inline(doc, p, line);
      });
      root.append(p);
      paragraph = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
      let m;
      if (fence) {
        flush();
        const code = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) code.push(lines[i]);
        i++;
        const pre = doc.createElement("pre");
        const el = doc.createElement("code");
        if (fence[2]) el.setAttribute("data-lang", fence[2]);
        el.append(doc.createTextNode(code.join("\n")));
        pre.append(el);
        root.append(pre);
        continue;
      }
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        flush();
        const h = doc.createElement("h" + Math.min(6, m[1].length + 2));
        inline(doc, h, m[2]);
        root.append(h);
      } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
        flush();
        const ordered = /^\s*\d/.test(line);
        const list = doc.createElement(ordered ? "ol" : "ul");
        while (i < lines.length && (m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i])) && /^\s*\d/.test(lines[i]) === ordered) {
          const li = doc.createElement("li");
          inline(doc, li, m[2]);
          list.append(li);
          i++;
        }
        root.append(list);
        continue;
      } else if ((m = /^>\s?(.*)$/.exec(line))) {
        flush();
        const quote = doc.createElement("blockquote");
        inline(doc, quote, m[1]);
        root.append(quote);
      } else if (!line.trim()) flush();
      else paragraph.push(line);
      i++;
    }
    flush();
    return root;
  }

  const api = { socketURL, routeURL, sseFrames, eventPosition, advance, toolLine, previewTable, errorText, closeMeaning, decisionText, renderMarkdown, safeHref };
  if (typeof module === "object" && module.exports) module.exports = api;
  if (typeof HTMLElement === "undefined" || typeof customElements === "undefined") return;

  // ---- the element ----

  const STYLE = `
:host{all:initial;--chatomon-accent:#2453a6;--chatomon-bg:#fff;--chatomon-fg:#1d2330;--chatomon-muted:#545d6b;--chatomon-border:#c4cad4;--chatomon-bubble:#eef2fa;--chatomon-error:#a4161a;--chatomon-focus:#c77700;font:15px/1.45 system-ui,sans-serif;color:var(--chatomon-fg);color-scheme:light}
:host([color-scheme=dark]){--chatomon-accent:#8fb3ff;--chatomon-bg:#171b22;--chatomon-fg:#e8ecf2;--chatomon-muted:#a9b2c0;--chatomon-border:#3a4250;--chatomon-bubble:#232a36;--chatomon-error:#ff8a8a;color-scheme:dark}
@media (prefers-color-scheme:dark){:host([color-scheme=auto]){--chatomon-accent:#8fb3ff;--chatomon-bg:#171b22;--chatomon-fg:#e8ecf2;--chatomon-muted:#a9b2c0;--chatomon-border:#3a4250;--chatomon-bubble:#232a36;--chatomon-error:#ff8a8a;color-scheme:dark}}
*{box-sizing:border-box}
.launcher{position:fixed;bottom:1rem;right:1rem;z-index:2147483000}
:host([position=left]) .launcher,:host([position=left]) .panel.floating{right:auto;left:1rem}
.panel{display:flex;flex-direction:column;gap:.5rem;background:var(--chatomon-bg);border:1px solid var(--chatomon-border);border-radius:.6rem;padding:.75rem;max-width:40rem}
.panel.floating{position:fixed;bottom:4.5rem;right:1rem;width:min(26rem,calc(100vw - 2rem));height:min(36rem,calc(100vh - 6rem));z-index:2147483000;box-shadow:0 .5rem 2rem #0004}
.panel[hidden]{display:none}
header{display:flex;align-items:center;gap:.5rem}
h2{font-size:1rem;margin:0;flex:1}
.chatomon-status{font-size:.85em;color:var(--chatomon-muted);margin:0}
.log{overflow-y:auto;flex:1;min-height:6rem;max-height:28rem}
.log ol{list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:.4rem}
.panel.floating .log{max-height:none}
li{padding:.4rem .6rem;border-radius:.45rem;overflow-wrap:anywhere}
.chatomon-user{align-self:flex-end;background:var(--chatomon-bubble);white-space:pre-wrap}
.chatomon-assistant{align-self:flex-start;border:1px solid var(--chatomon-border)}
.chatomon-assistant p,.chatomon-assistant ul,.chatomon-assistant ol,.chatomon-assistant pre{margin:.2rem 0}
pre{overflow-x:auto;background:var(--chatomon-bubble);padding:.4rem;border-radius:.3rem;font-size:.85em}
code{font-family:ui-monospace,monospace}
a{color:var(--chatomon-accent)}
.chatomon-tool,.chatomon-note{font-size:.88em;color:var(--chatomon-muted);padding:.1rem .6rem}
.chatomon-error{border-left:4px solid var(--chatomon-error);color:var(--chatomon-error)}
.chatomon-confirm{border:1px dashed var(--chatomon-accent)}
.chatomon-confirm[data-status=approved]{border-style:solid}
.chatomon-confirm[data-status=rejected],.chatomon-confirm[data-status=expired]{opacity:.85}
.state{font-weight:600;margin:.3rem 0}
table{border-collapse:collapse;font-size:.88em;margin:.3rem 0}
caption{text-align:left;font-weight:600}
th,td{border:1px solid var(--chatomon-border);padding:.15rem .4rem;text-align:left}
del{color:var(--chatomon-error)}ins{text-decoration:underline}
form{display:grid;grid-template-columns:1fr auto;gap:.35rem}
label,.count{font-size:.85em;color:var(--chatomon-muted)}
label{grid-column:1/-1;font-weight:600;color:inherit}
textarea{font:inherit;color:inherit;background:var(--chatomon-bg);border:1px solid var(--chatomon-border);border-radius:.3rem;padding:.4rem;resize:vertical}
button{font:inherit;padding:.35rem .9rem;border:1px solid var(--chatomon-accent);border-radius:.3rem;background:var(--chatomon-accent);color:var(--chatomon-bg);cursor:pointer}
button.secondary{background:transparent;color:var(--chatomon-accent)}
button:disabled{opacity:.55;cursor:not-allowed}
:focus-visible{outline:3px solid var(--chatomon-focus);outline-offset:2px}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
@media (prefers-reduced-motion:no-preference){li{animation:in .15s ease-out}@keyframes in{from{opacity:0;transform:translateY(4px)}}}
`;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function cookie(name) {
    const match = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)"));
    return match ? decodeURIComponent(match[1]) : "";
  }

  class ChatomonChat extends HTMLElement {
    connectedCallback() {
      if (this.shadowRoot) return;
      const attr = (name, fallback) => this.getAttribute(name) || fallback;
      this.endpoint = attr("endpoint", "/chat/");
      this.token = attr("token", "");
      this.transport = attr("transport", "websocket") === "sse" || !window.WebSocket ? "sse" : "websocket";
      this.storageKey = "chatomon:conversation:" + this.endpoint;
      this.conversationId = sessionStorage.getItem(this.storageKey);
      this.fresh = false;
      this.seen = { turn: null, seq: 0 };
      this.running = null;
      this.reply = null;
      this.tools = new Map();
      this.cards = new Map();
      this.stopped = false;
      this.build(attr);
      // The socket follows the restored conversation (?conversation_id=): a decision made
      // elsewhere, or an expiry, reaches this page through that conversation's group.
      this.restore().then(() => this.transport === "websocket" && this.connect(0));
    }

    static get observedAttributes() {
      return ["token"];
    }

    // A site refreshes an expired visitor token by setting the attribute (on the
    // chatomon-token-expired event, or ahead of expiry): the next request and socket use
    // it, and a widget the old token's refusal halted starts again (history, then socket).
    attributeChangedCallback(name, old, value) {
      this.token = value || "";
      if (!this.expired || !this.token || !this.shadowRoot) return;
      this.expired = false;
      this.stopped = false;
      this.input.disabled = false;
      const stale = this.socket;
      this.socket = null;  // its close no longer counts
      if (stale) stale.close();
      this.restore().then(() => this.transport === "websocket" && this.connect(0));
    }

    disconnectedCallback() {
      this.stopped = true;
      if (this.socket) this.socket.close();
    }

    build(attr) {
      const root = this.attachShadow({ mode: "open" });
      const style = el("style");
      style.textContent = STYLE;
      root.append(style);
      const inline = attr("mode", "launcher") === "inline";
      const title = attr("title", "Chat with the assistant");
      const uid = Math.random().toString(36).slice(2);
      this.panel = el("section", inline ? "panel" : "panel floating");
      this.panel.setAttribute("role", inline ? "region" : "dialog");
      this.panel.setAttribute("aria-labelledby", "t" + uid);
      const header = el("header");
      const heading = el("h2", "", title);
      heading.id = "t" + uid;
      const fresh = el("button", "secondary", "New conversation");
      fresh.type = "button";
      fresh.addEventListener("click", () => this.startOver());
      header.append(heading, fresh);
      if (!inline) {
        const close = el("button", "secondary", "Close");
        close.type = "button";
        close.setAttribute("aria-label", "Close the chat");
        close.addEventListener("click", () => this.open(false));
        header.append(close);
        this.launcher = el("button", "launcher", title);
        this.launcher.type = "button";
        this.launcher.setAttribute("aria-haspopup", "dialog");
        this.launcher.setAttribute("aria-expanded", "false");
        this.launcher.addEventListener("click", () => this.open(this.panel.hidden));
        this.panel.hidden = true;
        this.panel.addEventListener("keydown", (e) => e.key === "Escape" && this.open(false));
        root.append(this.launcher);
      }
      this.status = el("p", "chatomon-status", this.transport === "websocket" ? "connecting…" : "");
      this.status.setAttribute("role", "status");
      // A list inside the log (a list element given role=log would not be a list).
      this.scroller = el("div", "log");
      this.scroller.setAttribute("role", "log");
      // Streamed chunks are not read out one by one: `done` announces each answer once.
      this.scroller.setAttribute("aria-live", "off");
      this.scroller.setAttribute("aria-label", title);
      this.scroller.tabIndex = 0;
      this.log = el("ol");
      this.scroller.append(this.log);
      this.live = el("div", "sr");
      this.live.setAttribute("aria-live", "polite");
      this.greeting = attr("greeting", "");
      this.greet();
      this.form = el("form");
      const label = el("label", "", "Message");
      this.input = el("textarea");
      this.input.id = "m" + uid;
      this.input.rows = 2;
      this.input.required = true;
      label.htmlFor = this.input.id;
      this.count = el("span", "count");
      this.count.id = "c" + uid;
      this.count.setAttribute("aria-live", "polite");
      this.input.setAttribute("aria-describedby", this.count.id);
      this.setLimit(Number(attr("max-length", "8000")));
      this.send = el("button", "", "Send");
      this.send.type = "submit";
      this.form.append(label, this.input, this.send, this.count);
      this.panel.append(header, this.status, this.scroller, this.live, this.form);
      root.append(this.panel);
      this.form.addEventListener("submit", (e) => {
        e.preventDefault();
        this.submit();
      });
      this.input.addEventListener("input", () => this.counted());
      this.input.addEventListener("keydown", (e) => {
        if (e.key === "Enter" && !e.shiftKey) {
          e.preventDefault();
          this.submit();
        }
      });
    }

    open(on) {
      this.panel.hidden = !on;
      this.launcher.setAttribute("aria-expanded", String(on));
      (on ? this.input : this.launcher).focus();
    }

    setLimit(limit) {
      if (!(limit > 0)) return;
      this.limit = limit;
      this.input.maxLength = limit;
      this.counted();
    }

    counted() {
      const used = this.input.value.length;
      this.count.textContent = used + " / " + this.limit + " characters";
      this.count.setAttribute("aria-live", used > this.limit * 0.9 ? "polite" : "off");
    }

    headers(json) {
      const h = { Accept: json ? "application/json" : "text/event-stream" };
      if (this.token) h.Authorization = "Bearer " + this.token;
      else if (!json) h["X-CSRFToken"] = cookie("csrftoken");  // POSTs only
      return h;
    }

    async restore() {
      // Sending waits for the history: a restore redraws the log.
      this.busy(true);
      try {
        await this.load();
      } finally {
        this.busy(false);
      }
    }

    async load() {
      let url = routeURL(this.endpoint, location.href, "history/");
      if (this.conversationId) url += "?conversation_id=" + encodeURIComponent(this.conversationId);
      let body;
      try {
        const response = await fetch(url, { headers: this.headers(true), credentials: this.token ? "omit" : "same-origin" });
        body = await response.json();
        if (!response.ok) {
          if (body.code === "conversation_not_found") {
            this.remember(null);
            return this.load();
          }
          this.fail(body);
          if (response.status === 401 || response.status === 403) this.halt();
          return;
        }
      } catch (error) {
        return;  // history is a comfort: the chat still works without it
      }
      this.setLimit(body.max_message_chars);
      if (body.conversation_id) this.remember(body.conversation_id);
      this.clear();
      (body.items || []).forEach((item) => this.restoreItem(item));
      // A turn still running (the page reloaded mid-answer, another tab): follow it.
      if (body.running_turn_id && !this.sent) this.resume(body.running_turn_id);
    }

    // Follow a running turn from the last position seen (SSE: the resume route; WebSocket:
    // a resume message, sent when the socket opens if it is not open yet). Positions are
    // the server's: a later stream of the turn (after a confirmation) numbers above it.
    resume(turn) {
      if ((this.resumes = (this.resumes || 0) + 1) > 6) return this.fail({ code: "lost", message: "The connection was lost. Try again." });
      if (this.seen.turn !== turn) this.seen = { turn: turn, seq: 0 };
      this.running = turn;
      this.streaming = true;
      this.busy(true);
      const after = this.seen.seq;
      if (this.transport === "websocket") {
        if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ type: "resume", turn_id: turn, after: after }));
        return;
      }
      const query = "stream/resume/?turn_id=" + encodeURIComponent(turn) + "&after=" + after;
      setTimeout(() => {
        this.busy(true);
        this.stream(query);
      }, this.resumes > 1 ? 1000 : 0);
    }

    // A new stream of this page's own (a message, a decision): positions start again.
    begin() {
      this.seen = { turn: null, seq: 0 };
      this.streaming = true;
      this.resumes = 0;
    }

    // One received event: its position checked, then shown. Positions come from the server
    // (an SSE id; a WebSocket event's `position`), only on events of this page's own stream:
    // another turn's events reaching the socket through its conversation's group (a staff
    // approval) carry none, and neither move the position nor end the stream followed.
    take(event, id) {
      if (event.code === "turn_not_found") {
        this.running = null;  // it ended while away: the history has it
        this.streaming = false;
        return this.restore();
      }
      const at = eventPosition(id) || (event.turn_id && Number.isInteger(event.position) ? { turn: event.turn_id, seq: event.position } : null);
      const terminal = ["done", "error", "confirm_mutation"].includes(event.type);
      const own = Boolean(at) || !event.turn_id;
      if (at && this.streaming) {
        if (!advance(this.seen, at.turn, at.seq)) return;
        this.running = terminal ? null : at.turn;
      }
      const resumed = own && terminal && this.streaming && this.resumes > 0;
      if (own && terminal && this.streaming) {
        this.streaming = false;
        this.resumes = 0;
      }
      this.handle(event);
      if (!own && this.streaming) this.busy(true);  // another turn ended: this one still runs
      // A resumed turn is stored now: redrawn from the history, with its question.
      if (resumed && event.type === "done") this.restore();
    }

    restoreItem(item) {
      if (item.type === "user") this.entry("user", item.content);
      else if (item.type === "assistant") this.entry("assistant").append(renderMarkdown(document, item.content));
      else if (item.type === "tool") {
        this.toolCall(item);
        if ("result" in item) this.toolResult(item);
      } else if (item.type === "confirmation") this.confirmation(item, true);
      this.reply = null;
    }

    halt() {
      this.stopped = true;
      this.send.disabled = true;
      this.input.disabled = true;
    }

    remember(id) {
      this.conversationId = id;
      if (id) sessionStorage.setItem(this.storageKey, id);
      else sessionStorage.removeItem(this.storageKey);
    }

    greet() {
      if (this.greeting) this.entry("assistant").append(renderMarkdown(document, this.greeting));
    }

    clear() {
      this.log.replaceChildren();
      this.cards.clear();
      this.tools.clear();
      this.reply = null;
      this.greet();
    }

    startOver() {
      this.remember(null);
      this.fresh = true;
      this.clear();
      this.note("A new conversation starts with your next message.");
      this.input.focus();
    }

    entry(kind, text) {
      const item = el("li", "chatomon-" + kind, text);
      this.log.append(item);
      item.scrollIntoView({ block: "nearest" });
      return item;
    }

    note(text) {
      return this.entry("note", text);
    }

    fail(event) {
      const item = this.entry("error", errorText(event));
      item.setAttribute("role", "alert");
      this.reply = null;
      this.busy(false);
      if (event.code === "embed_token_expired") {
        this.expired = true;  // until the page sets a fresh token (attributeChangedCallback)
        this.dispatchEvent(new CustomEvent("chatomon-token-expired", { bubbles: true }));
      }
    }

    submit() {
      const text = this.input.value.trim();
      if (!text || this.send.disabled) return;
      if (text.length > this.limit) return this.fail({ code: "message_too_long", max_chars: this.limit });
      this.sent = true;  // the history no longer redraws the log
      this.begin();
      this.input.value = "";
      this.counted();
      this.entry("user", text);
      this.reply = null;
      this.busy(true);
      const payload = { text: text };
      if (this.fresh) payload.new_conversation = true;
      else if (this.conversationId) payload.conversation_id = this.conversationId;
      this.fresh = false;
      if (this.transport === "websocket") this.socketSend({ type: "message", ...payload });
      else this.stream("stream/", payload);
    }

    decide(id, confirmed, card) {
      card.querySelectorAll("button").forEach((b) => (b.disabled = true));
      this.busy(true);
      // Focus moves on to where the user goes next: the message box.
      this.input.focus();
      const payload = { confirmation_id: id, confirmed: confirmed };
      this.begin();
      if (this.transport === "websocket") this.socketSend({ type: "confirm", ...payload });
      else this.stream("confirm/", payload);
    }

    busy(on) {
      this.send.disabled = on || this.stopped;
      this.panel.setAttribute("aria-busy", on ? "true" : "false");
    }

    connect(attempt) {
      if (this.stopped) return;
      const protocols = this.token ? ["chatomon", "chatomon.bearer." + this.token] : undefined;
      let url = socketURL(this.endpoint, location.href);
      if (this.conversationId) url += "?conversation_id=" + encodeURIComponent(this.conversationId);
      const token = this.token;
      const socket = (this.socket = new WebSocket(url, protocols));
      this.socket.addEventListener("open", () => {
        attempt = 0;
        this.status.textContent = "connected";
        if (this.running) this.resume(this.running);  // dropped mid-turn: pick it up again
      });
      this.socket.addEventListener("message", (message) => {
        try {
          this.take(JSON.parse(message.data));
        } catch (error) {
          console.error("chatomon: unreadable event", error);
        }
      });
      this.socket.addEventListener("close", (closed) => {
        if (this.socket !== socket) return;  // replaced: a refreshed token reconnected
        this.busy(false);
        // Refused for a token the page has replaced since: try the new one at once.
        if (closed.code === 4401 && this.token !== token && !this.stopped) return this.connect(0);
        const meaning = closeMeaning(closed.code);
        if (!meaning.retry) {
          this.status.textContent = "disconnected";
          this.entry("error", meaning.message).setAttribute("role", "alert");
          return this.halt();
        }
        if (this.stopped) return;
        this.status.textContent = "disconnected, reconnecting…";
        setTimeout(() => this.connect(attempt + 1), Math.min(30000, 500 * 2 ** attempt));
      });
    }

    socketSend(message) {
      if (this.socket && this.socket.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
      else {
        this.entry("error", "Not connected yet; try again in a moment.");
        this.busy(false);
      }
    }

    // POST `payload` to `route` (GET without one: a resume) and show the event stream.
    async stream(route, payload) {
      let lost = false;
      try {
        const init = { credentials: this.token ? "omit" : "same-origin", headers: this.headers(false) };
        if (payload) Object.assign(init, { method: "POST", body: JSON.stringify(payload), headers: { ...init.headers, "Content-Type": "application/json" } });
        const response = await fetch(routeURL(this.endpoint, location.href, route), init);
        if (!response.body) return this.fail({ code: "chat_error" });
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffered = "";
        let seen = false;
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          const parsed = sseFrames(buffered + decoder.decode(value, { stream: true }));
          buffered = parsed.rest;
          for (const frame of parsed.frames) {
            seen = true;
            this.take(JSON.parse(frame.data), frame.id);
          }
        }
        if (!seen && !response.ok) this.fail({ code: response.status === 413 ? "request_too_large" : "chat_error" });
        lost = Boolean(this.running);  // ended before its turn did
      } catch (error) {
        lost = Boolean(this.running);
        if (!lost) this.fail({ code: "lost", message: "The connection was lost. Try again." });
      } finally {
        this.busy(false);
      }
      if (lost) this.resume(this.running);
    }

    handle(event) {
      if (event.conversation_id && event.conversation_id !== this.conversationId && event.type !== "error") this.remember(event.conversation_id);
      const handlers = {
        text_chunk: () => this.text(event),
        tool_call: () => this.toolCall(event),
        tool_result: () => this.toolResult(event),
        confirm_mutation: () => this.confirmation(event),
        confirmation_resolved: () => this.resolved(event),
        done: () => this.done(),
        error: () => {
          if (event.code === "conversation_not_found") this.remember(null);
          this.fail(event);
        },
      };
      (handlers[event.type] || (() => {}))();
    }

    text(event) {
      if (!this.reply) {
        this.reply = this.entry("assistant");
        this.reply.source = "";
      }
      if (event.reset) this.reply.source = "";
      this.reply.source += event.content;
      this.reply.replaceChildren(renderMarkdown(document, this.reply.source));
      this.reply.scrollIntoView({ block: "nearest" });
    }

    toolCall(event) {
      if (this.tools.has(event.id)) return;  // restored, then replayed by a resume
      const card = el("details");
      card.append(el("summary", "", toolLine(event.name, event.args)));
      card.append(el("pre", "", JSON.stringify(event.args || {}, null, 2)));
      this.entry("tool").append(card);
      this.tools.set(event.id, { card: card, args: event.args });
      this.reply = null;
    }

    toolResult(event) {
      // A call announced before a reload has no card yet: its result makes one.
      if (!this.tools.has(event.id)) this.toolCall({ id: event.id, name: event.name, args: {} });
      const known = this.tools.get(event.id);
      known.card.querySelector("summary").textContent = toolLine(event.name, known.args, event.result);
      known.card.append(el("pre", "", JSON.stringify(event.result, null, 2)));
    }

    confirmation(event, restored) {
      let card = this.cards.get(event.id);
      if (!card) {
        card = this.entry("confirm");
        this.cards.set(event.id, card);
      } else card.replaceChildren();
      const staff = event.approver === "staff";
      const status = event.status || "pending";
      card.dataset.status = status;
      const title = el("p");
      title.append(el("strong", "", event.mutation));
      title.append(staff ? " waits for a staff approval." : " needs your confirmation.");
      card.append(title, previewTable(document, event));
      const state = el("p", "state", decisionText(event, this.getAttribute("locale")));
      state.tabIndex = -1;
      card.append(state);
      if (!staff && status === "pending") {
        const approve = el("button", "", "Confirm");
        const reject = el("button", "secondary", "Reject");
        approve.type = reject.type = "button";
        approve.addEventListener("click", () => this.decide(event.id, true, card));
        reject.addEventListener("click", () => this.decide(event.id, false, card));
        card.append(approve, " ", reject);
        const left = Date.parse(event.expires_at) - Date.now();
        // Undecided when it runs out: the card says so rather than offering dead buttons.
        if (left >= 0) setTimeout(() => card.event === event && this.confirmation({ ...event, status: "expired" }), left + 500);
      }
      card.event = event;
      if (!restored && !event.status) this.live.textContent = title.textContent;
      this.reply = null;
      this.busy(false);
    }

    resolved(event) {
      const card = this.cards.get(event.id);
      const by = event.decided_by || "";  // "you" or "a staff member": the server says it
      const decided = { status: event.status, decided_by: by, decided_at: new Date().toISOString() };
      if (card && card.event) this.confirmation({ ...card.event, ...decided });
      this.note("Decision: " + event.status + (by ? " by " + by : ""));
      this.reply = null;
    }

    done() {
      if (this.reply) this.live.textContent = this.reply.textContent;
      this.reply = null;
      this.busy(false);
    }
  }

  if (!customElements.get("chatomon-chat")) customElements.define("chatomon-chat", ChatomonChat);
})();
