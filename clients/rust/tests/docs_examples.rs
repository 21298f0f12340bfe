//! Every example exchange of docs/protocol.md decodes into the crate's types
//! and encodes back to the same JSON: a member the types name wrongly, or
//! lose, fails here.
use mcp_sidecar_client::protocol::decode;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

struct Message {
    line: usize,
    from_host: bool,
    body: String,
}

fn exchanges(text: &str) -> Vec<Vec<Message>> {
    let mut out = Vec::new();
    let mut cur: Option<Vec<Message>> = None;
    for (i, line) in text.lines().enumerate() {
        match cur.as_mut() {
            None => {
                if line.trim() == "```jsonrpc" {
                    cur = Some(Vec::new());
                }
            }
            Some(msgs) => {
                if line.trim() == "```" {
                    out.push(cur.take().unwrap());
                } else if let Some(rest) = line.strip_prefix("-->") {
                    msgs.push(Message { line: i + 1, from_host: true, body: rest.to_string() });
                } else if let Some(rest) = line.strip_prefix("<--") {
                    msgs.push(Message { line: i + 1, from_host: false, body: rest.to_string() });
                } else {
                    let last = msgs.last_mut().expect("a block starts with a message");
                    last.body.push('\n');
                    last.body.push_str(line);
                }
            }
        }
    }
    out
}

/// JSON equality where 1 and 1.0 are the same number.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).map_or(false, |w| same(v, w)))
        }
        _ => a == b,
    }
}

#[test]
fn doc_examples_decode_and_encode_back() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/protocol.md");
    let text = std::fs::read_to_string(path).expect("docs/protocol.md");
    let mut checked = 0;
    let mut failures = Vec::new();
    for block in exchanges(&text) {
        // Requests answered as bad input show that answer: their params are
        // not meant to decode.
        let mut refused = HashSet::new();
        for m in &block {
            let msg: Value = serde_json::from_str(&m.body).unwrap_or_else(|e| panic!("docs/protocol.md:{}: {e}", m.line));
            let kind = msg.pointer("/error/data/kind").and_then(Value::as_str).unwrap_or("");
            if ["invalid_params", "invalid_request", "method_not_found", "not_initialized", "parse_error"].contains(&kind) {
                refused.insert(msg["id"].to_string());
            }
        }
        // id text -> (direction of the request, method)
        let mut requests: HashMap<String, (&str, String)> = HashMap::new();
        for m in &block {
            let msg: Value = serde_json::from_str(&m.body).unwrap_or_else(|e| panic!("docs/protocol.md:{}: {e}", m.line));
            let id = msg.get("id").filter(|id| !id.is_null()).map(|id| id.to_string());
            let dir = if m.from_host { "hostToSidecar" } else { "sidecarToHost" };
            let (d, kind, method, part) = match (msg.get("method").and_then(Value::as_str), id) {
                (Some(method), None) => (dir, "notification", method.to_string(), msg.get("params")),
                (Some(method), Some(id)) => {
                    if refused.contains(&id) {
                        continue;
                    }
                    requests.insert(id, (dir, method.to_string()));
                    (dir, "params", method.to_string(), msg.get("params"))
                }
                (None, Some(id)) => {
                    if msg.get("error").is_some() {
                        continue;
                    }
                    let (d, method) = requests.get(&id).cloned().unwrap_or_else(|| panic!("docs/protocol.md:{}: answer to no request", m.line));
                    (d, "result", method, msg.get("result"))
                }
                (None, None) => continue,
            };
            let part = part.cloned().unwrap_or(Value::Null);
            match decode(d, kind, &method, &part.to_string()) {
                None => failures.push(format!("docs/protocol.md:{}: {method} ({kind}) is not in the crate's types", m.line)),
                Some(Err(e)) => failures.push(format!("docs/protocol.md:{}: {method} {kind}: {e}", m.line)),
                Some(Ok(again)) if !same(&again, &part) => failures.push(format!(
                    "docs/protocol.md:{}: {method} {kind} encodes back differently:\n  was   {part}\n  again {again}",
                    m.line
                )),
                Some(Ok(_)) => checked += 1,
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 50, "only {checked} message parts checked");
}
