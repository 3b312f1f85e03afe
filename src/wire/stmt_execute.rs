//! Decoding the parameters of a COM_STMT_EXECUTE (binary protocol), for statements idgate runs
//! itself instead of relaying (prepared INSERTs into tables whose ids it generates).

use std::collections::HashMap;

use mysql_common::constants::{ColumnFlags, ColumnType};
use mysql_common::io::ParseBuf;
use mysql_common::value::{BinValue, Value, ValueDeserializer};

use super::errors::{self, SqlError};

/// One bound parameter: its value and the type the client declared.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub value: Value,
    pub column_type: ColumnType,
}

/// What a prepared statement remembers between executions: the parameter types last bound
/// (a client sends them only when they change) and long data sent for the next execution.
#[derive(Debug, Default, Clone)]
pub struct BoundState {
    pub types: Vec<(u8, u8)>,
    pub long_data: HashMap<u16, Vec<u8>>,
}

fn malformed() -> SqlError {
    errors::malformed("COM_STMT_EXECUTE")
}

fn unknown_type(ty: u8) -> SqlError {
    SqlError::new(
        errors::ER_NET_READ_ERROR,
        b"08S01",
        format!(
            "Malformed COM_STMT_EXECUTE packet: parameter type {ty} is not one a client sends; \
             bind the parameter as a number, string, date or time"
        ),
    )
}

/// The parameter types of the binary protocol a client may send (the server-only ones, such as
/// DATETIME2, have no parameter encoding).
fn sent_by_clients(t: &ColumnType) -> bool {
    use ColumnType as T;
    matches!(
        t,
        T::MYSQL_TYPE_STRING
            | T::MYSQL_TYPE_VAR_STRING
            | T::MYSQL_TYPE_VARCHAR
            | T::MYSQL_TYPE_BLOB
            | T::MYSQL_TYPE_TINY_BLOB
            | T::MYSQL_TYPE_MEDIUM_BLOB
            | T::MYSQL_TYPE_LONG_BLOB
            | T::MYSQL_TYPE_SET
            | T::MYSQL_TYPE_ENUM
            | T::MYSQL_TYPE_DECIMAL
            | T::MYSQL_TYPE_NEWDECIMAL
            | T::MYSQL_TYPE_BIT
            | T::MYSQL_TYPE_GEOMETRY
            | T::MYSQL_TYPE_JSON
            | T::MYSQL_TYPE_TINY
            | T::MYSQL_TYPE_SHORT
            | T::MYSQL_TYPE_YEAR
            | T::MYSQL_TYPE_LONG
            | T::MYSQL_TYPE_INT24
            | T::MYSQL_TYPE_LONGLONG
            | T::MYSQL_TYPE_FLOAT
            | T::MYSQL_TYPE_DOUBLE
            | T::MYSQL_TYPE_TIMESTAMP
            | T::MYSQL_TYPE_DATE
            | T::MYSQL_TYPE_NEWDATE
            | T::MYSQL_TYPE_DATETIME
            | T::MYSQL_TYPE_TIME
            | T::MYSQL_TYPE_NULL
    )
}

/// The `count` parameters of a COM_STMT_EXECUTE packet. Long data sent before replaces a
/// parameter's value (its value is then absent from the packet).
pub fn decode_params(
    packet: &[u8],
    count: usize,
    state: &mut BoundState,
) -> Result<Vec<Param>, SqlError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    // 0x17, statement id (4), flags (1), iteration count (4).
    let mut rest = packet.get(10..).ok_or_else(malformed)?;
    let bitmap_len = count.div_ceil(8);
    let bitmap = rest.get(..bitmap_len).ok_or_else(malformed)?.to_vec();
    rest = &rest[bitmap_len..];
    let (&bound, tail) = rest.split_first().ok_or_else(malformed)?;
    rest = tail;
    if bound == 1 {
        let types = rest.get(..2 * count).ok_or_else(malformed)?;
        state.types = types.chunks(2).map(|t| (t[0], t[1])).collect();
        rest = &rest[2 * count..];
    }
    if state.types.len() != count {
        return Err(SqlError::new(
            errors::ER_UNKNOWN_ERROR,
            b"HY000",
            "COM_STMT_EXECUTE without parameter types for a statement that never had them bound",
        ));
    }
    let mut buf = ParseBuf(rest);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let (ty, flags) = state.types[i];
        let column_type = ColumnType::try_from(ty)
            .ok()
            .filter(sent_by_clients)
            .ok_or_else(|| unknown_type(ty))?;
        if let Some(data) = state.long_data.remove(&(i as u16)) {
            out.push(Param {
                value: Value::Bytes(data),
                column_type,
            });
            continue;
        }
        if bitmap[i / 8] & (1 << (i % 8)) != 0 {
            out.push(Param {
                value: Value::NULL,
                column_type,
            });
            continue;
        }
        let unsigned = if flags & 0x80 != 0 {
            ColumnFlags::UNSIGNED_FLAG
        } else {
            ColumnFlags::empty()
        };
        let v: ValueDeserializer<BinValue> = buf
            .parse((column_type, unsigned))
            .map_err(|_| malformed())?;
        out.push(Param {
            value: v.0,
            column_type,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mysql_common::packets::ComStmtExecuteRequestBuilder;
    use mysql_common::proto::MySerialize;

    #[test]
    fn decodes_what_a_driver_encodes() {
        let params = vec![
            Value::Int(-5),
            Value::UInt(u64::MAX),
            Value::NULL,
            Value::Bytes(vec![0, 255, b'\'']),
            Value::Double(1.5),
            Value::Date(2024, 2, 29, 1, 2, 3, 4),
            Value::Time(true, 1, 2, 3, 4, 5),
        ];
        let (req, _) = ComStmtExecuteRequestBuilder::new(7).build(&params);
        let mut p = Vec::new();
        req.serialize(&mut p);
        let mut st = BoundState::default();
        let got = decode_params(&p, params.len(), &mut st).unwrap();
        let values: Vec<Value> = got.into_iter().map(|p| p.value).collect();
        assert_eq!(values, params);
        // A later execution without types reuses the bound ones.
        assert_eq!(st.types.len(), params.len());
    }

    #[test]
    fn server_only_types_are_errors_not_panics() {
        // One parameter of type DATETIME2 (18), bound in the packet, 8 bytes of value.
        let p = [
            0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 18, 0, 7, 0xe8, 7, 1, 1, 0, 0, 0,
        ];
        let e = decode_params(&p, 1, &mut BoundState::default()).unwrap_err();
        assert!(e.message.contains("parameter type 18"), "{e}");
    }

    #[test]
    fn truncated_packets_are_errors() {
        let values = [Value::Int(1), Value::Bytes(b"abc".to_vec())];
        let (req, _) = ComStmtExecuteRequestBuilder::new(7).build(&values);
        let mut p = Vec::new();
        req.serialize(&mut p);
        for cut in 0..p.len() {
            let mut st = BoundState::default();
            assert!(
                decode_params(&p[..cut], 2, &mut st).is_err(),
                "cut at {cut}"
            );
        }
    }
}
