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

/// A unique key (or primary key) a DDL statement creates on one of its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UniqueKey {
    pub table: TableRef,
    /// The key's name as the statement gives it, or `PRIMARY`; `None` when unnamed.
    pub name: Option<String>,
    pub columns: Vec<String>,
}

/// What a DDL statement names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DdlTables {
    /// The tables it creates, changes, renames, truncates or drops.
    pub subjects: Vec<TableRef>,
    pub foreign_keys: Vec<ForeignKey>,
    pub unique_keys: Vec<UniqueKey>,
    /// The tables the query of a `CREATE TABLE … AS SELECT` reads.
    pub read: Vec<TableRef>,
    pub action: DdlAction,
}

/// What a DDL statement does to its subjects, where idgate keeps something per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DdlAction {
    /// CREATE TABLE: the table is new (and empty, unless created from a query).
    Create,
    /// DROP TABLE.
    Drop,
    #[default]
    Other,
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
fn constraint_keys(child: &TableRef, c: &TableConstraint, out: &mut DdlTables) {
    match c {
        TableConstraint::ForeignKey(fk) => {
            out.foreign_keys.push(key(child, fk, names(&fk.columns)))
        }
        TableConstraint::Unique(u) => out.unique_keys.push(UniqueKey {
            table: child.clone(),
            name: u
                .name
                .as_ref()
                .or(u.index_name.as_ref())
                .map(|n| n.value.clone()),
            columns: index_columns(&u.columns),
        }),
        TableConstraint::PrimaryKey(p) => out.unique_keys.push(UniqueKey {
            table: child.clone(),
            name: Some("PRIMARY".into()),
            columns: index_columns(&p.columns),
        }),
        _ => {}
    }
}

/// The column names of an index (a prefix length such as `name(10)` dropped).
fn index_columns(cols: &[sqlparser::ast::IndexColumn]) -> Vec<String> {
    cols.iter()
        .map(|c| match &c.column.expr {
            sqlparser::ast::Expr::Identifier(i) => i.value.clone(),
            sqlparser::ast::Expr::CompoundIdentifier(v) => {
                v.last().map(|i| i.value.clone()).unwrap_or_default()
            }
            other => {
                let t = other.to_string();
                let name = t.split('(').next().unwrap_or_default().trim();
                unquote_ident(name.as_bytes())
            }
        })
        .collect()
}

/// The keys of a column's `REFERENCES`, `UNIQUE` and `PRIMARY KEY` options (on that column).
fn column_keys(child: &TableRef, col: &ColumnDef, out: &mut DdlTables) {
    let column = vec![col.name.value.clone()];
    for o in &col.options {
        match &o.option {
            ColumnOption::ForeignKey(fk) => out.foreign_keys.push(key(child, fk, column.clone())),
            ColumnOption::Unique(_) => out.unique_keys.push(UniqueKey {
                table: child.clone(),
                name: Some(col.name.value.clone()),
                columns: column.clone(),
            }),
            ColumnOption::PrimaryKey(_) => out.unique_keys.push(UniqueKey {
                table: child.clone(),
                name: Some("PRIMARY".into()),
                columns: column.clone(),
            }),
            _ => {}
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
            out.action = DdlAction::Create;
            let t = table_ref(&c.name);
            for col in &c.columns {
                column_keys(&t, col, &mut out);
            }
            for k in &c.constraints {
                constraint_keys(&t, k, &mut out);
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
                        constraint_keys(&t, constraint, &mut out)
                    }
                    AlterTableOperation::AddColumn { column_def, .. } => {
                        column_keys(&t, column_def, &mut out)
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
        } => {
            out.action = DdlAction::Drop;
            out.subjects.extend(names.iter().map(table_ref))
        }
        Statement::Truncate(t) => out
            .subjects
            .extend(t.table_names.iter().map(|n| table_ref(&n.name))),
        Statement::RenameTable(rs) => {
            for r in rs {
                out.subjects.push(table_ref(&r.old_name));
                out.subjects.push(table_ref(&r.new_name));
            }
        }
        Statement::CreateIndex(i) => {
            let t = table_ref(&i.table_name);
            if i.unique {
                out.unique_keys.push(UniqueKey {
                    table: t.clone(),
                    name: i
                        .name
                        .as_ref()
                        .map(|n| unquote_ident(n.to_string().as_bytes())),
                    columns: index_columns(&i.columns),
                });
            }
            out.subjects.push(t);
        }
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
        let d = ddl_tables(
            b"CREATE TABLE f (id BIGINT PRIMARY KEY, a INT UNIQUE, b INT, c VARCHAR(9), \
              UNIQUE KEY ab (a, b), UNIQUE (c(4)))",
        )
        .unwrap();
        let keys: Vec<(Option<String>, Vec<String>)> = d
            .unique_keys
            .iter()
            .map(|k| (k.name.clone(), k.columns.clone()))
            .collect();
        assert_eq!(
            keys,
            [
                (Some("PRIMARY".into()), vec!["id".into()]),
                (Some("a".into()), vec!["a".into()]),
                (Some("ab".into()), vec!["a".into(), "b".into()]),
                (None, vec!["c".into()]),
            ]
        );
        let d = ddl_tables(b"CREATE UNIQUE INDEX u ON f (b, c)").unwrap();
        assert_eq!(d.unique_keys[0].columns, ["b", "c"]);
        let d = ddl_tables(b"ALTER TABLE f ADD UNIQUE KEY bc (b, c)").unwrap();
        assert_eq!(d.unique_keys[0].columns, ["b", "c"]);
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
