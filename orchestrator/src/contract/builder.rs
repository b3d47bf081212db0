//! Declaring contracts at run time, with every rule checked and every problem reported.

use std::collections::BTreeMap;
use std::sync::Arc;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::orchestrator::ORCHESTRATOR_PREFIX;
use super::{
    ArvoContract, ContractError, ContractInner, ContractKind, EventSchema, SystemErrorPayload,
    VersionedContract, VersionedInner, system_error_type,
};
use crate::field_error::FieldError;
use crate::semver::SemVer;
use crate::{dataschema, rules, uri};

/// Declares an [`ArvoContract`]; [`ContractBuilder::build`] checks Arvo's rules.
///
/// ```
/// use orchestrator::contract::{ArvoContract, VersionBuilder};
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct AddInput { a: f64, b: f64 }
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct AddSuccess { sum: f64 }
///
/// let contract = ArvoContract::builder("#/calc/add", "com.calc.add")
///     .version(VersionBuilder::new("1.0.0").accepts::<AddInput>().emits::<AddSuccess>("evt.calc.add.success"))
///     .build()?;
/// assert_eq!(contract.version_str("latest")?.dataschema(), "#/calc/add/1.0.0");
///
/// let err = ArvoContract::builder("#/calc/add", "com.calc.add")
///     .version(VersionBuilder::new("0.0.0").accepts::<AddInput>())
///     .build()
///     .unwrap_err();
/// assert!(err.to_string().contains("reserved"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use]
pub struct ContractBuilder {
    uri: String,
    r#type: String,
    kind: ContractKind,
    domain: Option<String>,
    description: Option<String>,
    metadata: Map<String, Value>,
    versions: Vec<VersionBuilder>,
}

/// One version of a contract being declared.
#[derive(Debug)]
#[must_use]
pub struct VersionBuilder {
    version: String,
    accepts: Option<Value>,
    emits: Vec<(String, Value)>,
}

impl VersionBuilder {
    /// Starts version `version` (`X.Y.Z`).
    pub fn new(version: impl Into<String>) -> Self {
        Self { version: version.into(), accepts: None, emits: Vec::new() }
    }

    /// The accepted payload type (for an orchestrator contract: the init payload, without
    /// `parentSubject$$`, which is added).
    pub fn accepts<T: JsonSchema + ?Sized>(self) -> Self {
        self.accepts_schema(super::schema::schema_for::<T>())
    }

    /// The accepted payload's JSON Schema, given directly.
    pub fn accepts_schema(mut self, schema: Value) -> Self {
        self.accepts = Some(schema);
        self
    }

    /// An emitted event type and its payload type. For a simple contract the type is ignored
    /// (it is `evt.<root>.success`); for an orchestrator contract it is the completion.
    pub fn emits<T: JsonSchema + ?Sized>(self, event_type: impl Into<String>) -> Self {
        self.emits_schema(event_type, super::schema::schema_for::<T>())
    }

    /// An emitted event type and its JSON Schema, given directly.
    pub fn emits_schema(mut self, event_type: impl Into<String>, schema: Value) -> Self {
        self.emits.push((event_type.into(), schema));
        self
    }
}

impl ContractBuilder {
    pub(super) fn new(uri: String, r#type: String, kind: ContractKind) -> Self {
        Self {
            uri,
            r#type,
            kind,
            domain: None,
            description: None,
            metadata: Map::new(),
            versions: Vec::new(),
        }
    }

    /// Sets the contract's domain (`^[a-z0-9.]+$`).
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(domain.into());
        self
    }

    /// Sets the description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Adds a metadata entry. Arvo's own keys (`contractType`, `rootType`, …) are set last and win.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds a version.
    pub fn version(mut self, version: VersionBuilder) -> Self {
        self.versions.push(version);
        self
    }

    /// Checks every rule and builds the contract, or lists every broken rule.
    pub fn build(mut self) -> Result<ArvoContract, ContractError> {
        let mut errors = Vec::new();
        let mut metadata = std::mem::take(&mut self.metadata);
        for (key, value) in kind_metadata(&self.kind) {
            metadata.insert(key.to_owned(), value);
        }
        let what = format!("contract (uri={})", self.uri);
        if self.uri.is_empty() || !uri::is_valid_uri(&self.uri) {
            errors.push(FieldError::new("uri", "must be a non-empty, properly encoded URI", Some(&self.uri)));
        }
        match &self.kind {
            ContractKind::Orchestrator { root_type, .. } => {
                if !rules::is_orchestrator_name(root_type) {
                    errors.push(FieldError::new(
                        "name",
                        "must only contain lowercase alphanumeric characters and dots, e.g. test.orchestrator",
                        Some(root_type),
                    ));
                }
            }
            ContractKind::Simple { .. } | ContractKind::Plain => {
                if !rules::is_reverse_dns(&self.r#type) {
                    errors.push(FieldError::new("type", rules::REVERSE_DNS_RULE, Some(&self.r#type)));
                }
                if matches!(self.kind, ContractKind::Plain) && self.r#type.starts_with(ORCHESTRATOR_PREFIX) {
                    errors.push(FieldError::new(
                        "type",
                        "must not start with the reserved prefix 'arvo.orc' (use an orchestrator contract)",
                        Some(&self.r#type),
                    ));
                }
            }
        }
        if let Some(domain) = &self.domain
            && !rules::is_domain(domain)
        {
            errors.push(FieldError::new("domain", rules::DOMAIN_RULE, Some(domain)));
        }
        if self.versions.is_empty() {
            errors.push(FieldError::new(
                "versions",
                format!("An ArvoContract (uri={}) must have at least one version", self.uri),
                None,
            ));
        }

        let system_error = EventSchema::of::<SystemErrorPayload>(system_error_type(&self.r#type));
        let mut versions = BTreeMap::new();
        for v in self.versions {
            let field = format!("versions.{}", v.version);
            let version: SemVer = match v.version.parse() {
                Ok(version) => version,
                Err(e) => {
                    errors.push(FieldError::new(field, e.to_string(), None));
                    continue;
                }
            };
            if version.is_wildcard() {
                errors.push(FieldError::new(
                    field,
                    format!(
                        "In contract (uri={}), the version cannot be '0.0.0'. It is a reserved version type.",
                        self.uri
                    ),
                    None,
                ));
                continue;
            }
            if versions.contains_key(&version) {
                errors.push(FieldError::new(field, "is declared twice", None));
                continue;
            }
            let Some(accepts_schema) = v.accepts else {
                errors.push(FieldError::new(field, "has no accepted payload", None));
                continue;
            };
            let accepts_schema = match &self.kind {
                ContractKind::Orchestrator { .. } => super::orchestrator::with_parent_subject(accepts_schema),
                _ => accepts_schema,
            };
            let mut emits = IndexMap::new();
            match &self.kind {
                ContractKind::Simple { root_type } => {
                    if v.emits.len() != 1 {
                        errors.push(FieldError::new(
                            field.clone(),
                            "a simple contract version emits exactly one (success) payload",
                            None,
                        ));
                    }
                    for (_, schema) in v.emits {
                        let t = format!("evt.{root_type}.success");
                        emits.insert(t.clone(), EventSchema::from_schema(t, schema));
                    }
                }
                ContractKind::Orchestrator { complete_type, .. } => {
                    if v.emits.len() != 1 {
                        errors.push(FieldError::new(
                            field.clone(),
                            "an orchestrator contract version has exactly one completion payload",
                            None,
                        ));
                    }
                    for (_, schema) in v.emits {
                        emits.insert(
                            complete_type.clone(),
                            EventSchema::from_schema(complete_type.as_str(), schema),
                        );
                    }
                }
                ContractKind::Plain => {
                    for (t, schema) in v.emits {
                        if !rules::is_reverse_dns(&t) {
                            errors.push(FieldError::new(
                                format!("{field}.emits"),
                                rules::REVERSE_DNS_RULE,
                                Some(&t),
                            ));
                        } else if t.starts_with(ORCHESTRATOR_PREFIX) {
                            errors.push(FieldError::new(
                                format!("{field}.emits"),
                                "must not start with the reserved prefix 'arvo.orc'",
                                Some(&t),
                            ));
                        } else if t == self.r#type || emits.contains_key(&t) {
                            errors.push(FieldError::new(
                                format!("{field}.emits"),
                                "is declared twice",
                                Some(&t),
                            ));
                        }
                        emits.insert(t.clone(), EventSchema::from_schema(t, schema));
                    }
                }
            }
            let accepts = EventSchema::from_schema(self.r#type.as_str(), accepts_schema);
            for schema in std::iter::once(&accepts).chain(emits.values()) {
                if let Err(e) = schema.compile() {
                    errors.push(FieldError::new(
                        format!("{field}.{}", schema.event_type()),
                        format!("has an invalid JSON Schema: {e}"),
                        None,
                    ));
                }
            }
            let version_text = version.to_string();
            versions.insert(
                version,
                VersionedContract(Arc::new(VersionedInner {
                    dataschema: dataschema::build(&self.uri, &version_text),
                    system_error_dataschema: dataschema::wildcard(&self.uri),
                    uri: self.uri.clone(),
                    version,
                    version_text,
                    domain: self.domain.clone(),
                    description: self.description.clone(),
                    metadata: metadata.clone(),
                    kind: self.kind.clone(),
                    accepts,
                    emits,
                    system_error: system_error.clone(),
                })),
            );
        }
        ContractError::check(what, errors)?;
        Ok(ArvoContract(Arc::new(ContractInner {
            uri: self.uri,
            r#type: self.r#type,
            domain: self.domain,
            description: self.description,
            metadata,
            kind: self.kind,
            versions,
        })))
    }
}

fn kind_metadata(kind: &ContractKind) -> Vec<(&'static str, Value)> {
    match kind {
        ContractKind::Plain => Vec::new(),
        ContractKind::Simple { root_type } => {
            vec![("contractType", "SimpleArvoContract".into()), ("rootType", root_type.clone().into())]
        }
        ContractKind::Orchestrator { root_type, init_type, complete_type } => vec![
            ("contractType", "ArvoOrchestratorContract".into()),
            ("rootType", root_type.clone().into()),
            ("completeEventType", complete_type.clone().into()),
            ("initEventType", init_type.clone().into()),
        ],
    }
}
