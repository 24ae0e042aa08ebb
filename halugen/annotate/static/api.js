// The one way both pages talk to the server: JSON in and out, the X-Halugen header on every
// request (the server refuses POSTs without it, and a cross-site page cannot send it).
// Plain script, no build; loaded before app.js and organiser.js.
"use strict";

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;  // 0: the server could not be reached
  }
}

async function apiCall(method, path, body) {
  const init = { method, credentials: "same-origin", headers: { "X-Halugen": "1" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "the server cannot be reached");
  }
  let data = null;
  try {
    data = await resp.json();
  } catch (e) {
    data = null;
  }
  if (!resp.ok) {
    const message = (data && typeof data.error === "string") ? data.error : "error " + resp.status;
    throw new ApiError(resp.status, message);
  }
  return data;
}
