//! The JSON Schemas the tools advertise: rmcp's (schemars') schemas, in standard JSON Schema
//! (draft 2020-12) only. schemars marks Rust's number types with formats of its own (`uint32`,
//! `int64`, `double`, …) that no validator knows: the official TypeScript SDK prints
//! `unknown format "uint32" ignored` for each of them on every `tools/list`. Those formats are
//! dropped; what they stood for stays where a client can check it (`"type": "integer"`, and
//! `"minimum": 0` for unsigned numbers, which schemars already writes and this makes sure of).

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::transform::{RestrictFormats, Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde_json::Value;

/// The formats draft 2020-12 defines (its format vocabulary); no other is advertised.
pub(crate) const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The input schema of a tool whose arguments are `T`.
pub(crate) fn input_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema =
        schema_for_input::<T>().unwrap_or_else(|e| panic!("input schema of a wire type: {e}"));
    standard(&schema)
}

/// The output schema of a tool whose structured content is `T`.
pub(crate) fn output_schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    standard(&schema_for_output::<T>())
}

/// `schema` with every format outside [`STANDARD_FORMATS`] removed, at any depth, and unsigned
/// numbers bounded below by 0.
fn standard(schema: &JsonObject) -> Arc<JsonObject> {
    let mut schema = Schema::from(schema.clone());
    NonNegative.transform(&mut schema);
    let mut restrict = RestrictFormats::default();
    // Only the list above, whatever `$schema` says (schemars would keep every format when it
    // is missing).
    restrict.infer_from_meta_schema = false;
    restrict.allowed_formats = STANDARD_FORMATS
        .iter()
        .copied()
        .map(Cow::Borrowed)
        .collect();
    restrict.transform(&mut schema);
    match schema.to_value() {
        Value::Object(object) => Arc::new(object),
        // A schema made from an object stays one.
        other => unreachable!("a tool schema became {other}"),
    }
}

/// Adds `"minimum": 0` where schemars' `uint*` format is the only sign that a number is
/// unsigned (schemars 1.2 writes both; this keeps the bound if a version writes only the
/// format).
struct NonNegative;

impl Transform for NonNegative {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut()
            && object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("uint"))
        {
            object.entry("minimum").or_insert(Value::from(0));
        }
        transform_subschemas(self, schema);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Numbers {
        count: u32,
        size: u64,
        small: u8,
        delta: i64,
        ratio: f64,
        maybe: Option<u32>,
        list: Vec<u16>,
        at: chrono::DateTime<chrono::Utc>,
        nested: Inner,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code, reason = "only its schema is used")]
    struct Inner {
        position: i32,
        /// A field named like the keyword is not a keyword.
        format: String,
    }

    /// Every `format` value anywhere in `value`, with its path.
    fn formats(value: &Value, path: &str, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    if k == "format"
                        && let Some(f) = v.as_str()
                    {
                        out.push(format!("{path}: {f}"));
                    }
                    formats(v, &format!("{path}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    formats(v, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn number_formats_go_and_standard_ones_stay() {
        let raw = Value::Object((*schema_for_output::<Numbers>()).clone());
        let mut before = Vec::new();
        formats(&raw, "", &mut before);
        assert!(before.iter().any(|f| f.ends_with("uint32")), "{before:?}");
        let schema = Value::Object((*output_schema::<Numbers>()).clone());
        let mut after = Vec::new();
        formats(&schema, "", &mut after);
        assert_eq!(after, ["/properties/at: date-time"], "{schema}");
        let props = &schema["properties"];
        assert_eq!(props["count"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(props["size"]["minimum"], 0);
        assert_eq!(props["small"]["minimum"], 0);
        assert_eq!(props["small"]["maximum"], 255);
        assert_eq!(props["list"]["items"]["minimum"], 0);
        assert_eq!(props["delta"], json!({"type": "integer"}));
        assert_eq!(props["ratio"], json!({"type": "number"}));
        assert_eq!(props["maybe"]["minimum"], 0);
        let inner = schema["$defs"]["Inner"]["properties"].clone();
        assert_eq!(inner["position"], json!({"type": "integer"}));
        assert_eq!(inner["format"]["type"], "string");
    }

    #[test]
    fn a_bare_unsigned_format_gets_its_lower_bound() {
        let bare =
            json!({"type": "object", "properties": {"n": {"type": "integer", "format": "uint64"}}});
        let Value::Object(object) = bare else {
            unreachable!()
        };
        let schema = standard(&object);
        assert_eq!(
            schema["properties"]["n"],
            json!({"type": "integer", "minimum": 0})
        );
    }

    #[test]
    fn every_tool_advertises_standard_formats_only() {
        let vars: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        let set = crate::mcp::ToolSet::new(&crate::config::Config::from_source(&vars).unwrap());
        let listed = set.router.list_all();
        assert_eq!(listed.len(), 12);
        for tool in listed {
            let output = tool.output_schema.as_ref().expect("output schema");
            for schema in [&tool.input_schema, output] {
                let mut found = Vec::new();
                formats(&Value::Object((**schema).clone()), "", &mut found);
                for format in found {
                    let name = format.rsplit(": ").next().unwrap_or_default();
                    assert!(STANDARD_FORMATS.contains(&name), "{}: {format}", tool.name);
                }
            }
        }
    }
}
