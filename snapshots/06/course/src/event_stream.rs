//! A stream of progress events that ends with exactly one final value.
//!
//! A model streams deltas while it writes, but what the agent keeps is the finished message. Keeping the
//! two apart lets a consumer show progress from the events and trust only the final value.
//!
//! `EventSender::end` takes the sender by value, so once a stream has its result the compiler rejects any
//! further `push`: "no event after the end" is enforced by types, not by a runtime check.

use tokio::sync::{mpsc, oneshot};

/// Creates a connected sender (for the producer) and stream (for the consumer).
pub fn event_stream<E, R>() -> (EventSender<E, R>, EventStream<E, R>) {
    // Unbounded: a producer never waits for its consumer, so it can push everything without a task.
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (result_tx, result_rx) = oneshot::channel();
    let sender = EventSender {
        events: events_tx,
        result: result_tx,
    };
    let stream = EventStream {
        events: events_rx,
        result: result_rx,
    };
    (sender, stream)
}

/// The producing half. Not `Clone`: one producer, one end.
pub struct EventSender<E, R> {
    events: mpsc::UnboundedSender<E>,
    result: oneshot::Sender<R>,
}

impl<E, R> EventSender<E, R> {
    pub fn push(&self, event: E) {
        // A consumer that stopped listening is not the producer's problem: drop the event.
        let _ = self.events.send(event);
    }

    /// Sends the final value and closes the stream.
    pub fn end(self, result: R) {
        let _ = self.result.send(result);
        // `self.events` is dropped here, so `next()` returns `None` once the buffered events are read.
    }
}

/// The consuming half.
pub struct EventStream<E, R> {
    events: mpsc::UnboundedReceiver<E>,
    result: oneshot::Receiver<R>,
}

impl<E, R> EventStream<E, R> {
    /// The next event, or `None` once the producer has ended (or gone away).
    pub async fn next(&mut self) -> Option<E> {
        self.events.recv().await
    }

    /// The final value. Events not yet read are discarded.
    ///
    /// # Panics
    ///
    /// If the producer was dropped without calling `end`: that is a bug in the producer, and there is no
    /// value to return in its place.
    pub async fn result(self) -> R {
        match self.result.await {
            Ok(result) => result,
            Err(_) => panic!(
                "event stream producer bug: the EventSender was dropped without calling end(result)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_arrive_in_order_then_one_result() {
        let (sender, mut stream) = event_stream::<&str, u32>();
        sender.push("first");
        sender.push("second");
        sender.end(42);
        // sender.push("late"); // does not compile: `end` took the sender.

        assert_eq!(stream.next().await, Some("first"));
        assert_eq!(stream.next().await, Some("second"));
        assert_eq!(stream.next().await, None);
        assert_eq!(stream.result().await, 42);
    }

    #[tokio::test]
    async fn result_can_be_taken_without_reading_events() {
        let (sender, stream) = event_stream::<&str, &str>();
        sender.push("ignored");
        sender.end("done");
        assert_eq!(stream.result().await, "done");
    }

    #[tokio::test]
    async fn consumer_waits_for_a_producer_on_another_task() {
        let (sender, mut stream) = event_stream::<u32, &str>();
        let producer = tokio::spawn(async move {
            for n in 0..3 {
                sender.push(n);
                tokio::task::yield_now().await;
            }
            sender.end("finished");
        });

        let mut seen = Vec::new();
        while let Some(n) = stream.next().await {
            seen.push(n);
        }
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(stream.result().await, "finished");
        producer.await.unwrap();
    }

    #[tokio::test]
    #[should_panic(expected = "dropped without calling end")]
    async fn a_producer_that_never_ends_is_reported() {
        let (sender, stream) = event_stream::<(), ()>();
        drop(sender);
        stream.result().await;
    }

    #[test]
    fn pushing_after_the_consumer_is_gone_is_harmless() {
        let (sender, stream) = event_stream::<u8, u8>();
        drop(stream);
        sender.push(1);
        sender.end(2);
    }
}
