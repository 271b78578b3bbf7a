//! Supervision of the worker's long-lived tasks (DESIGN §10): none of them may stop while the
//! worker goes on answering as if nothing happened. Each is spawned through a [`Supervisor`]
//! under a name, with one of two policies:
//!
//! - [`Supervisor::spawn_fatal`]: the task owns state that cannot be rebuilt in-process (the
//!   archive writer's positions, the connector's session). A panic or an error makes the worker
//!   not ready and stops it: [`crate::run`] drains as after SIGTERM (bounded by
//!   [`crate::shutdown::DRAIN_LIMIT`]) and returns the failure, so the process exits non-zero
//!   and its supervisor (systemd, Docker, Kubernetes) restarts it.
//! - [`Supervisor::spawn_restarting`]: the task holds nothing of its own (a periodic sweep, a
//!   publisher). A panic or an error makes the worker not ready until the task is started again,
//!   after a backoff of [`FIRST_BACKOFF`] doubling to [`MAX_BACKOFF`].
//!
//! A task that returns `Ok(())` has finished on purpose (it was told to stop, or its input
//! closed because everything feeding it is gone) and is neither restarted nor a failure.
//! While any task is down, [`Supervisor::not_ready`] says which, and the `ping` op answers
//! `worker_unavailable` with it, so gateways' `/readyz` answer 503.
//!
//! Every failure is logged with its task's name and the error chain (or the panic's message)
//! and counted ([`crate::metrics::task_failed`]).

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::FutureExt as _;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The first pause before a failed restarting task is started again.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest pause between two starts of a failing task.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A task that ran this long before failing starts again after [`FIRST_BACKOFF`].
const HEALTHY_RUN: Duration = Duration::from_secs(60);

/// The worker's supervised tasks: which are down, and the first failure that stops the worker.
/// Cheap to clone; one per worker, built by `server::run` over the token that stops its
/// services.
#[derive(Clone, Debug)]
pub struct Supervisor {
    /// Cancelled when the worker stops its services (or, for a [`Supervisor::child`], the part
    /// it supervises): every task's stop signal.
    stop: CancellationToken,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Cancelled by the first fatal failure.
    fatal: CancellationToken,
    /// What the first fatal failure was.
    reason: OnceLock<String>,
    /// The tasks down now, in the order they went down.
    down: Mutex<Vec<&'static str>>,
}

impl Supervisor {
    /// A supervisor whose tasks are told to stop by `stop`.
    pub fn new(stop: CancellationToken) -> Self {
        Self {
            stop,
            inner: Arc::new(Inner {
                fatal: CancellationToken::new(),
                reason: OnceLock::new(),
                down: Mutex::default(),
            }),
        }
    }

    /// The token that tells the supervised tasks to stop (they watch it themselves and return
    /// `Ok(())`).
    pub fn stop(&self) -> &CancellationToken {
        &self.stop
    }

    /// A supervisor for one part of the worker (an account it serves): its tasks stop when
    /// this one's do or when the part is stopped on its own ([`Supervisor::stop`] of the
    /// child); failures count as the worker's (a fatal one stops the whole worker).
    pub fn child(&self) -> Self {
        Self {
            stop: self.stop.child_token(),
            inner: self.inner.clone(),
        }
    }

    /// Wait for the first fatal failure; its reason (`"the archive writer stopped: …"`).
    pub async fn failed(&self) -> String {
        self.inner.fatal.cancelled().await;
        self.failure().unwrap_or_default()
    }

    /// The first fatal failure so far, if any.
    pub fn failure(&self) -> Option<String> {
        self.inner.reason.get().cloned()
    }

    /// Why the worker is not ready (`"the worker is not ready: the archive writer stopped"`),
    /// naming the first task that is down; `None` while every task runs.
    pub fn not_ready(&self) -> Option<String> {
        let down = self.down();
        down.first()
            .map(|task| format!("the worker is not ready: the {task} stopped"))
    }

    /// Run `task` as `name` until it returns. A panic or an `Err` marks the worker not ready
    /// for good and stops it: [`Supervisor::failed`] resolves, and `run` drains and returns
    /// the failure.
    pub fn spawn_fatal<F>(&self, name: &'static str, task: F) -> JoinHandle<()>
    where
        F: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let this = self.clone();
        tokio::spawn(async move {
            let Some(why) = outcome(task).await else {
                return;
            };
            this.set_down(name, true);
            tracing::error!(task = name, error = %why, "a supervised task failed; the worker stops");
            crate::metrics::task_failed(name, "exit");
            let _ = this.inner.reason.set(format!("the {name} stopped: {why}"));
            this.inner.fatal.cancel();
        })
    }

    /// Run the task `make` builds as `name`, building and starting it again after a panic or an
    /// `Err` (after a backoff, [`FIRST_BACKOFF`] doubling to [`MAX_BACKOFF`]), until it returns
    /// `Ok(())` or the supervisor's stop token is cancelled. The worker is not ready while the
    /// task waits to be started again.
    pub fn spawn_restarting<M, F>(&self, name: &'static str, mut make: M) -> JoinHandle<()>
    where
        M: FnMut() -> F + Send + 'static,
        F: Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let this = self.clone();
        tokio::spawn(async move {
            let mut backoff = FIRST_BACKOFF;
            loop {
                let started = Instant::now();
                let Some(why) = outcome(make()).await else {
                    return;
                };
                if this.stop.is_cancelled() {
                    tracing::warn!(task = name, error = %why, "a supervised task failed while stopping");
                    return;
                }
                if started.elapsed() >= HEALTHY_RUN {
                    backoff = FIRST_BACKOFF;
                }
                this.set_down(name, true);
                tracing::error!(
                    task = name,
                    error = %why,
                    restart_in_ms = backoff.as_millis() as u64,
                    "a supervised task failed; restarting it"
                );
                crate::metrics::task_failed(name, "restart");
                tokio::select! {
                    () = this.stop.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                this.set_down(name, false);
                tracing::info!(task = name, "a supervised task restarted");
            }
        })
    }

    fn down(&self) -> std::sync::MutexGuard<'_, Vec<&'static str>> {
        self.inner.down.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_down(&self, name: &'static str, down: bool) {
        let mut set = self.down();
        set.retain(|t| *t != name);
        if down {
            set.push(name);
        }
    }
}

/// Run `task` to its end; `None` when it returned `Ok(())`, else what went wrong (the error
/// chain, database errors without the values they quote, or the panic's message).
async fn outcome<F>(task: F) -> Option<String>
where
    F: Future<Output = anyhow::Result<()>>,
{
    match AssertUnwindSafe(task).catch_unwind().await {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(crate::error::redacted(e.as_ref()).to_string()),
        Err(panic) => Some(format!("panicked: {}", panic_message(&*panic))),
    }
}

/// A panic payload's message (`panic!` gives a `&str` or a `String`).
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_restarting_task_that_panics_is_started_again_and_readiness_returns() {
        let stop = CancellationToken::new();
        let sup = Supervisor::new(stop.clone());
        let starts = Arc::new(AtomicU32::new(0));
        let counted = starts.clone();
        let task = sup.spawn_restarting("statistics refresher", move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                assert!(n > 0, "the first run panics");
                std::future::pending::<anyhow::Result<()>>().await
            }
        });
        // The first run panics: not ready while it waits for its restart.
        let not_ready = wait_for(|| sup.not_ready()).await;
        assert_eq!(
            not_ready,
            "the worker is not ready: the statistics refresher stopped"
        );
        // After the backoff it runs again, and the worker is ready.
        tokio::time::timeout(FIRST_BACKOFF * 3, async {
            while sup.not_ready().is_some() || starts.load(Ordering::SeqCst) < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("restarted within the backoff");
        assert!(
            sup.failure().is_none(),
            "a restarting task never stops the worker"
        );
        stop.cancel();
        task.abort();
    }

    #[tokio::test]
    async fn an_error_in_a_restarting_task_restarts_it_too_and_ok_ends_it() {
        let sup = Supervisor::new(CancellationToken::new());
        let starts = Arc::new(AtomicU32::new(0));
        let counted = starts.clone();
        let task = sup.spawn_restarting("abandoned-send sweeper", move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                anyhow::ensure!(n > 0, "the first run fails");
                Ok(())
            }
        });
        tokio::time::timeout(FIRST_BACKOFF * 3, task)
            .await
            .expect("the second run ends it")
            .expect("no panic escapes");
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        assert_eq!(sup.not_ready(), None);
    }

    #[tokio::test]
    async fn a_fatal_task_that_panics_stops_the_worker_and_names_itself() {
        let sup = Supervisor::new(CancellationToken::new());
        sup.spawn_fatal("archive writer", async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            panic!("position out of order");
        });
        let reason = tokio::time::timeout(Duration::from_secs(5), sup.failed())
            .await
            .expect("the failure is reported");
        assert_eq!(
            reason,
            "the archive writer stopped: panicked: position out of order"
        );
        assert_eq!(
            sup.not_ready().as_deref(),
            Some("the worker is not ready: the archive writer stopped")
        );
    }

    #[tokio::test]
    async fn a_fatal_task_that_returns_an_error_stops_the_worker_and_ok_does_not() {
        let sup = Supervisor::new(CancellationToken::new());
        sup.spawn_fatal("sim connector", async { Ok(()) })
            .await
            .expect("ran");
        assert_eq!(sup.failure(), None, "Ok(()) is an end on purpose");
        assert_eq!(sup.not_ready(), None);
        sup.spawn_fatal("sim connector", async {
            Err(anyhow::anyhow!("subscription ended").context("serving sim ops"))
        });
        let reason = tokio::time::timeout(Duration::from_secs(5), sup.failed())
            .await
            .expect("the failure is reported");
        assert_eq!(
            reason,
            "the sim connector stopped: serving sim ops: subscription ended"
        );
    }

    /// Poll `f` until it gives something (at most 5 s).
    async fn wait_for<T>(f: impl Fn() -> Option<T>) -> T {
        tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                if let Some(v) = f() {
                    return v;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("in time")
    }
}
