//! Ids across a move: a table adopted by a generator gets ids above every id its source ever
//! handed out (the highest row and the AUTO_INCREMENT counter, read while writes are held),
//! on every instance that starts routing it.

use std::time::Duration;

use super::columns::quote_ident;
use super::source::rows;
use crate::exec::metadata::quote_literal;
use crate::exec::BackendConn;
use crate::proxy::Proxy;

const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The highest id `schema`.`table` holds or has handed out on `backends`.
pub async fn highest(
    proxy: &Proxy,
    backends: &[String],
    schema: &str,
    table: &str,
    id_column: &str,
) -> Result<u64, String> {
    let mut top = 0u64;
    for b in backends {
        let cfg = proxy
            .config
            .backends
            .get(b)
            .ok_or_else(|| format!("backend `{b}` is not configured"))?;
        let mut c = BackendConn::connect(b, &cfg.value, Default::default(), READ_TIMEOUT)
            .await
            .map_err(|e| e.to_string())?;
        let sql = format!(
            "SELECT (SELECT MAX({}) FROM {}.{}), (SELECT AUTO_INCREMENT - 1 FROM \
             information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {})",
            quote_ident(id_column),
            quote_ident(schema),
            quote_ident(table),
            quote_literal(schema),
            quote_literal(table)
        );
        let r = rows(&mut c, &sql).await;
        c.close().await;
        // A non-numeric id (a uuid) has no floor to keep.
        for v in r?.into_iter().flatten().flatten() {
            if let Ok(n) = v.parse::<u64>() {
                top = top.max(n);
            }
        }
    }
    Ok(top)
}

/// Makes `generator` hand out only ids above `floor`; an error says why it cannot.
pub async fn raise(proxy: &Proxy, generator: &str, floor: u64) -> Result<(), String> {
    let g = proxy.idgen.get(generator).map_err(|e| e.to_string())?;
    if let Some(seg) = g.as_segment() {
        return seg.raise_above(floor).await.map_err(|e| e.to_string());
    }
    if g.as_uuidv7().is_some() {
        return Ok(());
    }
    // Time-based: its ids only grow; the next one must already be above the table's.
    let next = match g.as_biased() {
        Some(_) => {
            let mut out = Vec::new();
            g.next_biased(&[0], &mut out)
                .await
                .map_err(|e| e.to_string())?;
            out.first().copied().unwrap_or(0)
        }
        None => g.next_block(1).await.map_err(|e| e.to_string())?.first,
    };
    if next <= floor {
        return Err(format!(
            "generator `{generator}` would hand out ids at or below {floor}, which the table \
             already holds; give the table a segment generator whose start is above it"
        ));
    }
    Ok(())
}

/// On an instance that starts routing a moved table: its generator above the floor the switch
/// recorded.
pub async fn raise_for(
    migrations: &super::Migrations,
    key: &str,
    entry: &str,
) -> Result<(), String> {
    let proxy = &migrations.proxy;
    let rule = super::start::target_rule(proxy, key, entry)?;
    let Some(generator) = &rule.generator else {
        return Ok(());
    };
    let (schema, table) = key.split_once('.').ok_or("no schema")?;
    let recorded = migrations.store().await?.id_floor(key).await?;
    let floor = highest(proxy, rule.backends(), schema, table, &rule.id_column).await?;
    raise(proxy, generator, floor.max(recorded)).await
}
