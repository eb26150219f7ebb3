// SchedMate failure chat: POST /v1/chat, render the answer. Log text is only ever set as textContent.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const store = window.localStorage;

  function newSession() {
    const bytes = new Uint8Array(6);
    window.crypto.getRandomValues(bytes);
    return "web-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }
  $("session").value = store.getItem("schedmate-chat-session") || newSession();
  store.setItem("schedmate-chat-session", $("session").value);
  $("new-session").addEventListener("click", () => {
    $("session").value = newSession();
    store.setItem("schedmate-chat-session", $("session").value);
    $("answers").replaceChildren();
  });

  function show(section, visible) { section.hidden = !visible; }

  function render(a) {
    const node = $("answer-template").content.firstElementChild.cloneNode(true);
    node.querySelector(".question").textContent = a.question;
    node.querySelector(".text").textContent = a.text;
    const thin = node.querySelector(".thin");
    if (a.thin_evidence) { thin.textContent = "Thin evidence: " + a.thin_evidence + "."; show(thin, true); }
    const body = node.querySelector(".citations tbody");
    for (const c of a.citations) {
      const tr = document.createElement("tr");
      tr.className = c.role; tr.dataset.line = String(c.number);
      const num = document.createElement("td"); num.className = "num"; num.textContent = String(c.number);
      const text = document.createElement("td"); text.textContent = c.text;
      tr.append(num, text); body.append(tr);
    }
    show(node.querySelector(".quoted"), a.citations.length > 0);
    const steps = node.querySelector(".steps"), notes = node.querySelector(".plan-notes");
    for (const s of a.plan_steps) { const li = document.createElement("li"); li.textContent = s; steps.append(li); }
    for (const s of a.plan_notes) { const li = document.createElement("li"); li.textContent = s; notes.append(li); }
    show(node.querySelector(".plan"), a.plan_steps.length + a.plan_notes.length > 0);
    if (a.similar) {
      const ul = node.querySelector(".similar ul");
      for (const s of a.similar) {
        const li = document.createElement("li");
        li.textContent = `job ${s.job_id} · similarity ${s.score.toFixed(2)} · ${s.reason || s.category || "unclassified"}` +
          ` · ended ${s.final_status || "unknown"}`;
        ul.append(li);
      }
      if (!a.similar.length) { const li = document.createElement("li"); li.textContent = "none in the history"; ul.append(li); }
      show(node.querySelector(".similar"), true);
    }
    const n = node.querySelector(".notes");
    const allNotes = [...a.notes]; if (a.model_note) allNotes.push(a.model_note);
    if (allNotes.length) { n.textContent = "Notes: " + allNotes.join("; "); show(n, true); }
    node.querySelector(".provenance").textContent = `answered by the ${a.answered_by}` +
      (a.tools_run.length ? ` · tools: ${a.tools_run.join(", ")}` : "") + ` · session ${a.session_id}` +
      (a.persisted ? "" : " (not saved)");
    $("answers").prepend(node);
  }

  $("ask-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = $("status");
    const body = { session_id: $("session").value.trim(), question: $("question").value.trim() };
    if ($("log").value.trim()) body.log = $("log").value.trim();
    if ($("job").value.trim()) body.job_id = $("job").value.trim();
    const headers = { "Content-Type": "application/json" };
    const token = $("token").value || window.sessionStorage.getItem("schedmate-token");
    if (token) headers.Authorization = "Bearer " + token;
    status.className = ""; status.textContent = "diagnosing…"; $("ask").disabled = true;
    try {
      const res = await fetch("/v1/chat", { method: "POST", headers, body: JSON.stringify(body) });
      const data = await res.json().catch(() => ({ reason: res.statusText }));
      if (res.status === 401) { $("token-row").hidden = false; throw new Error("this service needs its API token"); }
      if (!res.ok) {
        const reason = Array.isArray(data.detail) ? data.detail.map((d) => d.msg).join("; ") : data.reason;
        throw new Error(reason || res.statusText);
      }
      if ($("token").value) window.sessionStorage.setItem("schedmate-token", $("token").value);
      render(data);
      status.textContent = "";
    } catch (err) {
      status.className = "error"; status.textContent = String(err.message || err);
    } finally {
      $("ask").disabled = false;
    }
  });
})();
