//! Which shard each row of a multi-row write goes to: the first sharding column a row gives a
//! value for decides, under the placement's algorithm (INSERT … VALUES, INSERT … SELECT).

use super::algorithm::{Algorithm, ShardValue};

/// Why a row has no shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowShardError {
    /// Row `row` (0-based) gives no value for any sharding column; `column` is the last one tried.
    NoValue { row: usize, column: String },
    /// The algorithm refused the value (its message).
    Algorithm(String),
}

/// For each of `shard_count` shards, the rows (`0..rows`) it gets, in order. `value(row, column)`
/// is the row's value of a sharding column, if it gives one.
pub fn rows_by_shard(
    columns: &[String],
    algorithm: &Algorithm,
    shard_count: usize,
    rows: usize,
    mut value: impl FnMut(usize, &str) -> Option<ShardValue>,
) -> Result<Vec<Vec<usize>>, RowShardError> {
    let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); shard_count];
    for row in 0..rows {
        let mut found = None;
        let mut used = "";
        for c in columns {
            used = c;
            found = value(row, c);
            if found.is_some() {
                break;
            }
        }
        let Some(v) = found else {
            return Err(RowShardError::NoValue {
                row,
                column: used.to_string(),
            });
        };
        let s = algorithm
            .shard_of(&v, shard_count, used)
            .map_err(|e| RowShardError::Algorithm(e.to_string()))?;
        // shard_of answers below shard_count; a wrong answer is an error, not a panic.
        let Some(rows) = by_shard.get_mut(s) else {
            return Err(RowShardError::Algorithm(format!(
                "idgate: shard {s} of {shard_count} out of range"
            )));
        };
        rows.push(row);
    }
    Ok(by_shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_column_with_a_value_decides_each_rows_shard() {
        let columns = ["a".to_string(), "b".to_string()];
        let values = [(Some(3), None), (None, Some(4)), (Some(6), Some(1))];
        let got = rows_by_shard(&columns, &Algorithm::Mod, 2, 3, |row, c| {
            let (a, b) = values[row];
            let v = if c == "a" { a } else { b };
            v.map(ShardValue::Int)
        })
        .unwrap();
        assert_eq!(got, vec![vec![1, 2], vec![0]]);
        let none = rows_by_shard(&columns, &Algorithm::Mod, 2, 1, |_, _| None).unwrap_err();
        assert_eq!(
            none,
            RowShardError::NoValue {
                row: 0,
                column: "b".into()
            }
        );
    }
}
