//! The whole contract as one JSON document, in the shape of Arvo's `toJsonSchema()`.

use serde_json::{Value, json};

use super::{ArvoContract, VersionedContract};

impl VersionedContract {
    /// `{uri, description, version, domain, metadata, accepts, systemError, emits}`, each event as
    /// `{type, schema}` (Arvo's `VersionedArvoContract.toJsonSchema()`).
    pub fn to_json_schema(&self) -> Value {
        json!({
            "uri": self.uri(),
            "description": self.description(),
            "version": self.version_str(),
            "domain": self.domain(),
            "metadata": self.metadata(),
            "accepts": self.accepts().to_document(),
            "systemError": self.system_error().to_document(),
            "emits": self.emits().values().map(super::EventSchema::to_document).collect::<Vec<_>>(),
        })
    }
}

impl ArvoContract {
    /// `{uri, description, domain, metadata, versions: [{version, accepts, systemError, emits,
    /// metadata}]}` (Arvo's `ArvoContract.toJsonSchema()`), versions lowest first.
    pub fn to_json_schema(&self) -> Value {
        json!({
            "uri": self.uri(),
            "description": self.description(),
            "domain": self.domain(),
            "metadata": self.metadata(),
            "versions": self.versions().map(|v| json!({
                "version": v.version_str(),
                "accepts": v.accepts().to_document(),
                "systemError": v.system_error().to_document(),
                "emits": v.emits().values().map(super::EventSchema::to_document).collect::<Vec<_>>(),
                "metadata": v.metadata(),
            })).collect::<Vec<_>>(),
        })
    }
}
