// The HTTP API: bearer token from the session, problem+json errors, query tokens
// for the URLs a browser fetches by itself (EventSource, <img>).

const TOKEN_KEY = "photo-pipeline.token";

export class ApiProblem extends Error {
  constructor(status, problem) {
    const code = problem?.code || `http_${status}`;
    const detail = problem?.detail || problem?.title || "the request failed";
    super(`${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.problem = problem || {};
  }
}

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
    queryToken = null;
  },
};

/** Fired on ``window`` when the server refuses the token: show the sign-in again. */
export const UNAUTHORIZED = "photo-pipeline:unauthorized";

export async function request(method, path, { body, query, signal, token } = {}) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const one of Array.isArray(value) ? value : [value]) url.searchParams.append(name, one);
  }
  const headers = { Accept: "application/json" };
  const bearer = token ?? session.token;
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let answer;
  try {
    answer = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiProblem(0, { code: "network_error", detail: "the server cannot be reached" });
  }
  const text = await answer.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { detail: text.slice(0, 200) };
    }
  }
  if (!answer.ok) {
    if (answer.status === 401 && token === undefined) {
      window.dispatchEvent(new CustomEvent(UNAUTHORIZED));
    }
    throw new ApiProblem(answer.status, data);
  }
  return data;
}

export const get = (path, query, options = {}) => request("GET", path, { query, ...options });
export const post = (path, body, options = {}) => request("POST", path, { body, ...options });

let queryToken = null; // {access_token, expires_at}

/** A signed, short-lived token for ?access_token= (never the API token itself). */
export async function accessToken() {
  const margin = 10 * 60; // renew ten minutes before it expires
  if (!queryToken || queryToken.expires_at - margin < Date.now() / 1000) {
    queryToken = await get("/api/access-token");
  }
  return queryToken.access_token;
}

/** The cached query token, for building many <img> URLs synchronously. */
export function withAccessToken(path) {
  if (!path || !queryToken) return null;
  const sep = path.includes("?") ? "&" : "?";
  return `${path}${sep}access_token=${encodeURIComponent(queryToken.access_token)}`;
}
