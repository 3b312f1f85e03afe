//! Labels of the per-connection and per-transaction counters: why a client was refused, how a
//! transaction across backends committed. Each child is created at startup and kept in an array.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Why a client connection did not become a session (the `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `max_connections` sessions were open (ERROR 1040).
    MaxConnections,
    /// The user's `max_connections` (ERROR 1226).
    UserMaxConnections,
    /// Wrong password, unknown user, malformed or pre-4.1 handshake (ERROR 1045 and kin).
    AuthFailed,
    /// The host failed too often and waits (ERROR 1129).
    Throttled,
    /// Right password, but the user or `require_secure_transport` needs TLS.
    TlsRequired,
    /// Right password, but the user's client certificate is missing or not the required one.
    CertificateRequired,
    /// The login did not finish within `connect_timeout`.
    ConnectTimeout,
}

impl Refusal {
    pub const ALL: [Refusal; 7] = [
        Refusal::MaxConnections,
        Refusal::UserMaxConnections,
        Refusal::AuthFailed,
        Refusal::Throttled,
        Refusal::TlsRequired,
        Refusal::CertificateRequired,
        Refusal::ConnectTimeout,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Refusal::MaxConnections => "max_connections",
            Refusal::UserMaxConnections => "user_max_connections",
            Refusal::AuthFailed => "auth_failed",
            Refusal::Throttled => "throttled",
            Refusal::TlsRequired => "tls_required",
            Refusal::CertificateRequired => "certificate_required",
            Refusal::ConnectTimeout => "connect_timeout",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: &'static str,
}

pub struct Refusals {
    pub family: Family<ReasonLabel, Counter>,
    by_reason: [Counter; Refusal::ALL.len()],
}

impl Default for Refusals {
    fn default() -> Self {
        let family = Family::<ReasonLabel, Counter>::default();
        let by_reason = std::array::from_fn(|i| {
            family
                .get_or_create(&ReasonLabel {
                    reason: Refusal::ALL[i].label(),
                })
                .clone()
        });
        Refusals { family, by_reason }
    }
}

impl Refusals {
    pub fn inc(&self, r: Refusal) {
        self.by_reason[r as usize].inc();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CommitLabels {
    /// `one` (XA COMMIT … ONE PHASE: at most one participant wrote) or `two` (prepare, log
    /// the decision, commit).
    pub phase: &'static str,
    /// `committed` or `failed` (the client got an error; the transaction rolled back or its
    /// outcome on a lost backend is unknown).
    pub outcome: &'static str,
}

/// Commits idgate coordinated over XA branches.
pub struct XaCommits {
    pub family: Family<CommitLabels, Counter>,
    /// [two_phase][failed].
    children: [[Counter; 2]; 2],
}

impl Default for XaCommits {
    fn default() -> Self {
        let family = Family::<CommitLabels, Counter>::default();
        let children = std::array::from_fn(|p| {
            std::array::from_fn(|o| {
                family
                    .get_or_create(&CommitLabels {
                        phase: ["one", "two"][p],
                        outcome: ["committed", "failed"][o],
                    })
                    .clone()
            })
        });
        XaCommits { family, children }
    }
}

impl XaCommits {
    pub fn inc(&self, two_phase: bool, committed: bool) {
        self.children[usize::from(two_phase)][usize::from(!committed)].inc();
    }
}
