/*
 * chatomon chat widget: an embeddable chat with the assistant, no dependencies.
 *
 *   <div data-chatomon-chat data-endpoint="/chat/"></div>
 *   <script src="{% static 'chatomon/chat-widget.js' %}" defer></script>
 *
 * (or {% load chatomon_widget %}{% chatomon_chat_widget %}). Every element with
 * data-chatomon-chat becomes a chat: the WebSocket route at the endpoint when
 * data-transport="websocket" (the default; a turn a staff member approves elsewhere
 * continues live), or POST <endpoint>stream/ and <endpoint>confirm/ as server-sent events
 * with data-transport="sse". Events follow the chat event contract; unknown fields and
 * unknown event types are ignored. The conversation id is kept in sessionStorage.
 */
(function () {
  "use strict";

  function cookie(name) {
    const match = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)"));
    return match ? decodeURIComponent(match[1]) : "";
  }

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  class ChatWidget {
    constructor(root) {
      this.root = root;
      this.endpoint = (root.dataset.endpoint || "/chat/").replace(/\/?$/, "/");
      this.transport = root.dataset.transport === "sse" || !window.WebSocket ? "sse" : "websocket";
      this.storageKey = "chatomon:conversation:" + this.endpoint;
      this.conversationId = sessionStorage.getItem(this.storageKey);
      this.reply = null;
      this.cards = new Map();
      this.build();
      if (this.transport === "websocket") this.connect(0);
    }

    build() {
      this.root.classList.add("chatomon-chat");
      this.status = element("p", "chatomon-status", this.transport === "websocket" ? "connecting…" : "");
      this.status.setAttribute("role", "status");
      this.log = element("ol", "chatomon-log");
      this.log.setAttribute("aria-live", "polite");
      this.log.setAttribute("aria-label", this.root.dataset.title || "Conversation");
      this.form = element("form", "chatomon-form");
      const label = element("label", "chatomon-label", "Message");
      this.input = element("textarea", "chatomon-input");
      this.input.id = "chatomon-input-" + Math.random().toString(36).slice(2);
      this.input.rows = 2;
      this.input.required = true;
      label.htmlFor = this.input.id;
      this.send = element("button", "chatomon-send", "Send");
      this.send.type = "submit";
      this.form.append(label, this.input, this.send);
      this.root.append(this.status, this.log, this.form);
      this.form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.submit();
      });
      this.input.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && !event.shiftKey) {
          event.preventDefault();
          this.submit();
        }
      });
    }

    entry(kind, text) {
      const item = element("li", "chatomon-entry chatomon-" + kind);
      if (text !== undefined) item.textContent = text;
      this.log.append(item);
      item.scrollIntoView({ block: "end" });
      return item;
    }

    submit() {
      const text = this.input.value.trim();
      if (!text || this.send.disabled) return;
      this.input.value = "";
      this.entry("user", text);
      this.reply = null;
      this.busy(true);
      const payload = { text: text };
      // Explicit: this widget's conversation, else a new one (never the owner's latest,
      // which another tab or page may be using).
      if (this.conversationId) payload.conversation_id = this.conversationId;
      else payload.new_conversation = true;
      if (this.transport === "websocket") this.socketSend({ type: "message", ...payload });
      else this.stream(this.endpoint + "stream/", payload);
    }

    decide(id, confirmed, card) {
      card.querySelectorAll("button").forEach((b) => (b.disabled = true));
      this.busy(true);
      const payload = { confirmation_id: id, confirmed: confirmed };
      if (this.transport === "websocket") this.socketSend({ type: "confirm", ...payload });
      else this.stream(this.endpoint + "confirm/", payload);
    }

    busy(on) {
      this.send.disabled = on;
      this.root.setAttribute("aria-busy", on ? "true" : "false");
    }

    connect(attempt) {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      this.socket = new WebSocket(scheme + location.host + this.endpoint);
      this.socket.addEventListener("open", () => {
        attempt = 0;
        this.status.textContent = "connected";
      });
      this.socket.addEventListener("message", (message) => {
        try {
          this.handle(JSON.parse(message.data));
        } catch (error) {
          console.error("chatomon: unreadable event", error);
        }
      });
      this.socket.addEventListener("close", (closed) => {
        this.busy(false);
        if (closed.code === 4403) {
          this.entry("error", "You may not use this chat.");
          return;
        }
        if (closed.code === 4404) {
          this.entry("error", "The chat is turned off.");
          return;
        }
        this.status.textContent = "disconnected, reconnecting…";
        const wait = Math.min(30000, 500 * 2 ** attempt);
        setTimeout(() => this.connect(attempt + 1), wait);
      });
    }

    socketSend(message) {
      if (this.socket && this.socket.readyState === WebSocket.OPEN) {
        this.socket.send(JSON.stringify(message));
      } else {
        this.entry("error", "Not connected yet; try again in a moment.");
        this.busy(false);
      }
    }

    async stream(url, payload) {
      try {
        const response = await fetch(url, {
          method: "POST",
          credentials: "same-origin",
          headers: {
            "Content-Type": "application/json",
            Accept: "text/event-stream",
            "X-CSRFToken": cookie("csrftoken"),
          },
          body: JSON.stringify(payload),
        });
        if (!response.ok || !response.body) {
          const known = { 403: "You may not use this chat.", 413: "That message is too long." };
          this.entry("error", known[response.status] || "The chat is unavailable.");
          return;
        }
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffered = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffered += decoder.decode(value, { stream: true });
          let end;
          while ((end = buffered.indexOf("\n\n")) >= 0) {
            const frame = buffered.slice(0, end);
            buffered = buffered.slice(end + 2);
            const data = frame
              .split("\n")
              .filter((line) => line.startsWith("data:"))
              .map((line) => line.slice(5).trimStart())
              .join("\n");
            if (data) this.handle(JSON.parse(data));
          }
        }
      } catch (error) {
        this.entry("error", "The connection was lost.");
      } finally {
        this.busy(false);
      }
    }

    handle(event) {
      if (event.conversation_id && event.conversation_id !== this.conversationId) {
        this.conversationId = event.conversation_id;
        sessionStorage.setItem(this.storageKey, event.conversation_id);
      }
      const handlers = {
        text_chunk: () => this.text(event),
        tool_call: () => this.toolCall(event),
        tool_result: () => this.toolResult(event),
        confirm_mutation: () => this.confirmation(event),
        confirmation_resolved: () => this.resolved(event),
        done: () => this.done(event),
        error: () => {
          this.entry("error", event.message || "Something went wrong.").setAttribute("role", "alert");
          this.reply = null;
          this.busy(false);
        },
      };
      (handlers[event.type] || (() => {}))();
    }

    text(event) {
      if (!this.reply) this.reply = this.entry("assistant", "");
      if (event.reset) this.reply.textContent = "";
      this.reply.textContent += event.content;
      this.reply.scrollIntoView({ block: "end" });
    }

    toolCall(event) {
      const card = element("details", "chatomon-tool");
      card.append(element("summary", "", "Using " + event.name + "…"));
      card.append(element("pre", "", JSON.stringify(event.args || {}, null, 2)));
      this.entry("tool").append(card);
      this.cards.set(event.id, card);
      this.reply = null;
    }

    toolResult(event) {
      const card = this.cards.get(event.id);
      if (!card) return;
      const status = (event.result && event.result.status) || "done";
      card.querySelector("summary").textContent = "Used " + event.name + " (" + status + ")";
      card.append(element("pre", "", JSON.stringify(event.result, null, 2)));
    }

    confirmation(event) {
      const card = this.entry("confirm");
      card.dataset.confirmationId = event.id;
      const staff = event.approver === "staff";
      const title = element("p", "chatomon-confirm-title");
      title.append(element("strong", "", event.mutation));
      title.append(staff ? " waits for a staff approval." : " needs your confirmation.");
      card.append(title);
      card.append(element("pre", "", JSON.stringify(event.preview || event.input, null, 2)));
      if (!staff) {
        const approve = element("button", "chatomon-approve", "Confirm");
        const reject = element("button", "chatomon-reject", "Reject");
        approve.type = reject.type = "button";
        approve.addEventListener("click", () => this.decide(event.id, true, card));
        reject.addEventListener("click", () => this.decide(event.id, false, card));
        card.append(approve, reject);
      }
      this.reply = null;
      this.busy(false);
    }

    resolved(event) {
      const card = this.log.querySelector('[data-confirmation-id="' + event.id + '"]');
      if (card) card.querySelectorAll("button").forEach((b) => b.remove());
      const by = event.decided_by ? " by " + event.decided_by : "";
      this.entry("note", "Decision: " + event.status + by);
      this.reply = null;
    }

    done() {
      this.reply = null;
      this.busy(false);
    }
  }

  function mountAll() {
    document.querySelectorAll("[data-chatomon-chat]").forEach((root) => {
      if (!root.chatomon) root.chatomon = new ChatWidget(root);
    });
  }

  window.ChatomonChat = { mountAll: mountAll, ChatWidget: ChatWidget };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
