// Reads the sidecar's stdout: LSP framing (Content-Length headers), where a
// message that cannot be read fails alone. vscode-jsonrpc's own reader
// stops at a bad header and repairs invalid UTF-8 silently; this one finds
// the next Content-Length after a bad header (as the sidecar does with what
// a host sends), skips bodies over the limit without holding them, and
// hands every message it cannot read to onFailure with the id it could
// recover, so that the client fails that request, or answers that request
// of the sidecar, and goes on.
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-jsonrpc/node';

/** Longest header line. */
const MAX_HEADER_LINE = 8 << 10;
const CONTENT_LENGTH = 'content-length';

/**
 * A message from the sidecar that the client could not read: a frame that
 * does not parse, a body that is not UTF-8 or not a JSON object. It fails
 * alone: the request it answers (when its id could be read) rejects with
 * it, and the connection goes on.
 */
export class MalformedMessageError extends Error {
  /** The id of the message, when it could be read. */
  readonly id: string | number | undefined;

  constructor(message: string, id?: string | number) {
    super(message);
    this.name = 'MalformedMessageError';
    this.id = id;
  }
}

/** A message that could not be read, with what is known of it. */
export interface ReadFailure {
  error: MalformedMessageError;
  /** The message's id, when it could be read. */
  id?: string | number;
  /** The message has a method: with an id, a request of the sidecar. */
  request: boolean;
}

type State =
  | { kind: 'header'; length: number | undefined }
  | { kind: 'body'; length: number }
  | { kind: 'skip'; left: number }
  | { kind: 'resync' };

export class FrameReader extends AbstractMessageReader {
  readonly #readable: NodeJS.ReadableStream;
  readonly #maxBytes: number;
  readonly #onFailure: (failure: ReadFailure) => void;
  #chunks: Buffer[] = [];
  #size = 0;
  #state: State = { kind: 'header', length: undefined };
  #callback: DataCallback | undefined;

  constructor(readable: NodeJS.ReadableStream, maxBytes: number, onFailure: (failure: ReadFailure) => void) {
    super();
    this.#readable = readable;
    this.#maxBytes = maxBytes;
    this.#onFailure = onFailure;
  }

  listen(callback: DataCallback): Disposable {
    this.#callback = callback;
    const onData = (chunk: Buffer) => this.#onData(chunk);
    const onError = (err: Error) => this.fireError(err);
    const onClose = () => this.fireClose();
    this.#readable.on('data', onData);
    this.#readable.on('error', onError);
    this.#readable.on('close', onClose);
    return {
      dispose: () => {
        this.#readable.off('data', onData);
        this.#readable.off('error', onError);
        this.#readable.off('close', onClose);
      },
    };
  }

  /** Hands a message to the connection as if it had been read. */
  inject(message: Message): void {
    this.#callback?.(message);
  }

  #onData(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#step()) {
      // Each step consumes what it can; false when it needs more bytes.
    }
  }

  /** The buffered bytes as one Buffer. */
  #bytes(): Buffer {
    if (this.#chunks.length > 1) this.#chunks = [Buffer.concat(this.#chunks, this.#size)];
    return this.#chunks[0] ?? Buffer.alloc(0);
  }

  #take(n: number): Buffer {
    const all = this.#bytes();
    const taken = all.subarray(0, n);
    const rest = all.subarray(n);
    this.#chunks = rest.length ? [rest] : [];
    this.#size = rest.length;
    return taken;
  }

  #fail(error: MalformedMessageError, id?: string | number, request = false): void {
    this.#onFailure(id === undefined ? { error, request } : { error, id, request });
  }

  /** Advances the state machine once; false when more bytes are needed. */
  #step(): boolean {
    const s = this.#state;
    switch (s.kind) {
      case 'skip': {
        if (this.#size === 0) return false;
        const n = Math.min(s.left, this.#size);
        this.#take(n);
        if (n === s.left) this.#state = { kind: 'header', length: undefined };
        else s.left -= n;
        return true;
      }
      case 'resync': {
        if (this.#size === 0) return false;
        const all = this.#bytes();
        const at = indexOfIgnoreCase(all, CONTENT_LENGTH);
        if (at < 0) {
          // Keep what may be the start of the header, drop the rest.
          this.#take(Math.max(0, all.length - (CONTENT_LENGTH.length - 1)));
          return false;
        }
        this.#take(at);
        this.#state = { kind: 'header', length: undefined };
        return true;
      }
      case 'body': {
        if (this.#size < s.length) return false;
        const body = this.#take(s.length);
        this.#state = { kind: 'header', length: undefined };
        this.#deliver(body);
        return true;
      }
      case 'header': {
        if (this.#size === 0) return false;
        const all = this.#bytes();
        const nl = all.indexOf(0x0a);
        if (nl < 0) {
          if (all.length > MAX_HEADER_LINE) return this.#badHeader(`header line longer than ${MAX_HEADER_LINE} bytes`);
          return false;
        }
        if (nl > MAX_HEADER_LINE) return this.#badHeader(`header line longer than ${MAX_HEADER_LINE} bytes`);
        // CRLF as LSP says, or LF alone.
        const line = all.subarray(0, nl > 0 && all[nl - 1] === 0x0d ? nl - 1 : nl).toString('latin1');
        this.#take(nl + 1);
        if (line === '') {
          if (s.length === undefined) return this.#badHeader('frame header has no Content-Length', true);
          if (s.length > this.#maxBytes) {
            // Skipped without being held, so that the next frame can be read.
            this.#state = { kind: 'skip', left: s.length };
            this.#fail(new MalformedMessageError(`the sidecar sent a frame of ${s.length} bytes, over the limit of ${this.#maxBytes}`));
            return true;
          }
          this.#state = { kind: 'body', length: s.length };
          return true;
        }
        const colon = line.indexOf(':');
        if (colon < 0) return this.#badHeader(`header line ${JSON.stringify(line)} has no colon`);
        // Content-Type and any other header are allowed and ignored, as in LSP.
        if (line.slice(0, colon).trim().toLowerCase() === CONTENT_LENGTH) {
          const value = line.slice(colon + 1).trim();
          if (!/^\d+$/.test(value)) return this.#badHeader(`Content-Length ${JSON.stringify(value)} is not a number`);
          s.length = Number(value);
        }
        return true;
      }
    }
  }

  /** A header that does not parse: report it, then look for the next one. */
  #badHeader(why: string, plain = false): boolean {
    this.#fail(new MalformedMessageError(plain ? `the sidecar sent a ${why}` : `the sidecar sent a bad frame header: ${why}`));
    this.#state = { kind: 'resync' };
    return true;
  }

  #deliver(body: Buffer): void {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(body);
    } catch {
      return this.#undecodable(body, 'a message that is not UTF-8');
    }
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (err) {
      return this.#undecodable(body, `a message that is not JSON (${(err as Error).message})`);
    }
    if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
      return this.#undecodable(body, 'a message that is not a JSON object');
    }
    this.#callback?.(msg as Message);
  }

  #undecodable(body: Buffer, why: string): void {
    const { id, request } = recoverId(new TextDecoder('utf-8').decode(body));
    this.#fail(new MalformedMessageError(`the sidecar sent ${why}: ${excerpt(body)}`, id), id, request);
  }
}

/** The start of a message, for an error that quotes it. */
function excerpt(body: Buffer): string {
  const max = 200;
  const text = new TextDecoder('utf-8').decode(body.subarray(0, max));
  return body.length > max ? `${text}...` : text;
}

/** Where needle (lowercase ASCII) first occurs in hay, in any case; -1 if nowhere. */
function indexOfIgnoreCase(hay: Buffer, needle: string): number {
  const n = needle.length;
  outer: for (let i = 0; i + n <= hay.length; i++) {
    for (let j = 0; j < n; j++) {
      const b = hay[i + j]!;
      if ((b >= 0x41 && b <= 0x5a ? b | 0x20 : b) !== needle.charCodeAt(j)) continue outer;
    }
    return i;
  }
  return -1;
}

/**
 * The id of a message that does not decode, and whether it has a method
 * (a request of the sidecar). The text parses when only its UTF-8 was bad
 * (it is lossy here); otherwise its top-level members are read up to the
 * first error.
 */
export function recoverId(text: string): { id?: string | number; request: boolean } {
  try {
    const msg: unknown = JSON.parse(text);
    if (typeof msg === 'object' && msg !== null && !Array.isArray(msg)) {
      const { id, method } = msg as { id?: unknown; method?: unknown };
      const request = method !== undefined;
      return typeof id === 'string' || typeof id === 'number' ? { id, request } : { request };
    }
    return { request: false };
  } catch {
    // Broken JSON: read what comes before the break.
  }
  const s = new Scanner(text);
  let id: string | number | undefined;
  let request = false;
  if (!s.eat('{')) return { request };
  for (;;) {
    const key = s.string();
    if (key === undefined || !s.eat(':')) break;
    const value = s.value();
    if (value === undefined) break;
    if (key === '"id"' && /^("|-|\d)/.test(value)) {
      try {
        const v: unknown = JSON.parse(value);
        if (typeof v === 'string' || typeof v === 'number') id = v;
      } catch {
        // Not an id after all.
      }
    }
    if (key === '"method"') request = true;
    if (!s.eat(',')) break;
  }
  return id === undefined ? { request } : { id, request };
}

/** Reads JSON tokens from the start of a text that may break off anywhere. */
class Scanner {
  #i = 0;
  constructor(readonly text: string) {}

  #ws(): void {
    while (this.#i < this.text.length && /\s/.test(this.text[this.#i]!)) this.#i++;
  }

  eat(c: string): boolean {
    this.#ws();
    if (this.text[this.#i] !== c) return false;
    this.#i++;
    return true;
  }

  /** A string token, quotes included. */
  string(): string | undefined {
    this.#ws();
    const from = this.#i;
    if (this.text[this.#i] !== '"') return undefined;
    for (this.#i++; this.#i < this.text.length; this.#i++) {
      const c = this.text[this.#i];
      if (c === '\\') this.#i++;
      else if (c === '"') return this.text.slice(from, ++this.#i);
    }
    return undefined;
  }

  /** One value's text: a string, a scalar, or an object or array skipped to its end. */
  value(): string | undefined {
    this.#ws();
    const from = this.#i;
    const c = this.text[this.#i];
    if (c === undefined) return undefined;
    if (c === '"') return this.string();
    if (c === '{' || c === '[') {
      let depth = 0;
      while (this.#i < this.text.length) {
        const d = this.text[this.#i];
        if (d === '"') {
          if (this.string() === undefined) return undefined;
          continue;
        }
        if (d === '{' || d === '[') depth++;
        if (d === '}' || d === ']') {
          depth--;
          if (depth === 0) return this.text.slice(from, ++this.#i);
        }
        this.#i++;
      }
      return undefined;
    }
    while (this.#i < this.text.length && !/[,}\]\s]/.test(this.text[this.#i]!)) this.#i++;
    // A scalar at the very end may have been cut short.
    return this.#i > from && this.#i < this.text.length ? this.text.slice(from, this.#i) : undefined;
  }
}
