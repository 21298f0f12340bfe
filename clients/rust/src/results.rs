//! Helpers on the generated types for what a harness does most: read a
//! tool's result without matching every kind of content, answer an
//! elicitation, tell a finished task.

use serde::de::DeserializeOwned;
use std::collections::BTreeMap;

use crate::protocol::{CallToolResult, ContentBlock, ElicitResult, ElicitResultAction, ElicitValue, TaskStatus};

impl CallToolResult {
    /// The text of the result's text blocks, joined with newlines (other
    /// kinds of content are left out): what most hosts give the model.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .flatten()
            .filter_map(|block| match block {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// `structuredContent` decoded as `T` (the tool's `outputSchema`);
    /// `Ok(None)` when the server sent none.
    pub fn structured<T: DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        match &self.structured_content {
            Some(map) => T::deserialize(&serde_json::Value::Object(map.clone())).map(Some),
            None => Ok(None),
        }
    }

    /// Whether the tool ran and failed (`isError`).
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

impl ElicitResult {
    fn with(action: ElicitResultAction, content: Option<BTreeMap<String, ElicitValue>>) -> Self {
        ElicitResult {
            action,
            content,
            meta: None,
            extra: Default::default(),
        }
    }

    /// The user submitted the form with these values (a URL elicitation:
    /// an empty map, which is sent as no content).
    pub fn accept(content: BTreeMap<String, ElicitValue>) -> Self {
        let content = if content.is_empty() { None } else { Some(content) };
        Self::with(ElicitResultAction::Accept, content)
    }

    /// The user declined explicitly.
    pub fn decline() -> Self {
        Self::with(ElicitResultAction::Decline, None)
    }

    /// The user dismissed it without a choice.
    pub fn cancel() -> Self {
        Self::with(ElicitResultAction::Cancel, None)
    }
}

impl From<&str> for ElicitValue {
    fn from(s: &str) -> Self {
        ElicitValue::String(s.to_string())
    }
}

impl From<String> for ElicitValue {
    fn from(s: String) -> Self {
        ElicitValue::String(s)
    }
}

impl From<bool> for ElicitValue {
    fn from(b: bool) -> Self {
        ElicitValue::Bool(b)
    }
}

impl From<i64> for ElicitValue {
    fn from(n: i64) -> Self {
        ElicitValue::Integer(n)
    }
}

impl From<f64> for ElicitValue {
    fn from(n: f64) -> Self {
        ElicitValue::Number(n)
    }
}

impl From<Vec<String>> for ElicitValue {
    fn from(v: Vec<String>) -> Self {
        ElicitValue::Array(v)
    }
}

impl TaskStatus {
    /// Whether the task is over (completed, failed or cancelled): its
    /// status does not change again.
    pub fn is_final(&self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }
}
