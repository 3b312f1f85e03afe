//! The session's prepared statements: the ids the client knows, mapped to the backend's ids.
//! idgate hands out its own ids so that a statement can later live on several backends.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Statement {
    pub backend_id: u32,
    /// What the statement is (for the statement metrics' `kind` label).
    pub kind: crate::sql::StatementKind,
    /// Set for statements idgate executes itself instead of relaying: INSERTs into tables whose
    /// ids it generates, and statements about sharded or broadcast tables.
    pub emulated: Option<Box<Emulated>>,
    /// COM_STMT_SEND_LONG_DATA bytes counted against max_packet_size.
    pub long_data: super::long_data::LongDataTally,
    /// Prepared from a `LOAD … LOCAL` statement: its execution may ask the client for a file.
    pub load_local: bool,
    /// A relayed statement's text (within [`KEPT_TEXT`]), looked at again when tables are
    /// placed otherwise than at its prepare (a table moved by IDGATE MIGRATE): idgate then runs
    /// it itself, where the table is now.
    pub relayed_text: Option<Arc<[u8]>>,
    /// `Proxy::tables_generation` when the statement was last looked at.
    pub generation: u64,
}

/// Longest relayed statement text kept, and most bytes of such texts a session keeps.
pub const KEPT_TEXT: usize = 16 * 1024;
pub const KEPT_TEXT_PER_SESSION: usize = 4 * 1024 * 1024;

impl Statement {
    /// The statement's text when idgate has it: what it runs itself, or a relayed one's.
    pub fn text(&self) -> Option<&[u8]> {
        match &self.emulated {
            Some(e) => Some(&e.sql),
            None => self.relayed_text.as_deref(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmulatedKind {
    /// Bound into the text and run as a rewritten INSERT.
    Insert,
    /// UPDATE/DELETE: bound into the text and routed like a text statement (the answer is an
    /// OK packet, the same in both protocols).
    Write,
    /// SELECT: routed by its bound parameters and executed as a prepared statement on each
    /// shard it reaches, so the rows stay in the binary protocol.
    Select,
    /// `SELECT CONNECTION_ID()`: answered with idgate's id of the session, as in the text
    /// protocol, not the id of the backend connection that prepared it.
    ConnectionId,
    /// `SHOW [FULL] PROCESSLIST`: idgate's sessions under idgate's ids, as in the text protocol.
    ProcessList,
}

#[derive(Debug, Clone)]
pub struct Emulated {
    pub kind: EmulatedKind,
    /// The statement's id on backends other than the default one, prepared there on first use.
    pub prepared_on: HashMap<String, u32>,
    pub sql: Vec<u8>,
    /// For an INSERT: its analysis, bound anew (offsets shifted) at each execution, not re-parsed.
    pub insert: Option<Box<crate::sql::InsertAnalysis>>,
    /// Byte offsets of the statement's `?`.
    pub placeholders: Vec<usize>,
    pub returning: bool,
    /// For a SELECT about one table: routed from its analysis and the bound values.
    pub select: Option<Box<crate::route::prepared::PreparedSelect>>,
    pub bound: crate::wire::stmt_execute::BoundState,
}

#[derive(Default)]
pub struct Statements {
    by_client_id: HashMap<u32, Statement, BuildHasherDefault<IdHasher>>,
    /// The statement last found `relayable`, by client id: executing one statement again and
    /// again (what applications do) then reads neither the map nor the statement, two cache
    /// lines each statement would otherwise fetch. Forgotten at every change to a statement.
    relayable: Option<(u32, Relayable)>,
    last_id: u32,
    /// Bytes of relayed statements' texts kept.
    kept: usize,
}

/// Statement ids are small counters idgate hands out, never chosen by a peer to collide: one
/// multiplication spreads them (SipHash, the default, costs more than the lookup it guards on
/// every COM_STMT_EXECUTE).
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// What executing a statement that the backend runs as it was prepared needs: no emulation,
/// no LOCAL file, no long data to account for.
#[derive(Debug, Clone, Copy)]
pub struct Relayable {
    pub backend_id: u32,
    pub kind: crate::sql::StatementKind,
    /// `Statement::generation`.
    pub generation: u64,
}

impl Statements {
    /// Statement `client_id` when its executes are relayed as prepared (`Relayable`).
    pub fn relayable(&mut self, client_id: u32) -> Option<Relayable> {
        if let Some((id, r)) = self.relayable {
            if id == client_id {
                return Some(r);
            }
        }
        let st = self.by_client_id.get(&client_id)?;
        if st.emulated.is_some() || st.load_local || !st.long_data.is_empty() {
            return None;
        }
        let r = Relayable {
            backend_id: st.backend_id,
            kind: st.kind,
            generation: st.generation,
        };
        self.relayable = Some((client_id, r));
        Some(r)
    }

    pub fn next_id(&mut self) -> u32 {
        self.last_id = self.last_id.wrapping_add(1).max(1);
        self.last_id
    }

    pub fn insert(&mut self, client_id: u32, mut st: Statement) {
        self.relayable = None;
        let len = st.relayed_text.as_ref().map_or(0, |t| t.len());
        if len > KEPT_TEXT || self.kept + len > KEPT_TEXT_PER_SESSION {
            st.relayed_text = None;
        }
        self.kept += st.relayed_text.as_ref().map_or(0, |t| t.len());
        if let Some(old) = self.by_client_id.insert(client_id, st) {
            self.forget_text(&old);
        }
    }

    fn forget_text(&mut self, st: &Statement) {
        self.kept -= st.relayed_text.as_ref().map_or(0, |t| t.len());
    }

    /// Drops the relayed text of statement `client_id` (idgate runs it itself now).
    pub fn drop_relayed_text(&mut self, client_id: u32) {
        self.relayable = None;
        if let Some(t) = self
            .by_client_id
            .get_mut(&client_id)
            .and_then(|st| st.relayed_text.take())
        {
            self.kept -= t.len();
        }
    }

    pub fn get(&self, client_id: u32) -> Option<&Statement> {
        self.by_client_id.get(&client_id)
    }

    /// Whatever the caller changes, `relayable` looks at the statement again.
    pub fn get_mut(&mut self, client_id: u32) -> Option<&mut Statement> {
        self.relayable = None;
        self.by_client_id.get_mut(&client_id)
    }

    pub fn len(&self) -> usize {
        self.by_client_id.len()
    }

    pub fn remove(&mut self, client_id: u32) -> Option<Statement> {
        self.relayable = None;
        let st = self.by_client_id.remove(&client_id)?;
        self.forget_text(&st);
        Some(st)
    }

    /// The backend forgot them all (COM_RESET_CONNECTION, COM_CHANGE_USER, a new connection).
    pub fn clear(&mut self) {
        self.relayable = None;
        self.by_client_id.clear();
        self.kept = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::StatementKind;

    fn relayed(backend_id: u32) -> Statement {
        Statement {
            backend_id,
            kind: StatementKind::Select,
            emulated: None,
            long_data: Default::default(),
            load_local: false,
            relayed_text: None,
            generation: 7,
        }
    }

    fn backend_id(s: &mut Statements, id: u32) -> Option<u32> {
        s.relayable(id).map(|r| r.backend_id)
    }

    #[test]
    fn relayable_sees_every_change_to_a_statement() {
        let mut s = Statements::default();
        let id = s.next_id();
        s.insert(id, relayed(40));
        assert_eq!(backend_id(&mut s, id), Some(40));
        // Remembered, then changed: looked at again.
        if let Some(st) = s.get_mut(id) {
            st.load_local = true;
        }
        assert_eq!(backend_id(&mut s, id), None, "a LOAD … LOCAL one is not");
        if let Some(st) = s.get_mut(id) {
            st.load_local = false;
            st.generation = 9;
        }
        assert_eq!(s.relayable(id).map(|r| r.generation), Some(9));
        let long_data = [&[0x18][..], &id.to_le_bytes(), &[0, 0], b"chunk"].concat();
        assert!(s.long_data_fits(id, &long_data, 100));
        assert_eq!(backend_id(&mut s, id), None, "one with long data is not");
        if let Some(st) = s.get_mut(id) {
            st.long_data.clear();
        }
        assert_eq!(backend_id(&mut s, id), Some(40));
        // Prepared again under the same id, then closed.
        s.insert(id, relayed(41));
        assert_eq!(backend_id(&mut s, id), Some(41));
        s.remove(id);
        assert_eq!(backend_id(&mut s, id), None);
    }

    #[test]
    fn relayable_tells_statements_apart() {
        let mut s = Statements::default();
        let (a, b) = (s.next_id(), s.next_id());
        s.insert(a, relayed(1));
        s.insert(b, relayed(2));
        assert_eq!(backend_id(&mut s, a), Some(1));
        assert_eq!(backend_id(&mut s, b), Some(2));
        assert_eq!(backend_id(&mut s, a), Some(1));
        assert_eq!(backend_id(&mut s, 99), None);
        s.clear();
        assert_eq!(backend_id(&mut s, a), None);
    }
}
