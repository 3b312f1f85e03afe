//! CPU cost of analysing and rewriting a text INSERT: the scanner idgate uses for the common
//! `INSERT … VALUES` shapes against the sqlparser path it falls back to, and the splice that
//! fills the id column.
//!
//! Run: `cargo bench --bench insert_rewrite`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use idgate::sql::{
    analyze_insert, analyze_insert_parsed, bind_insert, render_insert, IdFill, IdValue,
};
use mysql_common::constants::ColumnType;
use mysql_common::value::Value;

/// What sysbench `oltp_insert` sends (120- and 60-character c and pad values).
fn sysbench_insert() -> Vec<u8> {
    let c = "83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-41576422241-93426793964-56405065102-33518432330";
    let pad = "67847967377-48000963322-62604785301-91415491898-96926520291";
    format!("INSERT INTO sbtest3 (id, k, c, pad) VALUES (0, 5012, '{c}', '{pad}')").into_bytes()
}

/// An ORM-style batch: 10 rows, quoted names, NULL ids.
fn ten_rows() -> Vec<u8> {
    let mut s =
        b"INSERT INTO `orders` (`id`, `user_id`, `status`, `note`, `amount`) VALUES ".to_vec();
    for k in 0..10 {
        if k > 0 {
            s.extend_from_slice(b", ");
        }
        s.extend_from_slice(
            format!("(NULL, {}, 'new', 'it''s order {k}', 12.5)", 1000 + k).as_bytes(),
        );
    }
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("insert_rewrite");
    for (name, stmt) in [("sysbench", sysbench_insert()), ("ten_rows", ten_rows())] {
        g.bench_function(format!("{name}/analyze/scanner"), |b| {
            b.iter(|| analyze_insert(black_box(&stmt)).unwrap())
        });
        g.bench_function(format!("{name}/analyze/sqlparser"), |b| {
            b.iter(|| analyze_insert_parsed(black_box(&stmt)).unwrap())
        });
        let a = analyze_insert(&stmt).unwrap();
        let rows: Vec<usize> = match &a.body {
            idgate::sql::InsertBody::Values { rows } => (0..rows.len()).collect(),
            _ => unreachable!("a VALUES body"),
        };
        let lid = b"LAST_INSERT_ID(100000001)".to_vec();
        let values: Vec<IdValue> = rows
            .iter()
            .map(|&r| {
                if r == 0 {
                    IdValue::Text(&lid)
                } else {
                    IdValue::Literal(100_000_001 + r as u64)
                }
            })
            .collect();
        let fill = IdFill {
            column: "id",
            existing: Some(0),
            values: &values,
        };
        g.bench_function(format!("{name}/render"), |b| {
            b.iter(|| render_insert(black_box(&stmt), &a, &fill, &rows).unwrap())
        });
    }
    // A prepared batch INSERT of `rows` rows × 4 parameters bound into its text and analysis:
    // the time per placeholder should not grow with the batch.
    for rows in [10usize, 100, 1000] {
        let mut stmt = b"INSERT INTO orders (id, user_id, status, note) VALUES ".to_vec();
        for k in 0..rows {
            if k > 0 {
                stmt.extend_from_slice(b", ");
            }
            stmt.extend_from_slice(b"(?, ?, ?, ?)");
        }
        let a = analyze_insert(&stmt).unwrap();
        let params: Vec<(Value, ColumnType)> = (0..rows)
            .flat_map(|k| {
                [
                    (Value::NULL, ColumnType::MYSQL_TYPE_NULL),
                    (Value::Int(k as i64), ColumnType::MYSQL_TYPE_LONGLONG),
                    (
                        Value::Bytes(b"new".to_vec()),
                        ColumnType::MYSQL_TYPE_VAR_STRING,
                    ),
                    (
                        Value::Bytes(format!("order {k}").into_bytes()),
                        ColumnType::MYSQL_TYPE_VAR_STRING,
                    ),
                ]
            })
            .collect();
        g.bench_function(format!("bind_insert/{rows}_rows"), |b| {
            b.iter(|| bind_insert(black_box(&stmt), &a, &params, "utf8mb4").unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
