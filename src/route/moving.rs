//! What a statement must know of tables moving to a new placement (`IDGATE MIGRATE`): which
//! tables are held while they switch, and which placements moved. `migrate` fills it; the
//! session and the planners only read it, so they need nothing of how a migration runs.

use std::sync::Mutex;

use super::hold::Holds;

#[derive(Default)]
pub struct Moving {
    /// Statements waiting while a table switches.
    pub holds: Holds,
    /// The moved tables' placements routed by now (`schema.table`, placement entry).
    applied: Mutex<Vec<(String, String)>>,
}

impl Moving {
    pub fn applied_placements(&self) -> Vec<(String, String)> {
        self.applied.lock().map(|a| a.clone()).unwrap_or_default()
    }

    pub fn set_applied_placements(&self, moved: Vec<(String, String)>) {
        if let Ok(mut a) = self.applied.lock() {
            *a = moved;
        }
    }
}
