//! The session's prepared statements: the ids the client knows, mapped to the backend's ids.
//! idgate hands out its own ids so that a statement can later live on several backends.

use std::collections::HashMap;

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
    by_client_id: HashMap<u32, Statement>,
    last_id: u32,
}

impl Statements {
    pub fn next_id(&mut self) -> u32 {
        self.last_id = self.last_id.wrapping_add(1).max(1);
        self.last_id
    }

    pub fn insert(&mut self, client_id: u32, st: Statement) {
        self.by_client_id.insert(client_id, st);
    }

    pub fn get(&self, client_id: u32) -> Option<&Statement> {
        self.by_client_id.get(&client_id)
    }

    pub fn get_mut(&mut self, client_id: u32) -> Option<&mut Statement> {
        self.by_client_id.get_mut(&client_id)
    }

    pub fn len(&self) -> usize {
        self.by_client_id.len()
    }

    pub fn remove(&mut self, client_id: u32) -> Option<Statement> {
        self.by_client_id.remove(&client_id)
    }

    /// The backend forgot them all (COM_RESET_CONNECTION, COM_CHANGE_USER, a new connection).
    pub fn clear(&mut self) {
        self.by_client_id.clear();
    }
}
