//! One timer per connection, armed lazily. A fresh `tokio::time::timeout` per packet inserts
//! into and removes from the runtime's timer wheel under its lock every time the wait is
//! pending. Here a wait that is pending only notes when it would run out; the timer keeps the
//! earlier, sooner deadline it has, and when that fires during a wait that still has time left
//! it is moved to that wait's end. A connection that waits once per statement touches the
//! timer about once per `duration` instead of once per statement, and polls it only when the
//! task waiting changed or its deadline came.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// A reusable bound on waits of one connection.
pub struct Deadline {
    sleep: Pin<Box<Sleep>>,
    /// The timer's deadline, kept beside the rest: a wait that has not reached it knows the
    /// timer has not fired without reading the timer (tokio never fires one early).
    armed: Instant,
    duration: Duration,
    /// The waker the timer holds (from its last pending poll) while it has not fired: a wait
    /// of the same task then needs no poll of the timer to be woken by it.
    waking: Option<Waker>,
}

impl Deadline {
    pub fn new(duration: Duration) -> Deadline {
        let sleep = Box::pin(tokio::time::sleep(duration));
        Deadline {
            armed: sleep.deadline(),
            sleep,
            duration,
            waking: None,
        }
    }

    /// How long each wait may take.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Runs `f` until it completes (`Some`) or `duration` passes without it completing (`None`).
    /// A future that is ready at once never touches the timer.
    pub async fn run<F: Future>(&mut self, f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        let mut until = None;
        poll_fn(|cx| {
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            self.poll_expired(cx, &mut until).map(|()| None)
        })
        .await
    }

    /// For a wait polled by hand, called each time it is pending: `Ready` once it has lasted
    /// `duration`, counted from its first pending poll (kept in `until`, `None` at the start
    /// of each wait); otherwise the timer wakes the task in time.
    pub fn poll_expired(&mut self, cx: &mut Context<'_>, until: &mut Option<Instant>) -> Poll<()> {
        // The first poll of a wait reads the clock anyway; a later one asks the timer instead.
        let mut first_at = None;
        let until = match *until {
            Some(at) => at,
            None => {
                let now = Instant::now();
                first_at = Some(now);
                // Far-future durations (a disabled bound) saturate rather than overflow.
                let at = now
                    .checked_add(self.duration)
                    .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
                if self.armed > at {
                    // A shorter bound than the timer's: it must fire sooner.
                    self.sleep.as_mut().reset(at);
                    self.armed = at;
                }
                *until = Some(at);
                at
            }
        };
        // Before its deadline the timer has not fired, so it still holds the waker it took (a
        // reset that shortens tokio's default timer keeps it).
        let unfired = first_at.map_or_else(|| !self.sleep.is_elapsed(), |now| now < self.armed);
        if unfired
            && self
                .waking
                .as_ref()
                .is_some_and(|w| w.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        let sleep = &mut self.sleep;
        loop {
            // Out of budget, the poll only reschedules the task: the timer (perhaps not made
            // yet) then holds no waker, and the next poll must look at it again.
            let may_register = tokio::task::coop::has_budget_remaining();
            match sleep.as_mut().poll(cx) {
                Poll::Pending => {
                    self.waking = may_register.then(|| cx.waker().clone());
                    return Poll::Pending;
                }
                Poll::Ready(()) if Instant::now() >= until => return Poll::Ready(()),
                // Fired for an earlier wait's end (or while no wait ran): this wait has
                // time left, so the timer moves to its end.
                Poll::Ready(()) => {
                    sleep.as_mut().reset(until);
                    self.armed = until;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wait_first_pending_out_of_budget_is_still_bounded() {
        // The wait first comes back pending with the task's budget used up (a busy channel),
        // when the timer cannot be armed; it must be on a later poll.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..1000 {
            tx.send(i).unwrap();
        }
        let mut d = Deadline::new(Duration::from_millis(100));
        let draining = async { while rx.recv().await.is_some() {} };
        let bounded = tokio::time::timeout(Duration::from_secs(5), d.run(draining)).await;
        assert_eq!(bounded, Ok(None), "the wait ends at its bound");
        drop(tx);
    }

    #[tokio::test]
    async fn a_wait_started_before_the_timer_fires_still_gets_its_whole_bound() {
        let mut d = Deadline::new(Duration::from_millis(100));
        // Arms the timer for 100 ms after it was made, and leaves it holding this task.
        let quick = tokio::time::sleep(Duration::from_millis(10));
        assert_eq!(d.run(quick).await, Some(()));
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The timer fires ~40 ms into this wait, which must go on to its own 100 ms.
        let t0 = Instant::now();
        let bounded =
            tokio::time::timeout(Duration::from_secs(5), d.run(std::future::pending::<()>()));
        assert_eq!(bounded.await, Ok(None), "the wait ends at its bound");
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(100), "ended early: {took:?}");
        assert!(took < Duration::from_secs(2), "ended late: {took:?}");
    }

    #[tokio::test]
    async fn bounds_each_wait_and_is_reusable() {
        let mut d = Deadline::new(Duration::from_millis(200));
        assert_eq!(d.run(async { 7 }).await, Some(7));
        let slow = tokio::time::sleep(Duration::from_millis(400));
        assert_eq!(d.run(slow).await, None);
        // Re-armed from the start of each wait, also after it fired: three waits of 120 ms
        // add up to more than the bound, and none of them passes it.
        for _ in 0..3 {
            let quick = tokio::time::sleep(Duration::from_millis(120));
            assert_eq!(d.run(quick).await, Some(()));
        }
        // The timer ran out while no wait was running: the next wait still gets its whole bound.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let quick = tokio::time::sleep(Duration::from_millis(120));
        assert_eq!(d.run(quick).await, Some(()));
        let mut short = Deadline::new(Duration::from_millis(10));
        assert_eq!(short.run(std::future::pending::<()>()).await, None);
        let mut long = Deadline::new(Duration::MAX);
        let quick = tokio::time::sleep(Duration::from_millis(5));
        assert_eq!(long.run(quick).await, Some(()));
    }
}
