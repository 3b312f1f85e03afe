//! Holding one source's catch-up at a point of its binlog, so that VERIFY reads the new
//! placement with exactly the source's changes up to that point applied, no fewer and no more
//! (Vitess's VDiff stops its stream at a position the same way). The catch-up holds only
//! between event groups, after applying every group it has read: a held catch-up writes
//! nothing, and what the new backends hold is the source's rows at the held position.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{watch, Mutex, MutexGuard};
use tracing::warn;

use super::gtid::Position;

/// Longest a catch-up stays held for one request: a VERIFY that went away (its client gone,
/// its backend slow) must not stop the move. VERIFY's own waits are shorter.
const MAX_HOLD: Duration = Duration::from_secs(60);

/// What the holder asks of the catch-up.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Want {
    #[default]
    Run,
    /// Hold at the next group boundary (`until: None`), or at the first one where every
    /// group of `until` is applied.
    Hold { id: u64, until: Option<Position> },
}

/// One source's hold, shared by its catch-up (whichever run of it is streaming) and VERIFY.
#[derive(Debug)]
pub struct Hold {
    /// One holder at a time (two VERIFY runs of the job take turns).
    turn: Mutex<()>,
    want: watch::Sender<Want>,
    /// The request the catch-up holds for now, and the position it holds at.
    held: watch::Sender<Option<(u64, Position)>>,
    next_id: AtomicU64,
    /// A request held for `MAX_HOLD` already: the catch-up goes on past it.
    given_up: AtomicU64,
}

impl Default for Hold {
    fn default() -> Hold {
        Hold {
            turn: Mutex::new(()),
            want: watch::channel(Want::Run).0,
            held: watch::channel(None).0,
            next_id: AtomicU64::new(0),
            given_up: AtomicU64::new(0),
        }
    }
}

impl Hold {
    /// For the catch-up: changes of what is asked (to wake a catch-up waiting for events).
    pub fn asked(&self) -> watch::Receiver<Want> {
        self.want.subscribe()
    }

    /// For the catch-up between groups, applied (or about to apply) through `at`: the request
    /// to hold for here, if any.
    pub fn wanted(&self, at: &Position) -> Option<Want> {
        let w = self.want.borrow().clone();
        let Want::Hold { id, until } = &w else {
            return None;
        };
        if *id == self.given_up.load(Ordering::Acquire) {
            return None;
        }
        match until {
            Some(p) if at.behind(p) > 0 => None,
            _ => Some(w),
        }
    }

    /// For the catch-up, everything through `at` applied: holds for `w` until the holder asks
    /// for something else, the catch-up is stopped (true) or `MAX_HOLD` has passed.
    pub async fn wait(&self, w: &Want, at: &Position, stop: &mut watch::Receiver<bool>) -> bool {
        let Want::Hold { id, .. } = w else {
            return false;
        };
        let mut asked = self.want.subscribe();
        if *asked.borrow_and_update() != *w {
            return false;
        }
        self.held.send_replace(Some((*id, at.clone())));
        let stopped = tokio::select! {
            _ = asked.changed() => false,
            _ = stop.changed() => true,
            _ = tokio::time::sleep(MAX_HOLD) => {
                warn!(held_at = %at, "VERIFY held the catch-up for {} s; going on", MAX_HOLD.as_secs());
                self.given_up.store(*id, Ordering::Release);
                false
            }
        };
        // Cleared before anything more is written.
        self.held.send_replace(None);
        stopped
    }

    /// For VERIFY: the hold to itself (waiting, `within` at most, for another VERIFY to end).
    pub async fn take(&self, within: Duration) -> Result<Holder<'_>, String> {
        let turn = tokio::time::timeout(within, self.turn.lock())
            .await
            .map_err(|_| {
                format!(
                    "another VERIFY of the job held the catch-up for over {} s",
                    within.as_secs()
                )
            })?;
        Ok(Holder {
            hold: self,
            _turn: turn,
            id: self.next_id.fetch_add(1, Ordering::AcqRel) + 1,
            at: None,
        })
    }
}

/// VERIFY's hold of one catch-up; dropped, the catch-up goes on.
pub struct Holder<'a> {
    hold: &'a Hold,
    _turn: MutexGuard<'a, ()>,
    id: u64,
    /// Where the catch-up holds for this holder.
    at: Option<Position>,
}

impl Holder<'_> {
    /// Holds the catch-up at its next group boundary; returns the position it holds at.
    pub async fn pause(&mut self, within: Duration) -> Result<Position, String> {
        self.ask(None, within).await
    }

    /// Lets the catch-up go on until every group of `until` is applied and holds it there
    /// (at once when it holds there already). Before, it must be paused: then it has not
    /// gone past `until` when `until` is the source's position now or later.
    pub async fn hold_at(&mut self, until: &Position, within: Duration) -> Result<(), String> {
        let at = self.ask(Some(until.clone()), within).await?;
        if until.behind(&at) > 0 {
            // Past `until`: what it applied is not the source's rows there.
            return Err(format!(
                "the catch-up was at {at}, past {until}, when asked to hold there"
            ));
        }
        Ok(())
    }

    /// Whether the catch-up still holds where it held for this holder (it wrote nothing since).
    pub fn still_held(&self) -> bool {
        let held = self.hold.held.borrow();
        match (&*held, &self.at) {
            (Some((id, p)), Some(at)) => *id == self.id && p == at,
            _ => false,
        }
    }

    async fn ask(&mut self, until: Option<Position>, within: Duration) -> Result<Position, String> {
        let mut held = self.hold.held.subscribe();
        self.at = None;
        self.hold.want.send_replace(Want::Hold {
            id: self.id,
            until: until.clone(),
        });
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some((id, at)) = &*held.borrow_and_update() {
                if *id == self.id && until.as_ref().is_none_or(|u| at.behind(u) == 0) {
                    self.at = Some(at.clone());
                    return Ok(at.clone());
                }
            }
            match tokio::time::timeout_at(deadline, held.changed()).await {
                Ok(Ok(())) => {}
                _ => {
                    return Err(match until {
                        Some(u) => format!(
                            "the catch-up did not reach {u} within {} s",
                            within.as_secs()
                        ),
                        None => format!(
                            "the catch-up did not come to a stop between two transactions \
                             within {} s",
                            within.as_secs()
                        ),
                    })
                }
            }
        }
    }
}

impl Drop for Holder<'_> {
    fn drop(&mut self) {
        self.hold.want.send_replace(Want::Run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(s: &str) -> Position {
        Position::parse(s).unwrap()
    }

    /// A catch-up that applies one group per `step` call, holding as asked.
    async fn follower(hold: &Hold, mut stop: watch::Receiver<bool>, to: u64) -> u64 {
        let mut applied = 0u64;
        let mut asked = hold.asked();
        loop {
            let at = pos(&format!("0-1-{applied}"));
            if let Some(w) = hold.wanted(&at) {
                if hold.wait(&w, &at, &mut stop).await {
                    return applied;
                }
                continue;
            }
            if applied == to {
                tokio::select! {
                    _ = asked.changed() => continue,
                    _ = stop.changed() => return applied,
                }
            }
            applied += 1;
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_paused_catch_up_goes_on_to_the_asked_position_and_holds_there_until_released() {
        let hold = std::sync::Arc::new(Hold::default());
        let (stop_tx, stop) = watch::channel(false);
        let h = hold.clone();
        let task = tokio::spawn(async move { follower(&h, stop, 1_000_000).await });
        let mut holder = hold.take(Duration::from_secs(5)).await.unwrap();
        let paused = holder.pause(Duration::from_secs(5)).await.unwrap();
        assert!(holder.still_held());
        let seq: u64 = paused
            .to_string()
            .rsplit('-')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let until = pos(&format!("0-1-{}", seq + 1000));
        holder
            .hold_at(&until, Duration::from_secs(5))
            .await
            .unwrap();
        assert!(holder.still_held());
        assert_eq!(hold.held.borrow().as_ref().unwrap().1, until);
        // Another holder waits its turn.
        assert!(hold.take(Duration::from_millis(50)).await.is_err());
        drop(holder);
        // The catch-up leaves its hold before it is stopped: a stop seen together with the
        // release could win the follower's select.
        let mut held = hold.held.subscribe();
        tokio::time::timeout(Duration::from_secs(5), held.wait_for(|h| h.is_none()))
            .await
            .unwrap()
            .unwrap();
        let _ = stop_tx.send(true);
        let ended = task.await.unwrap();
        assert!(ended > seq + 1000, "released, it went on ({ended})");
        assert!(hold.held.borrow().is_none());
    }

    #[tokio::test]
    async fn a_catch_up_past_the_asked_position_is_not_taken_as_held_there() {
        let hold = Hold::default();
        let mut holder = hold.take(Duration::from_secs(1)).await.unwrap();
        // As if the catch-up held at 0-1-9 for this holder.
        hold.held.send_replace(Some((holder.id, pos("0-1-9"))));
        let e = holder
            .hold_at(&pos("0-1-5"), Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(e.contains("past"), "{e}");
        // Not held for this holder: not taken as held.
        hold.held.send_replace(Some((holder.id + 1, pos("0-1-9"))));
        assert!(!holder.still_held());
        assert!(holder
            .pause(Duration::from_millis(50))
            .await
            .unwrap_err()
            .contains("did not come to a stop"));
    }
}
