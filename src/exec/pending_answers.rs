//! The first sequence id of the answer to each command written to a backend connection and
//! not yet answered, in order (commands can be pipelined). Nearly always one at a time: that
//! one is kept inline, so the usual statement touches no memory apart from the connection's.

use std::collections::VecDeque;

#[derive(Default)]
pub struct PendingAnswers {
    /// The oldest; `None` only when `later` is empty too.
    first: Option<u8>,
    later: VecDeque<u8>,
}

impl PendingAnswers {
    pub fn push_back(&mut self, seq: u8) {
        if self.first.is_none() {
            self.first = Some(seq);
        } else {
            self.later.push_back(seq);
        }
    }

    pub fn pop_front(&mut self) -> Option<u8> {
        let seq = self.first.take()?;
        self.first = self.later.pop_front();
        Some(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_come_in_the_order_commands_were_written() {
        let mut p = PendingAnswers::default();
        assert_eq!(p.pop_front(), None);
        p.push_back(1);
        assert_eq!(p.pop_front(), Some(1));
        assert_eq!(p.pop_front(), None);
        for seq in [3, 5, 7] {
            p.push_back(seq);
        }
        assert_eq!(p.pop_front(), Some(3));
        p.push_back(9);
        assert_eq!(
            [p.pop_front(), p.pop_front(), p.pop_front(), p.pop_front()],
            [Some(5), Some(7), Some(9), None]
        );
    }
}
