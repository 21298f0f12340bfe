// Comparison helpers: what may legitimately differ between two runs of the
// same reference server (clock times in generated resources, HTTP session
// ids) is masked; everything else, key order included, must be identical.

const timeRe = /\b\d{1,2}:\d{2}:\d{2}(\s?[AP]M)?\b/g;
const uuidRe = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;
const sessionRe = /session (undefined|[^\s]+)/g;

function maskText(s) {
  return s.replace(timeRe, '<time>').replace(uuidRe, '<uuid>').replace(sessionRe, 'session <id>');
}

/** A copy of v with volatile text masked, base64 blobs decoded first. */
export function mask(v) {
  if (typeof v === 'string') return maskText(v);
  if (Array.isArray(v)) return v.map(mask);
  if (v && typeof v === 'object') {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === 'blob' && typeof x === 'string') {
        const text = Buffer.from(x, 'base64').toString('utf8');
        // Only textual blobs carry times; binary ones compare as they are.
        out[k] = /^[\x09\x0a\x0d\x20-\x7e]*$/.test(text) ? `base64:${maskText(text)}` : x;
      } else {
        out[k] = mask(x);
      }
    }
    return out;
  }
  return v;
}

/** Canonical text of v, key order kept: equal strings mean equal JSON with equal order. */
export const canon = (v) => JSON.stringify(v);

/**
 * Asserts that got and want are the same JSON, key order included, with a
 * short message around the first difference (full texts are unreadable).
 */
export function assertSameJSON(got, want, what = 'value') {
  const a = canon(got);
  const b = canon(want);
  if (a === b) return;
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 60);
  const err = new Error(
    `${what} differs at character ${i}:\n  sidecar: …${String(a).slice(from, i + 80)}\n  direct:  …${String(b).slice(from, i + 80)}`,
  );
  err.name = 'AssertionError';
  throw err;
}

/** v with object keys sorted at every level, for order-blind comparison. */
function sorted(v) {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]));
  }
  return v;
}

/**
 * Asserts that got and want are the same JSON value, key order aside. For
 * what the direct TypeScript SDK client itself reorders: it validates
 * server requests with zod, which rebuilds objects in the schema's key
 * order, so its view of an elicitation's requestedSchema is not the bytes
 * the server sent (the sidecar's is, over stdio).
 */
export function assertSameJSONUnordered(got, want, what = 'value') {
  assertSameJSON(sorted(got), sorted(want), what);
}
