// The chat API over fetch, with the browser session as a Bearer token (no cookies). Errors come
// back as ApiError carrying the API's {error, message}.

const TOKEN_KEY = 'agora.session';

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message || `The server answered ${status}.`);
    this.status = status;
    this.code = body?.error;
    this.field = body?.field;
  }
}

export const session = {
  get: () => localStorage.getItem(TOKEN_KEY),
  set: (token) => localStorage.setItem(TOKEN_KEY, token),
  clear: () => localStorage.removeItem(TOKEN_KEY),
};

/// Called when the server says the session is no longer valid.
let onUnauthorized = () => {};
export function whenUnauthorized(f) {
  onUnauthorized = f;
}

export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const token = session.get();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, { error: 'offline', message: 'The server cannot be reached; check the connection.' });
  }
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (!res.ok) {
    if (res.status === 401 && token) onUnauthorized();
    throw new ApiError(res.status, data);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body ?? {});
export const patch = (path, body) => api('PATCH', path, body);
export const del = (path) => api('DELETE', path);

/// A query string from an object, skipping empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
