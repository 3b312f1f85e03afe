//! Plans for DISTINCT aggregates, GROUP_CONCAT, variances and BIT_* over several shards.

use super::tests::plan;
use super::*;

fn shard(sql: &str) -> String {
    String::from_utf8(plan(sql).unwrap().shard_sql).unwrap()
}

fn aggs(sql: &str) -> Vec<AggCol> {
    match plan(sql).unwrap().mode {
        MergeMode::Group { aggs, .. } => aggs,
        other => panic!("{other:?}"),
    }
}

#[test]
fn distinct_arguments_join_the_shards_group_by() {
    assert_eq!(
        shard("SELECT k, COUNT(DISTINCT v), SUM(q) FROM t WHERE x = 1 GROUP BY k ORDER BY k"),
        "SELECT k, COUNT(DISTINCT v), SUM(q) , v, WEIGHT_STRING(v), \
         WEIGHT_STRING(CONCAT(LEFT(v, 0), ' ')), WEIGHT_STRING(k), \
         WEIGHT_STRING(CONCAT(LEFT(k, 0), ' ')) FROM t WHERE x = 1 GROUP BY k, v ORDER BY k",
        "the shards keep ORDER BY: it decides MariaDB's temporary table, and so the columns' flags"
    );
    // Without GROUP BY the shards group by the arguments alone.
    assert_eq!(
        shard("select count(distinct t0_.v) from m2 t0_"),
        "select count(distinct t0_.v) , t0_.v, WEIGHT_STRING(t0_.v), \
         WEIGHT_STRING(CONCAT(LEFT(t0_.v, 0), ' ')) from m2 t0_ GROUP BY t0_.v "
    );
    let a = aggs("SELECT COUNT(DISTINCT a, b), AVG(DISTINCT c) FROM t WHERE c > 0 HAVING SUM(DISTINCT c) > 2");
    assert_eq!(a[0].func, AggFn::CountDistinct);
    assert_eq!(a[0].args.len(), 2);
    assert_eq!(a[1].func, AggFn::AvgDistinct);
    assert_eq!(a[2].func, AggFn::SumDistinct);
    assert!(
        shard("SELECT COUNT(DISTINCT a, b), AVG(DISTINCT c) FROM t WHERE c > 0")
            .ends_with("WHERE c > 0 GROUP BY a, b, c ")
    );
}

#[test]
fn group_concat_fetches_pieces_counts_and_the_session_limit() {
    let sql = "SELECT k, GROUP_CONCAT(v ORDER BY v DESC SEPARATOR '|') FROM t GROUP BY k";
    let s = shard(sql);
    assert!(
        s.contains(", v, WEIGHT_STRING(v), WEIGHT_STRING(CONCAT(LEFT(v, 0), ' ')), '|', CONCAT(v), COUNT(*), @@group_concat_max_len"),
        "{s}"
    );
    assert!(s.ends_with("GROUP BY k, CAST(v AS BINARY), v"), "{s}");
    let a = aggs(sql);
    let c = a[0].concat.as_ref().unwrap();
    assert!(!c.distinct && c.order[0].desc && c.separator.is_some());
    let s = shard("SELECT GROUP_CONCAT(DISTINCT i, v) FROM t");
    assert!(s.ends_with("FROM t GROUP BY i, v "), "{s}");
    assert!(
        aggs("SELECT GROUP_CONCAT(DISTINCT i, v) FROM t")[0]
            .concat
            .as_ref()
            .unwrap()
            .args
            .len()
            == 2
    );
}

#[test]
fn variances_and_bits_take_their_partials() {
    let s = shard("SELECT STDDEV_SAMP(x), BIT_XOR(y) FROM t");
    assert_eq!(
        s,
        "SELECT STDDEV_SAMP(x), BIT_XOR(y) , COUNT(x), SUM(x), CAST(VAR_POP(x) AS DOUBLE) FROM t"
    );
    let a = aggs("SELECT VAR_SAMP(x), STD(x), BIT_AND(y) FROM t");
    assert_eq!(
        a[0].func,
        AggFn::Variance {
            sample: true,
            root: false
        }
    );
    assert_eq!(
        a[1].func,
        AggFn::Variance {
            sample: false,
            root: true
        }
    );
    assert_eq!(a[2].func, AggFn::BitAnd);
}

#[test]
fn shapes_still_refused_are_named() {
    for (sql, what) in [
        ("SELECT k, COUNT(DISTINCT v) FROM t", "not an aggregate"),
        ("SELECT SUM(DISTINCT a, b) FROM t", "several arguments"),
        (
            "SELECT k, GROUP_CONCAT(v) FROM t GROUP BY k ORDER BY 2",
            "GROUP_CONCAT()",
        ),
        (
            "SELECT k FROM t GROUP BY k ORDER BY GROUP_CONCAT(v)",
            "GROUP_CONCAT()",
        ),
        ("SELECT GROUP_CONCAT(v LIMIT 2) FROM t", "GROUP_CONCAT("),
        ("SELECT STD(DISTINCT v) FROM t", "STD(DISTINCT"),
    ] {
        let e = plan(sql).unwrap_err();
        assert!(e.contains(what), "{sql}: {e}");
    }
}
