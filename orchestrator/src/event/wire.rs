//! Serde for [`Event`]: CloudEvents structured JSON in Arvo's key order.
//!
//! Key order: id, source, specversion, type, subject, datacontenttype, dataschema, data, time, to,
//! accesscontrol, redirectto, executionunits, traceparent, tracestate, parentid, domain, then the
//! custom extensions. Optional attributes are written as `null` when unset, as arvo-core does.

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Deserializer, Serialize};

use super::validate::wire_raw::RawEvent;
use super::{Event, SPEC_VERSION};

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let e = &*self.0;
        let mut map = serializer.serialize_map(Some(17 + e.extensions.len()))?;
        map.serialize_entry("id", &e.id)?;
        map.serialize_entry("source", &e.source)?;
        map.serialize_entry("specversion", SPEC_VERSION)?;
        map.serialize_entry("type", &e.r#type)?;
        map.serialize_entry("subject", &e.subject)?;
        map.serialize_entry("datacontenttype", &e.datacontenttype)?;
        map.serialize_entry("dataschema", &e.dataschema)?;
        map.serialize_entry("data", &e.data)?;
        map.serialize_entry("time", &e.time)?;
        map.serialize_entry("to", &e.to)?;
        map.serialize_entry("accesscontrol", &e.accesscontrol)?;
        map.serialize_entry("redirectto", &e.redirectto)?;
        map.serialize_entry("executionunits", &e.executionunits)?;
        map.serialize_entry("traceparent", &e.traceparent)?;
        map.serialize_entry("tracestate", &e.tracestate)?;
        map.serialize_entry("parentid", &e.parentid)?;
        map.serialize_entry("domain", &e.domain)?;
        for (key, value) in &e.extensions {
            map.serialize_entry(key, &ExtRef(value))?;
        }
        map.end()
    }
}

struct ExtRef<'a>(&'a super::ExtensionValue);

impl Serialize for ExtRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use super::ExtensionValue as V;
        match self.0 {
            V::Null => serializer.serialize_unit(),
            V::Bool(b) => serializer.serialize_bool(*b),
            V::Number(n) => n.serialize(serializer),
            V::String(s) => serializer.serialize_str(s),
        }
    }
}

/// Deserializing validates every rule; a broken rule is a deserialization error listing them all.
impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match RawEvent::deserialize(deserializer)? {
            RawEvent::Fields(draft) => draft.finish().map_err(serde::de::Error::custom),
            RawEvent::NotAnObject(found) => {
                Err(serde::de::Error::custom(format!("event must be a JSON object, got {found}")))
            }
        }
    }
}
