//! A direct call's `arguments`, parsed as rmcp parses them — a JSON object, each value a
//! `serde_json::Value`, a repeated key's last value kept — except that a top-level
//! `data_base64` string is borrowed from the body instead of copied into the object. The media
//! tools then decode it where it lies ([`crate::media::Base64::InBuffer`]), as `/api/send/*`
//! does: a send holds its body's buffer and no ~11 MiB copy of the base64 (DESIGN §11).
//!
//! The object keeps an empty string in its place, so the tool's argument checks
//! ([`crate::mcp::parse_args`]) see the same types and answer the same errors; a tool that does
//! not take the base64 gets the string put back ([`Arguments::into_object`]).

use std::borrow::Cow;
use std::fmt;

use rmcp::model::JsonObject;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserialize, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The argument kept out of the object.
pub(crate) const DATA_FIELD: &str = "data_base64";

/// The arguments of a call: the object, and the `data_base64` string taken out of it.
#[derive(Debug, Default)]
pub(super) struct Arguments<'a> {
    /// Every argument; `data_base64` an empty string when [`Self::data`] holds it.
    pub(super) object: JsonObject,
    /// The last `data_base64` when it was a string, borrowed from the body unless it had
    /// escapes.
    pub(super) data: Option<Cow<'a, str>>,
}

impl Arguments<'_> {
    /// The object exactly as rmcp would have parsed it (`data_base64` put back).
    pub(super) fn into_object(self) -> JsonObject {
        let mut object = self.object;
        if let Some(data) = self.data {
            object.insert(DATA_FIELD.to_owned(), Value::String(data.into_owned()));
        }
        object
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Arguments<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ArgumentsVisitor(std::marker::PhantomData))
    }
}

struct ArgumentsVisitor<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for ArgumentsVisitor<'a> {
    type Value = Arguments<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }

    /// As `serde_json::Map`'s own visitor: string keys, each insert replacing an earlier one.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut args = Arguments::default();
        while let Some(key) = map.next_key::<String>()? {
            let value = if key == DATA_FIELD {
                match map.next_value::<DataValue<'a>>()? {
                    DataValue::Text(text) => {
                        args.data = Some(text);
                        Value::String(String::new())
                    }
                    DataValue::Other(value) => {
                        args.data = None;
                        value
                    }
                }
            } else {
                map.next_value::<Value>()?
            };
            args.object.insert(key, value);
        }
        Ok(args)
    }
}

/// A `data_base64` value: a string (borrowed when it can be), else the `Value` any other type
/// makes.
enum DataValue<'a> {
    Text(Cow<'a, str>),
    Other(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for DataValue<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DataVisitor(std::marker::PhantomData))
    }
}

struct DataVisitor<'a>(std::marker::PhantomData<&'a ()>);

/// Every type but a string goes to `Value`'s own visitor, so it becomes the `Value` it would.
impl<'de: 'a, 'a> Visitor<'de> for DataVisitor<'a> {
    type Value = DataValue<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(DataValue::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(DataValue::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(DataValue::Text(Cow::Owned(v)))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        other(v.into_deserializer())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        other(v.into_deserializer())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        other(v.into_deserializer())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Self::Value, E> {
        other(v.into_deserializer())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Self::Value, E> {
        other(v.into_deserializer())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        other(v.into_deserializer())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        other(().into_deserializer())
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        other(().into_deserializer())
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Value::deserialize(deserializer).map(DataValue::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(DataValue::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(DataValue::Other)
    }
}

/// The `Value` of a scalar, through `Value`'s own visitor.
fn other<'de, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<DataValue<'a>, D::Error> {
    Value::deserialize(deserializer).map(DataValue::Other)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `body`'s arguments both ways: ours with `data_base64` put back, and rmcp's object.
    fn both(body: &str) -> (Option<JsonObject>, Option<JsonObject>) {
        let ours = serde_json::from_str::<Arguments<'_>>(body)
            .ok()
            .map(Arguments::into_object);
        (ours, serde_json::from_str::<JsonObject>(body).ok())
    }

    #[test]
    fn the_object_is_the_one_rmcp_parses() {
        for body in [
            r#"{}"#,
            r#"{"data_base64":"aGk=","seconds":3}"#,
            r#"{"data_base64":"aGk\/","kind":"image"}"#,
            r#"{"data_base64":"aGk=","data_base64":7}"#,
            r#"{"data_base64":7,"data_base64":"aGk="}"#,
            r#"{"data_base64":null}"#,
            r#"{"data_base64":true,"x":[1,{"a":2.5}]}"#,
            r#"{"data_base64":-3}"#,
            r#"{"data_base64":1e3}"#,
            r#"{"data_base64":18446744073709551615}"#,
            r#"{"data_base64":[1,"a"]}"#,
            r#"{"data_base64":{"b":1,"b":2}}"#,
            r#"{"data\u005fbase64":"aGk="}"#,
            r#"{"x":1e400}"#,
            r#"{"data_base64":1e400}"#,
            r#"{"data_base64":"\ud800"}"#,
            r#"{"data_base64":"aGk="#,
            r#"[]"#,
            r#"null"#,
            r#""aGk=""#,
        ] {
            let (ours, rmcp) = both(body);
            assert_eq!(ours, rmcp, "{body}");
        }
    }

    #[test]
    fn a_string_without_escapes_is_borrowed_and_left_empty_in_the_object() {
        let body = r#"{"seconds":3,"data_base64":"aGk="}"#;
        let args: Arguments<'_> = serde_json::from_str(body).expect("parses");
        assert!(matches!(args.data, Some(Cow::Borrowed("aGk="))));
        assert_eq!(args.object[DATA_FIELD], "");
        let escaped = r#"{"data_base64":"aGk\/"}"#;
        let args: Arguments<'_> = serde_json::from_str(escaped).expect("parses");
        assert!(matches!(args.data, Some(Cow::Owned(ref s)) if s == "aGk/"));
        // The last one counts, as in the object rmcp parses.
        let args: Arguments<'_> =
            serde_json::from_str(r#"{"data_base64":"aGk=","data_base64":5}"#).expect("parses");
        assert!(args.data.is_none());
        assert_eq!(args.object[DATA_FIELD], 5);
    }
}
