// Calls to the admin JSON API with the session cookie and the session's CSRF token.
"use strict";

const tipbench = (() => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;

  // FastAPI answers {"detail": "..."} or, for a body that fails validation,
  // {"detail": [{"loc": [...], "msg": "..."}]}: one readable line either way.
  function detailText(body, status) {
    const detail = body && body.detail;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) {
      return detail
        .map((e) => `${(e.loc || []).filter((p) => p !== "body").join(".")}: ${e.msg}`)
        .join("; ");
    }
    return `request failed (HTTP ${status})`;
  }

  async function request(method, path, body) {
    const headers = { Accept: "application/json" };
    if (method !== "GET") headers["X-CSRF-Token"] = csrf;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(path, {
      method,
      headers,
      credentials: "same-origin",
      cache: "no-store", // polled state must never come from the browser's cache
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 401) {
      // The session ended (expired or logged out elsewhere): log in again, then come back.
      window.location.assign(`/login?next=${encodeURIComponent(window.location.pathname)}`);
      throw new Error("session ended, log in again");
    }
    const type = response.headers.get("content-type") || "";
    const data = type.includes("application/json") ? await response.json() : await response.text();
    if (!response.ok) throw new Error(detailText(data, response.status));
    return data;
  }

  // A small element builder: el("td", {class: "num"}, "3.2") — text is always text, never HTML.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  // An identifier (a model spec, a prompt version, an experiment): it may wrap after a `:`
  // or a `-`, never inside a word ("llamacpp:smoll / m2-135m" read as two names). Each part
  // keeps its line; a <wbr> after it is where a line may end. `_pages.ident` does the same
  // for the templates.
  function ident(text, attrs) {
    const parts = String(text).split(/(?<=[:-])/);
    const node = el("span", { ...attrs, class: `ident${attrs && attrs.class ? ` ${attrs.class}` : ""}` });
    parts.forEach((part, i) => {
      if (i) node.append(document.createElement("wbr"));
      node.append(el("span", {}, part));
    });
    return node;
  }

  function show(node, message) {
    node.textContent = message || "";
    node.hidden = !message;
  }

  return {
    el,
    ident,
    show,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
  };
})();
