//! How a session is told to end (KILL CONNECTION, shutdown, the idle check): a flag and the
//! session's waker, kept for the session's life. Waiting again with the waker already there
//! takes no lock and no atomic write, so the wait for each next command costs one load on top of
//! the read.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

#[derive(Default)]
pub struct EndSignal {
    poked: AtomicBool,
    /// Left in place when woken, so that the next wait finds it.
    waker: Mutex<Option<Waker>>,
}

impl EndSignal {
    /// Wakes the waiting session, or the next wait at once if none is waiting now.
    pub fn poke(&self) {
        self.poked.store(true, Ordering::SeqCst);
        if let Ok(slot) = self.waker.lock() {
            if let Some(w) = slot.as_ref() {
                w.wake_by_ref();
            }
        }
    }
}

/// Resolves at the first `poke` not yet taken by an earlier wait.
pub struct Poked {
    signal: Arc<EndSignal>,
    /// The waker this wait left in the signal.
    left: Option<Waker>,
}

impl Poked {
    pub fn new(signal: Arc<EndSignal>) -> Self {
        Poked { signal, left: None }
    }
}

impl Future for Poked {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let signal = &*this.signal;
        // Looked at before it is taken: a swap is a locked write, on every wait for a command.
        if signal.poked.load(Ordering::SeqCst) && signal.poked.swap(false, Ordering::SeqCst) {
            return Poll::Ready(());
        }
        if this.left.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            return Poll::Pending;
        }
        if let Ok(mut slot) = signal.waker.lock() {
            *slot = Some(cx.waker().clone());
        }
        this.left = Some(cx.waker().clone());
        // A poke between the first look and the waker's arrival found no waker to wake.
        if signal.poked.swap(false, Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_poke_before_or_during_a_wait_ends_exactly_one_wait() {
        let signal = Arc::new(EndSignal::default());
        // Before the wait: kept for it.
        signal.poke();
        Poked::new(signal.clone()).await;
        // Taken: the next wait waits.
        let mut wait = std::pin::pin!(Poked::new(signal.clone()));
        let waited = tokio::time::timeout(Duration::from_millis(50), &mut wait).await;
        assert!(waited.is_err(), "no poke left for a second wait");
        // During the wait, from another task, with the waker already left (no lock taken).
        let poker = signal.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            poker.poke();
        });
        tokio::time::timeout(Duration::from_secs(5), &mut wait)
            .await
            .expect("woken by the poke");
    }
}
