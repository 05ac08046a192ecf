// The JSON API and its event streams, authenticated by the page's HttpOnly cookie (the page never sees
// the token). State-changing requests carry the CSRF header the server requires with cookies.

const HEADERS = { "X-Requested-With": "nexus" };

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function options(method, body, signal) {
  const init = { method, credentials: "same-origin", headers: { ...HEADERS }, signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  return init;
}

async function failure(response) {
  let message = response.statusText || "request failed";
  try {
    const data = await response.json();
    if (data && data.error) message = data.error;
  } catch {
    // not JSON: keep the status text
  }
  if (response.status === 401) message = "Your sign-in has expired. Reload the page to sign in again.";
  return new ApiError(response.status, message);
}

export async function api(method, path, body) {
  const response = await fetch(path, options(method, body));
  if (!response.ok) throw await failure(response);
  return response.json();
}

export const get = (path) => api("GET", path);

// Open an event stream (POST for a new message, GET to re-attach) and return the Response.
export async function openStream(method, path, body, signal) {
  const response = await fetch(path, options(method, body, signal));
  if (!response.ok) throw await failure(response);
  return response;
}

// Yield {id, event, chunk} for each data frame and {comment} for comment frames of a text/event-stream.
export async function* readEvents(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const frame = parseFrame(block);
        if (frame) yield frame;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function parseFrame(block) {
  let id = null;
  let event = null;
  let comment = null;
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) comment = line.slice(1).trim();
    else if (line.startsWith("id:")) id = Number(line.slice(3).trim());
    else if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  if (data.length) {
    try {
      return { id, event, chunk: JSON.parse(data.join("\n")) };
    } catch {
      return null;
    }
  }
  return comment !== null ? { comment } : null;
}
