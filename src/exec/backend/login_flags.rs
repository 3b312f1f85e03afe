//! What a client chose at login that changes the bytes a backend answers with, so its backend
//! connections must log in with the same choice: CLIENT_FOUND_ROWS (affected rows of an UPDATE),
//! CLIENT_SESSION_TRACK (session-state changes in OK packets) and MariaDB's extended column
//! metadata (`type=point`, `format=json` in column definitions). These are fixed at login, so
//! the pool keeps idle connections apart by them.

use mysql_common::constants::{CapabilityFlags, MariadbCapabilities};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoginFlags {
    pub found_rows: bool,
    pub session_track: bool,
    pub extended_metadata: bool,
}

/// How many kinds of connection a pool keeps apart (`LoginFlags::index`).
pub const KINDS: usize = 8;

impl LoginFlags {
    /// The flags a client's negotiated capabilities ask for.
    pub fn of_client(caps: CapabilityFlags, mariadb: MariadbCapabilities) -> LoginFlags {
        LoginFlags {
            found_rows: caps.contains(CapabilityFlags::CLIENT_FOUND_ROWS),
            session_track: caps.contains(CapabilityFlags::CLIENT_SESSION_TRACK),
            extended_metadata: mariadb
                .contains(MariadbCapabilities::MARIADB_CLIENT_EXTENDED_METADATA),
        }
    }

    pub fn index(self) -> usize {
        usize::from(self.found_rows)
            | usize::from(self.session_track) << 1
            | usize::from(self.extended_metadata) << 2
    }

    /// The capability flags of idgate's HandshakeResponse. Without extended metadata the
    /// response says CLIENT_MYSQL (the bit CLIENT_LONG_PASSWORD once was), so the server reads
    /// no MariaDB capabilities; with it, the bit is clear and `mariadb` says which.
    pub fn capabilities(self) -> CapabilityFlags {
        use CapabilityFlags as C;
        let mut c = C::CLIENT_PROTOCOL_41
            | C::CLIENT_LONG_FLAG
            | C::CLIENT_TRANSACTIONS
            | C::CLIENT_SECURE_CONNECTION
            | C::CLIENT_MULTI_STATEMENTS
            | C::CLIENT_MULTI_RESULTS
            | C::CLIENT_PS_MULTI_RESULTS
            | C::CLIENT_PLUGIN_AUTH
            | C::CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA
            // The backend may ask for a LOCAL INFILE file; idgate passes the request on only to
            // a client that agreed to send files, and otherwise answers with an empty file itself.
            | C::CLIENT_LOCAL_FILES;
        c.set(C::CLIENT_LONG_PASSWORD, !self.extended_metadata);
        c.set(C::CLIENT_FOUND_ROWS, self.found_rows);
        c.set(C::CLIENT_SESSION_TRACK, self.session_track);
        c
    }

    /// The MariaDB capabilities of idgate's HandshakeResponse (read by the server only when
    /// CLIENT_MYSQL is clear).
    pub fn mariadb(self) -> MariadbCapabilities {
        if self.extended_metadata {
            MariadbCapabilities::MARIADB_CLIENT_EXTENDED_METADATA
        } else {
            MariadbCapabilities::empty()
        }
    }

    /// The choices a server that announced `caps` and `mariadb` honours.
    pub fn offered_by(caps: CapabilityFlags, mariadb: MariadbCapabilities) -> LoginFlags {
        let mariadb_server = !caps.contains(CapabilityFlags::CLIENT_LONG_PASSWORD);
        LoginFlags {
            found_rows: true,
            session_track: caps.contains(CapabilityFlags::CLIENT_SESSION_TRACK),
            extended_metadata: mariadb_server
                && mariadb.contains(MariadbCapabilities::MARIADB_CLIENT_EXTENDED_METADATA),
        }
    }

    /// What of these choices a server that announced `caps` and `mariadb` lacks, if anything.
    pub fn unsupported(
        self,
        caps: CapabilityFlags,
        mariadb: MariadbCapabilities,
    ) -> Option<&'static str> {
        let offered = LoginFlags::offered_by(caps, mariadb);
        if self.session_track && !offered.session_track {
            return Some("session-state tracking (CLIENT_SESSION_TRACK)");
        }
        if self.extended_metadata && !offered.extended_metadata {
            return Some("MariaDB's extended column metadata");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_combination_has_its_own_index() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..KINDS {
            let f = LoginFlags {
                found_rows: i & 1 != 0,
                session_track: i & 2 != 0,
                extended_metadata: i & 4 != 0,
            };
            assert_eq!(f.index(), i);
            assert!(seen.insert(f.index()));
        }
    }

    #[test]
    fn extended_metadata_clears_client_mysql() {
        let plain = LoginFlags::default();
        assert!(plain
            .capabilities()
            .contains(CapabilityFlags::CLIENT_LONG_PASSWORD));
        assert!(plain.mariadb().is_empty());
        let ext = LoginFlags {
            extended_metadata: true,
            ..plain
        };
        assert!(!ext
            .capabilities()
            .contains(CapabilityFlags::CLIENT_LONG_PASSWORD));
        assert!(ext
            .mariadb()
            .contains(MariadbCapabilities::MARIADB_CLIENT_EXTENDED_METADATA));
    }

    #[test]
    fn a_mysql_server_lacks_extended_metadata() {
        let ext = LoginFlags {
            extended_metadata: true,
            ..Default::default()
        };
        let mysql = CapabilityFlags::CLIENT_LONG_PASSWORD | CapabilityFlags::CLIENT_PROTOCOL_41;
        let all = MariadbCapabilities::all();
        assert!(ext.unsupported(mysql, all).is_some());
        let mariadb = CapabilityFlags::CLIENT_PROTOCOL_41;
        assert!(ext.unsupported(mariadb, all).is_none());
        assert!(ext
            .unsupported(mariadb, MariadbCapabilities::empty())
            .is_some());
    }
}
