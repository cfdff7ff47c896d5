/* The demo's end-user chat: chatomon's WebSocket protocol in a few lines of plain JS.
   A turn resumed elsewhere (a staff approval in the console) arrives on the same socket. */
(function () {
  "use strict";
  var root = document.getElementById("demo-chat");
  if (!root || !window.WebSocket) return;
  var list = root.querySelector("#demo-messages");
  var form = root.querySelector("#demo-composer");
  var status = root.querySelector("#demo-status");
  var conversationId = null, reply = null, socket = null;

  function add(cls, text) {
    var li = document.createElement("li");
    li.className = "demo-message " + cls;
    if (text !== undefined) li.textContent = text;
    list.appendChild(li);
    li.scrollIntoView({ block: "nearest" });
    return li;
  }
  function send(event) {
    if (conversationId) event.conversation_id = conversationId;
    socket.send(JSON.stringify(event));
  }
  function confirmation(event) {
    var li = add("demo-message--confirm");
    var who = event.approver === "staff" ? "waits for a staff approval" : "needs your confirmation";
    li.appendChild(document.createElement("strong")).textContent = event.mutation;
    li.appendChild(document.createTextNode(" " + who + "."));
    li.appendChild(document.createElement("pre")).textContent = JSON.stringify(event.preview, null, 2);
    if (event.approver !== "client") return;
    [["Confirm", true], ["Reject", false]].forEach(function (choice) {
      var button = li.appendChild(document.createElement("button"));
      button.type = "button";
      button.textContent = choice[0];
      button.addEventListener("click", function () {
        li.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
        send({ type: "confirm", confirmation_id: event.id, confirmed: choice[1] });
      });
    });
  }
  function handle(event) {
    if (event.conversation_id) conversationId = event.conversation_id;
    if (event.type === "text_chunk") {
      if (!reply) reply = add("demo-message--assistant", "");
      else if (event.reset) reply.textContent = "";
      reply.textContent += event.content || "";
    } else if (event.type === "tool_call") {
      add("demo-message--tool", "Using " + event.name + "…");
      reply = null;
    } else if (event.type === "confirm_mutation") {
      confirmation(event);
      reply = null;
    } else if (event.type === "confirmation_resolved") {
      add("demo-message--note", "Decision: " + event.status + (event.decided_by ? " by " + event.decided_by : ""));
      reply = null;
    } else if (event.type === "done") {
      reply = null;
    } else if (event.type === "error") {
      add("demo-message--error", event.message || event.code).setAttribute("role", "alert");
      reply = null;
    }
  }
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + root.dataset.socketPath);
    socket.addEventListener("open", function () { status.textContent = "connected"; });
    socket.addEventListener("message", function (message) { handle(JSON.parse(message.data)); });
    socket.addEventListener("close", function () {
      status.textContent = "disconnected, reconnecting…";
      setTimeout(connect, 2000);
    });
  }
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var field = form.querySelector("textarea");
    var text = field.value.trim();
    if (!text || socket.readyState !== WebSocket.OPEN) return;
    add("demo-message--user", text);
    field.value = "";
    reply = null;
    send({ type: "message", text: text });
  });
  connect();
})();
