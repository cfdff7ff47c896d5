// The chat widget's protocol handling, under node's own test runner: `node --test tests/js/`.
// The script exports its pure parts when loaded as a CommonJS module (no DOM needed).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");

const widget = require(path.join(__dirname, "../../sdk/chatomon/django/static/chatomon/chat-widget.js"));

// A document just big enough for the Markdown renderer, serialised to check what it built.
// It has no innerHTML at all: the renderer can only make elements and text nodes.
function fakeDocument() {
  class Text {
    constructor(text) {
      this.text = text;
    }
    html() {
      return this.text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
    }
  }
  class Element {
    constructor(tag) {
      this.tag = tag;
      this.attributes = [];
      this.children = [];
    }
    setAttribute(name, value) {
      this.attributes.push([name, String(value)]);
    }
    append(...nodes) {
      this.children.push(...nodes);
    }
    html() {
      const attributes = this.attributes.map(([n, v]) => ` ${n}="${v.replace(/"/g, "&quot;")}"`).join("");
      const inner = this.children.map((c) => c.html()).join("");
      return this.tag === "br" ? "<br>" : `<${this.tag}${attributes}>${inner}</${this.tag}>`;
    }
  }
  return { createElement: (tag) => new Element(tag), createTextNode: (text) => new Text(text) };
}

function markdown(text) {
  return widget.renderMarkdown(fakeDocument(), text).html();
}

test("markdown: paragraphs, emphasis, code, lists, headings, quotes", () => {
  assert.equal(markdown("Hello **bold** and *it* and `x<y`"), '<div class="md"><p>Hello <strong>bold</strong> and <em>it</em> and <code>x&lt;y</code></p></div>');
  assert.equal(markdown("- one\n- two\n\n1. first"), '<div class="md"><ul><li>one</li><li>two</li></ul><ol><li>first</li></ol></div>');
  assert.equal(markdown("# Title\n> quoted"), '<div class="md"><h3>Title</h3><blockquote>quoted</blockquote></div>');
  assert.equal(markdown("line one\nline two"), '<div class="md"><p>line one<br>line two</p></div>');
});

test("markdown: a code fence keeps its text as text", () => {
  const html = markdown("Look:\n```python\nprint('<b>')\n```\nafter");
  assert.equal(html, '<div class="md"><p>Look:</p><pre><code data-lang="python">print(\'&lt;b&gt;\')</code></pre><p>after</p></div>');
});

test("markdown: raw HTML from the model never becomes an element", () => {
  const hostile = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "**<iframe src=//evil>**",
    "- <a href='javascript:alert(1)'>x</a>",
    "```\n</code></pre><script>alert(1)</script>\n```",
  ];
  for (const text of hostile) {
    const html = markdown(text);
    assert.doesNotMatch(html, /<(script|img|iframe)\b/, text);
    assert.doesNotMatch(html, /<a href="javascript/i, text);
  }
});

test("markdown: only http(s) and mailto links become links", () => {
  assert.equal(markdown("[docs](https://example.com/a)"), '<div class="md"><p><a href="https://example.com/a" rel="noopener noreferrer nofollow" target="_blank">docs</a></p></div>');
  assert.equal(markdown("[click](javascript:alert(1))"), '<div class="md"><p><span>click</span>)</p></div>');
  assert.equal(markdown("[x](data:text/html,hi)"), '<div class="md"><p><span>x</span></p></div>');
  assert.equal(widget.safeHref(" JavaScript:alert(1)"), null);
  assert.equal(widget.safeHref("mailto:a@b.c"), "mailto:a@b.c");
});

test("socket URL: a full-URL endpoint keeps its own host, a path uses the page's", () => {
  assert.equal(widget.socketURL("http://127.0.0.1:18801/chat/", "http://localhost:18802/page"), "ws://127.0.0.1:18801/chat/");
  assert.equal(widget.socketURL("/chat/", "https://shop.example/x"), "wss://shop.example/chat/");
  assert.equal(widget.routeURL("https://chat.example/chat", "http://shop.example/", "history/"), "https://chat.example/chat/history/");
  assert.equal(widget.routeURL("/chat/", "http://a.example/p/q", "stream/"), "http://a.example/chat/stream/");
});

test("SSE frames: data lines joined, ids read, comments skipped, partial frames kept", () => {
  const { frames, rest } = widget.sseFrames(': heartbeat\n\nid: 7\ndata: {"type":"done"}\n\ndata: {"type":');
  assert.deepEqual(frames, [{ id: "7", data: '{"type":"done"}' }]);
  assert.equal(rest, 'data: {"type":');
  const crlf = widget.sseFrames('data: {"a":\r\ndata: 1}\r\n\r\n');
  assert.deepEqual(crlf.frames, [{ id: null, data: '{"a":\n1}' }]);
});

test("tool lines read as people would say them", () => {
  assert.equal(widget.toolLine("query", { manager: "PartManager" }), "Looking up parts…");
  assert.equal(widget.toolLine("query", { manager: "PartManager" }, { data: [1, 2, 3], total_count: 3 }), "Looked up 3 parts");
  assert.equal(widget.toolLine("query", { manager: "PartManager" }, { data: [1], total_count: 1 }), "Looked up 1 part");
  assert.equal(widget.toolLine("query", { manager: "SupplyCategoryManager" }, { data: [], total_count: 0 }), "Looked up 0 supply categories");
  assert.equal(widget.toolLine("find_path", { from_manager: "PartManager", to_manager: "ProjectManager" }, {}), "Linked parts to projects");
  assert.equal(widget.toolLine("search_managers", { query: "steel" }, []), "Searched the data for “steel”");
  assert.equal(widget.toolLine("mutate", { mutation: "createPart" }, { status: "executed" }), "Made the change createPart");
  assert.equal(widget.toolLine("query", { manager: "X" }, { status: "error", code: "unknown_field" }), "Looking up xes (failed)");
  assert.equal(widget.toolLine("custom_tool", {}, {}), "Used custom_tool");
});

test("previews: the server's table drawn as it comes, no parser of the widget's own", () => {
  const table = { caption: "Update PartManager #4", columns: ["Field", "Before", "After"], rows: [{ field: "unit_cost", before: "1.00", after: "2.00" }, { field: "note", before: null, after: "<b>x</b>" }], rest: null };
  const html = widget.previewTable(fakeDocument(), { preview: { ignored: true }, preview_table: table }).html();
  assert.equal(html, '<div class="preview"><table><caption>Update PartManager #4</caption><thead><tr><th scope="col">Field</th><th scope="col">Before</th><th scope="col">After</th></tr></thead><tbody><tr><th scope="row">unit_cost</th><td><del>1.00</del></td><td><ins>2.00</ins></td></tr><tr><th scope="row">note</th><td><span>(new)</span></td><td><ins>&lt;b&gt;x&lt;/b&gt;</ins></td></tr></tbody></table></div>');
  const rest = widget.previewTable(fakeDocument(), { preview_table: { caption: "Change", columns: ["Field", "Before", "After"], rows: [], rest: '"free text"' } }).html();
  assert.match(rest, /<td colspan="3">No field-level preview\.<\/td>.*<pre>"free text"<\/pre><\/div>$/);
  // An event without a table (an older server) shows its raw preview as text, never as markup.
  const raw = widget.previewTable(fakeDocument(), { input: { name: "<i>" } }).html();
  assert.match(raw, /<caption>Change<\/caption>.*<pre>\{\n  "name": "&lt;i&gt;"\n\}<\/pre>/s);
  assert.equal(widget.parsePreview, undefined);
});

test("errors: every code a sentence, rate limits with their wait", () => {
  assert.equal(widget.errorText({ code: "rate_limited", retry_after_seconds: 600 }), "You have sent too many messages. Try again in 10 minutes.");
  assert.equal(widget.errorText({ code: "rate_limited", retry_after_seconds: 30 }), "You have sent too many messages. Try again in 30 seconds.");
  assert.equal(widget.errorText({ code: "chat_error", message: "internal" }), "The assistant is unavailable right now. Try again in a moment.");
  assert.equal(widget.errorText({ code: "message_too_long", max_chars: 8000 }), "That message is too long (at most 8000 characters).");
  assert.equal(widget.errorText({ code: "confirmation_pending" }), "Confirm or reject the pending change first.");
  assert.equal(widget.errorText({ code: "embed_token_required", message: "Needs a token." }), "Needs a token.");
  assert.equal(widget.errorText({}), "Something went wrong.");
});

test("a socket closed for a configuration problem does not reconnect forever", () => {
  assert.deepEqual(widget.closeMeaning(1011), { retry: false, message: "The assistant is unavailable right now." });
  assert.equal(widget.closeMeaning(4403).retry, false);
  assert.equal(widget.closeMeaning(4401).retry, false);
  assert.equal(widget.closeMeaning(1006).retry, true);
});

test("a card's state follows its decision", () => {
  assert.equal(widget.decisionText({ status: "pending", approver: "client" }), "Needs your confirmation.");
  assert.equal(widget.decisionText({ status: "pending", approver: "staff" }), "Waiting for a staff approval.");
  const approved = widget.decisionText({ status: "approved", decided_by: "staff", decided_at: "2026-01-01T10:05:00Z" }, "en-GB");
  assert.match(approved, /^Approved by staff at \d\d:\d\d\.$/);
  assert.equal(widget.decisionText({ status: "expired" }), "Expired without a decision.");
  assert.equal(widget.decisionText({ status: "rejected", decided_by: "you" }), "Rejected by you.");
});

test("markdown: underscores inside words stay text", () => {
  assert.equal(markdown("unit_cost and weight_kg, but _this_ is emphasis"), '<div class="md"><p>unit_cost and weight_kg, but <em>this</em> is emphasis</p></div>');
});

test("a mutation's result names the change when its call came before a reload", () => {
  assert.equal(widget.toolLine("mutate", {}, { status: "executed", mutation: "createPart" }), "Made the change createPart");
  assert.equal(widget.toolLine("mutate", {}, { status: "timed_out", mutation: "createPart" }), "Did not make the change createPart");
});

// The element itself, in a sandbox with just enough of a browser: a fake WebSocket that
// records its protocols, and the DOM parts the socket handling touches stubbed out.
function sandboxedElement() {
  const vm = require("node:vm");
  const fs = require("node:fs");
  const sockets = [];
  class FakeSocket {
    constructor(url, protocols) {
      Object.assign(this, { url, protocols, listeners: {}, closed: false, readyState: 0 });
      sockets.push(this);
    }
    addEventListener(type, listener) {
      (this.listeners[type] = this.listeners[type] || []).push(listener);
    }
    emit(type, event) {
      (this.listeners[type] || []).forEach((listener) => listener(event));
    }
    close() {
      this.closed = true;
    }
  }
  FakeSocket.OPEN = 1;
  const defined = {};
  const context = {
    HTMLElement: class {},
    customElements: { get: (name) => defined[name], define: (name, cls) => (defined[name] = cls) },
    WebSocket: FakeSocket,
    CustomEvent: class {
      constructor(type) {
        this.type = type;
      }
    },
    URL,
    location: { href: "https://site.example/page" },
    setTimeout: () => 0,
    console,
  };
  const source = fs.readFileSync(path.join(__dirname, "../../sdk/chatomon/django/static/chatomon/chat-widget.js"), "utf8");
  vm.runInNewContext(source, context);
  const Chat = defined["chatomon-chat"];
  const chat = new Chat();
  const stub = { setAttribute() {}, focus() {} };
  const fired = [];
  Object.assign(chat, {
    shadowRoot: {},
    endpoint: "https://chat.example/chat/",
    transport: "websocket",
    stopped: false,
    status: {},
    input: { ...stub, disabled: false },
    send: { disabled: false },
    panel: stub,
    entry: () => stub,
    restore: async () => {},
    dispatchEvent: (event) => fired.push(event.type),
  });
  return { Chat, chat, sockets, fired };
}

test("token: a refreshed token attribute is used for the next request and the reconnect", async () => {
  const { Chat, chat, sockets, fired } = sandboxedElement();
  assert.deepEqual([...Chat.observedAttributes], ["token"]);
  chat.token = "old";
  chat.connect(0);
  assert.deepEqual([...sockets[0].protocols], ["chatomon", "chatomon.bearer.old"]);
  // The server refuses the expired token: an error event, then close code 4401.
  sockets[0].emit("message", { data: JSON.stringify({ type: "error", code: "embed_token_expired", message: "expired" }) });
  sockets[0].emit("close", { code: 4401 });
  assert.deepEqual(fired, ["chatomon-token-expired"]);
  assert.equal(chat.stopped, true);
  assert.equal(sockets.length, 1, "no reconnect with the old token");
  // The site answers the event by setting a fresh token.
  chat.attributeChangedCallback("token", "old", "new");
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(sockets.length, 2);
  assert.deepEqual([...sockets[1].protocols], ["chatomon", "chatomon.bearer.new"]);
  assert.equal(chat.stopped, false);
  assert.equal(chat.input.disabled, false);
  assert.equal(chat.headers(true).Authorization, "Bearer new");
  // A late close of the replaced socket changes nothing.
  sockets[0].emit("close", { code: 4401 });
  assert.equal(sockets.length, 2);
  assert.equal(chat.stopped, false);
});

test("token: a token set while a socket connects replaces a refused one at once", () => {
  const { chat, sockets } = sandboxedElement();
  chat.token = "a";
  chat.connect(0);
  chat.attributeChangedCallback("token", "a", "b");  // not halted: only remembered
  assert.equal(sockets.length, 1);
  sockets[0].emit("close", { code: 4401 });
  assert.equal(sockets.length, 2);
  assert.deepEqual([...sockets[1].protocols], ["chatomon", "chatomon.bearer.b"]);
  assert.equal(chat.stopped, false);
  // A logout's 4401 with an unchanged token still halts: no reconnect loop.
  sockets[1].emit("close", { code: 4401 });
  assert.equal(sockets.length, 2);
  assert.equal(chat.stopped, true);
});

test("resume: an SSE id names the turn and the event's position", () => {
  const parsed = widget.sseFrames('id: t-1:2\ndata: {"type":"text_chunk"}\n\n: heartbeat\n\nid: t');
  assert.deepEqual(parsed.frames, [{ id: "t-1:2", data: '{"type":"text_chunk"}' }]);
  assert.equal(parsed.rest, "id: t");
  assert.deepEqual(widget.eventPosition("t-1:2"), { turn: "t-1", seq: 2 });
  assert.deepEqual(widget.eventPosition("a:b:10"), { turn: "a:b", seq: 10 });
  assert.equal(widget.eventPosition(null), null);
  assert.equal(widget.eventPosition("t-1"), null);
  assert.equal(widget.eventPosition("t-1:x"), null);
});

test("resume: a replay overlapping what was seen shows each event once", () => {
  const seen = { turn: null, seq: 0 };
  const shown = [];
  const receive = (id) => {
    const at = widget.eventPosition(id);
    if (widget.advance(seen, at.turn, at.seq)) shown.push(id);
  };
  ["t:1", "t:2"].forEach(receive); // the stream drops here
  ["t:1", "t:2", "t:3", "t:4"].forEach(receive); // a resume from an older position
  ["u:1"].forEach(receive); // the next turn starts again at 1
  assert.deepEqual(shown, ["t:1", "t:2", "t:3", "t:4", "u:1"]);
  assert.deepEqual(seen, { turn: "u", seq: 1 });
});

test("resume: positions come from the server and only the followed turn's move them", () => {
  // Review finding 6: another turn's events reaching the socket through the conversation's
  // group (a staff approval) were counted as positions of the turn being followed.
  const { chat, sockets } = sandboxedElement();
  const handled = [];
  chat.handle = (event) => handled.push(event.type + ":" + event.turn_id);
  chat.connect(0);
  const sent = [];
  const emit = (socket, event) => socket.emit("message", { data: JSON.stringify(event) });
  chat.begin();
  emit(sockets[0], { type: "text_chunk", turn_id: "T", position: 1, content: "a" });
  emit(sockets[0], { type: "confirmation_resolved", turn_id: "U", id: "c", status: "approved" });
  emit(sockets[0], { type: "text_chunk", turn_id: "U", content: "u" });
  emit(sockets[0], { type: "done", turn_id: "U" });
  assert.equal(chat.running, "T");
  assert.equal(chat.streaming, true, "another turn's done does not end this stream");
  assert.equal(chat.send.disabled, true, "still busy with T");
  emit(sockets[0], { type: "text_chunk", turn_id: "T", position: 2, content: "b" });
  assert.deepEqual({ ...chat.seen }, { turn: "T", seq: 2 });
  // The socket drops; the next one resumes T after the last position the server gave.
  sockets[0].emit("close", { code: 1006 });
  chat.connect(1);
  Object.assign(sockets[1], { readyState: 1, send: (data) => sent.push(JSON.parse(data)) });
  sockets[1].emit("open");
  assert.deepEqual(sent, [{ type: "resume", turn_id: "T", after: 2 }]);
  emit(sockets[1], { type: "text_chunk", turn_id: "T", position: 2, content: "b" });  // overlap
  emit(sockets[1], { type: "done", turn_id: "T", position: 3 });
  assert.deepEqual(handled, ["text_chunk:T", "confirmation_resolved:U", "text_chunk:U", "done:U", "text_chunk:T", "done:T"]);
  assert.equal(chat.running, null);
  assert.equal(chat.streaming, false);
});
