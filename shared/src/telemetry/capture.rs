//! The leak scan's log capture ([`crate::leak`]): with `WAZAP_LEAK_DIR` set, every event and
//! every span (its fields, also those recorded later) as JSON lines in
//! `events-<service>-<pid>.jsonl`, DEBUG and up for wazap's own crates and INFO and up for the
//! rest, whatever `RUST_LOG` says, so a test run checks what a verbose deployment would log.

use std::fs::File;

use tracing::{Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::{FmtSpan, JsonFields, Writer};
use tracing_subscriber::fmt::{FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// What the capture keeps: wazap's crates at DEBUG, everything else at INFO. (TRACE is left
/// out: the few wazap TRACE events are per-frame noise, and the body-quoting dependencies are
/// capped at INFO anyway.)
fn targets() -> Targets {
    Targets::new()
        .with_default(Level::INFO)
        .with_target("wazap", Level::DEBUG)
}

/// The capture layer for `service`, when the leak scan is on (and its file can be opened).
pub fn layer<S>(service: &str) -> Option<impl Layer<S> + Send + Sync + 'static>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let file = crate::leak::open(&format!("events-{service}-{}.jsonl", std::process::id()))?;
    Some(layer_to(file))
}

/// The capture layer, writing to `file`.
fn layer_to<S>(file: File) -> impl Layer<S> + Send + Sync + 'static
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(true)
        .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
        .fmt_fields(CaptureFields(JsonFields::new()))
        .with_writer(file)
        .with_filter(targets())
}

/// JSON fields under a type of their own: span fields are stored per formatter type, and
/// sharing the stderr layer's would write each recorded field into that store twice.
struct CaptureFields(JsonFields);

impl<'w> FormatFields<'w> for CaptureFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> std::fmt::Result {
        self.0.format_fields(writer, fields)
    }

    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> std::fmt::Result {
        // JsonFields merges into an existing JSON object; do the same on our own store.
        let mut inner = FormattedFields::<JsonFields>::new(std::mem::take(&mut current.fields));
        let result = self.0.add_fields(&mut inner, fields);
        current.fields = inner.fields;
        result
    }
}

#[cfg(test)]
mod tests {
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn events_and_spans_with_late_fields_reach_the_file() {
        let path = std::env::temp_dir().join(format!("wazap-capture-{}.jsonl", std::process::id()));
        let file = std::fs::File::create(&path).expect("a capture file");
        let subscriber = tracing_subscriber::registry().with(super::layer_to(file));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::debug_span!(target: "wazap_x", "rpc", op = "ping", late = tracing::field::Empty);
            let _entered = span.enter();
            span.record("late", "recorded-later-value");
            tracing::debug!(target: "wazap_x", { connection.id = "k1" }, "inside");
            tracing::debug!(target: "other_crate", "dropped: DEBUG of a dependency");
        });
        let text = std::fs::read_to_string(&path).expect("the capture file");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON lines"))
            .collect();
        assert!(
            lines.iter().any(|l| l["fields"]["message"] == "inside"
                && l["span"]["op"] == "ping"
                && l["fields"]["connection.id"] == "k1"),
            "{text}"
        );
        assert!(
            lines.iter().any(|l| l["fields"]["message"] == "close"
                && l["span"]["late"] == "recorded-later-value"),
            "a closed span carries its late field: {text}"
        );
        assert!(!text.contains("dropped"), "{text}");
        let _ = std::fs::remove_file(&path);
    }
}
