//! What rmcp logs as an error that, for hcpx, is none: a client that went away.
//! When a client closes a `subscriptions/listen` stream (every `claude mcp list`
//! does), rmcp ends the request and then fails to send its final result to the
//! closed stream, and logs that at ERROR. hcpx's transports only fail a send when
//! the other end is gone, so that line says nothing is wrong; [`ClientGone`] drops
//! it from the log. rmcp still says at INFO that the request was cancelled.

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata};
use tracing_subscriber::layer::{Context, Filter};

/// The messages rmcp logs at ERROR when a send finds the client gone.
const CLIENT_GONE: [&str; 2] = [
    "failed to send pending response during drain",
    "fail to response message",
];

/// A log filter that drops rmcp's errors about a client that went away.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClientGone;

impl<S> Filter<S> for ClientGone {
    fn enabled(&self, _metadata: &Metadata<'_>, _cx: &Context<'_, S>) -> bool {
        true
    }

    fn event_enabled(&self, event: &Event<'_>, _cx: &Context<'_, S>) -> bool {
        !is_client_gone(event)
    }
}

fn is_client_gone(event: &Event<'_>) -> bool {
    let metadata = event.metadata();
    if *metadata.level() != Level::ERROR || !metadata.target().starts_with("rmcp") {
        return false;
    }
    let mut message = Message(None);
    event.record(&mut message);
    message.0.is_some_and(|text| CLIENT_GONE.contains(&text.as_str()))
}

/// The `message` field of an event.
struct Message(Option<String>);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// Collects the messages of the events it is shown.
    #[derive(Clone, Default)]
    struct Seen(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
        fn on_event(&self, event: &Event<'_>, _cx: tracing_subscriber::layer::Context<'_, S>) {
            let mut message = Message(None);
            event.record(&mut message);
            self.0.lock().unwrap().push(message.0.unwrap_or_default());
        }
    }

    #[test]
    fn only_rmcps_client_gone_errors_are_dropped() {
        let seen = Seen::default();
        let subscriber = tracing_subscriber::registry().with(seen.clone().with_filter(ClientGone));
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "rmcp::service", error = "channel closed", "failed to send pending response during drain");
            tracing::error!(target: "rmcp::service", "fail to response message");
            tracing::error!(target: "rmcp::service", "something else broke");
            tracing::info!(target: "rmcp::service", "failed to send pending response during drain");
            tracing::error!(target: "hcpx", "failed to send pending response during drain");
        });
        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                "something else broke",
                "failed to send pending response during drain",
                "failed to send pending response during drain"
            ]
        );
    }
}
