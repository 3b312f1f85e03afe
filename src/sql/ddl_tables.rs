//! The tables a DDL statement is about and the foreign keys it creates, so routing matches
//! rules by the schema the statement (or the session) names, as for DML, and can tell whether
//! the shards could hold a foreign key.

use std::ops::ControlFlow;

use sqlparser::ast::{
    visit_relations, AlterTableOperation, ColumnDef, ColumnOption, ForeignKeyConstraint,
    ObjectName, Statement, TableConstraint,
};

use super::insert::TableRef;
use super::lex::unquote_ident;
use super::parse::{parse_one, sanitize};

/// A foreign key a DDL statement creates on one of its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    /// The table the key belongs to (the child).
    pub child: TableRef,
    pub columns: Vec<String>,
    /// The table it references (the parent).
    pub parent: TableRef,
    pub referred: Vec<String>,
}

/// What a DDL statement names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdlTables {
    /// The tables it creates, changes, renames, truncates or drops.
    pub subjects: Vec<TableRef>,
    pub foreign_keys: Vec<ForeignKey>,
    /// The tables the query of a `CREATE TABLE … AS SELECT` reads.
    pub read: Vec<TableRef>,
}

fn table_ref(name: &ObjectName) -> TableRef {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| unquote_ident(p.to_string().as_bytes()))
        .collect();
    match parts.as_slice() {
        [.., schema, table] => TableRef {
            schema: Some(schema.clone()),
            name: table.clone(),
        },
        [table] => TableRef {
            schema: None,
            name: table.clone(),
        },
        [] => TableRef {
            schema: None,
            name: String::new(),
        },
    }
}

fn names(ids: &[sqlparser::ast::Ident]) -> Vec<String> {
    ids.iter().map(|i| i.value.clone()).collect()
}

fn key(child: &TableRef, fk: &ForeignKeyConstraint, columns: Vec<String>) -> ForeignKey {
    ForeignKey {
        child: child.clone(),
        columns,
        parent: table_ref(&fk.foreign_table),
        referred: names(&fk.referred_columns),
    }
}

/// The keys of a table constraint, for `child`.
fn constraint_keys(child: &TableRef, c: &TableConstraint, out: &mut Vec<ForeignKey>) {
    if let TableConstraint::ForeignKey(fk) = c {
        out.push(key(child, fk, names(&fk.columns)));
    }
}

/// The keys of a column's `REFERENCES` option (the key is that column).
fn column_keys(child: &TableRef, col: &ColumnDef, out: &mut Vec<ForeignKey>) {
    for o in &col.options {
        if let ColumnOption::ForeignKey(fk) = &o.option {
            out.push(key(child, fk, vec![col.name.value.clone()]));
        }
    }
}

/// The tables and foreign keys of a DDL statement sqlparser reads; `None`: not one it reads
/// (or not a statement about tables).
pub fn ddl_tables(stmt: &[u8]) -> Option<DdlTables> {
    let parsed = parse_one(&sanitize(stmt)).ok()?;
    let mut out = DdlTables::default();
    match &parsed {
        Statement::CreateTable(c) => {
            let t = table_ref(&c.name);
            for col in &c.columns {
                column_keys(&t, col, &mut out.foreign_keys);
            }
            for k in &c.constraints {
                constraint_keys(&t, k, &mut out.foreign_keys);
            }
            if let Some(q) = &c.query {
                let _ = visit_relations(q, |name| {
                    out.read.push(table_ref(name));
                    ControlFlow::<()>::Continue(())
                });
            }
            out.subjects.push(t);
        }
        Statement::AlterTable(a) => {
            let t = table_ref(&a.name);
            for op in &a.operations {
                match op {
                    AlterTableOperation::AddConstraint { constraint, .. } => {
                        constraint_keys(&t, constraint, &mut out.foreign_keys)
                    }
                    AlterTableOperation::AddColumn { column_def, .. } => {
                        column_keys(&t, column_def, &mut out.foreign_keys)
                    }
                    AlterTableOperation::RenameTable { table_name } => {
                        let to = match table_name {
                            sqlparser::ast::RenameTableNameKind::As(n)
                            | sqlparser::ast::RenameTableNameKind::To(n) => n,
                        };
                        out.subjects.push(table_ref(to));
                    }
                    _ => {}
                }
            }
            out.subjects.insert(0, t);
        }
        Statement::Drop {
            object_type: sqlparser::ast::ObjectType::Table,
            names,
            ..
        } => out.subjects.extend(names.iter().map(table_ref)),
        Statement::Truncate(t) => out
            .subjects
            .extend(t.table_names.iter().map(|n| table_ref(&n.name))),
        Statement::RenameTable(rs) => {
            for r in rs {
                out.subjects.push(table_ref(&r.old_name));
                out.subjects.push(table_ref(&r.new_name));
            }
        }
        Statement::CreateIndex(i) => out.subjects.push(table_ref(&i.table_name)),
        _ => return None,
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(schema: Option<&str>, name: &str) -> TableRef {
        TableRef {
            schema: schema.map(String::from),
            name: name.into(),
        }
    }

    #[test]
    fn subjects_keep_their_schema() {
        let d = ddl_tables(b"CREATE TABLE shop.`orders` (id INT)").unwrap();
        assert_eq!(d.subjects, [t(Some("shop"), "orders")]);
        let d = ddl_tables(b"DROP TABLE IF EXISTS a, other.b").unwrap();
        assert_eq!(d.subjects, [t(None, "a"), t(Some("other"), "b")]);
        let d = ddl_tables(b"RENAME TABLE a TO b").unwrap();
        assert_eq!(d.subjects, [t(None, "a"), t(None, "b")]);
        let d = ddl_tables(b"TRUNCATE TABLE x.y").unwrap();
        assert_eq!(d.subjects, [t(Some("x"), "y")]);
        let d = ddl_tables(b"CREATE INDEX k ON orders (item)").unwrap();
        assert_eq!(d.subjects, [t(None, "orders")]);
        assert_eq!(ddl_tables(b"CREATE VIEW v AS SELECT 1"), None);
        let d = ddl_tables(b"CREATE TABLE c AS SELECT * FROM o JOIN s.p ON o.id = p.id").unwrap();
        assert_eq!(d.read, [t(None, "o"), t(Some("s"), "p")]);
    }

    #[test]
    fn foreign_keys_of_every_form() {
        let d = ddl_tables(
            b"CREATE TABLE items (id INT, order_id INT REFERENCES orders (id), \
              user_id INT, CONSTRAINT fk FOREIGN KEY (user_id) REFERENCES shop.users (uid))",
        )
        .unwrap();
        let keys: Vec<(Vec<String>, TableRef, Vec<String>)> = d
            .foreign_keys
            .iter()
            .map(|k| (k.columns.clone(), k.parent.clone(), k.referred.clone()))
            .collect();
        assert_eq!(
            keys,
            [
                (
                    vec!["order_id".into()],
                    t(None, "orders"),
                    vec!["id".into()]
                ),
                (
                    vec!["user_id".into()],
                    t(Some("shop"), "users"),
                    vec!["uid".into()]
                ),
            ]
        );
        let d = ddl_tables(
            b"ALTER TABLE items ADD CONSTRAINT f FOREIGN KEY (order_id) REFERENCES orders (id)",
        )
        .unwrap();
        assert_eq!(d.foreign_keys[0].child, t(None, "items"));
        assert_eq!(d.foreign_keys[0].parent, t(None, "orders"));
        let d = ddl_tables(b"ALTER TABLE items ADD COLUMN o INT REFERENCES orders (id)").unwrap();
        assert_eq!(d.foreign_keys[0].columns, ["o"]);
    }
}
