//! What the admin statements and listeners act on above the proxy: this instance's migration
//! jobs and its reloads. The server makes it once; the sessions and the admin listener hold
//! it, so that the proxy, which every layer reads, knows nothing of either.

use std::path::PathBuf;
use std::sync::Arc;

use crate::migrate::Migrations;
use crate::proxy::Proxy;
use crate::reload::Reloads;

pub struct Control {
    pub proxy: Arc<Proxy>,
    /// Jobs moving tables' placements (`IDGATE MIGRATE`) this instance runs.
    pub migrations: Arc<Migrations>,
    /// The file a reload reads (when idgate runs from one), and the last reload's outcome.
    pub reloads: Arc<Reloads>,
}

impl Control {
    pub fn new(proxy: Arc<Proxy>, config_file: Option<PathBuf>) -> Arc<Control> {
        let reloads = Reloads::default();
        if let Some(p) = config_file {
            reloads.set_path(p);
        }
        Arc::new(Control {
            migrations: Migrations::new(proxy.clone()),
            reloads: Arc::new(reloads),
            proxy,
        })
    }
}
