//! The orders, items and labels the gateway join and correlated-subquery tests load into one
//! MariaDB and, through idgate, into tables not placed alike: NULL and duplicate skus, skus with
//! no item and items no order has.

use super::rng::Rng;

pub const ORDERS: &str = "(id INT PRIMARY KEY, sku INT, qty INT, note VARCHAR(20))";
pub const ITEMS: &str = "(iid INT PRIMARY KEY, sku INT, name VARCHAR(20), price DECIMAL(8,2))";
pub const LABELS: &str = "(sku INT, label VARCHAR(20))";

/// Orders: skus 1..40 (duplicates, some without an item), NULL now and then.
pub fn orders() -> String {
    let mut r = Rng(3);
    (1..=90)
        .map(|id| {
            let sku = if r.below(9) == 0 {
                "NULL".into()
            } else {
                (1 + r.below(40)).to_string()
            };
            let note = if r.below(5) == 0 {
                "NULL".into()
            } else {
                format!("'n{}'", r.below(4))
            };
            format!("({id}, {sku}, {}, {note})", r.below(6))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Items: skus 10..50 (several items per sku, some skus no order has).
pub fn items() -> String {
    let mut r = Rng(7);
    (1..=80)
        .map(|iid| {
            // A sharding column: never NULL.
            let sku = 10 + r.below(40);
            format!(
                "({iid}, {sku}, 'item{}', {}.{:02})",
                r.below(7),
                r.below(90),
                r.below(100)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Labels of most skus 1..45.
pub fn labels() -> String {
    (1..=45)
        .filter(|s| s % 4 != 0)
        .map(|s| format!("({s}, 'L{}')", s % 5))
        .collect::<Vec<_>>()
        .join(", ")
}
