//! Property tests over the merge's decoders of what shards send: text rows, column definitions,
//! and values turned into sort keys. Any bytes give a value or an error, never a panic.

use proptest::prelude::*;

use super::number::{format_scaled, parse_scaled};
use super::rows::{encode_row, parse_text_row};
use super::value::{column_info, key_part, Kind};

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn rows_and_definitions_never_panic(p in bytes(80)) {
        let _ = column_info(&p);
        let _ = parse_text_row(&p);
    }

    #[test]
    fn text_rows_round_trip(values in proptest::collection::vec(proptest::option::of(bytes(300)), 0..12)) {
        let row = encode_row(&values);
        prop_assert_eq!(parse_text_row(&row), Some(values));
    }

    #[test]
    fn sort_keys_never_panic(
        v in proptest::option::of(bytes(40)),
        w in proptest::option::of(bytes(20)),
        space in proptest::option::of(bytes(4)),
        kind in 0..7u8,
    ) {
        let kind = match kind {
            0 => Kind::Exact,
            1 => Kind::Float,
            2 => Kind::DateTime,
            3 => Kind::Time,
            4 => Kind::Bytes,
            5 => Kind::Collated { pad: true },
            _ => Kind::Collated { pad: false },
        };
        let weights = w.as_deref().map(|w| (Some(w), space.as_deref()));
        let _ = key_part(kind, v.as_deref(), weights);
    }

    #[test]
    fn decimals_round_trip(v in any::<i64>(), scale in 0u32..12) {
        let text = format_scaled(v as i128, scale);
        prop_assert_eq!(parse_scaled(text.as_bytes(), scale), Some(v as i128));
    }

    #[test]
    fn numbers_never_panic(t in "[-+0-9.eE ]{0,45}", scale in 0u32..40) {
        let _ = parse_scaled(t.as_bytes(), scale);
    }
}
