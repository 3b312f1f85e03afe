//! One timer per connection, armed lazily. A fresh `tokio::time::timeout` per packet inserts
//! into and removes from the runtime's timer wheel under its lock every time the wait is
//! pending. Here a wait that is pending only notes when it would run out; the timer keeps the
//! earlier, sooner deadline it has, and when that fires during a wait that still has time left
//! it is moved to that wait's end. A connection that waits once per statement touches the
//! timer about once per `duration` instead of once per statement.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// A reusable bound on waits of one connection.
pub struct Deadline {
    sleep: Pin<Box<Sleep>>,
    duration: Duration,
}

impl Deadline {
    pub fn new(duration: Duration) -> Deadline {
        Deadline {
            sleep: Box::pin(tokio::time::sleep(duration)),
            duration,
        }
    }

    /// How long each wait may take.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    pub fn set_duration(&mut self, duration: Duration) {
        self.duration = duration;
    }

    /// Runs `f` until it completes (`Some`) or `duration` passes without it completing (`None`).
    /// A future that is ready at once never touches the timer.
    pub async fn run<F: Future>(&mut self, f: F) -> Option<F::Output> {
        let mut f = std::pin::pin!(f);
        let sleep = &mut self.sleep;
        let duration = self.duration;
        let mut until = None;
        poll_fn(|cx| {
            if let Poll::Ready(v) = f.as_mut().poll(cx) {
                return Poll::Ready(Some(v));
            }
            let until = *until.get_or_insert_with(|| {
                let now = Instant::now();
                // Far-future durations (a disabled bound) saturate rather than overflow.
                let at = now
                    .checked_add(duration)
                    .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
                if sleep.deadline() > at {
                    // A shorter bound than the timer's: it must fire sooner.
                    sleep.as_mut().reset(at);
                }
                at
            });
            loop {
                match sleep.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(()) if Instant::now() >= until => return Poll::Ready(None),
                    // Fired for an earlier wait's end (or while no wait ran): this wait has
                    // time left, so the timer moves to its end.
                    Poll::Ready(()) => sleep.as_mut().reset(until),
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        d.set_duration(Duration::from_millis(10));
        assert_eq!(d.run(std::future::pending::<()>()).await, None);
        let mut long = Deadline::new(Duration::MAX);
        let quick = tokio::time::sleep(Duration::from_millis(5));
        assert_eq!(long.run(quick).await, Some(()));
    }
}
