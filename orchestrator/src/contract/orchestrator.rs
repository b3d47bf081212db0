//! Orchestrator contracts: `arvo.orc.<name>` init, `arvo.orc.<name>.done` completion,
//! `sys.arvo.orc.<name>.error`, and the nullable `parentSubject$$` on the init payload.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Prefix of every orchestrator event type; reserved for orchestrator contracts.
pub const ORCHESTRATOR_PREFIX: &str = "arvo.orc";
/// The key of the parent subject in an init payload.
pub const PARENT_SUBJECT_KEY: &str = "parentSubject$$";

/// `arvo.orc.<name>`.
pub fn init_type(name: &str) -> String {
    format!("{ORCHESTRATOR_PREFIX}.{name}")
}

/// `arvo.orc.<name>.done`.
pub fn complete_type(name: &str) -> String {
    format!("{ORCHESTRATOR_PREFIX}.{name}.done")
}

/// The init payload of an orchestrator: the user's payload plus `parentSubject$$`.
///
/// On the wire `parentSubject$$` is always present (`null` for a root workflow), as Arvo requires;
/// in Rust a root workflow simply uses [`OrchestratorInit::root`].
///
/// ```
/// use orchestrator::contract::OrchestratorInit;
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Start { values: Vec<f64> }
/// let init = OrchestratorInit::root(Start { values: vec![1.0] });
/// assert_eq!(serde_json::to_string(&init).unwrap(), r#"{"parentSubject$$":null,"values":[1.0]}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct OrchestratorInit<T> {
    /// The parent workflow's subject, for a child workflow.
    pub parent_subject: Option<String>,
    /// The user's payload.
    pub data: T,
}

impl<T> OrchestratorInit<T> {
    /// The init payload of a root workflow (no parent).
    pub fn root(data: T) -> Self {
        Self { parent_subject: None, data }
    }

    /// The init payload of a child of the workflow whose subject is `parent_subject`.
    pub fn child(data: T, parent_subject: impl Into<String>) -> Self {
        Self { parent_subject: Some(parent_subject.into()), data }
    }
}

impl<T: Serialize> Serialize for OrchestratorInit<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let data = match serde_json::to_value(&self.data).map_err(serde::ser::Error::custom)? {
            Value::Object(map) => map,
            other => {
                return Err(serde::ser::Error::custom(format!(
                    "an orchestrator init payload must serialize to a JSON object, not {other}"
                )));
            }
        };
        let mut map = Map::with_capacity(data.len() + 1);
        map.insert(
            PARENT_SUBJECT_KEY.to_owned(),
            self.parent_subject.clone().map_or(Value::Null, Value::String),
        );
        map.extend(data.into_iter().filter(|(k, _)| k != PARENT_SUBJECT_KEY));
        map.serialize(serializer)
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for OrchestratorInit<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::deserialize(deserializer)?;
        let parent_subject = match map.remove(PARENT_SUBJECT_KEY) {
            Some(Value::String(s)) => Some(s),
            Some(Value::Null) => None,
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "`{PARENT_SUBJECT_KEY}` must be a string or null, got {other}"
                )));
            }
            None => return Err(serde::de::Error::missing_field(PARENT_SUBJECT_KEY)),
        };
        let data = T::deserialize(Value::Object(map)).map_err(serde::de::Error::custom)?;
        Ok(Self { parent_subject, data })
    }
}

impl<T: JsonSchema> JsonSchema for OrchestratorInit<T> {
    fn schema_name() -> Cow<'static, str> {
        format!("OrchestratorInit_{}", T::schema_name()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let schema = with_parent_subject(T::json_schema(generator).to_value());
        Schema::try_from(schema).unwrap_or_default()
    }
}

/// Adds the required, nullable, non-empty `parentSubject$$` to an init payload's object schema,
/// first among the properties, as arvo-core does.
pub(crate) fn with_parent_subject(schema: Value) -> Value {
    let Value::Object(object) = schema else { return schema };
    let mut properties = Map::new();
    properties.insert(
        PARENT_SUBJECT_KEY.to_owned(),
        serde_json::json!({
            "anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}],
            "description": "Subject of the parent workflow for a child orchestration, or null for a root workflow",
        }),
    );
    let mut required = vec![Value::String(PARENT_SUBJECT_KEY.to_owned())];
    let mut out = Map::new();
    for (key, value) in object {
        match (key.as_str(), value) {
            ("properties", Value::Object(existing)) => {
                properties.extend(existing.into_iter().filter(|(k, _)| k != PARENT_SUBJECT_KEY));
            }
            ("required", Value::Array(existing)) => {
                required.extend(existing.into_iter().filter(|v| v != PARENT_SUBJECT_KEY));
            }
            (_, value) => {
                let is_type = key == "type";
                out.insert(key, value);
                if is_type {
                    out.insert("properties".into(), Value::Null);
                    out.insert("required".into(), Value::Null);
                }
            }
        }
    }
    out.insert("properties".into(), Value::Object(properties));
    out.insert("required".into(), Value::Array(required));
    Value::Object(out)
}
