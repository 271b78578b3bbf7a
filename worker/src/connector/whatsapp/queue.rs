//! The queue between whatsapp-rust's event handler and [`super::events::drain`]: bounded by
//! the bytes it holds, and full means the producer waits, never that an event is dropped.
//!
//! Why waiting is the right backpressure: the library calls the handler synchronously, inline
//! on the task that produced the event — a chat's lane (messages, undecryptable ones), a
//! history task (at most two at a time, fed by a 32-slot channel that the account's own chat
//! lane waits on), a spawned task per receipt or notification. Holding such a task holds what
//! comes after it: a chat's later messages stay unacknowledged (WhatsApp keeps them), history
//! notifications stay in their own `<message>`, which is acknowledged only after its task is
//! queued. So while Postgres is down for minutes, memory holds at most this queue's budget plus
//! the library's few tasks in flight, instead of every history blob (each MiBs) that arrives.
//!
//! How it waits: the handler is not async, so on a multi-thread runtime it blocks in
//! `block_in_place` (the runtime moves its other tasks to other workers). On a current-thread
//! runtime (the in-process tests) there is no other thread to run the drain that would make
//! room: blocking would deadlock and `block_in_place` panics. There, and for the events that
//! must never wait (see [`Sender::push`]), a full queue admits the event over its budget and
//! says so once: memory is the price, never an event.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// The bytes the queue holds before producers wait: a few history blobs.
pub const BUDGET: usize = 32 << 20;
/// What the smallest event counts for, so the budget also bounds how many events wait.
pub const MIN_WEIGHT: usize = 1 << 10;

/// The producer side, used by the event handler.
pub struct Sender<T> {
    tx: mpsc::UnboundedSender<Queued<T>>,
    budget: Arc<Semaphore>,
    /// The most permits one item takes (an item larger than the budget takes all of it).
    most: u32,
    /// A full queue admitted an item over budget and has not had room since.
    over: AtomicBool,
}

/// The consumer side, used by the drain. Dropping it releases every waiting producer.
pub struct Receiver<T> {
    rx: mpsc::UnboundedReceiver<Queued<T>>,
    budget: Arc<Semaphore>,
}

/// An item taken from the queue. It keeps its share of the budget until dropped, so an event
/// being worked on still counts.
pub struct Queued<T> {
    /// The item.
    pub item: T,
    _room: Option<OwnedSemaphorePermit>,
}

/// A queue holding at most `budget` bytes' worth of items (each at least [`MIN_WEIGHT`]).
pub fn bounded<T>(budget: usize) -> (Sender<T>, Receiver<T>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let permits = budget.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let budget = Arc::new(Semaphore::new(permits));
    let sender = Sender {
        tx,
        budget: budget.clone(),
        most: permits as u32,
        over: AtomicBool::new(false),
    };
    (sender, Receiver { rx, budget })
}

impl<T> Sender<T> {
    /// Queue `item`, which holds about `bytes` of memory, in call order. When the queue is full
    /// and `may_wait`, wait for room (see the module docs for where waiting is impossible).
    /// Returns false only when the receiver is gone.
    pub fn push(&self, item: T, bytes: usize, may_wait: bool) -> bool {
        let n = bytes.max(MIN_WEIGHT).min(self.most as usize) as u32;
        let room = match self.budget.clone().try_acquire_many_owned(n) {
            Ok(p) => {
                self.over.store(false, Ordering::Relaxed);
                Some(p)
            }
            Err(tokio::sync::TryAcquireError::Closed) => return false,
            Err(tokio::sync::TryAcquireError::NoPermits) => match self.wait(n, may_wait) {
                Ok(room) => room,
                Err(()) => return false,
            },
        };
        self.tx.send(Queued { item, _room: room }).is_ok()
    }

    /// Room for `n` when the queue is full: waited for when possible, else none (admitted over
    /// budget). `Err` when the receiver is gone.
    fn wait(&self, n: u32, may_wait: bool) -> Result<Option<OwnedSemaphorePermit>, ()> {
        let handle = Handle::try_current().ok();
        if may_wait
            && let Some(handle) =
                handle.filter(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
        {
            tracing::debug!(
                bytes = n,
                "the WhatsApp event queue is full; the client waits"
            );
            let budget = self.budget.clone();
            let room =
                tokio::task::block_in_place(|| handle.block_on(budget.acquire_many_owned(n)));
            return room.map(Some).map_err(|_| ());
        }
        if !self.over.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                bytes = n,
                "the WhatsApp event queue is full and this event cannot wait here; queued over \
                 its budget"
            );
        }
        Ok(None)
    }
}

impl<T> Receiver<T> {
    /// The next item in push order; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Queued<T>> {
        self.rx.recv().await
    }

    /// True when every sender is gone.
    pub fn is_closed(&self) -> bool {
        self.rx.is_closed()
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        // A producer waiting for room would otherwise wait forever.
        self.budget.close();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_blocks_the_producer_and_drops_nothing() {
        let (tx, mut rx) = bounded::<u32>(4 * MIN_WEIGHT);
        let tx = Arc::new(tx);
        let pushed = Arc::new(AtomicUsize::new(0));
        // The producer, as the library calls the handler: synchronously, on a runtime task.
        let producer = {
            let (tx, pushed) = (tx.clone(), pushed.clone());
            tokio::spawn(async move {
                for i in 0..10u32 {
                    assert!(tx.push(i, MIN_WEIGHT, true));
                    pushed.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            pushed.load(Ordering::SeqCst),
            4,
            "the producer went past a full queue"
        );
        // Taking one (and finishing with it) lets exactly one more in.
        let first = rx.recv().await.expect("an item");
        assert_eq!(first.item, 0);
        drop(first);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(pushed.load(Ordering::SeqCst), 5);
        let mut got = vec![0];
        while got.len() < 10 {
            got.push(rx.recv().await.expect("an item").item);
        }
        producer.await.expect("the producer");
        assert_eq!(got, (0..10).collect::<Vec<_>>(), "in order, none dropped");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_producer_is_released_when_the_drain_ends() {
        let (tx, rx) = bounded::<u32>(MIN_WEIGHT);
        assert!(tx.push(1, MIN_WEIGHT, true));
        let producer = tokio::spawn(async move { tx.push(2, MIN_WEIGHT, true) });
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(rx);
        assert!(!producer.await.expect("the producer"), "nobody took it");
    }

    #[tokio::test]
    async fn on_a_current_thread_runtime_a_full_queue_admits_over_budget() {
        let (tx, mut rx) = bounded::<u32>(2 * MIN_WEIGHT);
        for i in 0..5 {
            assert!(tx.push(i, MIN_WEIGHT, true), "no panic, no drop");
        }
        for i in 0..5 {
            let next = tokio::time::timeout(Duration::from_secs(1), rx.recv()).await;
            assert_eq!(next.ok().flatten().expect("an item").item, i);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_item_larger_than_the_budget_takes_all_of_it() {
        let (tx, mut rx) = bounded::<u32>(2 * MIN_WEIGHT);
        assert!(tx.push(1, 100 * MIN_WEIGHT, true));
        let held = rx.recv().await.expect("an item");
        let next = {
            let tx = Arc::new(tx);
            tokio::spawn(async move { tx.push(2, MIN_WEIGHT, true) })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !next.is_finished(),
            "room while the large item is worked on"
        );
        drop(held);
        assert!(next.await.expect("the producer"));
        assert_eq!(rx.recv().await.expect("an item").item, 2);
    }
}
