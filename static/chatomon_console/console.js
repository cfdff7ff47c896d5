/* chatomon console: live expiry countdowns and streamed chat turns. Pages work without it. */
(function () {
  "use strict";

  /* Countdowns: every [data-expires] card greys out and disables its buttons at expiry. */
  function formatLeft(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return "in " + (h ? h + "h " : "") + (h || m ? m + "m " : "") + r + "s";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll(".cc-approval[data-expires]").forEach(function (card) {
      var left = Date.parse(card.dataset.expires) - now;
      var label = card.querySelector(".cc-countdown");
      if (left > 0) { if (label) label.textContent = formatLeft(left); return; }
      if (card.classList.contains("cc-approval--expired")) return;
      card.classList.add("cc-approval--expired");
      if (label) label.textContent = "expired";
      card.querySelectorAll("button, input").forEach(function (el) { el.disabled = true; });
    });
  }
  setInterval(tick, 1000);
  document.addEventListener("DOMContentLoaded", tick);

  /* Saving a view saves the filters the address bar holds now (HTMX pushed them there). */
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-cc-save-view]")) return;
    form.querySelector("[name=query]").value = location.search.replace(/^\?/, "");
  });

  /* Filter forms: leave empty fields out of the request, so the pushed URL holds only the filters set. */
  document.addEventListener("htmx:configRequest", function (event) {
    var form = event.detail.elt;
    if (!form.matches || !form.matches("form.cc-filters")) return;
    var params = event.detail.parameters;
    Array.from(event.detail.formData.keys()).forEach(function (name) {
      if (event.detail.formData.getAll(name).every(function (value) { return value === ""; })) delete params[name];
    });
  });

  /* Approvals queue keys: j/k move between cards, a approves and r rejects the current card,
     each after a confirmation dialog. Not while typing, nor with a modifier key held. */
  var currentApproval = null;
  function approvalCards() { return Array.from(document.querySelectorAll("#cc-approval-queue .cc-approval")); }
  function markCurrent(card) {
    approvalCards().forEach(function (c) { c.classList.remove("cc-approval--current"); c.removeAttribute("aria-current"); });
    if (!card) { currentApproval = null; return; }
    currentApproval = card.id;
    card.classList.add("cc-approval--current"); card.setAttribute("aria-current", "true");
    card.tabIndex = -1; card.focus({ preventScroll: true }); card.scrollIntoView({ block: "nearest" });
  }
  function decideCurrent(value) {
    var card = currentApproval && document.getElementById(currentApproval);
    var button = card && card.querySelector('button[name="decision"][value="' + value + '"]');
    if (!button || button.disabled) return;
    var mutation = card.querySelector("h2").firstChild.textContent.trim();
    if (window.confirm((value === "approve" ? "Approve " : "Reject ") + mutation + "?")) button.click();
  }
  document.addEventListener("keydown", function (event) {
    if (!document.getElementById("cc-approval-queue") || event.altKey || event.ctrlKey || event.metaKey) return;
    var target = event.target;
    if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
    var cards = approvalCards();
    var at = cards.findIndex(function (c) { return c.id === currentApproval; });
    if (event.key === "j" || event.key === "k") {
      if (!cards.length) return;
      event.preventDefault();
      var next = event.key === "j" ? Math.min(at + 1, cards.length - 1) : Math.max(at - 1, 0);
      markCurrent(cards[at < 0 ? 0 : next]);
    } else if (event.key === "a" || event.key === "r") {
      event.preventDefault();
      decideCurrent(event.key === "a" ? "approve" : "reject");
    }
  });
  /* The live stream re-renders the queue: keep the current card marked (without moving focus away). */
  document.addEventListener("htmx:oobAfterSwap", function () {
    var card = currentApproval && document.getElementById(currentApproval);
    if (card) { card.classList.add("cc-approval--current"); card.setAttribute("aria-current", "true"); }
  });

  /* Chat: post the form asking for text/event-stream and render events as they arrive. */
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function json(value) { return JSON.stringify(value, null, 2); }

  function Turn(list, composer) {
    this.list = list; this.composer = composer; this.reply = null; this.tools = {};
  }
  Turn.prototype.add = function (node) {
    var empty = document.getElementById("cc-empty");
    if (empty) empty.remove();
    this.list.appendChild(node); node.scrollIntoView({ block: "nearest" }); return node;
  };
  Turn.prototype.bubble = function (who, text) {
    var li = el("li", "cc-message cc-message--" + who);
    li.appendChild(el("span", "cc-message__who", who === "user" ? "You" : "Assistant"));
    var body = li.appendChild(el("div", "cc-text", text || ""));
    this.add(li); return body;
  };
  Turn.prototype.handle = function (type, event) {
    if (event.conversation_id) this.remember(event.conversation_id);
    if (type === "text_chunk") {
      if (!this.reply) this.reply = this.bubble("assistant");
      else if (event.reset) this.reply.textContent = "";
      this.reply.textContent += event.content || "";
    } else if (type === "tool_call") {
      var li = el("li", "cc-message cc-message--tool");
      var details = li.appendChild(el("details", "cc-tool"));
      var summary = details.appendChild(el("summary", null, "Tool call: "));
      summary.appendChild(el("code", null, event.name));
      details.appendChild(el("p", null, "Arguments"));
      details.appendChild(el("pre", "cc-json", json(event.args)));
      this.tools[event.id] = details; this.add(li); this.reply = null;
    } else if (type === "tool_result") {
      var card = this.tools[event.id];
      if (card) { card.appendChild(el("p", null, "Result")); card.appendChild(el("pre", "cc-json", json(event.result))); }
    } else if (type === "confirm_mutation") {
      this.confirmation(event);
    } else if (type === "confirmation_resolved") {
      this.add(el("li", "cc-message cc-message--note", event.mutation + " " + event.status + (event.decided_by ? " by " + this.person(event.decided_by) : "")));
    } else if (type === "error") {
      var err = this.add(el("li", "cc-message cc-error", event.message || event.code));
      err.setAttribute("role", "alert");
    }
  };
  /* A confirmation's card is drawn by the server, as the page draws it (one preview renderer,
     chatomon.preview): a placeholder fetches it through htmx and is replaced by it. */
  Turn.prototype.confirmation = function (event) {
    var li = el("li", "cc-message cc-message--confirm", "Loading the confirmation…");
    li.id = "cc-confirm-" + event.id;
    li.setAttribute("hx-get", this.composer.dataset.ccCardUrl.replace("00000000-0000-0000-0000-000000000000", event.id));
    li.setAttribute("hx-trigger", "load");
    li.setAttribute("hx-swap", "outerHTML");
    this.add(li);
    htmx.process(li);
  };
  /* A card that could not be fetched says so (the placeholder would wait forever). */
  document.addEventListener("htmx:responseError", function (event) {
    var target = event.detail.elt;
    if (target && target.classList && target.classList.contains("cc-message--confirm")) {
      target.textContent = "The confirmation could not be shown: reload the page to decide it.";
      target.setAttribute("role", "alert");
    }
  });
  /* The staff member's own decision is named as the server names them (console/people.py). */
  Turn.prototype.person = function (label) {
    var me = this.composer.dataset;
    return label === me.ccSelfLabel || label === me.ccSelfUsername ? me.ccSelfName : label;
  };
  Turn.prototype.remember = function (id) {
    var field = this.composer.querySelector("[name=conversation_id]");
    if (field && field.value !== id) {
      field.value = id;
      var url = this.composer.dataset.ccConversationUrl.replace("00000000-0000-0000-0000-000000000000", id);
      history.replaceState(null, "", url);
    }
  };

  /* Frames of the chat event stream: `data: <event JSON>`, its `type` names it; comment lines (heartbeats) carry none. */
  function parseFrames(buffer, onEvent) {
    var frames = buffer.split("\n\n");
    var rest = frames.pop();
    frames.forEach(function (frame) {
      var data = [];
      frame.split("\n").forEach(function (line) {
        if (line.indexOf("data: ") === 0) data.push(line.slice(6));
      });
      if (!data.length) return;
      var event = JSON.parse(data.join("\n"));
      onEvent(event.type, event);
    });
    return rest;
  }

  async function stream(form, submitter) {
    var composer = document.getElementById("cc-composer");
    var list = document.getElementById("cc-messages");
    var body = new FormData(form);
    if (submitter && submitter.name) body.append(submitter.name, submitter.value);
    var turn = new Turn(list, composer);
    if (form === composer) { turn.bubble("user", body.get("text")); form.querySelector("textarea").value = ""; }
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
    try {
      var response = await fetch(form.action, { method: "POST", body: body, headers: { Accept: "text/event-stream" }, credentials: "same-origin" });
      /* A refusal (429 rate_limited) comes as a one-frame event stream: shown like any error event. */
      var streamed = (response.headers.get("Content-Type") || "").indexOf("text/event-stream") === 0;
      if (!response.body || (!response.ok && !streamed)) { turn.handle("error", { message: "The console could not send this (" + response.status + ")." }); return; }
      var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) break;
        buffer = parseFrames(buffer + decoder.decode(chunk.value, { stream: true }), turn.handle.bind(turn));
      }
    } finally {
      form.querySelectorAll("button").forEach(function (b) { b.disabled = false; });
      if (form !== composer) form.remove();
    }
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-cc-stream]") || !window.fetch || !window.TextDecoder) return;
    event.preventDefault();
    stream(form, event.submitter);
  });
  /* Enter sends, Shift+Enter makes a new line. */
  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && event.target.matches && event.target.matches("#cc-composer textarea")) {
      event.preventDefault(); event.target.form.requestSubmit();
    }
  });
})();
