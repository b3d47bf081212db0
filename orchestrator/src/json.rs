//! Serializing to JSON without losing values: serde_json writes a non-finite number (`NaN`,
//! `±inf`) as `null` without an error, so a value that cannot be represented would be saved or
//! sent changed and fail somewhere else later. [`to_value`] refuses it where it is produced,
//! naming where it is.
//!
//! ```
//! #[derive(serde::Serialize)]
//! struct Ctx { totals: Vec<f64> }
//! let err = orchestrator::json::to_value(&Ctx { totals: vec![1.0, f64::NAN] }).unwrap_err();
//! assert_eq!(err.to_string(), "`totals[1]` is NaN, which JSON cannot represent (it would become null)");
//! assert!(orchestrator::json::to_value(&Ctx { totals: vec![1.0] }).is_ok());
//! ```

use std::fmt::{self, Display};

use serde::Serialize;
use serde::ser::{self, Impossible};
use serde_json::Value;

/// Why a value cannot become JSON.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NotJson {
    /// A non-finite number, which JSON has no way to write (serde_json would write `null`).
    #[error("`{path}` is {value}, which JSON cannot represent (it would become null)")]
    NonFinite {
        /// Where the number is: fields and map keys joined by `.`, indexes as `[i]` (empty for
        /// the value itself).
        path: String,
        /// The number.
        value: f64,
    },
    /// The value's `Serialize` implementation failed (for example a map with non-string keys).
    #[error("cannot be serialized to JSON: {0}")]
    Serialize(String),
}

/// The payload of an event to emit (a service's answer, a request, a completion) that JSON
/// cannot represent: the failure of the code that produced it, reported to the workflow as a
/// system-error event naming the event type and the field (not a contract violation: the
/// payload's type is the contract's, its value is what went wrong).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the payload of '{event_type}' cannot be represented in JSON: {source}")]
pub struct NotRepresentable {
    /// The type of the event the payload was for.
    pub event_type: String,
    /// Where the value is and what it is ([`NotJson::NonFinite`]).
    pub source: NotJson,
}

/// [`to_value`] for the payload of an event of type `event_type`: `Err(Ok(_))` the payload is
/// not representable (a non-finite number: a failure of the code that produced it),
/// `Err(Err(message))` its `Serialize` implementation failed.
pub(crate) fn payload_value<T: Serialize + ?Sized>(
    event_type: &str,
    payload: &T,
) -> Result<Value, Result<NotRepresentable, String>> {
    match to_value(payload) {
        Ok(value) => Ok(value),
        Err(NotJson::Serialize(message)) => Err(Err(message)),
        Err(source @ NotJson::NonFinite { .. }) => {
            Err(Ok(NotRepresentable { event_type: event_type.to_owned(), source }))
        }
    }
}

/// `serde_json::to_value`, refusing non-finite numbers instead of writing them as `null`.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, NotJson> {
    let json = serde_json::to_value(value).map_err(|e| NotJson::Serialize(e.to_string()))?;
    // A lost number leaves a `null`; without one there is nothing to look for.
    if has_null(&json) {
        let mut checker = Checker { path: Vec::new(), key: None };
        value.serialize(&mut checker).map_err(|e| match e {
            CheckError::NonFinite { path, value } => NotJson::NonFinite { path, value },
            CheckError::Custom(message) => NotJson::Serialize(message),
        })?;
    }
    Ok(json)
}

fn has_null(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.iter().any(has_null),
        Value::Object(map) => map.values().any(has_null),
        Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

enum Segment {
    Key(String),
    Index(usize),
}

#[derive(Debug)]
enum CheckError {
    NonFinite { path: String, value: f64 },
    Custom(String),
}

impl Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonFinite { path, value } => write!(f, "`{path}` is {value}"),
            Self::Custom(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CheckError {}

impl ser::Error for CheckError {
    fn custom<T: Display>(msg: T) -> Self {
        Self::Custom(msg.to_string())
    }
}

/// Walks a value as serde serializes it, failing at the first non-finite number.
struct Checker {
    path: Vec<Segment>,
    /// The key of the map entry whose value comes next.
    key: Option<String>,
}

impl Checker {
    fn float(&self, value: f64) -> Result<(), CheckError> {
        if value.is_finite() {
            return Ok(());
        }
        let mut path = String::new();
        for segment in &self.path {
            match segment {
                Segment::Key(key) if path.is_empty() => path.push_str(key),
                Segment::Key(key) => {
                    path.push('.');
                    path.push_str(key);
                }
                Segment::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        Err(CheckError::NonFinite { path, value })
    }

    fn nested<T: Serialize + ?Sized>(&mut self, segment: Segment, value: &T) -> Result<(), CheckError> {
        self.path.push(segment);
        let result = value.serialize(&mut *self);
        self.path.pop();
        result
    }
}

/// A sequence, tuple or map being walked, counting its elements.
struct Compound<'a> {
    checker: &'a mut Checker,
    index: usize,
}

impl Compound<'_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        let index = self.index;
        self.index += 1;
        self.checker.nested(Segment::Index(index), value)
    }
}

macro_rules! ignore {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method(self, _: $ty) -> Result<(), CheckError> {
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for &'a mut Checker {
    type Ok = ();
    type Error = CheckError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    ignore!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_f32(self, v: f32) -> Result<(), CheckError> {
        self.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), CheckError> {
        self.float(v)
    }
    fn serialize_none(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CheckError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), CheckError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.nested(Segment::Key(variant.to_owned()), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, CheckError> {
        Ok(Compound { checker: self, index: 0 })
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, CheckError> {
        Ok(Compound { checker: self, index: 0 })
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, CheckError> {
        Ok(Compound { checker: self, index: 0 })
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CheckError> {
        self.path.push(Segment::Key(variant.to_owned()));
        Ok(Compound { checker: self, index: 0 })
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, CheckError> {
        Ok(Compound { checker: self, index: 0 })
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, CheckError> {
        Ok(Compound { checker: self, index: 0 })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CheckError> {
        self.path.push(Segment::Key(variant.to_owned()));
        Ok(Compound { checker: self, index: 0 })
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        self.element(value)
    }
    fn end(self) -> Result<(), CheckError> {
        self.checker.path.pop();
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CheckError> {
        // JSON keys are strings; serde_json already accepted this key (or the value would not
        // have been serialized), so its text is what the path shows.
        self.checker.key = Some(match key.serialize(KeyText) {
            Ok(text) => text,
            Err(_) => format!("<key {}>", self.index),
        });
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CheckError> {
        let key = self.checker.key.take().unwrap_or_default();
        self.index += 1;
        self.checker.nested(Segment::Key(key), value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.checker.nested(Segment::Key(key.to_owned()), value)
    }
    fn end(self) -> Result<(), CheckError> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = CheckError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), CheckError> {
        self.checker.nested(Segment::Key(key.to_owned()), value)
    }
    fn end(self) -> Result<(), CheckError> {
        self.checker.path.pop();
        Ok(())
    }
}

/// The text of a map key (a string, or a number or boolean written as JSON writes keys).
struct KeyText;

impl ser::Serializer for KeyText {
    type Ok = String;
    type Error = CheckError;
    type SerializeSeq = Impossible<String, CheckError>;
    type SerializeTuple = Impossible<String, CheckError>;
    type SerializeTupleStruct = Impossible<String, CheckError>;
    type SerializeTupleVariant = Impossible<String, CheckError>;
    type SerializeMap = Impossible<String, CheckError>;
    type SerializeStruct = Impossible<String, CheckError>;
    type SerializeStructVariant = Impossible<String, CheckError>;

    fn serialize_str(self, v: &str) -> Result<String, CheckError> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_bool(self, v: bool) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_i8(self, v: i8) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_i16(self, v: i16) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_i32(self, v: i32) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_i64(self, v: i64) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_i128(self, v: i128) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_u8(self, v: u8) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_u16(self, v: u16) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_u32(self, v: u32) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_u64(self, v: u64) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_u128(self, v: u128) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_f32(self, v: f32) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_f64(self, v: f64) -> Result<String, CheckError> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, CheckError> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, CheckError> {
        value.serialize(self)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_none(self) -> Result<String, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_unit(self) -> Result<String, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CheckError> {
        Err(ser::Error::custom("not a key"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    enum Shape {
        Circle { r: f64 },
        Pair(f64, f64),
    }

    #[test]
    fn finds_non_finite_numbers_anywhere_and_names_where() {
        let mut map = BTreeMap::new();
        map.insert(7, f64::INFINITY);
        let err = to_value(&json!({"a": [1.0]})).map(|_| ());
        assert!(err.is_ok());
        assert_eq!(
            to_value(&map).unwrap_err().to_string(),
            "`7` is inf, which JSON cannot represent (it would become null)"
        );
        let err = to_value(&vec![Shape::Pair(1.0, 2.0), Shape::Circle { r: f64::NEG_INFINITY }]).unwrap_err();
        assert_eq!(err, NotJson::NonFinite { path: "[1].Circle.r".into(), value: f64::NEG_INFINITY });
        let err = to_value(&Shape::Pair(1.0, f64::NAN)).unwrap_err();
        assert!(matches!(&err, NotJson::NonFinite { path, .. } if path == "Pair[1]"), "{err:?}");
        assert!(matches!(to_value(&f32::NAN), Err(NotJson::NonFinite { path, .. }) if path.is_empty()));
        // A real null is fine.
        assert_eq!(to_value(&(Option::<f64>::None, 1.5)).unwrap(), json!([null, 1.5]));
    }
}
