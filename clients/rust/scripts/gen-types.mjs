#!/usr/bin/env node
// Generates src/protocol.rs (serde types of the host protocol) from the
// repository's schema/protocol.schema.json.
//
//   node clients/rust/scripts/gen-types.mjs          write the file
//   node clients/rust/scripts/gen-types.mjs --check  exit 1 if it is not what the schema gives
//
// CI runs --check, so the types cannot drift from the schema. Mapping:
//   object with properties  -> struct (optional members Option<T>, skipped when None;
//                              an open object keeps unknown members in `extra`)
//   object without          -> serde_json::Map, or BTreeMap<String, T> for additionalProperties
//   string enum             -> enum with Other(String), so values added later still parse
//   anyOf, type lists       -> #[serde(untagged)] enum; T | null -> Option<T>
//   anyOf of $refs told apart by a member with a const value, the last an
//   open object             -> enum with a variant per value and Unknown(Value);
//                              the variants' structs leave that member out
//   const                   -> String; a required one must hold that value (so an
//                              untagged union goes on to its next variant)
//   no type (any JSON)      -> serde_json::Value; members in EXACT_BYTES -> Box<RawValue>
// Deserializing never refuses unknown members: a host must tolerate additions
// (docs/protocol.md, "Versioning").
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const crateDir = path.join(here, '..');
const doc = JSON.parse(readFileSync(path.join(crateDir, '..', '..', 'schema', 'protocol.schema.json'), 'utf8'));

// Members whose bytes must go out exactly as the host wrote them.
const EXACT_BYTES = new Set(['ToolsCallParams.sandboxState']);

const KEYWORDS = new Set(
  'as break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while async await dyn abstract become box do final macro override priv typeof unsized virtual yield try'.split(
    ' ',
  ),
);

const pascal = (s) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('')
    .replace(/^(\d)/, 'V$1');
const snake = (s) => {
  let out = s
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .toLowerCase();
  if (KEYWORDS.has(out)) out = `r#${out}`;
  return out;
};

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

const defPrefix = '#/$defs/';

/**
 * The discriminated union s is, or null: {member, variants: [{name, value,
 * optional}], fallback}. The variants are the $defs whose member (the same
 * in each) has a const value, the fallback the last option, whose member
 * is any string. Only the variant whose member is optional takes a value
 * without it. (The TypeScript generator reads the schema the same way.)
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

// The structs that are variants of a discriminated union (they leave the
// member out: the enum writes it), and the unions' fallbacks (Unknown(Value)).
const variantOf = new Map(); // struct name -> {union, member}
const fallbacks = new Set();
for (const [name, s] of Object.entries(doc.$defs)) {
  const d = discriminated(s);
  if (!d) continue;
  for (const v of d.variants) variantOf.set(v.name, { union: name, member: d.member });
  fallbacks.add(d.fallback);
}

const items = []; // generated Rust items, in order
const defined = new Map(); // type name -> {kind, defaultable, eq}

function docComment(text, indent = '') {
  if (!text) return [];
  return text.split('\n').map((l) => `${indent}/// ${l}`);
}

/** Rust type for schema s; name is the name to give a type this schema needs. */
function rustType(s, name, ctx) {
  if (s === undefined || s === true) return { t: 'Value', def: true, eq: true };
  if (s.$ref) {
    const target = s.$ref.slice(defPrefix.length);
    if (!s.$ref.startsWith(defPrefix)) throw new Error(`$ref ${s.$ref}`);
    if (variantOf.has(target) || fallbacks.has(target)) {
      throw new Error(`${target} is a kind of a discriminated union: refer to the union, not to it`);
    }
    define(target, doc.$defs[target]);
    const info = defined.get(target);
    return { t: target, def: info.defaultable, eq: info.eq };
  }
  if (s.enum) {
    defineEnum(name, s);
    return { t: name, def: false, eq: true };
  }
  if (s.const !== undefined) return { t: 'String', def: true, eq: true };
  if (unionOf(s)) return untagged(name, unionOf(s), s.description);
  const types = s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
  if (types.length === 0) {
    if (ctx && EXACT_BYTES.has(ctx)) return { t: 'Box<RawValue>', def: false, eq: false };
    return { t: 'Value', def: true, eq: true };
  }
  const nonNull = types.filter((t) => t !== 'null');
  if (nonNull.length < types.length) {
    if (nonNull.length === 0) return { t: '()', def: true, eq: true };
    const inner = rustType({ ...s, type: nonNull.length === 1 ? nonNull[0] : nonNull }, name, ctx);
    return { t: `Option<${inner.t}>`, def: true, eq: inner.eq, nullable: true };
  }
  if (types.length > 1) return untagged(name, types.map((t) => ({ ...s, type: t })), s.description);
  switch (types[0]) {
    case 'string':
      return { t: 'String', def: true, eq: true };
    case 'integer':
      return { t: 'i64', def: true, eq: true };
    case 'number':
      return { t: 'f64', def: true, eq: true };
    case 'boolean':
      return { t: 'bool', def: true, eq: true };
    case 'array': {
      const inner = rustType(s.items, `${name}Item`, null);
      return { t: `Vec<${inner.t}>`, def: true, eq: inner.eq };
    }
    case 'object': {
      if (s.properties && Object.keys(s.properties).length > 0) {
        defineStruct(name, s);
        const info = defined.get(name);
        return { t: name, def: info.defaultable, eq: info.eq };
      }
      const ap = s.additionalProperties;
      if (ap && ap !== true) {
        const inner = rustType(ap, `${name}Value`, null);
        return { t: `BTreeMap<String, ${inner.t}>`, def: true, eq: inner.eq };
      }
      if (ap === false) {
        defineStruct(name, s);
        return { t: name, def: true, eq: true };
      }
      return { t: 'Map<String, Value>', def: true, eq: true };
    }
  }
  throw new Error(`type ${types[0]}`);
}

function define(name, s) {
  if (defined.has(name)) return;
  if (fallbacks.has(name)) return; // the union's Unknown(Value)
  const d = discriminated(s);
  if (d) return defineTagged(name, s, d);
  const isStruct = s.type === 'object' && !unionOf(s) && !s.enum && (s.properties || s.additionalProperties === false);
  if (isStruct) return defineStruct(name, s);
  if (s.enum) return defineEnum(name, s);
  if (unionOf(s)) return void untagged(name, unionOf(s), s.description);
  if (s.properties) throw new Error(`$defs/${name} has properties but is not an object type: the generator does not know its shape`);
  defined.set(name, { kind: 'pending', defaultable: true, eq: true }); // until its type is known
  const t = rustType(s, name, null);
  if (t.t === name) return; // the schema defined the type itself (anyOf)
  defined.set(name, { kind: 'alias', defaultable: t.def, eq: t.eq });
  items.push([...docComment(s.description), `pub type ${name} = ${t.t};`].join('\n'));
}

function defineStruct(name, s) {
  if (defined.has(name)) return;
  defined.set(name, { kind: 'struct', defaultable: true, eq: true });
  const req = new Set(s.required ?? []);
  const fields = [];
  let defaultable = true;
  let eq = true;
  const seen = new Set();
  for (const [prop, ps] of Object.entries(s.properties ?? {})) {
    if (variantOf.get(name)?.member === prop) continue; // the union's enum writes it
    const field = snake(prop);
    if (seen.has(field)) throw new Error(`${name}: two members map to ${field}`);
    seen.add(field);
    const t = rustType(ps, `${name}${pascal(prop)}`, `${name}.${prop}`);
    eq &&= t.eq;
    const lines = docComment(ps.description, '    ');
    const attrs = [];
    if (field.replace(/^r#/, '') !== prop) attrs.push(`rename = ${JSON.stringify(prop)}`);
    let ty = t.t;
    if (req.has(prop) && typeof ps.const === 'string') {
      // A const member holds that value or the struct does not parse, so
      // that an untagged union of it goes on to its next variant (an
      // InputRequiredResult is never a complete CallToolResult).
      attrs.push(`deserialize_with = ${JSON.stringify(constReader(ps.const))}`);
    }
    if (!req.has(prop)) {
      if (!t.nullable) ty = `Option<${ty}>`;
      attrs.push('default', 'skip_serializing_if = "Option::is_none"');
    } else {
      defaultable &&= t.def;
    }
    if (attrs.length) lines.push(`    #[serde(${attrs.join(', ')})]`);
    lines.push(`    pub ${field}: ${ty},`);
    fields.push(lines.join('\n'));
  }
  if (s.additionalProperties === undefined || s.additionalProperties === true) {
    fields.push('    /// Members this version of the protocol does not name, as received.\n    #[serde(flatten)]\n    pub extra: Map<String, Value>,');
  }
  defined.set(name, { kind: 'struct', defaultable, eq });
  const derives = ['Debug', 'Clone', ...(eq ? ['PartialEq'] : []), ...(defaultable ? ['Default'] : []), 'Serialize', 'Deserialize'];
  items.push(
    [...docComment(s.description), `#[derive(${derives.join(', ')})]`, `pub struct ${name} {`, ...fields, '}'].join('\n'),
  );
}

// The readers of required const members: value -> function name.
const constReaders = new Map();

function constReader(value) {
  if (!constReaders.has(value)) constReaders.set(value, `const_${snake(value).replace(/^r#/, '')}`);
  return constReaders.get(value);
}

function constReaderItems() {
  return [...constReaders].map(([value, fn]) =>
    [
      `/// Reads a member whose value must be ${JSON.stringify(value)} (the schema's const).`,
      `fn ${fn}<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {`,
      '    let v = String::deserialize(d)?;',
      `    if v == ${JSON.stringify(value)} {`,
      '        Ok(v)',
      '    } else {',
      `        Err(serde::de::Error::custom(format!("expected ${JSON.stringify(value).replace(/"/g, '\\"')}, got {v:?}")))`,
      '    }',
      '}',
    ].join('\n'),
  );
}

function defineTagged(name, s, d) {
  defined.set(name, { kind: 'enum', defaultable: false, eq: true });
  const m = JSON.stringify(d.member);
  const variants = d.variants.map((v) => ({ ...v, variant: pascal(String(v.value)) }));
  if (variants.some((v) => v.variant === 'Unknown')) throw new Error(`${name}: a kind named Unknown`);
  let eq = true;
  for (const v of variants) {
    define(v.name, doc.$defs[v.name]);
    eq &&= defined.get(v.name).eq;
  }
  defined.set(name, { kind: 'enum', defaultable: false, eq });
  const optional = variants.find((v) => v.optional);
  const lines = [
    ...docComment(s.description),
    '///',
    `/// Told apart by \`${d.member}\`${optional ? ` (absent: \`${optional.variant}\`)` : ''}: a value whose \`${d.member}\` this version does not`,
    `/// know (a later version's), or whose members do not match it, is \`Unknown\`, as received.`,
    `#[derive(Debug, Clone${eq ? ', PartialEq' : ''})]`,
    `pub enum ${name} {`,
    ...variants.map((v) => `    /// \`${d.member}\`: ${JSON.stringify(v.value)}\n    ${v.variant}(${v.name}),`),
    '    Unknown(Value),',
    '}',
    '',
    `impl ${name} {`,
    `    /// The \`${d.member}\` member, as on the wire (\`None\` for an \`Unknown\` value without a string one).`,
    '    pub fn kind(&self) -> Option<&str> {',
    '        match self {',
    ...variants.map((v) => `            ${name}::${v.variant}(_) => Some(${JSON.stringify(v.value)}),`),
    `            ${name}::Unknown(v) => v.get(${m}).and_then(Value::as_str),`,
    '        }',
    '    }',
    '}',
    '',
    `impl Serialize for ${name} {`,
    '    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {',
    '        let (tag, value) = match self {',
    ...variants.map((v) => `            ${name}::${v.variant}(x) => (${JSON.stringify(v.value)}, serde_json::to_value(x)),`),
    `            ${name}::Unknown(v) => return v.serialize(serializer),`,
    '        };',
    '        let mut value = value.map_err(serde::ser::Error::custom)?;',
    '        if let Value::Object(map) = &mut value {',
    `            map.insert(${m}.to_string(), Value::String(tag.to_string()));`,
    '        }',
    '        value.serialize(serializer)',
    '    }',
    '}',
    '',
    `impl<'de> Deserialize<'de> for ${name} {`,
    "    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {",
    '        let mut map = match Value::deserialize(deserializer)? {',
    '            Value::Object(map) => map,',
    `            other => return Ok(${name}::Unknown(other)),`,
    '        };',
    `        let tag = map.remove(${m});`,
    '        let mut rest = Value::Object(map);',
    '        let decoded = match tag.as_ref().map(Value::as_str) {',
    ...variants.map((v) => `            Some(Some(${JSON.stringify(v.value)})) => ${v.name}::deserialize(&rest).ok().map(${name}::${v.variant}),`),
    ...(optional ? [`            None => ${optional.name}::deserialize(&rest).ok().map(${name}::${optional.variant}),`] : []),
    '            _ => None,',
    '        };',
    '        if let Some(v) = decoded {',
    '            return Ok(v);',
    '        }',
    '        if let (Some(tag), Value::Object(map)) = (tag, &mut rest) {',
    `            map.insert(${m}.to_string(), tag);`,
    '        }',
    `        Ok(${name}::Unknown(rest))`,
    '    }',
    '}',
  ];
  items.push(lines.join('\n'));
}

function defineEnum(name, s) {
  if (defined.has(name)) return;
  defined.set(name, { kind: 'enum', defaultable: false, eq: true });
  const variants = s.enum.map((v) => [pascal(String(v)), String(v)]);
  const lines = [
    ...docComment(s.description),
    '/// Values a later version adds parse as `Other`.',
    '#[derive(Debug, Clone, PartialEq, Eq, Hash)]',
    `pub enum ${name} {`,
    ...variants.map(([v, raw]) => `    /// \`${raw}\`\n    ${v},`),
    '    Other(String),',
    '}',
    '',
    `impl ${name} {`,
    '    /// The value as it goes on the wire.',
    '    pub fn as_str(&self) -> &str {',
    '        match self {',
    ...variants.map(([v, raw]) => `            ${name}::${v} => ${JSON.stringify(raw)},`),
    `            ${name}::Other(s) => s,`,
    '        }',
    '    }',
    '}',
    '',
    `impl From<&str> for ${name} {`,
    '    fn from(s: &str) -> Self {',
    '        match s {',
    ...variants.map(([v, raw]) => `            ${JSON.stringify(raw)} => ${name}::${v},`),
    `            other => ${name}::Other(other.to_string()),`,
    '        }',
    '    }',
    '}',
    '',
    `impl Serialize for ${name} {`,
    '    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {',
    '        serializer.serialize_str(self.as_str())',
    '    }',
    '}',
    '',
    `impl<'de> Deserialize<'de> for ${name} {`,
    "    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {",
    '        let s = String::deserialize(deserializer)?;',
    `        Ok(${name}::from(s.as_str()))`,
    '    }',
    '}',
  ];
  items.push(lines.join('\n'));
}

function untagged(name, options, description) {
  if (defined.has(name) && defined.get(name).kind !== 'pending') {
    const info = defined.get(name);
    return { t: name, def: info.defaultable, eq: info.eq };
  }
  defined.set(name, { kind: 'enum', defaultable: false, eq: true });
  const variants = [];
  let eq = true;
  // serde tries untagged variants in order: the ones that require more
  // members go first, or an all-optional struct would take everything.
  const strictness = (o) => {
    const t = o.$ref ? doc.$defs[o.$ref.slice(defPrefix.length)] : o;
    return t && t.required ? t.required.length : 0;
  };
  options = [...options].map((o, i) => [o, i]).sort((a, b) => strictness(b[0]) - strictness(a[0]) || a[1] - b[1]).map(([o]) => o);
  for (const o of options) {
    const kind = o.$ref ? o.$ref.slice(defPrefix.length) : Array.isArray(o.type) ? 'Value' : o.type;
    const vname = { boolean: 'Bool', string: 'String', integer: 'Integer', number: 'Number', object: 'Object', array: 'Array' }[kind] ?? pascal(kind);
    const t = rustType(o, `${name}${vname}`, null);
    eq &&= t.eq;
    variants.push(`    ${vname}(${t.t}),`);
  }
  defined.set(name, { kind: 'enum', defaultable: false, eq });
  items.push(
    [...docComment(description), `#[derive(Debug, Clone${eq ? ', PartialEq' : ''}, Serialize, Deserialize)]`, '#[serde(untagged)]', `pub enum ${name} {`, ...variants, '}'].join('\n'),
  );
  return { t: name, def: false, eq };
}

for (const [name, s] of Object.entries(doc.$defs)) define(name, s);

// Message schemas that are not a $ref get a type of their own.
function messageType(s, name) {
  return rustType(s, name, null).t;
}

const methodName = (m) => pascal(m.replace(/^mcp\//, '').replace(/^\$\//, ''));

const reqLines = ['/// The requests of the host, one type each (see `Request`).', 'pub mod requests {', '    use super::*;'];
for (const r of doc.requests) {
  const n = methodName(r.method);
  const p = messageType(r.params, `${n}Params`);
  const res = messageType(r.result, `${n}Result`);
  reqLines.push(
    '',
    ...docComment(r.documentation, '    '),
    `    pub struct ${n};`,
    `    impl Request for ${n} {`,
    `        const METHOD: &'static str = ${JSON.stringify(r.method)};`,
    `        type Params = ${p};`,
    `        type Result = ${res};`,
    '    }',
  );
}
reqLines.push('}');

const hostReqLines = [
  '/// The requests of the sidecar to the host, one type each (see `HostMethod`).',
  'pub mod host_requests {',
  '    use super::*;',
];
for (const r of doc.hostRequests) {
  const n = methodName(r.method);
  hostReqLines.push(
    '',
    ...docComment(r.documentation, '    '),
    `    pub struct ${n};`,
    `    impl HostMethod for ${n} {`,
    `        const METHOD: &'static str = ${JSON.stringify(r.method)};`,
    `        type Params = ${messageType(r.params, `${n}Params`)};`,
    `        type Result = ${messageType(r.result, `${n}Result`)};`,
    '    }',
  );
}
hostReqLines.push('}');

function messageEnum(enumName, list, what, paramsOf) {
  const lines = [
    `/// ${what}, parsed by method. Methods a later version adds are \`Other\`.`,
    '#[derive(Debug, Clone)]',
    `pub enum ${enumName} {`,
  ];
  const arms = [];
  for (const m of list) {
    const v = methodName(m.method);
    lines.push(...docComment(m.documentation, '    '), `    ${v}(${messageType(paramsOf(m), `${v}Params`)}),`);
    arms.push(`            ${JSON.stringify(m.method)} => ${enumName}::${v}(serde_json::from_value(params)?),`);
  }
  lines.push('    Other { method: String, params: Value },', '}', '');
  lines.push(
    `impl ${enumName} {`,
    '    /// Parses a message of this kind from its method and params.',
    `    pub fn parse(method: &str, params: Value) -> Result<${enumName}, serde_json::Error> {`,
    '        Ok(match method {',
    ...arms,
    `            _ => ${enumName}::Other { method: method.to_string(), params },`,
    '        })',
    '    }',
    '}',
  );
  return lines.join('\n');
}

const header = `// Code generated by clients/rust/scripts/gen-types.mjs from schema/protocol.schema.json. DO NOT EDIT.

//! The types of the host protocol (docs/protocol.md), generated from its
//! schema: every params and result, the requests as types implementing
//! \`Request\`, and the notifications and sidecar requests as enums.

#![allow(clippy::large_enum_variant)]

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The protocol version this crate was generated for (initialize's \`protocolVersion\`).
pub const PROTOCOL_VERSION: i64 = ${doc.protocolVersion};

/// A request of the host: its method and the types of its params and result.
pub trait Request {
    const METHOD: &'static str;
    type Params: Serialize;
    type Result: DeserializeOwned;
}

/// A request of the sidecar to the host: its method and the types of its
/// params and of the result the host answers.
pub trait HostMethod {
    const METHOD: &'static str;
    type Params: DeserializeOwned;
    type Result: Serialize;
}
`;

const errorLines = [
  '/// The error kinds of the protocol (`data.kind`) and their codes (`None`: the MCP server\'s own).',
  'pub const ERRORS: &[(&str, Option<i64>)] = &[',
  ...doc.errors.map((e) => `    (${JSON.stringify(e.kind)}, ${e.code === null ? 'None' : `Some(${e.code})`}),`),
  '];',
];

const sidecarNotes = doc.notifications.filter((n) => n.messageDirection === 'sidecarToHost');

// decode: every message's text into its type, by method (tests check the
// documented examples with it).
function decodeFn() {
  const arms = [];
  const add = (dir, kind, method, s, name) => arms.push(`        (${JSON.stringify(dir)}, ${JSON.stringify(kind)}, ${JSON.stringify(method)}) => d::<${messageType(s, name)}>(text),`);
  for (const r of doc.requests) {
    const n = methodName(r.method);
    add('hostToSidecar', 'params', r.method, r.params, `${n}Params`);
    add('hostToSidecar', 'result', r.method, r.result, `${n}Result`);
  }
  for (const r of doc.hostRequests) {
    const n = methodName(r.method);
    add('sidecarToHost', 'params', r.method, r.params, `${n}Params`);
    add('sidecarToHost', 'result', r.method, r.result, `${n}Result`);
  }
  for (const m of doc.notifications) {
    add(m.messageDirection, 'notification', m.method, m.params, `${methodName(m.method)}Params`);
  }
  return [
    '/// Decodes the JSON text of one message part into its type and encodes it',
    '/// again: `direction` is who sent the request or notification',
    '/// ("hostToSidecar", "sidecarToHost"), `kind` is "params", "result" or',
    '/// "notification". `None` for a method this version does not have.',
    'pub fn decode(direction: &str, kind: &str, method: &str, text: &str) -> Option<Result<Value, serde_json::Error>> {',
    '    fn d<T: DeserializeOwned + Serialize>(text: &str) -> Result<Value, serde_json::Error> {',
    '        let v: T = serde_json::from_str(text)?;',
    '        let again = serde_json::to_string(&v)?;',
    '        serde_json::from_str(&again)',
    '    }',
    '    Some(match (direction, kind, method) {',
    ...arms,
    '        _ => return None,',
    '    })',
    '}',
  ].join('\n');
}
const body = [
  header,
  ...items,
  ...constReaderItems(),
  reqLines.join('\n'),
  hostReqLines.join('\n'),
  messageEnum('Notification', sidecarNotes, 'A notification of the sidecar', (n) => n.params),
  messageEnum('HostRequest', doc.hostRequests, 'A request of the sidecar to the host', (r) => r.params),
  errorLines.join('\n'),
  decodeFn(),
].join('\n\n');

const target = path.join(crateDir, 'src', 'protocol.rs');
const text = body + '\n';
if (process.argv.includes('--check')) {
  let have = '';
  try {
    have = readFileSync(target, 'utf8');
  } catch {}
  if (have !== text) {
    console.error('clients/rust/src/protocol.rs is not what schema/protocol.schema.json gives: run node clients/rust/scripts/gen-types.mjs');
    process.exit(1);
  }
  process.exit(0);
}
writeFileSync(target, text);
