#!/usr/bin/env node
// Generates src/protocol.ts (TypeScript types of the host protocol) from
// the repository's schema/protocol.schema.json, and copies the schema next
// to package.json so the package ships it.
//
//   node scripts/gen-types.mjs          write the files
//   node scripts/gen-types.mjs --check  exit 1 if they are not what the schema gives
//
// CI runs --check, so the types cannot drift from the schema. The mapping
// covers what the schema uses: $ref, type (one or several), enum, const,
// anyOf, properties / required / additionalProperties, items, description.
//
// An anyOf of $refs whose types all have one member with a const value
// (type, mode) but the last, an open object, is a discriminated union with
// a fallback for kinds a later version adds (ContentBlock): besides the
// union it gives the union of the known kinds (KnownContentBlock), their
// values (CONTENT_BLOCK_TYPES) and a type guard (isKnownContentBlock) to
// narrow with before a switch on the member.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.join(here, '..');
const schemaPath = path.join(pkgDir, '..', '..', 'schema', 'protocol.schema.json');
const schemaText = readFileSync(schemaPath, 'utf8');
const doc = JSON.parse(schemaText);

const out = [];
const emit = (s = '') => out.push(s);

function comment(text, indent = '') {
  if (!text) return;
  const lines = text.split('\n');
  if (lines.length === 1) {
    emit(`${indent}/** ${text.replace(/\*\//g, '*\\/')} */`);
    return;
  }
  emit(`${indent}/**`);
  for (const l of lines) emit(`${indent} * ${l.replace(/\*\//g, '*\\/')}`);
  emit(`${indent} */`);
}

const defPrefix = '#/$defs/';

/**
 * The options of a union, or null: anyOf whose options only add
 * constraints (required members) to a typed schema does not make a union.
 */
function unionOf(s) {
  const options = s.anyOf ?? s.oneOf;
  if (!options) return null;
  const shapes = options.some((o) => o.type !== undefined || o.$ref || o.enum || o.properties);
  return shapes ? options : null;
}

/**
 * The discriminated union s is, or null: {member, variants: [{name, value,
 * optional}], fallback}. The variants are the $defs whose member (the same
 * in each) has a const value, the fallback the last option, whose member
 * is any string. Only the variant whose member is optional takes a value
 * without it.
 */
function discriminated(s) {
  const options = s.anyOf;
  if (!options || options.length < 2 || !options.every((o) => o.$ref)) return null;
  const defs = options.map((o) => [o.$ref.slice(defPrefix.length), doc.$defs[o.$ref.slice(defPrefix.length)]]);
  const [fallbackName, fallback] = defs[defs.length - 1];
  const known = defs.slice(0, -1);
  const members = Object.entries(known[0][1].properties ?? {}).filter(([, p]) => p.const !== undefined).map(([m]) => m);
  const member = members.find((m) => known.every(([, d]) => d.properties?.[m]?.const !== undefined) && fallback.properties?.[m]?.type === 'string');
  if (!member) return null;
  const variants = known.map(([name, d]) => ({ name, value: d.properties[member].const, optional: !(d.required ?? []).includes(member) }));
  if (variants.filter((v) => v.optional).length > 1) throw new Error(`more than one variant of a union leaves ${member} out`);
  return { member, variants, fallback: fallbackName };
}

const constantCase = (s) => s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[^A-Za-z0-9]+/g, '_').toUpperCase();

/** The TypeScript type of a schema, at the given indentation. */
function typeOf(s, indent) {
  if (s === true || s === undefined) return 'unknown';
  if (s === false) return 'never';
  if (s.$ref) {
    if (!s.$ref.startsWith(defPrefix)) throw new Error(`$ref ${s.$ref} does not point into $defs`);
    return s.$ref.slice(defPrefix.length);
  }
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  const union = unionOf(s);
  if (union) return [...new Set(union.map((x) => typeOf(x, indent)))].join(' | ');
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  if (types.length === 0) return 'unknown';
  return types.map((t) => primitive(t, s, indent)).join(' | ');
}

function primitive(t, s, indent) {
  switch (t) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `Array<${typeOf(s.items, indent)}>`;
    case 'object':
      return objectType(s, indent);
  }
  throw new Error(`unknown type ${t}`);
}

function objectType(s, indent) {
  const props = s.properties ?? {};
  const names = Object.keys(props);
  const ap = s.additionalProperties;
  // Open objects (MCP objects passed through) take members this version
  // does not know.
  const extra = ap === false ? null : ap === undefined || ap === true ? 'unknown' : typeOf(ap, indent + '  ');
  if (names.length === 0) {
    if (extra === null) return 'Record<string, never>';
    return `{ [key: string]: ${extra} }`;
  }
  const req = new Set(s.required ?? []);
  const lines = ['{'];
  for (const name of names) {
    const p = props[name];
    const desc = p.description ?? (p.$ref ? undefined : undefined);
    if (desc) lines.push(...commentLines(desc, indent + '  '));
    const key = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
    lines.push(`${indent}  ${key}${req.has(name) ? '' : '?'}: ${typeOf(p, indent + '  ')};`);
  }
  if (extra !== null) lines.push(`${indent}  [key: string]: ${extra === 'unknown' ? 'unknown' : `${extra} | undefined`};`);
  lines.push(`${indent}}`);
  return lines.join('\n');
}

function commentLines(text, indent) {
  const saved = out.length;
  comment(text, indent);
  return out.splice(saved);
}

emit('// Code generated by scripts/gen-types.mjs from schema/protocol.schema.json. DO NOT EDIT.');
emit('//');
emit('// The host protocol of mcp-sidecar: docs/protocol.md specifies it in words.');
emit('');
emit(`/** The protocol version this package was generated for (initialize's protocolVersion). */`);
emit(`export const PROTOCOL_VERSION = ${JSON.stringify(doc.protocolVersion)};`);
emit('');

for (const [name, s] of Object.entries(doc.$defs)) {
  comment(s.description);
  const isObject = s.type === 'object' && !unionOf(s) && !s.enum;
  if (isObject) {
    const t = objectType(s, '');
    if (t.startsWith('{\n')) {
      emit(`export interface ${name} ${t}`);
    } else {
      emit(`export type ${name} = ${t};`);
    }
  } else {
    if (s.properties) throw new Error(`$defs/${name} has properties but is not an object type: the generator does not know its shape`);
    emit(`export type ${name} = ${typeOf(s, '')};`);
  }
  emit('');
  const d = discriminated(s);
  if (d) {
    const values = `${constantCase(name)}_${constantCase(d.member)}S`;
    emit(`/** The ${name} kinds this version knows (without ${d.fallback}). */`);
    emit(`export type Known${name} = ${d.variants.map((v) => v.name).join(' | ')};`);
    emit('');
    emit(`/** The ${d.member} of each kind of Known${name}. */`);
    emit(`export const ${values} = ${JSON.stringify(d.variants.map((v) => v.value))} as const;`);
    emit('');
    const optional = d.variants.find((v) => v.optional);
    emit(`/**`);
    emit(` * Whether the value is of a kind this version knows${optional ? ` (without ${d.member}: ${optional.name})` : ''}:`);
    emit(` * narrow with it, then switch on ${d.member}. A kind a later version adds comes as ${d.fallback}.`);
    emit(` */`);
    emit(`export function isKnown${name}(value: ${name}): value is Known${name} {`);
    emit(`  const tag = (value as { ${d.member}?: unknown }).${d.member};`);
    emit(`  return tag === undefined ? ${optional ? 'true' : 'false'} : (${values} as readonly unknown[]).includes(tag);`);
    emit('}');
    emit('');
  }
}

function messageType(s) {
  return typeOf(s, '  ');
}

emit('/** Requests from the host to the sidecar: params and result of each method. */');
emit('export interface RequestMap {');
for (const r of doc.requests) {
  comment(r.documentation, '  ');
  emit(`  ${JSON.stringify(r.method)}: { params: ${messageType(r.params)}; result: ${messageType(r.result)} };`);
}
emit('}');
emit('');
emit('/** Requests from the sidecar to the host: params and the result the host answers. */');
emit('export interface HostRequestMap {');
for (const r of doc.hostRequests) {
  comment(r.documentation, '  ');
  emit(`  ${JSON.stringify(r.method)}: { params: ${messageType(r.params)}; result: ${messageType(r.result)} };`);
}
emit('}');
emit('');
for (const [dir, title] of [
  ['sidecarToHost', 'SidecarNotificationMap'],
  ['hostToSidecar', 'HostNotificationMap'],
]) {
  emit(`/** Notifications ${dir === 'sidecarToHost' ? 'from the sidecar to the host' : 'from the host to the sidecar'}: the params of each. */`);
  emit(`export interface ${title} {`);
  for (const n of doc.notifications.filter((n) => n.messageDirection === dir)) {
    comment(n.documentation, '  ');
    emit(`  ${JSON.stringify(n.method)}: ${messageType(n.params)};`);
  }
  emit('}');
  emit('');
}
emit('/** The error kinds of the protocol (data.kind), with their codes (null: the MCP server\'s own). */');
emit('export const ERRORS = {');
for (const e of doc.errors) {
  emit(`  ${e.kind}: ${JSON.stringify(e.code)},`);
}
emit('} as const;');
emit('');
emit('/** An error kind (data.kind). Later versions may add kinds: handle unknown ones by retryable. */');
emit('export type ErrorKind = keyof typeof ERRORS;');
emit('');
emit('/** The error kinds each request may get beyond the common ones. */');
emit('export const REQUEST_ERRORS: { readonly [M in keyof RequestMap]: readonly ErrorKind[] } = {');
for (const r of doc.requests) {
  emit(`  ${JSON.stringify(r.method)}: ${JSON.stringify(r.errors)},`);
}
emit('};');
emit('');
emit('/** The error kinds any request may get. */');
emit(`export const COMMON_ERRORS: readonly ErrorKind[] = ${JSON.stringify(doc.commonErrors)};`);

const generated = out.join('\n') + '\n';
const targets = [
  [path.join(pkgDir, 'src', 'protocol.ts'), generated],
  [path.join(pkgDir, 'protocol.schema.json'), schemaText],
];
if (process.argv.includes('--check')) {
  let stale = false;
  for (const [file, want] of targets) {
    let have = '';
    try {
      have = readFileSync(file, 'utf8');
    } catch {}
    if (have !== want) {
      console.error(`${path.relative(process.cwd(), file)} is not what schema/protocol.schema.json gives: run node scripts/gen-types.mjs`);
      stale = true;
    }
  }
  process.exit(stale ? 1 : 0);
}
for (const [file, text] of targets) writeFileSync(file, text);
